# The hook binary a suite tests, sourced by the suites' scripts:
#
#   HOOK=$(hook_bin "$WORK/cargo.log" [PROFILE]) || exit 1
#
# MEMCACHED_HOOK_BIN when it is set (it must be executable), else `cargo build --locked` of the
# work tree into CARGO_TARGET_DIR (default $HOME/.cache/memcached-hook/target) with PROFILE
# (default dev), bounded to an hour. Prints the path; on a failed build prints the end of the
# cargo log on stderr and returns 1.
_HOOK_BIN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

hook_bin() {
    local log=$1 profile=${2:-dev} dir
    if [[ -n "${MEMCACHED_HOOK_BIN:-}" ]]; then
        [[ -x "$MEMCACHED_HOOK_BIN" ]] || { echo "MEMCACHED_HOOK_BIN=$MEMCACHED_HOOK_BIN is not executable" >&2; return 1; }
        printf '%s\n' "$MEMCACHED_HOOK_BIN"
        return 0
    fi
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}"
    dir=$profile
    [[ $profile == dev ]] && dir=debug
    if ! (cd "$_HOOK_BIN_ROOT" && timeout 3600 cargo build --locked --quiet --profile "$profile" \
        --bin memcached-hook) >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        echo "cargo build of the hook failed (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)" >&2
        return 1
    fi
    printf '%s\n' "$CARGO_TARGET_DIR/$dir/memcached-hook"
}
