#!/usr/bin/env bash
# A fleet of N Memcacheds with their pods, on simulated nodes: how fast Metacontroller and the hook
# bring it up, what it costs to keep it converged, and how it rides out a zone drain.
#
#   METACONTROLLER_BIN=... METACONTROLLER_CRDS_DIR=... bash bench/scale.sh
#   N=200 STEADY=120 VARIANT=qps100:--client-go-qps=100,--client-go-burst=200,--workers=20 bash bench/scale.sh
#   SYSTEMS="hook reference" REFERENCE_OPERATOR_BIN=... REFERENCE_CRDS_DIR=... N=200 bash bench/scale.sh
#
# The e2e control plane (tests/e2e/cluster.sh, loopback only) with NODES simulated nodes over
# ZONES zones (KWOK, built by tests/e2e/build-bins.sh kwok; pods turn Ready 1-3 s after they are
# bound), and the controller under test: Metacontroller with the CompositeController of
# metacontroller/ pointed at the hook's release binary running locally, or the reference operator.
# bench/scale.py then creates N Memcacheds (REPLICAS pods each, a PodDisruptionBudget each) and
# reports, phase by phase (create, STEADY seconds of steady state, a drain of zone DRAIN_ZONE
# through the eviction API): the time, CPU and peak RSS of the controller processes, the API
# server and the other processes, syncs per parent, the controller's own requests and the API
# server's requests by verb and resource per parent. The load average is printed with each phase:
# the numbers are only comparable on an otherwise idle machine.
#
# SYSTEMS names the controllers measured, one fresh cluster each, back to back, on the same fleet:
# hook (Metacontroller and the hook) and reference (the operator the CRD comes from, group
# memcached.c5c3.io, as a local process with its own CRDs: webhooks off, leader election off,
# metrics and health on loopback; see BENCHMARKS.md for what that changes). With more than one,
# a table of each measure side by side with its ratio follows (bench/scale.py compare).
#
# Environment (defaults in brackets):
#   SYSTEMS    hook, reference or both, in the order run [hook]
#   N [1000] REPLICAS [3; per zone with ZONED=1: 1] NODES [100] ZONES [3] STEADY [600]
#   ZONED      1: every Memcached has spec.zones (zone-a, zone-b, ... as the nodes), a budget per
#              zone; after the steady state a zone-by-zone rollout to ROLLOUT_IMAGE
#              [memcached:1.6-rollout; none: no rollout], polled every second; the drain (unless DRAIN_ZONE=none)
#              is then half of zone-a's nodes, with a second drainer on half of zone-b's [0]
#   DRAIN_ZONE the zone drained at the end [zone-a]; none: no drain; zone-a,zone-b: both at once
#              (each parent then has two pods to evict and its budget refuses the second, 429)
#   VARIANT    Metacontroller's flags: install [default: metacontroller/components/tuning], stock
#              (its own defaults), or NAME:FLAG,FLAG,... (the install's flags plus these)
#   UPGRADE    1 (hook only): every Memcached runs the hook's own image (SASL with the reload
#              agent) and the CompositeController resyncs every RESYNC [20] seconds; after the run
#              the hook restarts with its own image at a new tag, and bench/scale.py upgrade
#              counts the workload writes of three resync periods (goal 0) and the syncs per
#              parent [0]. With DRAIN_ZONE=none and a short STEADY it measures just that.
#   PROXY      1 (hook only): every Memcached is a StatefulSet with spec.proxy (two proxy pods per
#              zone, or in all), Ready only with ProxyReady True; needs DRAIN_ZONE=none and, with
#              ZONED=1, ROLLOUT_IMAGE=none (both follow the cache's Deployments); the hook then
#              names the reload agent's image memcached-hook:bench (KWOK pulls nothing, and
#              ProxyReady stays False under the placeholder image) [0]
#   WATCH_PODS 1: answer Metacontroller's customize calls from a stub that asks for related Pods
#              (Metacontroller then caches every Pod in the cluster; no Pod reaches the hook) [0]
#   BENCH_TIMEOUT  bound of each wait for convergence, seconds [1800]
#   STATUS_BOUND   longest a parent's status may lag its Deployment during the drain [30]
#   MEMCACHED_HOOK_BIN  the hook [$CARGO_TARGET_DIR/release/memcached-hook]
#   REFERENCE_ARGS      more flags for the reference operator, split on spaces []
#   RESULTS_DIR         where each system's summary (SYSTEM.json) is kept [a temporary dir]
# The hook needs Metacontroller, built by hand outside the repository and supplied as
# METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR; the reference needs its manager binary and CRD
# manifests (its own and the ServiceMonitor CRD it watches), built and extracted by hand outside
# the repository, as REFERENCE_OPERATOR_BIN + REFERENCE_CRDS_DIR. A system not supplied is skipped
# in one line. Starts a cluster: run it under the host's cluster lock if others may start one too.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../tests/e2e/versions.sh
source "$ROOT/tests/e2e/versions.sh"
# shellcheck source=../tests/lib/local-hook-cc.sh
source "$ROOT/tests/lib/local-hook-cc.sh"
N=${N:-1000}
ZONED=${ZONED:-0}
if [[ "$ZONED" == 1 ]]; then REPLICAS=${REPLICAS:-1}; else REPLICAS=${REPLICAS:-3}; fi
ROLLOUT_IMAGE=${ROLLOUT_IMAGE:-memcached:1.6-rollout}
NODES=${NODES:-100}
ZONES=${ZONES:-3}
STEADY=${STEADY:-600}
DRAIN_ZONE=${DRAIN_ZONE:-zone-a}
VARIANT=${VARIANT:-install}
WATCH_PODS=${WATCH_PODS:-0}
TIMEOUT=${BENCH_TIMEOUT:-1800}
UPGRADE=${UPGRADE:-0}
PROXY=${PROXY:-0}
RESYNC=${RESYNC:-20}
for v in N REPLICAS NODES ZONES STEADY TIMEOUT RESYNC; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "$v must be a whole number, not ${!v}" >&2; exit 2; }
done
[[ "$ZONED" == 0 || "$ZONED" == 1 ]] || { echo "ZONED must be 0 or 1, not $ZONED" >&2; exit 2; }
[[ "$UPGRADE" == 0 || "$UPGRADE" == 1 ]] || { echo "UPGRADE must be 0 or 1, not $UPGRADE" >&2; exit 2; }
[[ "$PROXY" == 0 || "$PROXY" == 1 ]] || { echo "PROXY must be 0 or 1, not $PROXY" >&2; exit 2; }
if [[ "$PROXY" == 1 ]] && { [[ "${SYSTEMS:-hook}" != hook || "$DRAIN_ZONE" != none ]] ||
    [[ "$ZONED" == 1 && "$ROLLOUT_IMAGE" != none ]]; }; then
    echo "PROXY=1 needs SYSTEMS=hook, DRAIN_ZONE=none and with ZONED=1 ROLLOUT_IMAGE=none" >&2
    exit 2
