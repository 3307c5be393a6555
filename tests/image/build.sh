#!/usr/bin/env bash
# Builds the container image for real, without Docker: buildah (Debian's package) puts the static
# binary of tests/manifests/static-build.sh (the Dockerfile's own cargo command) on an empty base,
# with the Dockerfile's USER, ENTRYPOINT, ENV, EXPOSE and LABELs. Then inspects it and, where podman
# can start containers, runs it and calls /healthz and /sync.
#
#   bash tests/image/build.sh                 # build, inspect, run
#   IMAGE_OUT=/tmp/memcached-hook.oci.tar bash tests/image/build.sh   # ... and keep an OCI archive
#   (load it with `podman load -i` or push it with `skopeo copy oci-archive:... docker://...`)
#
# Steps (each timed):
#   tools    buildah, podman and runc from Debian's packages (apt-get, once per machine)
#   binary   the static binary, through static-build.sh (a no-op when the manifests phase built it)
#   build    buildah: scratch + /memcached-hook (root-owned, 0755) + config; committed into a
#            throw-away storage under $WORK (vfs driver: no overlay mounts needed)
#   inspect  image.py check on the OCI layout: numeric non-root user, entrypoint, env, labels (the
#            Dockerfile's plus revision and created), port, one layer holding exactly the binary,
#            byte-identical to the static build, size
#   run      podman run (runc, host network on 127.0.0.1 only): GET /healthz, POST /sync with
#            tests/fixtures/sync/steady-state.json, the process's uid; when podman cannot start a
#            container on this machine the step says why in one line and is skipped
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/image"
CACHE="${MEMCACHED_HOOK_CACHE:-$HOME/.cache/memcached-hook}"
STATIC_BIN="$CACHE/target-static/x86_64-unknown-linux-gnu/release/memcached-hook"
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)
IMAGE="localhost/memcached-hook:$VERSION"
MAX_MIB=${IMAGE_MAX_MIB:-16}
WORK=$(mktemp -d)
STORE=(--root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
CTR=""
cleanup() {
    if [[ -n "$CTR" ]]; then podman "${STORE[@]}" rm -f "$CTR" >/dev/null 2>&1 || true; fi
    # vfs layers are plain directories, but a stopped container may leave a mount behind.
    buildah "${STORE[@]}" rm --all >/dev/null 2>&1 || true
    rm -rf "$WORK" 2>/dev/null || true
}
trap cleanup EXIT

# step, elapsed, passed/failed/failures, t_all
# shellcheck source=tests/lib/steps.sh
source "$ROOT/tests/lib/steps.sh"
# image_commit
# shellcheck source=tests/lib/image-recipe.sh
source "$ROOT/tests/lib/image-recipe.sh"
# apt_need
# shellcheck source=tests/lib/apt.sh
source "$ROOT/tests/lib/apt.sh"

tools() {
    apt_need buildah=buildah podman=podman runc=runc || return 1
    echo "$(buildah --version); $(podman --version); $(runc --version | head -n 1)"
}

binary() {
    # Always through cargo: after the manifests phase it is a no-op of seconds, and a binary
    # left by another checkout or an older commit is never taken for this one.
    echo "static binary: tests/manifests/static-build.sh (cargo rebuilds only what changed)"
    bash "$ROOT/tests/manifests/static-build.sh" || return 1
    file -b "$STATIC_BIN"
}

build() {
    image_commit amd64 "$STATIC_BIN" "$IMAGE" >"$WORK/image-id" || return 1
    echo "built $IMAGE ($(cut -c1-12 "$WORK/image-id"))"
    buildah "${STORE[@]}" push --quiet "$IMAGE" "oci:$WORK/oci" &&
        echo "OCI layout: $(du -sh "$WORK/oci" | cut -f1)"
    if [[ -n "${IMAGE_OUT:-}" ]]; then
        buildah "${STORE[@]}" push --quiet "$IMAGE" "oci-archive:$IMAGE_OUT:$IMAGE" && echo "OCI archive: $IMAGE_OUT"
    fi
}

inspect() {
    python3 "$HERE/image.py" check --oci-dir "$WORK/oci" --binary "$STATIC_BIN" \
        --dockerfile "$ROOT/Dockerfile" --version "$VERSION" --max-mib "$MAX_MIB"
}

RUN_SKIPPED=""
run() {
    local port out pid uid code body
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # runc: Debian's crun refuses this machine's hybrid cgroup hierarchy. The ulimits are set to
    # what the caller already has, because the container runtime may not raise them (no
    # CAP_SYS_RESOURCE in a sandbox). Host network, bound to 127.0.0.1 only.
    if ! out=$(podman "${STORE[@]}" run -d --runtime runc --network host \
        --ulimit "nofile=$(ulimit -n):$(ulimit -Hn)" --ulimit nproc=4096:4096 \
        -e "MEMCACHED_HOOK_ADDR=127.0.0.1:$port" "$IMAGE" 2>&1); then
        RUN_SKIPPED="podman cannot start a container here: $(tr '\n' ' ' <<<"$out")"
        return 0
    fi
    CTR=$out
    for _ in $(seq 1 50); do
        curl -fsS --max-time 2 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
        sleep 0.2
    done
    if ! body=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/healthz"); then
        echo "GET /healthz did not answer; container log:"
        podman "${STORE[@]}" logs "$CTR" 2>&1 | tail -n 20
        return 1
    fi
    echo "GET /healthz: $body"
    pid=$(podman "${STORE[@]}" inspect --format '{{.State.Pid}}' "$CTR")
    uid=$(awk '/^Uid:/ { print $2 ":" $3 }' "/proc/$pid/status")
    echo "container process $pid runs as uid $uid"
    [[ $uid == 65532:65532 ]] || { echo "want uid 65532"; return 1; }
    # The image's ENV reaches the process (the allocator setting, Dockerfile).
    local want got
    while IFS= read -r want; do
        got=$(tr '\0' '\n' <"/proc/$pid/environ" | grep -Fx -- "$want" || true)
        echo "container process environment: ${got:-missing $want}"
        [[ -n $got ]] || return 1
    done < <(python3 "$HERE/image.py" env --dockerfile "$ROOT/Dockerfile")
    code=$(curl -sS --max-time 5 -o "$WORK/sync.json" -w '%{http_code}' \
        -d @"$ROOT/tests/fixtures/sync/steady-state.json" "http://127.0.0.1:$port/sync")
    echo "POST /sync (steady-state.json): HTTP $code, $(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(len(r["children"]), "children:", ", ".join(sorted(c["kind"] for c in r["children"])) + ";",
      "conditions:", ", ".join(c["type"] + "=" + c["status"] for c in r["status"]["conditions"]))' "$WORK/sync.json")"
    [[ $code == 200 ]] || return 1
    podman "${STORE[@]}" stop --time 10 "$CTR" >/dev/null
    echo "stopped: exit code $(podman "${STORE[@]}" inspect --format '{{.State.ExitCode}}' "$CTR") after SIGTERM"
}

step tools tools
step binary binary
if [[ $failed -eq 0 ]]; then
    step build build
    step inspect inspect
    step run run
    [[ -z "$RUN_SKIPPED" ]] || echo "skip run: $RUN_SKIPPED"
fi
echo "total: $(elapsed "$t_all") s"
[[ $failed -eq 0 ]] || echo "failed steps: ${failures[*]}"
echo "image: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
