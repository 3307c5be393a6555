#!/usr/bin/env bash
# The pods phase: the hook's children run as real pods. tests/e2e/cluster.sh starts the control
# plane with a node (E2E_NODE=1: containerd, CNI bridge, CoreDNS, kube-scheduler, kubelet; images
# built here), pods.py runs the scenarios against it, and the host is checked to be as it was.
#
#   bins      etcd, kube-apiserver, kube-controller-manager, kubectl, kubelet, kube-scheduler,
#             CoreDNS and KWOK from the Go module proxy (tests/e2e/build-bins.sh; cached)
#   image     the hook's own image, by the image phase's script (tests/image/build.sh, kept as an
#             OCI archive): the reload-agent sidecar of the Reload scenarios
#   up        cluster.sh up with E2E_NODE=1 and the hook's image imported; the real node is in
#             zone-a, and two KWOK nodes (zone-b, zone-c; tainted, so only the zones scenario's
#             pods, which tolerate it, go there) stand for the other zones
#   scenarios pods.py (each scenario in its own namespace; see its docstring)
#   metacontroller  with METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR (a Metacontroller built by
#             hand outside the repository): cluster.sh also starts Metacontroller (deploy/crd/crd.yaml
#             preloaded) and the scenarios run again under it (pods.py with PODS_METACONTROLLER=1:
#             Memcacheds applied with kubectl, status written by Metacontroller); else one
#             SKIPPED line
#   down      cluster.sh down
#   host      the host facts of `cluster.sh host-state` after `down` equal those before `up`
#
# Usage: tests/pods/run.sh [SCENARIO...]
# Environment:
#   METACONTROLLER_BIN, METACONTROLLER_CRDS_DIR  see `metacontroller` above
#   PODS_MC_SCENARIOS   the scenarios run under Metacontroller (default: the same as without)
#   PODS_DIRECT_SCENARIOS  with a Metacontroller, the scenarios also run without it, driven by
#                       `render` and `replay` (default: deployment statefulset, the two that cover
#                       that path; "all" for every one); without a Metacontroller every scenario
#                       runs that way. Scenarios named as arguments run both ways.
#   MEMCACHED_HOOK_BIN  the hook binary for render/replay (default: cargo build, debug)
#   PODS_RUN_TIMEOUT    bound of the whole run in seconds (default 3600)
#   PODS_KEEP=1         keep the work dir (cluster logs, sync requests) even when all pass
#   PODS_KEEP_NAMESPACES=1  pods.py leaves each scenario's namespace (useful when pods.py is run by
#                       hand against `cluster.sh up` with E2E_NODE=1)
# Needs root (containerd, mounts, a bridge). Prints `pods: N passed, M failed`.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/../.." && pwd)"
E2E="${ROOT}/tests/e2e"

