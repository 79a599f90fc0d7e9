#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60) on stable Rust (RUSTC_BOOTSTRAP=1 lets
# cargo-fuzz use -Zsanitizer). New inputs go to a scratch corpus, not the committed one;
# crashes land in tests/fuzz/artifacts/<target>/. Usage: tests/fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(selector int_or_percent kubeconfig_server systemd_unit kcm_controllers)
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
scratch="${FUZZ_SCRATCH:-$(mktemp -d)}"
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  echo "--- fuzz $t for ${secs}s"
  RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir . "$t" "$scratch/$t" "corpus/$t" -- \
    -max_total_time="$secs" -print_final_stats=1
done
