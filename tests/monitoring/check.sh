#!/usr/bin/env bash
# Checks deploy/monitoring/ (kube-state-metrics config, alerting rules, Grafana dashboard):
#
#   bash tests/monitoring/check.sh
#   KUBE_STATE_METRICS_BIN=/path/to/kube-state-metrics bash tests/monitoring/check.sh
#
# Steps (each timed):
#   tools      promtool built from its Go module (tests/tools/build-go-tool.sh, pinned, cached
#              outside the clone)
#   rules      promtool check rules deploy/monitoring/alerts.yaml
#   unit       promtool test rules tests/monitoring/alerts.test.yaml (every alert fires and stays
#              silent where it should)
#   static     check_monitoring.py: the config's structure against kube-state-metrics' documented
#              custom-resource-state schema and the CRD, a test for every alert, the dashboard's
#              series, the chart's copies
#   dashboard  promtool parses every dashboard query (written out by the static step)
#   ksm        kube-state-metrics with the config against the e2e kube-apiserver and a few
#              Memcacheds (ksm_e2e.py), when KUBE_STATE_METRICS_BIN names a binary: its Go module
#              is refused by the module proxy, so CI has none and the step says so in one line
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/monitoring"
MON="$ROOT/deploy/monitoring"
# WORK, suite_cluster_up, manifests_venv
# shellcheck source=tests/lib/suite-cluster.sh
source "$ROOT/tests/lib/suite-cluster.sh"

# step, elapsed, passed/failed/failures, t_all
# shellcheck source=tests/lib/steps.sh
source "$ROOT/tests/lib/steps.sh"

# PyYAML from the venv of tests/manifests (same pins), or the system's.
python_with_yaml() {
    local venv
    venv=$(manifests_venv)
    if [[ -f "$venv/.complete" ]]; then
        echo "$venv/bin/python"
    elif python3 -c 'import yaml' 2>/dev/null; then
        command -v python3
    else
        return 1
    fi
}

tools() {
    local t0=$EPOCHREALTIME
    PROMTOOL=$(bash "$ROOT/tests/tools/build-go-tool.sh" promtool) || return 1
    echo "promtool: $("$PROMTOOL" --version 2>&1 | head -n 1) ($(elapsed "$t0") s)"
    PYTHON=$(python_with_yaml) || { echo "no Python with PyYAML (run tests/manifests/check.sh first)"; return 1; }
}

rules() { "$PROMTOOL" check rules "$MON/alerts.yaml"; }
unit() { (cd "$HERE" && "$PROMTOOL" test rules alerts.test.yaml); }
static() { "$PYTHON" "$HERE/check_monitoring.py" --root "$ROOT" --dashboard-rules-out "$WORK/dashboard-rules.yaml"; }
dashboard() {
    [[ -s "$WORK/dashboard-rules.yaml" ]] || { echo "the static step wrote no dashboard queries"; return 1; }
    "$PROMTOOL" check rules "$WORK/dashboard-rules.yaml"
}

ksm() {
    local env
    # shellcheck source=/dev/null
    source "$ROOT/tests/e2e/versions.sh"
    suite_cluster_up "$ROOT/deploy/crd/crd.yaml" || return 1
    env=$(cat "$WORK/env.sh")
    (eval "$env" && "$PYTHON" "$HERE/ksm_e2e.py" --root "$ROOT" --ksm "$KUBE_STATE_METRICS_BIN" \
        --kubectl "$E2E_KUBECTL" --work "$WORK/ksm")
}

step tools tools
if [[ $failed -gt 0 ]]; then
    echo "monitoring: tools missing; nothing else can run"
    echo "monitoring: $passed passed, $failed failed"
    exit 1
fi
step rules rules
step unit unit
step static static
step dashboard dashboard
if [[ -z "${KUBE_STATE_METRICS_BIN:-}" ]]; then
    echo "skip ksm: KUBE_STATE_METRICS_BIN not set (kube-state-metrics' Go module is refused by the module proxy; docs/monitoring.md has a by-hand run)"
elif ! (source "$ROOT/tests/e2e/versions.sh" && [[ -x $KUBE_APISERVER_BIN && -x $ETCD_BIN && -x $KUBECTL_BIN ]]); then
    echo "skip ksm: the e2e binaries are not built (bash tests/e2e/build-bins.sh kube etcd)"
else
    step ksm ksm
fi
echo "total: $(elapsed "$t_all") s"
[[ $failed -eq 0 ]] || echo "failed steps: ${failures[*]}"
echo "monitoring: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
