#!/usr/bin/env bash
# Load and faults on loopback, bounded in count and time: bash tests/load/run.sh
#
# Starts memcached-hook on 127.0.0.1 (a fresh process per phase) and drives it with
# tests/load/client.py (Python standard library only):
#   sustained  keep-alive load with the sync fixtures: zero failed requests, flat VmRSS
#   sigterm    SIGTERM in the middle of a load run: every accepted request answered, exit 0
#   slowloris  byte-by-byte headers, stalled bodies and silent connections: the server keeps
#              answering a good client and sheds the slow ones within its timeouts
#   timeout    a trickling body gets the per-request timeout's 408 before 10 s; a body over
#              the limit gets 413
# Settings (environment): PHASES (default: all four), DURATION (sustained seconds, 30),
# CONNECTIONS (sustained, 16), SLOW_CONNECTIONS (slowloris, 600), MEMCACHED_HOOK_BIN (skip the build and
# use this binary), PROFILE (cargo profile to build, release), IMAGE_ENV (1: the server runs with
# the image's environment, the Dockerfile's ENV lines, as deployed; 0: without).
# Prints `load: N passed, M failed` and exits non-zero when a phase fails.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}
export PATH="$HOME/.cargo/bin:$PATH"
PHASES=${PHASES:-sustained sigterm slowloris timeout}
DURATION=${DURATION:-30}
CONNECTIONS=${CONNECTIONS:-16}
SLOW_CONNECTIONS=${SLOW_CONNECTIONS:-600}
PROFILE=${PROFILE:-release}
CLIENT=$ROOT/tests/load/client.py

# shellcheck source=tests/lib/hook-bin.sh
source "$ROOT/tests/lib/hook-bin.sh"
[ -n "${MEMCACHED_HOOK_BIN:-}" ] || echo "building memcached-hook ($PROFILE profile)"
cargo_log=$(mktemp)
HOOK_BIN=$(hook_bin "$cargo_log" "$PROFILE") || exit 1
rm -f "$cargo_log"
[ -x "$HOOK_BIN" ] || { echo "no binary at $HOOK_BIN"; exit 1; }

# The Dockerfile's ENV lines (glibc's allocator setting): the server runs as in the image.
# shellcheck source=tests/lib/image-env.sh
source "$ROOT/tests/lib/image-env.sh"
echo "server environment: ${IMAGE_ENV_VARS[*]:-(none)}"

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
    # Only the server this script started, by its PID.
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

healthy() {
    python3 - "$1" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen("http://127.0.0.1:%s/healthz" % sys.argv[1], timeout=1) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

# start_server NAME: starts the hook on a free port; sets PORT and SERVER_PID.
start_server() {
    PORT=$(free_port)
    env "${IMAGE_ENV_VARS[@]}" RUST_LOG="${RUST_LOG:-info}" "$HOOK_BIN" serve --addr "127.0.0.1:$PORT" --log-format json \
        >"$WORK/$1.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        healthy "$PORT" && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "$1: the server did not become healthy"
    tail -5 "$WORK/$1.log"
    return 1
}

# wait_exit SECONDS: waits for the server to exit by itself; sets EXIT_CODE (or returns 1).
wait_exit() {
    local deadline=$((SECONDS + $1))
    while kill -0 "$SERVER_PID" 2>/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "the server did not exit within $1 s"
            return 1
        fi
        sleep 0.1
    done
    wait "$SERVER_PID"
    EXIT_CODE=$?
    SERVER_PID=
    return 0
}

# stop_server: SIGTERM, then the exit code must be 0.
stop_server() {
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait_exit 15 || return 1
    [ "$EXIT_CODE" -eq 0 ] || { echo "exit code $EXIT_CODE after SIGTERM"; return 1; }
}

phase_sustained() {
    start_server sustained || return 1
    timeout $((DURATION + 120)) python3 "$CLIENT" sustained --port "$PORT" --pid "$SERVER_PID" \
        --duration "$DURATION" --connections "$CONNECTIONS"
    local rc=$?
    stop_server || rc=1
    return "$rc"
}

phase_sigterm() {
    # The per-request "sync answered" line is debug: turn it on for the handlers, so that every
    # /sync request the server handled leaves one log line to count below.
    RUST_LOG=info,memcached_hook::server::handlers=debug start_server sigterm || return 1
    local started=$SECONDS
    timeout 120 python3 "$CLIENT" sigterm --port "$PORT" --pid "$SERVER_PID" --duration 5 --connections 8 \
        | tee "$WORK/sigterm.out"
    local rc=${PIPESTATUS[0]}
    if ! wait_exit 15; then
        return 1
    fi
    echo "sigterm: the server exited with code $EXIT_CODE ($((SECONDS - started)) s after the run began)"
    [ "$EXIT_CODE" -eq 0 ] || rc=1
    # Every /sync request the server handled (one log line each) reached the client.
    local handled seen
    handled=$(grep -c '"path":"/sync"' "$WORK/sigterm.log")
    seen=$(sed -n 's/^answered-sync-requests: //p' "$WORK/sigterm.out")
    echo "sigterm: /sync requests handled by the server: $handled, answers received: ${seen:-?}"
    [ "$handled" = "${seen:-x}" ] || { echo "sigterm: handled and received differ"; rc=1; }
    return "$rc"
}

phase_slowloris() {
    start_server slowloris || return 1
    timeout 120 python3 "$CLIENT" slowloris --port "$PORT" --pid "$SERVER_PID" --duration 10 \
        --connections "$SLOW_CONNECTIONS"
    local rc=$?
    stop_server || rc=1
    return "$rc"
}

phase_timeout() {
    start_server timeout || return 1
    timeout 60 python3 "$CLIENT" timeout --port "$PORT" --pid "$SERVER_PID"
    local rc=$?
    stop_server || rc=1
    return "$rc"
}

passed=0
failed=0
for phase in $PHASES; do
    echo "=== load phase $phase ==="
    if "phase_$phase"; then
        passed=$((passed + 1))
        echo "=== $phase: ok ==="
    else
        failed=$((failed + 1))
        echo "=== $phase: FAILED ==="
        [ -f "$WORK/$phase.log" ] && { echo "last server log lines:"; tail -5 "$WORK/$phase.log"; }
    fi
done
echo "load: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