fi
if [[ "$UPGRADE" == 1 && "${SYSTEMS:-hook}" != hook ]]; then
    echo "UPGRADE=1 needs SYSTEMS=hook (it restarts the hook)" >&2
    exit 2
fi
if [[ "$ZONED" == 1 ]] && { ((ZONES < 2 || ZONES > 9)) || [[ "${SYSTEMS:-hook}" != hook ]]; }; then
    echo "ZONED=1 needs 2-9 ZONES and SYSTEMS=hook (the reference operator has no zones)" >&2
    exit 2
fi
[[ "$DRAIN_ZONE" =~ ^[a-z0-9,-]+$ ]] || { echo "DRAIN_ZONE must be zone names separated by commas, or none" >&2; exit 2; }

# More than one system: each in its own run of this script, then the comparison.
read -r -a systems <<<"${SYSTEMS:-hook}"
for s in "${systems[@]}"; do
    [[ "$s" == hook || "$s" == reference ]] || { echo "SYSTEMS must name hook and/or reference, not $s" >&2; exit 2; }
done
if [[ -z "${SCALE_SYSTEM:-}" ]]; then
    results=${RESULTS_DIR:-$(mktemp -d)}
    mkdir -p "$results"
    summaries=()
    for s in "${systems[@]}"; do
        echo "=== $s"
        rm -f "$results/$s.json"
        SCALE_SYSTEM=$s SCALE_SUMMARY="$results/$s.json" bash "${BASH_SOURCE[0]}" || echo "=== $s failed (exit $?)"
        [[ -f "$results/$s.json" ]] && summaries+=("$results/$s.json")
    done
    if ((${#summaries[@]} > 1)); then
        echo
        python3 "$ROOT/bench/scale.py" compare "${summaries[@]}"
    fi
    [[ -n "${RESULTS_DIR:-}" ]] || rm -rf "$results"
    exit 0
fi

SYSTEM=$SCALE_SYSTEM
if [[ "$SYSTEM" == hook ]]; then
    # shellcheck source=needs-metacontroller.sh
    source "$ROOT/bench/needs-metacontroller.sh"
    case "$VARIANT" in
        stock) tuning=stock; extra="" ;;
        install) tuning=install; extra="" ;;
        *:*) tuning=install; extra=$(tr , ' ' <<<"${VARIANT#*:}") ;;
        *) echo "VARIANT must be stock, install or NAME:FLAG,..., not $VARIANT" >&2; exit 2 ;;
    esac
