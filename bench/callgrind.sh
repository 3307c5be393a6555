#!/usr/bin/env bash
# Instructions per sync versus the serde floor, under valgrind --tool=callgrind.
#
#   bash bench/callgrind.sh            # realistic + large request, ratios, linearity check,
#                                      # then the whole server path per request
#   PROFILE=1 bash bench/callgrind.sh  # also writes callgrind profiles and prints the top
#                                      # functions of one sync for both sizes
#   SERVER=0 bash bench/callgrind.sh   # without the server path (saves ~2 minutes)
#
# For each request and each piece of work it runs the bench-only example `perf` (see
# examples/perf.rs) twice under callgrind, with N and with 0 iterations, and divides the
# difference of the instruction counts by N: start-up, reading the file and the set-up cancel.
# Deterministic: the same binary and request give the same counts.
#
# The server path: the release `memcached-hook serve` (default settings, RUST_LOG=info as
# deployed) and the `echo` example, each started under callgrind on 127.0.0.1 and sent
# SERVER_FEW and then SERVER_MANY keep-alive POST /sync by bench/requests.py (one connection);
# the difference of the two runs' counts divided by the difference of the request counts is one
# request's user-space instructions in the server: HTTP parsing, routing, layers, ETag, log line,
# decode, sync, encode, answer. The kernel's share (TCP receive and send) is not counted;
# bench/load.sh measures it as CPU time.
#
# Everything measured runs with the image's environment (the Dockerfile's ENV: glibc's allocator
# setting), as deployed; IMAGE_ENV=0 measures with glibc's defaults instead.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}"
OUT="${BENCH_OUT:-$CARGO_TARGET_DIR/bench}"
mkdir -p "$OUT"
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install -y valgrind)" >&2; exit 1; }

SERVER=${SERVER:-1}
SERVER_FEW=${SERVER_FEW:-10}
SERVER_MANY=${SERVER_MANY:-60}
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    if [[ $SERVER == 1 ]]; then
        cargo build --release --example perf --example echo --bin memcached-hook >&2
    else
        cargo build --release --example perf >&2
    fi
fi
PERF="$CARGO_TARGET_DIR/release/examples/perf"
HOOK_BIN="$CARGO_TARGET_DIR/release/memcached-hook"
ECHO_BIN="$CARGO_TARGET_DIR/release/examples/echo"

# The Dockerfile's ENV lines, for everything measured (not for the request client).
# shellcheck source=tests/lib/image-env.sh
source tests/lib/image-env.sh
echo "environment: ${IMAGE_ENV_VARS[*]:-(glibc defaults)}"

# The realistic request as Metacontroller sends it (compact: bench/compact.py), and padded to
# several sizes (bench/gen-large.py, compact too), for the linearity check.
FIXTURE=tests/fixtures/sync/steady-state.json
REAL="$OUT/steady-state.json"
python3 bench/compact.py "$FIXTURE" "$REAL"
SIZES=(50000 100000 200000 400000)
FILES=("$REAL")
for size in "${SIZES[@]}"; do
    python3 bench/gen-large.py --size "$size" "$FIXTURE" "$OUT/padded-$size.json"
    FILES+=("$OUT/padded-$size.json")
done

