# syntax=docker/dockerfile:1
#
# The servant image: yurtctl's own static (musl) binary, which convert's node Jobs run as
# `yurtctl node-servant …`, plus nsenter (util-linux), with which the servant restarts the
# kubelet in the host's namespaces. The tag is the crate version (never `latest`); it is what
# the profiles' `images.servant` (templates/*/profile.yaml) and so `--servant-image` default to.
#
#   VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=$VERSION \
#     -t openyurt/yurtctl-servant:$VERSION --push .
#
# docs/servant-image.md has the single-arch build and `kind load docker-image`.

ARG RUST_VERSION=1.89
ARG ALPINE_VERSION=3.22

FROM rust:${RUST_VERSION}-alpine${ALPINE_VERSION} AS build
# set by buildx for each --platform: amd64, arm64
ARG TARGETARCH
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
# the playground (and with it the simulated cluster) stays out of the node image
RUN case "${TARGETARCH:-amd64}" in \
      amd64) triple=x86_64-unknown-linux-musl ;; \
      arm64) triple=aarch64-unknown-linux-musl ;; \
      *) echo "unsupported TARGETARCH=${TARGETARCH}" >&2; exit 1 ;; \
    esac \
 && rustup target add "$triple" \
 && RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release --locked --no-default-features --bin yurtctl --target "$triple" \
 && install -D "target/$triple/release/yurtctl" /out/yurtctl

FROM alpine:${ALPINE_VERSION}
ARG VERSION
LABEL org.opencontainers.image.title="yurtctl-servant" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/openyurtio/yurtctl" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN apk add --no-cache util-linux
COPY --from=build /out/yurtctl /usr/local/bin/yurtctl
# the Jobs run privileged as root with the host's / at /host
ENTRYPOINT ["/usr/local/bin/yurtctl"]
CMD ["--help"]
