#!/usr/bin/env bash
# Memory a memcached filled to its `-m` limit really uses, for the default memory request the
# hook writes when spec.resources has none (figures in docs/behaviour.md).
#
#   bash bench/memory-overhead.sh                          # -m 64, 1024 and 4096; mixes small, large, tiny
#   SIZES=64 MIXES=small bash bench/memory-overhead.sh     # one quick run (a few seconds)
#
# Installs Debian's memcached when it is missing (the package's own service is kept from
# starting). bench/memory_overhead.py starts memcached with the hook's default arguments
# (`-m SIZE -c 1024 -t 4 -I 1m`) on 127.0.0.1, fills it until evictions begin, opens up to 1024
# client connections (idle, then each with a full read buffer), and prints VmRSS/VmHWM at
# each step. Bounded: 600 s per fill, 3600 s for the whole run. Needs ~5 GiB of free memory
# for -m 4096. The JSON with every figure goes to $BENCH_OUT/memory-overhead.json.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-64,1024,4096}
MIXES=${MIXES:-small,large,tiny}
OUT=${BENCH_OUT:-${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}/bench}
mkdir -p "$OUT"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

if ! command -v memcached >/dev/null 2>&1; then
    echo "memory-overhead: installing memcached (Debian)"
    policy=/usr/sbin/policy-rc.d
    added_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null && as_root chmod 755 "$policy" && added_policy=1
    fi
    as_root timeout 300 apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends memcached >/dev/null
    [ "$added_policy" = 1 ] && as_root rm -f "$policy"
fi
echo "memory-overhead: $(memcached -V), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "memory-overhead: MiB are VmRSS from /proc/PID/status; hwm = VmHWM at the end"
ulimit -n 4096 2>/dev/null || true
start=$SECONDS
timeout --kill-after=30 3600 python3 bench/memory_overhead.py --sizes "$SIZES" --mixes "$MIXES" \
    --json "$OUT/memory-overhead.json"
echo "memory-overhead: $((SECONDS - start)) s; JSON in $OUT/memory-overhead.json"
