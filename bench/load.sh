#!/usr/bin/env bash
# Load on loopback: the hook against an echo server from the same stack, bounded in time.
#
#   bash bench/load.sh                 # about 2-3 minutes after the build
#
# Settings (environment): DURATION (seconds per wrk run, 10), CONNECTIONS (wrk connections for
# the peak runs, 8), THREADS (wrk threads, 1), READY_RUNS (start-to-ready samples, 20),
# BENCH_OUT (where requests, logs and /usr/bin/time reports go).
#
# For each request (the realistic tests/fixtures/sync/steady-state.json and a ~200 KB one that
# bench/gen-large.py pads from it) it starts, each under `/usr/bin/time -v` on a free
# 127.0.0.1 port, a fresh release `memcached-hook serve` and a fresh `echo` (examples/echo.rs:
# same runtime, connection loop and layers, answers the request body), and runs with the same
# wrk settings:
#   peak       closed loop, CONNECTIONS connections: requests/s of the hook and of the echo
#              server, and the ratio hook/echo; the server's CPU time per request (utime+stime
#              from /proc/PID/stat over the run);
#   304        the same body with If-None-Match: the hook's ETag: requests/s and CPU per
#              request, and the ratio of CPU per request 304/200;
#   half-peak  the hook at half its measured peak rate: each connection waits a random think
#              time (exponential, mean 10 ms, wrk's Lua `delay()`) after each answer, and the
#              number of connections is set so that the rate is half the peak (a 3 s
#              calibration run, then the measured run); wrk's latency percentiles (p50/p99) of
#              that run, measured from sending a request to its answer. wrk 4 has no open-loop
#              mode (wrk2's -R); many connections with random think times make the arrivals
#              close to a Poisson stream at that rate. A fixed delay would line the connections
#              up into bursts and measure the bursts instead.
# Peak RSS is /usr/bin/time -v's "Maximum resident set size" of each server over all its runs.
# Both servers run with the image's environment (the Dockerfile's ENV: glibc's allocator
# setting), as deployed; IMAGE_ENV=0 runs them with glibc's defaults instead, for comparison.
# Start-to-ready is examples/ready.rs: spawn, poll GET /readyz every 100 µs, kill (min, median).
#
# Only processes this script starts are signalled, by PID; everything listens on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-8}
THREADS=${THREADS:-1}
READY_RUNS=${READY_RUNS:-20}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}"
OUT="${BENCH_OUT:-$CARGO_TARGET_DIR/bench}"
mkdir -p "$OUT"

need() {
    command -v "$1" >/dev/null && return
    echo "installing $2 (Debian package)" >&2
    apt-get install -y -qq "$2" >/dev/null
}
need wrk wrk
[[ -x /usr/bin/time ]] || need /usr/bin/time time
need curl curl

[[ "${SKIP_BUILD:-0}" == 1 ]] || cargo build --release --bin memcached-hook --example echo --example ready >&2
HOOK="$CARGO_TARGET_DIR/release/memcached-hook"
ECHO="$CARGO_TARGET_DIR/release/examples/echo"
READY="$CARGO_TARGET_DIR/release/examples/ready"

# The Dockerfile's ENV lines, for the servers (not for wrk).
# shellcheck source=tests/lib/image-env.sh
source tests/lib/image-env.sh

# Both requests as Metacontroller sends them: compact JSON (bench/compact.py, bench/gen-large.py).
FIXTURE=tests/fixtures/sync/steady-state.json
REAL="$OUT/steady-state.json"
python3 bench/compact.py "$FIXTURE" "$REAL"
LARGE="$OUT/large.json"
python3 bench/gen-large.py --size 200000 "$FIXTURE" "$LARGE"

LUA="$OUT/post.lua"
cat >"$LUA" <<'EOF'
-- POST the file named by BODY_FILE; IF_NONE_MATCH and DELAY_MS are optional.
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
local inm = os.getenv("IF_NONE_MATCH")
if inm and inm ~= "" then wrk.headers["If-None-Match"] = inm end
-- Think time: exponential with mean DELAY_MS, so that the connections do not fire in step
-- (a fixed delay lines them up into bursts) and arrivals are close to a Poisson stream.
local d = tonumber(os.getenv("DELAY_MS") or "0")
function init(args)
    math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000003)
end
if d > 0 then
    function delay() return math.floor(-math.log(1 - math.random()) * d + 0.5) end
