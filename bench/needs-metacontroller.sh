# shellcheck shell=bash
# The preamble of the benchmarks that run the hook under Metacontroller on the e2e control plane,
# sourced after tests/e2e/versions.sh: sets HOOK_BIN (MEMCACHED_HOOK_BIN, default the release
# build), exits 0 with one "skip:" line when Metacontroller is not supplied, 1 when the hook's
# binary is missing.
HOOK_BIN=${MEMCACHED_HOOK_BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}/release/memcached-hook}
if ! metacontroller_supplied; then
    echo "skip: $(metacontroller_absent)"
    exit 0
fi
[[ -x "$HOOK_BIN" ]] || { echo "MEMCACHED_HOOK_BIN=$HOOK_BIN: build it with cargo build --release" >&2; exit 1; }
