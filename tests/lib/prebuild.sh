#!/usr/bin/env bash
# Builds the tools of the helm, monitoring, fuzz and release phases (helm and promtool from their
# Go modules, cargo-fuzz and the fuzz target, the cross-compiled arm64 release binary) at the
# lowest priority, in the background, while the
# e2e and pods phases mostly wait on clusters: on 2 cores that CPU would otherwise sit idle.
# tests/run-all.sh starts it and waits for it before the first phase that needs it; each of those
# phases still builds whatever is missing itself, so a failure here only costs time, and is shown.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rc=0
step() { # step NAME COMMAND...: run it at the lowest priority, say how long it took
    local name=$1 start=$SECONDS
    shift
    if nice -n 19 "$@" >/dev/null; then
        echo "prebuild $name: ok in $((SECONDS - start))s"
    else
        echo "prebuild $name: failed after $((SECONDS - start))s (its phase builds it again)"
        rc=1
    fi
}
step helm bash "$ROOT/tests/tools/build-go-tool.sh" helm
step promtool bash "$ROOT/tests/tools/build-go-tool.sh" promtool
step fuzz bash "$ROOT/tests/fuzz/smoke.sh" --build-only
step arm64 bash "$ROOT/release/build.sh" --arm64-binary
exit "$rc"
