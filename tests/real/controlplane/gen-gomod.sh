#!/usr/bin/env bash
# Writes the go.mod for one Kubernetes release: k8s.io/kubernetes requires every staging module at
# v0.0.0 (its own replace lines point into ./staging and do not apply to a dependent module), so
# each is pinned here to v0.MINOR.PATCH, generated from the release's own go.mod
# (the pattern of kubernetes-sigs/scheduler-plugins' go.mod).
# usage: gen-gomod.sh v1.37.2 > go.mod   (then: go mod tidy)
set -euo pipefail
ver=${1:?usage: gen-gomod.sh v1.X.Y}
staging=v0.${ver#v1.}
mod=$(cd / && GO111MODULE=on go mod download -json "k8s.io/kubernetes@$ver" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
[ -f "$mod" ] || { echo "gen-gomod.sh: k8s.io/kubernetes@$ver was not downloaded" >&2; exit 1; }
gover=$(awk '$1 == "go" { print $2; exit }' "$mod")
echo "module yurtsim.test/realcp"
echo
echo "go $gover"
echo
echo "require k8s.io/kubernetes $ver"
echo
echo "replace ("
awk '$2 == "v0.0.0" && $1 ~ /^k8s.io\// { print "\t" $1 " => " $1 " '"$staging"'" }' "$mod"
echo ")"
