#!/usr/bin/env bash
# Bounded fuzz smoke run of decode + sync on the stable toolchain: bash tests/fuzz/smoke.sh
# (--build-only: install cargo-fuzz and build the target, run nothing).
#
# Installs cargo-fuzz from crates.io when missing, builds the fuzz/ crate (libFuzzer is compiled
# from the libfuzzer-sys crate with the system C++ compiler; no sanitizer, so no nightly), seeds
# a throwaway corpus with tests/fixtures/sync and runs the decode_sync target for RUNS executions
# (default 200000) or FUZZ_SECONDS seconds (default 120), whichever ends first. Exits non-zero
# on a crash and prints where the crashing input was kept. The long run is in docs/reliability.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Its own target dir: the fuzz build (other RUSTFLAGS, nothing shared with the test builds) may run in
# the background (tests/lib/prebuild.sh) without holding the lock of the one other phases build in.
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$HOME/.cache/memcached-hook/target-fuzz}
export PATH="$HOME/.cargo/bin:$PATH"
RUNS=${RUNS:-200000}
FUZZ_SECONDS=${FUZZ_SECONDS:-120}

if ! cargo fuzz --version >/dev/null 2>&1; then
    timeout 1800 cargo install cargo-fuzz --locked --version 0.13.2
fi
cd "$ROOT/fuzz"
timeout 3600 cargo fuzz build --sanitizer none decode_sync
[[ "${1:-}" == --build-only ]] && exit 0
host=$(rustc -vV | sed -n 's/^host: //p')
bin=$CARGO_TARGET_DIR/$host/release/decode_sync

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$ROOT/fuzz/artifacts/smoke"
status=0
timeout $((FUZZ_SECONDS + 120)) "$bin" -dict="$ROOT/fuzz/json.dict" -runs="$RUNS" \
    -max_total_time="$FUZZ_SECONDS" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$ROOT/fuzz/artifacts/smoke/" \
    "$work/corpus" "$ROOT/tests/fixtures/sync" >"$work/log" 2>&1 || status=$?
grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$work/log" || true
if [ "$status" -ne 0 ]; then
    grep -E 'panicked|ERROR|Test unit written' "$work/log" | head -5
    echo "fuzz smoke: FAILED (exit $status); reproduce with: $bin <crash file>"
    exit 1
fi
echo "fuzz smoke: ok"
