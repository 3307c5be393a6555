#!/usr/bin/env bash
# How long Metacontroller takes to converge N new Memcacheds, with its stock settings and with the
# settings of metacontroller/components/tuning (and any extra variant), on the e2e control plane
# (tests/e2e/cluster.sh, loopback only) with the hook running locally.
#
#   METACONTROLLER_BIN=... METACONTROLLER_CRDS_DIR=... bash bench/metacontroller-convergence.sh
#   N=200 VARIANTS="stock install qps20:--client-go-qps=20,--client-go-burst=40" bash bench/...
#
# A variant is "stock" (Metacontroller's defaults: 5 requests/s, burst 10, 5 workers),
# "install" (args.yaml of the component), or NAME:FLAG,FLAG,... (the install's flags plus these).
# For each variant: start Metacontroller, point the CompositeController at the local hook, create
# N Memcacheds in a fresh namespace in one apply, and time until every one has
# status.observedGeneration (the first sync answered and its status written). Prints one line
# per variant, the API server's requests by verb and resource per Memcached over the run plus
# SETTLE seconds (default 10; bench/api_requests.py), and a table. Needs Metacontroller, built by hand outside the repository and supplied
# as METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR; without it it says so and exits 0. Every wait is bounded (BENCH_TIMEOUT).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../tests/e2e/versions.sh
source "$ROOT/tests/e2e/versions.sh"
# shellcheck source=../tests/lib/local-hook-cc.sh
source "$ROOT/tests/lib/local-hook-cc.sh"
N=${N:-200}
VARIANTS=${VARIANTS:-stock install}
TIMEOUT=${BENCH_TIMEOUT:-400}
SETTLE=${SETTLE:-10}
# shellcheck source=needs-metacontroller.sh
source "$ROOT/bench/needs-metacontroller.sh"

WORK=$(mktemp -d)
export E2E_STATE_DIR="$WORK/cluster"
hook_pid=
cleanup() {
    [[ -n "$hook_pid" ]] && kill "$hook_pid" 2>/dev/null || true
    bash "$ROOT/tests/e2e/cluster.sh" down >>"$WORK/down.log" 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
RUST_LOG=warn "$HOOK_BIN" serve --addr "127.0.0.1:$port" >"$WORK/hook.log" 2>&1 &
hook_pid=$!

E2E_METACONTROLLER=0 E2E_PRELOAD_MANIFESTS="$ROOT/deploy/crd/crd.yaml:$METACONTROLLER_CRDS_DIR" \
    bash "$ROOT/tests/e2e/cluster.sh" up >"$WORK/env.sh" 2>"$WORK/up.log" || { tail -n 20 "$WORK/up.log"; exit 1; }
# shellcheck source=/dev/null
source "$WORK/env.sh"
kc() { "$E2E_KUBECTL" "$@"; }
# The CompositeController of metacontroller/, calling the local hook.
{ "$HOME/.cache/memcached-hook/bin/kustomize-v5.8.2/kustomize" build "$ROOT/metacontroller" 2>/dev/null \
    || kc kustomize "$ROOT/metacontroller"; } | local_hook_cc "http://127.0.0.1:$port" >"$WORK/cc.yaml" || exit 1
kc apply -f "$WORK/cc.yaml" >/dev/null

results=()
for variant in $VARIANTS; do
    name=${variant%%:*}
    case "$variant" in
        stock) tuning=stock; extra="" ;;
        install) tuning=install; extra="" ;;
        *:*) tuning=install; extra=$(tr , ' ' <<<"${variant#*:}") ;;
        *) echo "unknown variant $variant" >&2; exit 2 ;;
    esac
    # A fresh Metacontroller per variant: empty caches, the variant's flags.
    E2E_MC_TUNING=$tuning E2E_MC_ARGS="$extra" bash "$ROOT/tests/e2e/cluster.sh" restart-metacontroller \
        >/dev/null 2>>"$WORK/up.log" || { tail -n 20 "$WORK/up.log"; exit 1; }
    flags=$(tr '\0' ' ' <"/proc/$(awk '{print $1}' "$E2E_STATE_DIR/pids/metacontroller")/cmdline" | { grep -o -- '--\(client-go-qps\|client-go-burst\|workers\|discovery-interval\)=[^ ]*' || echo '(Metacontroller defaults)'; } | tr '\n' ' ')
    ns="conv-$name"
    kc create namespace "$ns" >/dev/null
    python3 - "$N" "$ns" >"$WORK/$ns.yaml" <<'EOF'
import sys
n, ns = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    print(f"---\napiVersion: memcached.c5c3.io/v1beta1\nkind: Memcached\nmetadata:\n  name: cache-{i:03d}\n  namespace: {ns}\nspec:\n  replicas: 2")
EOF
    kc get --raw /metrics >"$WORK/$ns.before.txt"
    t0=$EPOCHREALTIME
    kc apply -f "$WORK/$ns.yaml" >/dev/null
    done_count=0
    while :; do
        done_count=$(kc -n "$ns" get memcached -o jsonpath='{range .items[*]}{.status.observedGeneration}{"\n"}{end}' | grep -c . || true)
        elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
        [[ $done_count -ge $N ]] && break
        if awk -v e="$elapsed" -v t="$TIMEOUT" 'BEGIN { exit !(e > t) }'; then
            elapsed=">$TIMEOUT"
            break
        fi
        sleep 0.5
    done
    deployments=$(kc -n "$ns" get deployments -o name | wc -l)
    # API requests while converging plus SETTLE seconds after (late status writes), per parent.
    sleep "$SETTLE"
    kc get --raw /metrics >"$WORK/$ns.after.txt"
    echo "API requests, $name: N=$N created, converged, then ${SETTLE} s"
    python3 "$ROOT/bench/api_requests.py" "$WORK/$ns.before.txt" "$WORK/$ns.after.txt" "$N"
    line=$(printf '%-10s %4d/%d synced in %7s s  (%d Deployments)  %s' "$name" "$done_count" "$N" "$elapsed" "$deployments" "$flags")
    echo "$line"
    results+=("$line")
done
echo
echo "N=$N Memcacheds, hook $("$HOOK_BIN" --version 2>/dev/null || echo "$HOOK_BIN"), Metacontroller $METACONTROLLER_BIN, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${results[@]}"
