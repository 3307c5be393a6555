#!/usr/bin/env bash
# Builds the container image's binary the way the Dockerfile does, without a container engine
# (none runs here), and checks that it is static and runs with no file system around it.
#
#   bash tests/manifests/static-build.sh      (also: tests/manifests/check.sh --static-build)
#
# 1. The build context is the work tree filtered through .dockerignore, copied to
#    $HOME/.cache/memcached-hook/docker-context: a file the Dockerfile build would not see
#    cannot make this build pass.
# 2. The cargo command is read from the Dockerfile's builder stage, not repeated here, so the
#    two cannot drift apart. Only CARGO_TARGET_DIR is added (a cache outside the dev target/).
# 3. `file` and `ldd` must report a static executable.
# 4. The binary runs inside an otherwise empty chroot (no libc, no /etc, no /tmp): `crd` must
#    print deploy/crd/crd.yaml, and `serve` must answer GET /healthz.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/manifests"
CACHE="${MEMCACHED_HOOK_CACHE:-$HOME/.cache/memcached-hook}"
CONTEXT="$CACHE/docker-context"
export CARGO_TARGET_DIR="$CACHE/target-static"
WORK=$(mktemp -d)
server_pid=
cleanup() {
    if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

t0=$EPOCHREALTIME
elapsed() { awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# -- 1 + 2: context and command ------------------------------------------------------------------
mapfile -t command < <(python3 "$HERE/dockerfile_build.py" --root "$ROOT" --context "$CONTEXT")
[[ ${#command[@]} -gt 0 ]] || { echo "could not read the cargo command from the Dockerfile" >&2; exit 1; }
target=
for ((i = 0; i < ${#command[@]}; i++)); do
    [[ ${command[$i]} == --target ]] && target=${command[$((i + 1))]}
done
[[ -n "$target" ]] || { echo "the Dockerfile's cargo command names no --target" >&2; exit 1; }
echo "context: $CONTEXT ($(find "$CONTEXT" -type f | wc -l) files)"
echo "command: ${command[*]}"
echo "target dir: $CARGO_TARGET_DIR"
# Bounded: a cold release build with fat LTO takes a few minutes on 2 cores; crates.io downloads
# are bounded by cargo's own network timeouts.
(cd "$CONTEXT" && CARGO_NET_RETRY=3 CARGO_HTTP_TIMEOUT=60 timeout 2400 env "${command[@]}")
binary="$CARGO_TARGET_DIR/$target/release/memcached-hook"
echo "built $binary ($(du -h "$binary" | cut -f1)) in $(elapsed) s"

# -- 3: static? ----------------------------------------------------------------------------------
file_out=$(file -b "$binary")
echo "file: $file_out"
if [[ $file_out != *"statically linked"* && $file_out != *"static-pie linked"* ]]; then
    echo "not a static executable" >&2
    exit 1
fi
ldd_out=$(ldd "$binary" 2>&1 || true)
echo "ldd: $ldd_out"
if [[ $ldd_out != *"not a dynamic executable"* && $ldd_out != *"statically linked"* ]]; then
    echo "ldd lists shared libraries" >&2
    exit 1
fi

# -- 4: runs without any file system -------------------------------------------------------------
jail="$WORK/jail"
mkdir -p "$jail"
cp "$binary" "$jail/memcached-hook"
run=("$jail/memcached-hook")
if [[ $(id -u) -eq 0 ]] && command -v chroot >/dev/null; then
    run=(chroot "$jail" /memcached-hook)
    echo "running inside an empty chroot"
else
    echo "not root: running without chroot (static linkage was still checked above)"
fi
timeout 30 "${run[@]}" crd >"$WORK/crd.yaml"
if diff -q "$ROOT/deploy/crd/crd.yaml" "$WORK/crd.yaml" >/dev/null; then
    echo "crd: matches deploy/crd/crd.yaml"
else
    echo "crd: the static binary's output differs from deploy/crd/crd.yaml" >&2
    exit 1
fi
port=$((20000 + RANDOM % 20000))
timeout 60 "${run[@]}" serve --addr "127.0.0.1:$port" >"$WORK/serve.log" 2>&1 &
server_pid=$!
healthy=0
for _ in $(seq 1 50); do
    if curl -fsS --max-time 2 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
        healthy=1
        break
    fi
    sleep 0.2
done
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=
if [[ $healthy -ne 1 ]]; then
    echo "serve: GET /healthz did not answer; log:" >&2
    cat "$WORK/serve.log" >&2
    exit 1
fi
echo "serve: GET /healthz answered"
echo "static build: ok ($(elapsed) s)"