RUN_LIMIT="${PODS_RUN_TIMEOUT:-3600}"
# shellcheck source=../lib/watchdog.sh
source "${ROOT}/tests/lib/watchdog.sh"
bound_run "$((RUN_LIMIT + 180))" "$@"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${HOME}/.cache/memcached-hook/target}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-pods.XXXXXX")"
export E2E_STATE_DIR="${WORK}/cluster"
# shellcheck source=../e2e/versions.sh
source "${E2E}/versions.sh"
if metacontroller_supplied; then
  export E2E_METACONTROLLER=1 E2E_PRELOAD_MANIFESTS="${ROOT}/deploy/crd/crd.yaml"
  read -r -a MC_SCENARIOS <<<"${PODS_MC_SCENARIOS:-$*}"
  # Under Metacontroller every scenario runs for real; without it, what only `render` and
  # `replay` do, once.
  if (($# == 0)); then
    direct="${PODS_DIRECT_SCENARIOS:-deployment statefulset}"
    [[ "${direct}" == all ]] && direct=""
    read -r -a DIRECT_SCENARIOS <<<"${direct}"
  fi
else
  export E2E_METACONTROLLER=0
fi
export PODS_WORK="${WORK}" PODS_TIMES="${WORK}/times.tsv"
: >"${PODS_TIMES}"

passed=0
failed=0
failures=()
cluster_started=0
t0=${SECONDS}
step_start=${SECONDS}
steps=()

log() { printf '[pods +%ss] %s\n' "$((SECONDS - t0))" "$*" >&2; }
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$*"; }
bad() {
  failed=$((failed + 1)); failures+=("$1"); printf 'FAIL %s\n' "$1"
  if [[ -n "${2:-}" ]]; then printf '%s\n' "$2" | head -n 30 | sed 's/^/       /'; fi
}
timed() { steps+=("$1: $((SECONDS - step_start))s"); step_start=${SECONDS}; }

down() {
  ((cluster_started)) || return 0
  cluster_started=0
  "${E2E}/cluster.sh" down >>"${WORK}/cluster-down.log" 2>&1 || bad "cluster.sh down" "$(tail -n 20 "${WORK}/cluster-down.log")"
  timed down
  "${E2E}/cluster.sh" host-state >"${WORK}/host-after.txt" 2>&1
  local diff
  if diff="$(diff "${WORK}/host-before.txt" "${WORK}/host-after.txt")"; then
    ok "host: sysctls, iptables, links, addresses, routes, mounts, cgroups and paths as before up"
  else
    bad "host: sysctls, iptables, links, addresses, routes, mounts, cgroups and paths as before up" "${diff}"
  fi
}

finish() {
  local rc=$?
  trap - EXIT INT TERM
  [[ -n "${watchdog_pid:-}" ]] && kill "${watchdog_pid}" 2>/dev/null
  [[ -n "${pods_pid:-}" ]] && kill "${pods_pid}" 2>/dev/null
  down
  if ((rc != 0)) && ((failed == 0)); then bad "run aborted (exit ${rc}; 143: PODS_RUN_TIMEOUT reached or terminated)"; fi
  echo
  printf 'time: %s\n' "${steps[@]}" "total: $((SECONDS - t0))s"
  if [[ -s "${PODS_TIMES}" ]]; then
    echo "apply to Ready, per scenario:"
    awk -F'\t' '$2 != "scenario" { printf "  %-27s %-32s %6ss\n", $1, $2, $3 }' "${PODS_TIMES}"
  fi
  if ((failed)); then
    echo "failures:"
    printf '  %s\n' "${failures[@]}"
  fi
  if ((failed)) || [[ "${PODS_KEEP:-0}" == 1 ]]; then
    echo "logs kept in ${WORK}"
  else
    rm -rf "${WORK}"
  fi
  echo "pods: ${passed} passed, ${failed} failed"
  ((failed == 0))
  exit $?
}
trap finish EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
start_watchdog "${RUN_LIMIT}" "[pods] PODS_RUN_TIMEOUT=${RUN_LIMIT}s"

[[ $(id -u) -eq 0 ]] || { bad "the pods phase needs root (containerd, mounts, a bridge)"; exit 1; }

# ---- bins ----------------------------------------------------------------------------------
# shellcheck source=tests/lib/hook-bin.sh
source "${ROOT}/tests/lib/hook-bin.sh"
log "the hook: MEMCACHED_HOOK_BIN or cargo build"
HOOK=$(hook_bin "${WORK}/cargo.log") || { bad "cargo build"; exit 1; }
[[ -x "${HOOK}" ]] || { bad "hook binary ${HOOK} missing"; exit 1; }
log "building/locating the cluster's binaries (tests/e2e/build-bins.sh etcd kube coredns kwok)"
"${E2E}/build-bins.sh" etcd kube coredns kwok >"${WORK}/build-bins.log" 2>&1 \
  || { bad "build-bins.sh" "$(tail -n 30 "${WORK}/build-bins.log")"; exit 1; }
timed bins

# ---- image ---------------------------------------------------------------------------------
log "building the hook's image (tests/image/build.sh)"
if ! IMAGE_OUT="${WORK}/hook.oci.tar" bash "${ROOT}/tests/image/build.sh" >"${WORK}/image.log" 2>&1; then
  bad "the hook's image (tests/image/build.sh)" "$(tail -n 30 "${WORK}/image.log")"
  exit 1
fi
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "${ROOT}/Cargo.toml" | head -n 1)
export PODS_HOOK_IMAGE="localhost/memcached-hook:${VERSION}"
timed image

# ---- up ------------------------------------------------------------------------------------
"${E2E}/cluster.sh" host-state >"${WORK}/host-before.txt" 2>&1
log "cluster.sh up with a node"
cluster_started=1
if ! E2E_NODE=1 E2E_KWOK_NODES=2 E2E_KWOK_ZONES=2 E2E_NODE_IMAGES="${WORK}/hook.oci.tar" "${E2E}/cluster.sh" up >"${WORK}/env.sh" 2>"${WORK}/cluster-up.log"; then
  bad "cluster.sh up (E2E_NODE=1)" "$(tail -n 30 "${WORK}/cluster-up.log")"
  exit 1
fi
ok "cluster with a node up: $(grep -o 'up in [0-9]*s' "${WORK}/cluster-up.log" | tail -n 1)"
# shellcheck disable=SC1091
source "${WORK}/env.sh"
timed up

# ---- scenarios -----------------------------------------------------------------------------
export PODS_HOOK="${HOOK}"
# scenarios LABEL [SCENARIO...]: runs pods.py and folds its counts and failures into this run's.
# In the background, so that a TERM (PODS_RUN_TIMEOUT, Ctrl-C) reaches the traps at once: `wait`
# returns on a signal, a foreground command would first run to its end.
scenarios() {
  local out="${WORK}/scenarios-$1.log" p n f
  shift
  python3 "${HERE}/pods.py" "$@" > >(tee "${out}") 2>&1 &
  pods_pid=$!
  wait "${pods_pid}"
  pods_pid=""
  p=$(sed -n 's/^scenarios: \([0-9]*\) passed.*/\1/p' "${out}")
  passed=$((passed + ${p:-0}))
  n=$(sed -n 's/^scenarios: [0-9]* passed, \([0-9]*\) failed/\1/p' "${out}")
  if [[ -z "${n}" ]]; then bad "pods.py ended without a summary (${out##*/})"; else failed=$((failed + n)); fi
  while read -r f; do failures+=("${f}"); done < <(sed -n '/^failures:$/,/^scenarios:/{s/^  //p}' "${out}")
}
if [[ -n "${DIRECT_SCENARIOS+set}" ]]; then
  log "the scenarios without Metacontroller (render + replay): ${DIRECT_SCENARIOS[*]:-all}"
  scenarios direct "${DIRECT_SCENARIOS[@]}"
else
  scenarios direct "$@"
fi
timed scenarios

# ---- the same scenarios under Metacontroller ---------------------------------------------------
if [[ "${E2E_METACONTROLLER}" == running ]]; then
  log "the scenarios under Metacontroller: ${MC_SCENARIOS[*]:-all}"
  PODS_METACONTROLLER=1 scenarios metacontroller "${MC_SCENARIOS[@]}"
  timed "scenarios under Metacontroller"
else
  echo "SKIPPED pods scenarios under Metacontroller: $(metacontroller_absent)"
fi