else
    # shellcheck source=needs-reference.sh
    source "$ROOT/bench/needs-reference.sh"
fi
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
cluster_up() {
    E2E_KWOK_NODES=$NODES E2E_KWOK_ZONES=$ZONES bash "$ROOT/tests/e2e/cluster.sh" up >"$WORK/env.sh" 2>"$WORK/up.log" \
        || { tail -n 20 "$WORK/up.log"; exit 1; }
    # shellcheck source=/dev/null
    source "$WORK/env.sh"
}
pid_of() { awk '{print $1}' "$E2E_STATE_DIR/pids/$1"; }
kc() { "$E2E_KUBECTL" "$@"; }

if [[ "$SYSTEM" == hook ]]; then
    port=$(free_port)
    hook_args=()
    [[ "$PROXY" == 1 ]] && hook_args=(--reload-agent-image memcached-hook:bench)
    RUST_LOG=warn "$HOOK_BIN" serve --addr "127.0.0.1:$port" "${hook_args[@]}" >"$WORK/hook.log" 2>&1 &
    hook_pid=$!
    pids+=("$hook_pid")
    customize_url="http://127.0.0.1:$port/customize"
    if [[ "$WATCH_PODS" == 1 ]]; then
        stub_port=$(free_port)
        python3 "$ROOT/bench/scale.py" customize-stub --port "$stub_port" >"$WORK/stub.log" 2>&1 &
        pids+=("$!")
        customize_url="http://127.0.0.1:$stub_port/customize"
    fi
    E2E_METACONTROLLER=1 E2E_MC_TUNING=$tuning E2E_MC_ARGS="$extra" \
        E2E_PRELOAD_MANIFESTS="$ROOT/deploy/crd/crd.yaml" cluster_up
    # The CompositeController of metacontroller/, calling the local hook (or the stub for customize).
    kc kustomize "$ROOT/metacontroller" | local_hook_cc "http://127.0.0.1:$port" "$customize_url" >"$WORK/cc.yaml" \
        || exit 1
    if [[ "$UPGRADE" == 1 ]]; then
        # The CompositeController's spec (kustomize sorts keys: the first `spec:` after its kind).
        awk -v period="$RESYNC" '{ print } /^kind: CompositeController$/ { cc = 1 }
            cc && /^spec:$/ { print "  resyncPeriodSeconds: " period; cc = 0 }' "$WORK/cc.yaml" >"$WORK/cc-resync.yaml"
        grep -q "^  resyncPeriodSeconds: $RESYNC\$" "$WORK/cc-resync.yaml" || { echo "no resync period set" >&2; exit 1; }
        mv "$WORK/cc-resync.yaml" "$WORK/cc.yaml"
    fi
    kc apply -f "$WORK/cc.yaml" >/dev/null
    flags=$(tr '\0' ' ' <"/proc/$(pid_of metacontroller)/cmdline" | { grep -o -- '--\(client-go-qps\|client-go-burst\|workers\)=[^ ]*' || echo '(Metacontroller defaults)'; } | tr '\n' ' ')
    echo "hook $("$HOOK_BIN" --version 2>/dev/null || echo "$HOOK_BIN"), Metacontroller $VARIANT: $flags; pods watched by Metacontroller: $([[ $WATCH_PODS == 1 ]] && echo yes || echo no)"
    controllers="metacontroller=$(pid_of metacontroller),hook=$hook_pid"
    measure=(--syncs-metrics "http://127.0.0.1:$port/metrics" --syncs-metric memcached_hook_sync_outcomes_total:outcome
        --client-metrics "$E2E_METACONTROLLER_METRICS_URL")
