#!/usr/bin/env bash
# Builds yurtsim's real tier from upstream's Go modules (docs/yurtsim.md#the-real-tier):
#   kubernetes-<version>/realcp   etcd, kube-apiserver, kube-controller-manager, kube-scheduler
#   openyurt-<version>/realyurt   yurt-manager, yurthub, node-servant
# into one cache directory, $YURTSIM_REAL_DIR (default: target/real of this checkout). A build whose
# inputs (go.mod, go.sum, main.go, the Go version) are unchanged is skipped; the Go module and build
# caches (go env GOMODCACHE GOCACHE) are reused when they are there.
#
# usage: tests/real/build.sh [all | kubernetes | openyurt | v1.37.2 | v1.34.4 | openyurt-v1.7.0]...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${YURTSIM_REAL_DIR:-$here/../../target/real}

need_go() {
  if ! command -v go >/dev/null 2>&1; then
    echo "build.sh: Go is not installed, and the real tier is built with it. Install Go 1.26 or newer" >&2
    echo "  (on the project's machines it is preinstalled; elsewhere: https://go.dev/doc/install), then run" >&2
    echo "  tests/real/build.sh again." >&2
    exit 1
  fi
  local v
  v=$(go env GOVERSION)
  v=${v#go}
  if [ "$(printf '%s\n' 1.26 "${v%.*}" | sort -V | head -1)" != 1.26 ]; then
    echo "build.sh: Go $v is too old: Kubernetes 1.37 needs Go 1.26 or newer (go.mod of k8s.io/kubernetes v1.37.2)." >&2
    exit 1
  fi
}

# The Kubernetes release a control-plane go.mod pins.
kube_version() { grep -oE '^\s*(require\s+)?k8s\.io/kubernetes v1\.[0-9.]+' "$1" | awk '{ print $NF }'; }

# build DIR MODFILE NAME LDFLAGS: one binary, skipped when its stamp matches its inputs.
build() {
  local dir=$1 modfile=$2 target=$3 ldflags=$4
  local sum=${modfile%.mod}.sum
  local stamp
  stamp=$(cat "$dir/$modfile" "$dir/$sum" "$dir"/*.go <(go env GOVERSION) <(echo "$ldflags") | sha256sum | cut -c1-16)
  if [ -x "$target" ] && [ "$(cat "$target.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "build.sh: $target is up to date"
    return
  fi
  mkdir -p "$(dirname "$target")"
  echo "build.sh: building $target (a cold build takes many minutes; see docs/yurtsim.md)"
  local start=$SECONDS
  (cd "$dir" && CGO_ENABLED=0 go build -modfile="$modfile" -trimpath -ldflags "-s -w $ldflags" -o "$target.tmp" .)
  mv "$target.tmp" "$target"
  echo "$stamp" > "$target.stamp"
  echo "build.sh: built $target in $((SECONDS - start)) s"
}

build_kubernetes() {
  local modfile=$1 ver
  ver=$(kube_version "$here/controlplane/$modfile")
  local minor=${ver#v1.}
  minor=${minor%%.*}
  # What hack/lib/version.sh stamps into a release build, so /version reports the release.
  local ld="-X k8s.io/component-base/version.gitVersion=$ver -X k8s.io/component-base/version.gitMajor=1"
  ld="$ld -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  build "$here/controlplane" "$modfile" "$out/kubernetes-$ver/realcp" "$ld"
}

build_openyurt() {
  local dir=$1 ver
  ver=$(grep -oE '^\s*(require\s+)?github\.com/openyurtio/openyurt v[0-9.]+' "$dir/go.mod" | awk '{ print $NF }')
  # What openyurt's hack/lib/version.sh stamps (pkg/projectinfo).
  local ld="-X github.com/openyurtio/openyurt/pkg/projectinfo.gitVersion=$ver"
  build "$dir" go.mod "$out/openyurt-$ver/realyurt" "$ld"
  for name in yurt-manager yurthub node-servant; do
    ln -sfn realyurt "$out/openyurt-$ver/$name"
  done
}

need_go
mkdir -p "$out"
# one build at a time per cache directory (tests that start the real tier call this script too)
exec 9>"$out/.build.lock"
flock 9
[ $# -gt 0 ] || set -- all
for what in "$@"; do
  case $what in
    all) build_kubernetes go.mod; build_kubernetes go.1.34.mod; build_openyurt "$here/openyurt-v1.7" ;;
    kubernetes) build_kubernetes go.mod; build_kubernetes go.1.34.mod ;;
    openyurt) build_openyurt "$here/openyurt-v1.7" ;;
    "$(kube_version "$here/controlplane/go.mod")") build_kubernetes go.mod ;;
    "$(kube_version "$here/controlplane/go.1.34.mod")") build_kubernetes go.1.34.mod ;;
    openyurt-v1.7.0) build_openyurt "$here/openyurt-v1.7" ;;
    *)
      echo "build.sh: unknown target '$what'; use all, kubernetes, openyurt, $(kube_version "$here/controlplane/go.mod"), $(kube_version "$here/controlplane/go.1.34.mod") or openyurt-v1.7.0" >&2
      exit 2
      ;;
  esac
done