end
EOF

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

SERVER_PID=""   # the server process (child of /usr/bin/time)
TIME_PID=""     # the /usr/bin/time process
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; fi
    if [[ -n "$TIME_PID" ]]; then wait "$TIME_PID" 2>/dev/null || true; fi
    SERVER_PID=""
    TIME_PID=""
}
trap cleanup EXIT

# start NAME ADDR COMMAND...: runs COMMAND under /usr/bin/time -v and waits until it is ready.
start() {
    local name=$1 addr=$2
    shift 2
    /usr/bin/time -v -o "$OUT/time-$name.txt" env "${IMAGE_ENV_VARS[@]}" "$@" >"$OUT/$name.log" 2>&1 &
    TIME_PID=$!
    for _ in $(seq 1 500); do
        SERVER_PID=$(ps -o pid= --ppid "$TIME_PID" | tr -d ' ' || true)
        if [[ -n "$SERVER_PID" ]] && curl -sf "http://$addr/readyz" >/dev/null 2>&1; then return; fi
        sleep 0.01
    done
    echo "$name did not become ready" >&2
    exit 1
}

# stop NAME: SIGTERM to the server, wait for /usr/bin/time; sets RSS (peak, KiB).
stop() {
    kill -TERM "$SERVER_PID"
    wait "$TIME_PID" || true
    SERVER_PID=""
    TIME_PID=""
    RSS=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$OUT/time-$1.txt")
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }

# run URL CONNECTIONS [ENV...]: one wrk run; sets RPS, P50, P99 (ms), REQS and CPU_US (server
# CPU µs per request).
run() {
    local url=$1 conns=$2 before after out
    shift 2
    before=$(cpu_ticks)
    out=$(env BODY_FILE="$BODY" "$@" wrk -t"$THREADS" -c"$conns" -d"${RUN_SECONDS:-$DURATION}s" \
        --latency -s "$LUA" "$url")
    after=$(cpu_ticks)
    echo "$out" >>"$OUT/wrk.txt"
    if grep -q "Non-2xx or 3xx" <<<"$out"; then
        echo "unexpected status codes:" >&2
        echo "$out" >&2
        exit 1
    fi
    RPS=$(awk '/^Requests\/sec/ { print $2 }' <<<"$out")
    REQS=$(awk '/requests in/ { print $1 }' <<<"$out")
    P50=$(awk '$1 == "50%" { print $2 }' <<<"$out" | to_ms)
    P99=$(awk '$1 == "99%" { print $2 }' <<<"$out" | to_ms)
    CPU_US=$(awk -v t=$((after - before)) -v n="$REQS" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
}

to_ms() {
    awk '{ v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
           f = (u == "us") ? 0.001 : (u == "ms") ? 1 : (u == "s") ? 1000 : 1
           printf "%.3f", v * f }'
}

