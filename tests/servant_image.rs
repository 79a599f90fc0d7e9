//! The servant image's contract, checked statically (no container engine needed): the
//! Dockerfile builds the binary the node Jobs run (`yurtctl`, on PATH), and the image every
//! profile defaults to is the one the Dockerfile documents, tagged with the crate version.

use std::path::Path;
use std::time::Duration;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `version = "…"` of Cargo.toml's [workspace.package] (the crate inherits it).
fn cargo_version() -> String {
    read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("a version in Cargo.toml")
        .to_owned()
}

/// The repository the Dockerfile's documented build tags (`-t REPO:$VERSION`).
fn documented_repository(dockerfile: &str) -> String {
    let tag = dockerfile
        .split_whitespace()
        .skip_while(|w| *w != "-t")
        .nth(1)
        .expect("the Dockerfile documents its `-t` tag");
    let (repo, version) = tag.split_once(':').expect("REPO:TAG");
    assert_eq!(version, "$VERSION", "tagged with the crate version");
    repo.to_owned()
}

#[test]
fn the_dockerfile_builds_what_the_jobs_run() {
    let df = read("Dockerfile");
    let froms: Vec<&str> = df.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert!(froms.len() >= 2, "multi-stage: {froms:?}");
    assert!(
        df.contains("ARG TARGETARCH"),
        "multi-arch: the stage reads TARGETARCH"
    );
    assert!(df.contains("-unknown-linux-musl"), "a static musl build");
    assert!(
        df.contains("--no-default-features"),
        "no playground in the node image"
    );
    assert!(df.contains("--locked"));
    assert!(!df.to_lowercase().contains(":latest"), "no latest tags");
    assert!(df.contains("util-linux"), "nsenter for the kubelet restart");

    // the Job's command is a bare `yurtctl`, found on PATH at /usr/local/bin
    let profile = yurtctl::render::Profile::load(yurtctl::render::Profile::DEFAULT).unwrap();
    let node = yurtctl::plan::NodeDecision {
        name: "n1".into(),
        role: yurtctl::plan::Role::Edge,
        action: yurtctl::plan::NodeAction::Convert,
        autonomous: true,
        pool: Some("edge".into()),
    };
    let job = yurtctl::app::convert::node_job(
        &node,
        "img",
        &profile.images,
        &profile,
        Duration::from_secs(60),
        yurtctl::app::convert::HubJob::Convert {
            restart_workloads: true,
        },
    );
    let spec = job.template.spec.clone().expect("pod spec");
    let command = spec.containers[0].command.clone().expect("a command");
    assert_eq!(command[0], "yurtctl");
    assert!(
        df.lines().any(|l| l.starts_with("COPY --from=")
            && l.ends_with(&format!(" /usr/local/bin/{}", command[0]))),
        "the final stage puts {} on PATH",
        command[0]
    );
}

#[test]
fn every_profile_defaults_to_the_documented_image_at_the_crate_version() {
    let repo = documented_repository(&read("Dockerfile"));
    let version = cargo_version();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let names = yurtctl::render::Profile::names();
    assert!(!names.is_empty());
    for name in names {
        let raw = read(&format!("templates/{name}/profile.yaml"));
        assert!(
            raw.lines()
                .any(|l| l.trim() == format!("servant: {repo}:{{{{crateVersion}}}}")),
            "templates/{name}/profile.yaml: images.servant is {repo}:{{{{crateVersion}}}}"
        );
        let profile = yurtctl::render::Profile::load(&name).unwrap();
        assert_eq!(
            profile.images["servant"],
            format!("{repo}:{version}"),
            "{name}: the --servant-image default"
        );
    }
}
