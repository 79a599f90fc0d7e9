#!/usr/bin/env bash
# Runs every fuzz target (libFuzzer, coverage guided) for SECONDS each (docs/fuzzing.md).
#
#   tests/fuzz/run.sh [--quick] [SECONDS] [TARGET...]
#
# Default (deep, local): cargo-fuzz with AddressSanitizer, 60 s per target; needs cargo-fuzz
# (installed if missing) and RUSTC_BOOTSTRAP=1 for -Zsanitizer on stable.
# --quick (CI, .ci/run): no cargo-fuzz, no ASan, plain stable cargo with the instrumentation
# flags cargo-fuzz passes for `--sanitizer none`, profile `fuzz-quick` (Cargo.toml) to build
# fast; panics, debug assertions and overflow checks still abort. 20 s per target by default.
#
# Each target runs against a scratch copy of its committed corpus (FUZZ_SCRATCH, default a
# temporary directory), so the committed corpus is never written. Any crash, timeout or OOM
# fails the script; it names the target and the input (path and base64).
# The build honours CARGO_TARGET_DIR (default tests/fuzz/target).
set -euo pipefail
# relative paths given by the caller stay relative to where it runs us
for var in CARGO_TARGET_DIR FUZZ_SCRATCH; do
  if [ -n "${!var:-}" ] && [ "${!var#/}" = "${!var}" ]; then export "$var=$PWD/${!var}"; fi
done
cd "$(dirname "$0")"

quick=false
if [ "${1:-}" = "--quick" ]; then
  quick=true
  shift
fi
if $quick; then secs="${1:-20}"; else secs="${1:-60}"; fi
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(selector int_or_percent kubeconfig_server systemd_unit kcm_controllers)
fi

# --target keeps the flags off build scripts and proc macros, as cargo-fuzz does
host="$(rustc -vV | sed -n 's/^host: //p')"
target_dir="${CARGO_TARGET_DIR:-target}"
bin_args=()
for t in "${targets[@]}"; do bin_args+=(--bin "$t"); done

if $quick; then
  # cargo-fuzz 0.13 src/project.rs for `-s none`, minus -Clink-dead-code (only for coverage
  # reports; it would link all of kube and k8s-openapi) and codegen-units=1 (slow to build)
  echo "--- fuzz: build ${targets[*]} (profile fuzz-quick, no ASan)"
  export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    -Cllvm-args=-sanitizer-coverage-stack-depth \
    -Cllvm-args=-simplifycfg-branch-fold-threshold=0"
  cargo build --profile fuzz-quick --target "$host" "${bin_args[@]}"
  bin_dir="$target_dir/$host/fuzz-quick"
else
  command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
  echo "--- fuzz: build ${targets[*]} (cargo-fuzz, AddressSanitizer)"
  for t in "${targets[@]}"; do
    RUSTC_BOOTSTRAP=1 cargo fuzz build --fuzz-dir . --target-dir "$target_dir" "$t"
  done
  bin_dir="$target_dir/$host/release"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_odr_violation=0"
fi

scratch="${FUZZ_SCRATCH:-$(mktemp -d)}"
failed=()
for t in "${targets[@]}"; do
  work="$scratch/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp corpus/"$t"/* "$work/corpus/"
  echo "--- fuzz $t for ${secs}s"
  status=0
  "$bin_dir/$t" "$work/corpus" -max_total_time="$secs" -timeout=20 \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 >"$work/log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|stat::peak_rss_mb)' \
    "$work/log" | tr '\n' ' ' | sed 's/stat:://g; s/ $/\n/'
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$work/log"
    for f in "$work"/artifacts/*; do
      [ -e "$f" ] || continue
      echo "FUZZ FAILURE: target $t, input $f (reproduce: $bin_dir/$t $f); base64:"
      base64 -w 76 "$f" | head -n 20
    done
    echo "FUZZ FAILURE: target $t exited $status (log: $work/log)"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "--- fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "--- fuzz: ${targets[*]}: no finding in ${secs}s each"
