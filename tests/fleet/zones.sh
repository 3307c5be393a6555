#!/usr/bin/env bash
# Zoned Memcacheds under the real Metacontroller: a rollout goes zone by zone, and a drain of one
# zone keeps a second drain out of the next zone until the first is whole again.
#
#   METACONTROLLER_BIN=... METACONTROLLER_CRDS_DIR=... MEMCACHED_HOOK_BIN=... bash tests/fleet/zones.sh
#
# bench/scale.sh ZONED=1 with N (25) Memcacheds of spec.zones [zone-a, zone-b, zone-c], 1 replica
# per zone and a budget per zone, on 30 KWOK nodes in those zones; STEADY (10) seconds of steady
# state; then every Memcached's image changed, each parent's zone Deployments polled every second;
# then half of zone-a's nodes drained through the eviction API while a second drainer keeps
# evicting from half of zone-b's nodes. Fails when:
#   - two zones of one parent were rolling at once, or a zone started before the zones before it
#     (in spec.zones.names order) were done, or the rollout did not converge;
#   - a zone-b pod was evicted while its parent's zone-a Deployment was not whole;
#   - a pod on a node not drained went away (an eviction outside the drained nodes);
#   - zone-b's drained nodes were not emptied in the end, or the fleet did not re-converge;
#   - the run did not exercise the rule (no parent with pods on both zones' drained nodes, or no
#     zone-b eviction refused while the parent's zone-a was short).
# Prints the numbers and one `ok`/`FAIL` line per check; exits 1 on a failure, 77 (skipped) with
# one SKIPPED line when no Metacontroller is supplied.
#
# Environment: N, STEADY, MEMCACHED_HOOK_BIN (the hook, default the release build), and
# METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/e2e/versions.sh
source "$ROOT/tests/e2e/versions.sh"

N=${N:-25}
STEADY=${STEADY:-10}
if ! metacontroller_supplied; then
    echo "SKIPPED fleet zones: $(metacontroller_absent)"
    exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-fleet-zones.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

N=$N STEADY=$STEADY ZONED=1 REPLICAS=1 NODES=30 ZONES=3 DRAIN_ZONE=zone-a BENCH_TIMEOUT=300 \
    RESULTS_DIR="$WORK" timeout 900 bash "$ROOT/bench/scale.sh" >"$WORK/scale.log" 2>&1
if [[ ! -f "$WORK/hook.json" ]] || ! grep -q '"rollout"' "$WORK/hook.json"; then
    tail -n 40 "$WORK/scale.log"
    echo "FAIL fleet zones: bench/scale.sh did not reach the rollout (N=$N)"
    exit 1
fi
grep -E '^(== |rollout|zone-|pods gone|both drains|a drained|   VIOLATION)' "$WORK/scale.log"

python3 - "$WORK/hook.json" <<'PY'
import json
import sys

s = json.load(open(sys.argv[1]))
n, r = s["n"], s["rollout"]
checks = [
    ("most zones of one parent rolling at once", r["most_rolling"], r["most_rolling"] <= 1),
    ("polls with two zones of a parent rolling", r["two_rolling"], r["two_rolling"] == 0),
    ("zones started before the zones before them were done", r["out_of_order"],
     r["out_of_order"] == 0),
    ("rollout: seconds until every zone runs the new image (-1: never)", round(r["rolled"], 1),
     r["rolled"] >= 0),
    ("Ready after the rollout", r["ready"], r["ready"] == n),
]
d = s.get("drain")
if d is None:
    checks.append(("the drains ran (bench/scale.sh stopped before them)", "no", False))
    d = {"drainer2": {}, "seconds": -1, "lag": -1}
else:
    d2 = d["drainer2"]
    checks += [
        ("zone-b evictions that succeeded while the parent's zone-a was short", d2["violations"],
         d2["violations"] == 0),
        ("pods gone from nodes not drained", d["lost"], d["lost"] == 0),
        ("seconds until zone-b's drained nodes were empty (-1: never)", round(d2["emptied"], 1),
         d2["emptied"] >= 0),
        ("Ready after the drains", d["ready"], d["ready"] == n),
        ("parents with pods on both zones' drained nodes", d["both"], d["both"] > 0),
        ("zone-b evictions refused (429) while the parent's zone-a was short", d2["refused_short"],
         d2["refused_short"] > 0),
    ]
failed = 0
for name, value, ok in checks:
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} fleet zones N={n}: {name}: {value}")
print(f"fleet zones: rollout converged after {r['ready_after']:.1f} s; drains done and "
      f"re-converged after {d['seconds']:.1f} s; longest status lag {d['lag']:.1f} s")
sys.exit(1 if failed else 0)
PY
