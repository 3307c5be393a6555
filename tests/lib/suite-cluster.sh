# shellcheck shell=bash
# A suite's scratch dir and its own control plane (tests/e2e/cluster.sh), sourced by the suites'
# scripts once ROOT is set:
#
#   source "$ROOT/tests/lib/suite-cluster.sh"   # WORK=$(mktemp -d), removed at exit
#   suite_cluster_up "$preload" || return 1     # kube-apiserver with the manifests $preload
#                                               # applied; the cluster's env in $WORK/env.sh
#   VENV=$(manifests_venv)                      # the Python venv of tests/manifests/check.sh
#
# At exit a cluster this started is brought down (its log in $WORK/cluster.log), then WORK goes.
WORK=$(mktemp -d)
_SUITE_CLUSTER_UP=0
_suite_cleanup() {
    if ((_SUITE_CLUSTER_UP)); then
        E2E_STATE_DIR="$WORK/e2e" bash "$ROOT/tests/e2e/cluster.sh" down >>"$WORK/cluster.log" 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap _suite_cleanup EXIT

suite_cluster_up() {
    E2E_STATE_DIR="$WORK/e2e" E2E_METACONTROLLER=0 E2E_PRELOAD_MANIFESTS="$1" \
        bash "$ROOT/tests/e2e/cluster.sh" up >"$WORK/env.sh" 2>"$WORK/cluster.log" || {
        tail -n 20 "$WORK/cluster.log"
        return 1
    }
    _SUITE_CLUSTER_UP=1
}

# The venv tests/manifests/check.sh installs (its pins: TOOLS_REVISION and requirements.txt).
manifests_venv() {
    local key
    key=$( { sed -n 's/^TOOLS_REVISION=\(.*\)$/\1/p' "$ROOT/tests/manifests/check.sh"
             cat "$ROOT/tests/manifests/requirements.txt"; } | sha256sum | cut -c1-12)
    printf '%s\n' "${MEMCACHED_HOOK_CACHE:-$HOME/.cache/memcached-hook}/venv/manifests-$key"
}