else
    E2E_METACONTROLLER=0 E2E_PRELOAD_MANIFESTS="$REFERENCE_CRDS_DIR" cluster_up
    mport=$(free_port)
    hport=$(free_port)
    read -r -a ref_extra <<<"${REFERENCE_ARGS:-}"
    # Its defaults otherwise (one worker; no client-side rate limit, which its controller-runtime
    # leaves to the API server's priority and fairness; development logging).
    KUBECONFIG="$E2E_STATE_DIR/kubeconfig" "$REFERENCE_OPERATOR_BIN" --leader-elect=false --enable-webhooks=false \
        --metrics-bind-address="127.0.0.1:$mport" --metrics-secure=false \
        --health-probe-bind-address="127.0.0.1:$hport" "${ref_extra[@]}" >"$WORK/reference.log" 2>&1 &
    ref_pid=$!
    pids+=("$ref_pid")
    for _ in $(seq 1 200); do
        curl -sf --max-time 2 "http://127.0.0.1:$hport/readyz" >/dev/null 2>&1 && break
        kill -0 "$ref_pid" 2>/dev/null || { tail -n 20 "$WORK/reference.log"; exit 1; }
        sleep 0.3
    done
    curl -sf --max-time 2 "http://127.0.0.1:$hport/readyz" >/dev/null || { echo "the reference operator is not ready" >&2; tail -n 20 "$WORK/reference.log"; exit 1; }
    echo "reference operator $REFERENCE_OPERATOR_BIN --enable-webhooks=false --leader-elect=false ${REFERENCE_ARGS:-}"
    controllers="reference=$ref_pid"
    measure=(--syncs-metrics "http://127.0.0.1:$mport/metrics" --syncs-metric controller_runtime_reconcile_total:result
        --client-metrics "http://127.0.0.1:$mport/metrics")
fi
ns=scale
kc create namespace "$ns" >/dev/null
# The namespace's default ServiceAccount, which every pod needs, before the first Deployment.
for _ in $(seq 1 100); do kc -n "$ns" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.3; done

echo "$NODES simulated nodes over $ZONES zones (KWOK $KWOK_VERSION), Kubernetes $K8S_VERSION; load average $(cut -d' ' -f1-3 /proc/loadavg)"
proc_list="$controllers,kube-apiserver=$(pid_of kube-apiserver)"
proc_list+=",etcd=$(pid_of etcd),kube-controller-manager=$(pid_of kube-controller-manager)"
proc_list+=",kube-scheduler=$(pid_of kube-scheduler),kwok=$(pid_of kwok)"
zoned=()
if [[ "$ZONED" == 1 ]]; then
    letters=(a b c d e f g h i)
    names=$(for ((i = 0; i < ZONES; i++)); do printf 'zone-%s,' "${letters[i]}"; done)
    zoned=(--zones "${names%,}")
    [[ "$ROLLOUT_IMAGE" == none ]] || zoned+=(--rollout-image "$ROLLOUT_IMAGE")
fi
upgrade=()
[[ "$UPGRADE" == 1 ]] && upgrade=(--own-image)
[[ "$PROXY" == 1 ]] && upgrade+=(--proxy)
python3 "$ROOT/bench/scale.py" run --system "$SYSTEM" --ns "$ns" --n "$N" --replicas "$REPLICAS" --steady "$STEADY" \
    --zone "$DRAIN_ZONE" --timeout "$TIMEOUT" --bound "${STATUS_BOUND:-30}" "${zoned[@]}" "${upgrade[@]}" \
    "${measure[@]}" --pids "$proc_list" --summary "${SCALE_SUMMARY:-$WORK/summary.json}"
if [[ "$UPGRADE" == 1 ]]; then
    # The same binary, its own image at a new tag: what a release changes for every pod it renders.
    own=$("$HOOK_BIN" render /dev/stdin <<<'{"apiVersion":"memcached.c5c3.io/v1beta1","kind":"Memcached","metadata":{"name":"x","namespace":"x"},"spec":{"security":{"sasl":{"enabled":true,"credentialsSecretRef":{"name":"s"}}}}}' \
        | grep -o 'image: [^ ]*memcached-hook:[^ ]*' | head -n 1 | cut -d' ' -f2)
    [[ -n "$own" ]] || { echo "the hook renders no image of its own" >&2; exit 1; }
    kill "$hook_pid"
    wait "$hook_pid" 2>/dev/null || true
    RUST_LOG=warn "$HOOK_BIN" serve --addr "127.0.0.1:$port" --reload-agent-image "$own-next" >>"$WORK/hook.log" 2>&1 &
    hook_pid=$!
    pids+=("$hook_pid")
    for _ in $(seq 1 100); do curl -sf --max-time 2 "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
    echo
    echo "hook restarted with --reload-agent-image $own-next"
    proc_list="metacontroller=$(pid_of metacontroller),hook=$hook_pid,${proc_list#*,hook=*,}"
    python3 "$ROOT/bench/scale.py" upgrade --ns "$ns" --n "$N" --period "$RESYNC" \
        "${measure[@]}" --pids "$proc_list" --summary "${SCALE_SUMMARY:-$WORK/summary.json}"
fi