: >"$OUT/wrk.txt"
{
    echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
    echo "wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s per run; servers: release build"
    echo "server environment: ${IMAGE_ENV_VARS[*]:-(glibc defaults)}"
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/load.txt"
busy=$(awk '{ print ($1 > 0.5) }' /proc/loadavg)
if [[ $busy == 1 ]]; then
    echo "warning: the machine is busy (load average above 0.5): numbers will be low and noisy" | tee -a "$OUT/load.txt"
fi

for size in realistic large; do
    if [[ $size == realistic ]]; then BODY=$REAL; else BODY=$LARGE; fi
    bytes=$(stat -c %s "$BODY")

    addr="127.0.0.1:$(free_port)"
    start "hook-$size" "$addr" "$HOOK" serve --addr "$addr" --log-format json
    etag=$(curl -sf -o /dev/null -D - -H 'Content-Type: application/json' \
        --data-binary "@$BODY" "http://$addr/sync" | sed -n 's/^[Ee][Tt][Aa][Gg]: *//p' | tr -d '\r')
    code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
        -H "If-None-Match: $etag" --data-binary "@$BODY" "http://$addr/sync")
    [[ $code == 304 ]] || { echo "expected 304 with the ETag, got $code" >&2; exit 1; }

    run "http://$addr/sync" "$CONNECTIONS"
    hook_rps=$RPS hook_p99=$P99 hook_cpu=$CPU_US
    run "http://$addr/sync" "$CONNECTIONS" IF_NONE_MATCH="$etag"
    nm_rps=$RPS nm_cpu=$CPU_US

    # Half the peak: connections x 1000 / (delay + latency) = rate.
    target=$(awk -v r="$hook_rps" 'BEGIN { printf "%d", r / 2 }')
    delay=10
    conns=$(awk -v r="$target" -v d=$delay 'BEGIN { c = int(r * (d + 0.2) / 1000 + 0.5); print (c < 1 ? 1 : c) }')
    RUN_SECONDS=3 run "http://$addr/sync" "$conns" DELAY_MS=$delay
    conns=$(awk -v c="$conns" -v r="$RPS" -v t="$target" 'BEGIN { c = int(c * t / r + 0.5); print (c < 1 ? 1 : c) }')
    run "http://$addr/sync" "$conns" DELAY_MS=$delay
    half_rps=$RPS half_p50=$P50 half_p99=$P99 half_conns=$conns
    stop "hook-$size"
    hook_rss=$RSS

    # The echo server: its peak, and its latency at the hook's half-peak rate (same
    # connections and think time), i.e. what the stack alone costs at that rate.
    addr="127.0.0.1:$(free_port)"
    start "echo-$size" "$addr" "$ECHO" "$addr"
    run "http://$addr/sync" "$CONNECTIONS"
    echo_rps=$RPS echo_p99=$P99 echo_cpu=$CPU_US
    run "http://$addr/sync" "$half_conns" DELAY_MS=$delay
    echo_half_rps=$RPS echo_half_p99=$P99
    stop "echo-$size"
    echo_rss=$RSS

    {
        echo
        echo "== $size request: $(basename "$BODY") ($bytes bytes) =="
        printf '%-28s %12s %10s %14s %12s\n' "" "requests/s" "p99 ms" "CPU µs/req" "peak RSS"
        printf '%-28s %12.0f %10.3f %14s %9d KiB\n' "echo (200, body back)" "$echo_rps" "$echo_p99" "$echo_cpu" "$echo_rss"
        printf '%-28s %12.0f %10.3f %14s %9d KiB\n' "hook 200 (full sync)" "$hook_rps" "$hook_p99" "$hook_cpu" "$hook_rss"
        printf '%-28s %12.0f %10s %14s\n' "hook 304 (If-None-Match)" "$nm_rps" "" "$nm_cpu"
        # The targets: throughput >= 0.5x the echo on the realistic request (0.8x
        # beyond), >= 0.7x on the large one; p99 <= 1 ms at half the peak on the realistic one.
        if [[ $size == realistic ]]; then want_tput=0.5; else want_tput=0.7; fi
        awk -v h="$hook_rps" -v e="$echo_rps" -v hc="$hook_cpu" -v ec="$echo_cpu" -v nc="$nm_cpu" -v w="$want_tput" \
            'BEGIN { printf "throughput hook/echo: %.2f (target >= %s); CPU per request hook/echo: %.2f\n", h / e, w, hc / ec
                     printf "304 cost / full sync cost (server CPU per request): %.2f (target <= 0.3)\n", nc / hc }'
        if [[ $size == realistic ]]; then want_p99="(target <= 1 ms)"; else want_p99="(no target for this size)"; fi
        printf 'half peak: %.0f requests/s (%d connections, mean %d ms think time): p50 %.3f ms, p99 %.3f ms %s\n' \
            "$half_rps" "$half_conns" "$delay" "$half_p50" "$half_p99" "$want_p99"
        printf 'echo at the same load: %.0f requests/s: p99 %.3f ms\n' "$echo_half_rps" "$echo_half_p99"
        echo "peak RSS under load: hook $hook_rss KiB (target <= 15360 KiB), echo $echo_rss KiB"
        echo "load average after this size: $(cut -d' ' -f1-3 /proc/loadavg)"
    } | tee -a "$OUT/load.txt"
done

addr="127.0.0.1:$(free_port)"
{
    echo
    echo "== start to ready (spawn to first 200 from GET /readyz) =="
    "$READY" "$addr" "$READY_RUNS" -- env "${IMAGE_ENV_VARS[@]}" "$HOOK" serve --addr "$addr" | tail -1
    echo "(target <= 50 ms)"
} | tee -a "$OUT/load.txt"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
echo "full wrk output: $OUT/wrk.txt; summary: $OUT/load.txt"
