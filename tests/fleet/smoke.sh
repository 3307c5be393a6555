#!/usr/bin/env bash
# A small fleet under the real Metacontroller, with bounds on what it costs.
#
#   METACONTROLLER_BIN=... METACONTROLLER_CRDS_DIR=... MEMCACHED_HOOK_BIN=... bash tests/fleet/smoke.sh
#
# bench/scale.sh with N (100) Memcacheds of 3 replicas on KWOK nodes in 3 zones, STEADY (60) seconds
# of steady state and no drain, then the numbers it measured against the bounds below. Prints the
# numbers and one `ok`/`FAIL` line per bound; exits 1 when a bound is passed or the run fails, 77
# (skipped) with one SKIPPED line when no Metacontroller is supplied.
#
# Environment: N, STEADY, MEMCACHED_HOOK_BIN (the hook, default the release build), and
# METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/e2e/versions.sh
source "$ROOT/tests/e2e/versions.sh"

# ---- bounds --------------------------------------------------------------------------------------
# Syncs per parent while the fleet is created, until every Memcached is Ready. Metacontroller
# syncs a parent once when it appears and again on every change it sees to one of its children:
# the Deployment's status (created, then 1, 2 and 3 ready pods: KWOK turns each pod Ready 1-3 s
# after it is bound, so these come apart) and the PodDisruptionBudget's (created, then 1, 2 and 3
# healthy pods), about 1 + 4 + 4 = 9, less what its work queue folds together. Measured at
# N=100: 4.48 on an idle machine, 6.95 with builds beside it (2026-11-28, BENCHMARKS.md). 12
# leaves room for a slow machine; a hook whose answer changes from one sync to the next loops on
# its own writes and passes it at once (and writes in the steady state, the second bound).
MAX_SYNCS_PER_PARENT=${MAX_SYNCS_PER_PARENT:-12}
# The controller's writes per minute once every Memcached is Ready: none. The hook answers the
# same children and status to the same observed state, and Metacontroller writes only what
# differs; one write is a hook whose answer is not stable.
MAX_STEADY_WRITES_PER_MINUTE=0
# --------------------------------------------------------------------------------------------------

N=${N:-100}
STEADY=${STEADY:-60}
if ! metacontroller_supplied; then
    echo "SKIPPED fleet smoke: $(metacontroller_absent)"
    exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-fleet.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

if ! N=$N STEADY=$STEADY REPLICAS=3 NODES=30 ZONES=3 DRAIN_ZONE=none BENCH_TIMEOUT=600 \
    RESULTS_DIR="$WORK" timeout 1200 bash "$ROOT/bench/scale.sh" >"$WORK/scale.log" 2>&1 ||
    [[ ! -f "$WORK/hook.json" ]] || ! grep -q '"steady"' "$WORK/hook.json"; then
    tail -n 40 "$WORK/scale.log"
    echo "FAIL fleet smoke: bench/scale.sh did not finish (N=$N)"
    exit 1
fi
grep -E '^(==|   (syncs|the controller|metacontroller|hook) )' "$WORK/scale.log"

python3 - "$WORK/hook.json" "$MAX_SYNCS_PER_PARENT" "$MAX_STEADY_WRITES_PER_MINUTE" <<'PY'
import json
import sys

summary = json.load(open(sys.argv[1]))
max_syncs, max_writes = float(sys.argv[2]), float(sys.argv[3])
syncs = summary["create"]["syncs"]
writes = summary["steady"]["writes"] * 60 / max(summary["steady_seconds"], 1)
failed = 0
for name, value, bound in (("syncs per parent at creation", syncs, max_syncs),
                           ("controller writes per minute at steady state", writes, max_writes)):
    ok = value <= bound
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} fleet N={summary['n']}: {name} {value:.2f} (bound {bound:g})")
print(f"fleet: Ready after {summary['create']['seconds']:.1f} s; "
      f"{summary['create']['ready']}/{summary['n']} Ready")
sys.exit(1 if failed else 0)
PY