# instructions FILE MODE N: total instructions of one `perf MODE FILE N` run.
instructions() {
    env "${IMAGE_ENV_VARS[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$PERF" "$2" "$1" "$3" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

# per_call FILE MODE BASE: instructions of one call of MODE on FILE.
per_call() {
    local n total
    n=$(( $(stat -c %s "$1") > 100000 ? 5 : 20 ))
    total=$(instructions "$1" "$2" "$n")
    echo $(( (total - $3) / n ))
}

# (No `etag` here: valgrind hides the CPU's SHA extensions, so SHA-256 would run the portable
# code and count ~5x the instructions it takes natively; bench/load.sh measures the 304.)
MODES=(hook floor decode sync encode floor-decode floor-encode)
printf '%-22s %8s' request bytes
printf ' %13s' "${MODES[@]}"
printf ' %10s %10s\n' hook/floor hook/byte
declare -A HOOK FLOOR
for file in "${FILES[@]}"; do
    base=$(instructions "$file" hook 0)
    bytes=$(stat -c %s "$file")
    declare -A ir=()
    for mode in "${MODES[@]}"; do
        ir[$mode]=$(per_call "$file" "$mode" "$base")
    done
    HOOK[$bytes]=${ir[hook]}
    FLOOR[$bytes]=${ir[floor]}
    printf '%-22s %8d' "$(basename "$file" .json)" "$bytes"
    for mode in "${MODES[@]}"; do printf ' %13d' "${ir[$mode]}"; done
    awk -v h="${ir[hook]}" -v f="${ir[floor]}" -v b="$bytes" \
        'BEGIN { printf " %10.2f %10.1f\n", h / f, h / b }'
done

real_bytes=$(stat -c %s "$REAL")
large_bytes=$(stat -c %s "$OUT/padded-200000.json")
awk -v h="${HOOK[$real_bytes]}" -v f="${FLOOR[$real_bytes]}" -v lh="${HOOK[$large_bytes]}" -v lf="${FLOOR[$large_bytes]}" \
    'BEGIN { printf "instructions per sync / serde floor: realistic %.2f (target <= 0.4), 200 KB %.2f\n", h / f, lh / lf }'

# Linearity: least-squares line through (bytes, instructions) of the hook, and how far each
# point is from it.
echo
echo "linearity of the hook's instructions in the request size:"
for bytes in "${!HOOK[@]}"; do echo "$bytes ${HOOK[$bytes]}"; done | sort -n | awk '
    { x[NR] = $1; y[NR] = $2; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
    END {
        n = NR; slope = (n * sxy - sx * sy) / (n * sxx - sx * sx); icpt = (sy - slope * sx) / n
        printf "  fit: %.0f instructions + %.1f per byte\n", icpt, slope
        worst = 0
        for (i = 1; i <= n; i++) {
            fit = icpt + slope * x[i]; dev = (y[i] - fit) / fit * 100
            printf "  %8d bytes: %12d measured, %12.0f fitted, %+6.2f%%\n", x[i], y[i], fit, dev
            if (dev < 0) dev = -dev; if (dev > worst) worst = dev
        }
        printf "  largest deviation from the line: %.2f%% (%s)\n", worst, worst < 5 ? "linear" : "NOT linear"
    }'

if [[ "${PROFILE:-0}" == 1 ]]; then
    for file in "$REAL" "$OUT/padded-200000.json"; do
        name=$(basename "$file" .json)
        env "${IMAGE_ENV_VARS[@]}" valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.$name.out" \
            "$PERF" hook "$file" 20 >/dev/null 2>&1
        echo
        echo "== where one sync's instructions go ($name, 20 calls + set-up; inclusive) =="
        callgrind_annotate --inclusive=yes --auto=no "$OUT/callgrind.$name.out" 2>/dev/null \
            | grep -E '^ *[0-9,]+ \(' \
            | grep -Ev 'PROGRAM TOTALS|ld-linux|below main|libc_start|rust_begin_short_backtrace|perf::main|:main ' \
            | sed 's/ \[[^]]*\]$//; s/???://' | cut -c1-140 | head -30
    done
fi

# server_run KIND FILE N [304]: total instructions of a server (KIND hook or echo) that answered
# N + 1 requests with FILE.
server_run() {
    local kind=$1 file=$2 n=$3 mode=${4:-200} port addr log pid ready
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    addr="127.0.0.1:$port"
    log="$OUT/callgrind-server-$kind.log"
    rm -f "$log"
    if [[ $kind == hook ]]; then
        env "${IMAGE_ENV_VARS[@]}" RUST_LOG=info valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            "$HOOK_BIN" serve --addr "$addr" --log-format json >/dev/null 2>"$log" &
        ready="memcached-hook serving"
    else
        env "${IMAGE_ENV_VARS[@]}" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$ECHO_BIN" "$addr" >/dev/null 2>"$log" &
        ready="echo serving on"
    fi
    pid=$!
    for _ in $(seq 1 600); do
        grep -qs "$ready" "$log" && break
        sleep 0.1
    done
    grep -qs "$ready" "$log" || { echo "$kind did not start under valgrind" >&2; kill -TERM "$pid"; exit 1; }
    python3 bench/requests.py "$addr" "$file" "$n" "$mode" || { kill -TERM "$pid"; exit 1; }
    kill -TERM "$pid"
    wait "$pid" || true
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log"
}

# server_per_request KIND FILE [304]: one request's instructions in the server.
server_per_request() {
    local few many
    few=$(server_run "$1" "$2" "$SERVER_FEW" "${3:-200}")
    many=$(server_run "$1" "$2" "$SERVER_MANY" "${3:-200}")
    echo $(( (many - few) / (SERVER_MANY - SERVER_FEW) ))
}

if [[ $SERVER == 1 ]]; then
    echo
    echo "the whole server path: user-space instructions per request in the server process"
    echo "(callgrind; $SERVER_MANY minus $SERVER_FEW keep-alive requests on one loopback connection; RUST_LOG=info)"
    printf '%-22s %8s %12s %12s %12s %11s %9s %11s\n' request bytes "echo 200" "hook 200" "hook 304" "hook/echo" "304/200" "outside"
    for file in "$REAL" "$OUT/padded-200000.json"; do
        bytes=$(stat -c %s "$file")
        echo_ir=$(server_per_request echo "$file")
        hook_ir=$(server_per_request hook "$file")
        nm_ir=$(server_per_request hook "$file" 304)
        # "outside": what the server does per request besides decode + sync() + encode
        # (the `hook` row of the table above) and the echo's HTTP work.
        printf '%-22s %8d %12d %12d %12d %11.2f %9.2f %11d\n' "$(basename "$file" .json)" "$bytes" \
            "$echo_ir" "$hook_ir" "$nm_ir" \
            "$(awk -v h="$hook_ir" -v e="$echo_ir" 'BEGIN { print h / e }')" \
            "$(awk -v n="$nm_ir" -v h="$hook_ir" 'BEGIN { print n / h }')" \
            $(( hook_ir - echo_ir - HOOK[$bytes] ))
    done
    echo "(304/200: target <= 0.3 in CPU; this ratio leaves out the kernel's share, which bench/load.sh includes)"
fi
