#!/usr/bin/env bash
# memcached's proxy with the route configuration the hook renders, in front of real memcached
# backends on loopback (tests/proxy/proxy.py says what it checks).
#
#   bash tests/proxy/run.sh        # last line: "proxy: N passed, M failed"
#
# memcached 1.6.45 (the default image's version, proxy included) is built once from the release
# tarball in ../shared/memcached beside the clone (tests/lib/shared-memcached.sh); without that
# folder the phase prints one SKIPPED line and exits 77.
# Environment: MEMCACHED_HOOK_BIN (use this binary instead of building), CARGO_TARGET_DIR,
# SHARED_MEMCACHED_DIR (the folder holding the tarball; default ../shared/memcached).
# Only loopback traffic; every process is bounded by timeout(1) and stopped by its PID.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${MEMCACHED_HOOK_CACHE:-$HOME/.cache/memcached-hook}

die() {
    echo "proxy: setup failed: $*" >&2
    echo "proxy: 0 passed, 1 failed"
    exit 1
}

# shellcheck source=tests/lib/apt.sh
source "$ROOT/tests/lib/apt.sh"
# shellcheck source=tests/lib/shared-memcached.sh
source "$ROOT/tests/lib/shared-memcached.sh"
SHARED=${SHARED_MEMCACHED_DIR:-$ROOT/../shared/memcached}
if [[ ! -d "$SHARED" ]]; then
    echo "SKIPPED proxy: no $SHARED (the source of memcached 1.6.45 with its proxy)"
    exit 77
fi
shared_memcached "$SHARED" || die "memcached from $SHARED"

PY=python3
if ! python3 -c 'import yaml' 2>/dev/null; then
    VENV=$CACHE/venv-peers
    if ! "$VENV/bin/python" -c 'import yaml' 2>/dev/null; then
        echo "proxy: creating $VENV with PyYAML"
        python3 -m venv "$VENV" || die "python3 -m venv"
        timeout 300 "$VENV/bin/pip" install -q pyyaml || die "pip install pyyaml"
    fi
    PY=$VENV/bin/python
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-proxy-run.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=tests/lib/hook-bin.sh
source "$ROOT/tests/lib/hook-bin.sh"
HOOK=$(hook_bin "$WORK/cargo.log") || die "the hook binary"

timeout 900 "$PY" "$HERE/proxy.py" --hook "$HOOK" --memcached "$SHARED_MEMCACHED_BIN"
