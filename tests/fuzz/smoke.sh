#!/usr/bin/env bash
# Bounded fuzz smoke run of decode + sync on the stable toolchain: bash tests/fuzz/smoke.sh
# (--build-only: install cargo-fuzz and build the targets, run nothing).
#
# Installs cargo-fuzz from crates.io when missing, builds the fuzz/ crate (libFuzzer is compiled
# from the libfuzzer-sys crate with the system C++ compiler; no sanitizer, so no nightly) and runs
# each target for RUNS executions (default 200000) or FUZZ_SECONDS seconds (default 120),
# whichever ends first: decode_sync (arbitrary bytes decoded and synced) on a throwaway corpus
# seeded with tests/fixtures/sync, then zoned_sync (zoned requests with up to 1024 observed
# workloads, built from the bytes) on an empty one. Exits non-zero on a crash and prints where the
# crashing input was kept. The long run is in docs/reliability.md.
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
timeout 3600 cargo fuzz build --sanitizer none zoned_sync
[[ "${1:-}" == --build-only ]] && exit 0
host=$(rustc -vV | sed -n 's/^host: //p')

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$ROOT/fuzz/artifacts/smoke"
# run TARGET [SEED_DIR]: one bounded run of a target on a fresh corpus.
run() {
    local target=$1 bin=$CARGO_TARGET_DIR/$host/release/$1 status=0
    mkdir -p "$work/$target"
    timeout $((FUZZ_SECONDS + 120)) "$bin" -dict="$ROOT/fuzz/json.dict" -runs="$RUNS" \
        -max_total_time="$FUZZ_SECONDS" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$ROOT/fuzz/artifacts/smoke/" \
        "$work/$target" ${2:+"$2"} >"$work/$target.log" 2>&1 || status=$?
    echo "$target:"
    grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' "$work/$target.log" || true
    if [ "$status" -ne 0 ]; then
        grep -E 'panicked|ERROR|Test unit written' "$work/$target.log" | head -5
        echo "fuzz smoke: $target FAILED (exit $status); reproduce with: $bin <crash file>"
        return 1
    fi
}
run decode_sync "$ROOT/tests/fixtures/sync"
run zoned_sync
echo "fuzz smoke: ok"
