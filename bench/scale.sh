#!/usr/bin/env bash
# A fleet of N Memcacheds with their pods, on simulated nodes: how fast Metacontroller and the hook
# bring it up, what it costs to keep it converged, and how it rides out a zone drain.
#
#   METACONTROLLER_BIN=... METACONTROLLER_CRDS_DIR=... bash bench/scale.sh
#   N=200 STEADY=120 VARIANT=qps100:--client-go-qps=100,--client-go-burst=200,--workers=20 bash bench/scale.sh
#
# The e2e control plane (tests/e2e/cluster.sh, loopback only) with NODES simulated nodes over
# ZONES zones (KWOK, built by tests/e2e/build-bins.sh kwok; pods turn Ready 1-3 s after they are
# bound), Metacontroller with the CompositeController of metacontroller/ pointed at the hook's
# release binary running locally. bench/scale.py then creates N Memcacheds (REPLICAS pods each,
# a PodDisruptionBudget each) and reports, phase by phase (create, STEADY seconds of steady state,
# a drain of zone DRAIN_ZONE through the eviction API): the time, CPU and peak RSS of
# Metacontroller, the hook, the API server and the other processes, syncs per parent and the API
# server's requests by verb and resource per parent. The load average is printed with each phase:
# the numbers are only comparable on an otherwise idle machine.
#
# Environment (defaults in brackets):
#   N [1000] REPLICAS [3] NODES [100] ZONES [3] STEADY [600]
#   DRAIN_ZONE the zone drained at the end [zone-a]; none: no drain
#   VARIANT    Metacontroller's flags: install [default: metacontroller/components/tuning], stock
#              (its own defaults), or NAME:FLAG,FLAG,... (the install's flags plus these)
#   WATCH_PODS 1: answer Metacontroller's customize calls from a stub that asks for related Pods
#              (Metacontroller then caches every Pod in the cluster; no Pod reaches the hook) [0]
#   BENCH_TIMEOUT  bound of each wait for convergence, seconds [1800]
#   STATUS_BOUND   longest a parent's status may lag its Deployment during the drain [30]
#   MEMCACHED_HOOK_BIN  the hook [$CARGO_TARGET_DIR/release/memcached-hook]
# Needs Metacontroller, built by hand outside the repository and supplied as METACONTROLLER_BIN +
# METACONTROLLER_CRDS_DIR; without it it says so and exits 0. Starts a cluster: run it under the
# host's cluster lock if others may start one too.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../tests/e2e/versions.sh
source "$ROOT/tests/e2e/versions.sh"
N=${N:-1000}
REPLICAS=${REPLICAS:-3}
NODES=${NODES:-100}
ZONES=${ZONES:-3}
STEADY=${STEADY:-600}
DRAIN_ZONE=${DRAIN_ZONE:-zone-a}
VARIANT=${VARIANT:-install}
WATCH_PODS=${WATCH_PODS:-0}
TIMEOUT=${BENCH_TIMEOUT:-1800}
# shellcheck source=needs-metacontroller.sh
source "$ROOT/bench/needs-metacontroller.sh"
for v in N REPLICAS NODES STEADY TIMEOUT; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "$v must be a whole number, not ${!v}" >&2; exit 2; }
done
case "$VARIANT" in
    stock) tuning=stock; extra="" ;;
    install) tuning=install; extra="" ;;
    *:*) tuning=install; extra=$(tr , ' ' <<<"${VARIANT#*:}") ;;
    *) echo "VARIANT must be stock, install or NAME:FLAG,..., not $VARIANT" >&2; exit 2 ;;
esac
bash "$ROOT/tests/e2e/build-bins.sh" kwok >/dev/null

WORK=$(mktemp -d)
export E2E_STATE_DIR="$WORK/cluster" SCALE_WORKDIR="$WORK"
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    bash "$ROOT/tests/e2e/cluster.sh" down >>"$WORK/down.log" 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

port=$(free_port)
RUST_LOG=warn "$HOOK_BIN" serve --addr "127.0.0.1:$port" >"$WORK/hook.log" 2>&1 &
hook_pid=$!
pids+=("$hook_pid")
customize_url="http://127.0.0.1:$port/customize"
if [[ "$WATCH_PODS" == 1 ]]; then
    stub_port=$(free_port)
    python3 "$ROOT/bench/scale.py" customize-stub --port "$stub_port" >"$WORK/stub.log" 2>&1 &
    pids+=("$!")
    customize_url="http://127.0.0.1:$stub_port/customize"
fi

E2E_METACONTROLLER=1 E2E_MC_TUNING=$tuning E2E_MC_ARGS="$extra" E2E_KWOK_NODES=$NODES \
    E2E_KWOK_ZONES=$ZONES E2E_PRELOAD_MANIFESTS="$ROOT/deploy/crd.yaml" \
    bash "$ROOT/tests/e2e/cluster.sh" up >"$WORK/env.sh" 2>"$WORK/up.log" || { tail -n 20 "$WORK/up.log"; exit 1; }
# shellcheck source=/dev/null
source "$WORK/env.sh"
kc() { "$E2E_KUBECTL" "$@"; }
# The CompositeController of metacontroller/, calling the local hook (or the stub for customize).
kc kustomize "$ROOT/metacontroller" \
    | sed -e "s#http://memcached-hook.memcached-system.svc:8080/customize#$customize_url#" \
        -e "s#http://memcached-hook.memcached-system.svc:8080#http://127.0.0.1:$port#" >"$WORK/cc.yaml"
kc apply -f "$WORK/cc.yaml" >/dev/null
ns=scale
kc create namespace "$ns" >/dev/null
# The namespace's default ServiceAccount, which every pod needs, before the first Deployment.
for _ in $(seq 1 100); do kc -n "$ns" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.3; done

pid_of() { awk '{print $1}' "$E2E_STATE_DIR/pids/$1"; }
flags=$(tr '\0' ' ' <"/proc/$(pid_of metacontroller)/cmdline" | { grep -o -- '--\(client-go-qps\|client-go-burst\|workers\)=[^ ]*' || echo '(Metacontroller defaults)'; } | tr '\n' ' ')
echo "hook $("$HOOK_BIN" --version 2>/dev/null || echo "$HOOK_BIN"), Metacontroller $VARIANT: $flags; pods watched by Metacontroller: $([[ $WATCH_PODS == 1 ]] && echo yes || echo no)"
echo "$NODES simulated nodes over $ZONES zones (KWOK $KWOK_VERSION), Kubernetes $K8S_VERSION; load average $(cut -d' ' -f1-3 /proc/loadavg)"
proc_list="metacontroller=$(pid_of metacontroller),hook=$hook_pid,kube-apiserver=$(pid_of kube-apiserver)"
proc_list+=",etcd=$(pid_of etcd),kube-controller-manager=$(pid_of kube-controller-manager)"
proc_list+=",kube-scheduler=$(pid_of kube-scheduler),kwok=$(pid_of kwok)"
python3 "$ROOT/bench/scale.py" run --ns "$ns" --n "$N" --replicas "$REPLICAS" --steady "$STEADY" \
    --zone "$DRAIN_ZONE" --timeout "$TIMEOUT" --bound "${STATUS_BOUND:-30}" \
    --hook-metrics "http://127.0.0.1:$port/metrics" --pids "$proc_list"
