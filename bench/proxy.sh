#!/usr/bin/env bash
# memcached's proxy on loopback, in front of a zoned cache as the hook renders it: how warm it
# keeps the cache through a zone-by-zone rollout and a zone drain, and what a get through it
# costs against a get straight to a pod (bench/proxy_bench.py says how each is measured).
#
#   bash bench/proxy.sh              # both, about two minutes after the builds
#   bash bench/proxy.sh warmth       # or: cost
#
# Settings (environment): KEYS (keys per client, 1000), DOWN (seconds a restarted pod is away,
# 2), GAP (seconds after a pod answers before the next goes, 1), GETS (gets per cost run,
# 50000), CONNECTIONS (8), REPEAT (cost runs per setting, 3; the table shows medians),
# BENCH_OUT (where the JSON goes), SHARED_MEMCACHED_DIR and MEMCACHED_HOOK_BIN as for
# tests/proxy/run.sh.
#
# memcached 1.6.45 with its proxy is built once from the release tarball (tests/lib/shared-memcached.sh);
# the get client bench/proxy_get.c with the C compiler that build needs. Only loopback traffic;
# every process is bounded by timeout(1) and stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WHAT=${1:-all}
case $WHAT in all | warmth | cost) ;; *) echo "usage: bash bench/proxy.sh [warmth|cost]" >&2; exit 2 ;; esac

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}"
OUT="${BENCH_OUT:-$CARGO_TARGET_DIR/bench}"
mkdir -p "$OUT"

# shellcheck source=tests/lib/apt.sh
source tests/lib/apt.sh
# shellcheck source=tests/lib/shared-memcached.sh
source tests/lib/shared-memcached.sh
SHARED=${SHARED_MEMCACHED_DIR:-$ROOT/../shared/memcached}
shared_memcached "$SHARED" || exit 1
if [[ -z "$SHARED_MEMCACHED_BIN" ]]; then
    echo "proxy bench: needs $SHARED (the source of memcached 1.6.45 with its proxy)" >&2
    exit 1
fi
python3 -c 'import yaml' 2>/dev/null || apt_need /usr/lib/python3/dist-packages/yaml/__init__.py=python3-yaml || exit 1
# shellcheck source=tests/lib/hook-bin.sh
source tests/lib/hook-bin.sh
HOOK=$(hook_bin "$OUT/proxy-cargo.log") || exit 1
CLIENT="$OUT/proxy_get"
gcc -O2 -Wall -Wextra -pthread -o "$CLIENT" bench/proxy_get.c

echo "proxy bench: $("$SHARED_MEMCACHED_BIN" --version), $(nproc) CPUs, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
status=0
if [[ $WHAT == all || $WHAT == warmth ]]; then
    timeout --kill-after=30 900 python3 bench/proxy_bench.py warmth --hook "$HOOK" \
        --memcached "$SHARED_MEMCACHED_BIN" --keys "${KEYS:-1000}" --down "${DOWN:-2}" \
        --gap "${GAP:-1}" --json "$OUT/proxy-warmth.json" || status=1
fi
if [[ $WHAT == all || $WHAT == cost ]]; then
    timeout --kill-after=30 900 python3 bench/proxy_bench.py cost --hook "$HOOK" \
        --memcached "$SHARED_MEMCACHED_BIN" --client "$CLIENT" --gets "${GETS:-50000}" \
        --connections "${CONNECTIONS:-8}" --repeat "${REPEAT:-3}" --json "$OUT/proxy-cost.json" || status=1
fi
exit $status
