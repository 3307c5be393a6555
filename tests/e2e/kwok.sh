# shellcheck shell=bash
# Simulated nodes for tests/e2e/cluster.sh (E2E_KWOK_NODES=N): kube-scheduler, KWOK's controller
# (built by build-bins.sh kwok) and N fake Nodes spread over E2E_KWOK_ZONES zones
# (topology.kubernetes.io/zone=zone-a, zone-b, ...; kubernetes.io/hostname=kwok-node-NNN).
# KWOK plays the kubelet's part for the Nodes it manages (label kwok.x-k8s.io/node=fake) and the
# pods bound to them, following the stages of kwok/stages.yaml: nodes turn Ready at once, pods
# turn Ready 1-3 s after they are bound, pods being deleted are removed. No container runs and
# nothing changes on the host: loopback only. Sourced by cluster.sh, which provides S, HOST,
# here, NODE, log, die, spawn, wait_for, free_ports, set_var and kubectl_bin.
#
# The controller manager runs every controller but the node lifecycle controller (the fake nodes
# send no heartbeats, so it would mark them NotReady and evict their pods), so the not-ready
# taint the API server puts on a new node is lifted here; a drain is what a user does, cordon
# plus the eviction API. The controller manager and the scheduler get a
# client rate limit of E2E_KWOK_CLIENT_QPS (default 200, burst twice that) instead of their
# defaults (20 and 50 requests/s), so that creating thousands of pods measures the controllers
# under test rather than kube-controller-manager's limiter.

KWOK_NODES="${E2E_KWOK_NODES:-0}"
KWOK_ZONES="${E2E_KWOK_ZONES:-3}"
KWOK_CLIENT_QPS="${E2E_KWOK_CLIENT_QPS:-200}"

kwok_check() {
  [[ "${KWOK_NODES}" =~ ^[0-9]+$ ]] || die "E2E_KWOK_NODES must be a number of nodes, not ${KWOK_NODES}"
  ((KWOK_NODES == 0)) && return 0
  [[ "${KWOK_ZONES}" =~ ^[1-9]$ ]] || die "E2E_KWOK_ZONES must be 1-9, not ${KWOK_ZONES}"
  [[ "${KWOK_CLIENT_QPS}" =~ ^[1-9][0-9]*$ ]] || die "E2E_KWOK_CLIENT_QPS must be a positive integer"
  [[ -x "${KWOK_BIN}" ]] || die "missing ${KWOK_BIN} (run tests/e2e/build-bins.sh kwok, or set KWOK_BIN)"
  [[ -x "${KUBE_SCHEDULER_BIN}" ]] || die "missing ${KUBE_SCHEDULER_BIN} (run tests/e2e/build-bins.sh kube)"
}

# The controller manager's extra flags when nodes are simulated.
kwok_kcm_args() {
  ((KWOK_NODES > 0)) || return 0
  printf '%s\n' "--kube-api-qps=${KWOK_CLIENT_QPS}" "--kube-api-burst=$((2 * KWOK_CLIENT_QPS))"
}

# kwok_nodes_manifest: the fake Nodes, zones assigned round-robin (from zone-b on beside a real
# node, which is zone-a; then tainted, so that only pods that tolerate it land there).
kwok_nodes_manifest() {
  local i name zones=(a b c d e f g h i j) first=0
  [[ "${NODE}" == 1 ]] && first=1
  for ((i = 0; i < KWOK_NODES; i++)); do
    name="kwok-node-$(printf '%03d' "${i}")"
    printf -- '---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n' "${name}"
    printf '    kwok.x-k8s.io/node: fake\n    kubernetes.io/hostname: %s\n' "${name}"
    printf '    topology.kubernetes.io/zone: zone-%s\n' "${zones[first + i % KWOK_ZONES]}"
    if [[ "${NODE}" == 1 ]]; then
      printf 'spec:\n  taints:\n  - {key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}\n'
    fi
  done
}

kwok_up() {
  ((KWOK_NODES > 0)) || return 0
  local sport kport kc
  kc="$(kubectl_bin)"
  read -r sport kport <<<"$(free_ports 2)"
  # Beside a real node: its scheduler places every pod; it is zone-a, and without the node
  # lifecycle controller nobody lifts its not-ready taint either.
  if [[ "${NODE}" == 1 ]]; then
    "${kc}" --kubeconfig="${S}/kubeconfig" label --overwrite node "${NODE_NAME}" \
      topology.kubernetes.io/zone=zone-a >>"${S}/logs/kubectl.log" 2>&1 \
      || { tail -n 20 "${S}/logs/kubectl.log" >&2; die "labelling node ${NODE_NAME} zone-a failed"; }
    if "${kc}" --kubeconfig="${S}/kubeconfig" get node "${NODE_NAME}" \
      -o jsonpath='{.spec.taints[*].key}' | grep -qw node.kubernetes.io/not-ready; then
      "${kc}" --kubeconfig="${S}/kubeconfig" taint nodes "${NODE_NAME}" \
        node.kubernetes.io/not-ready:NoSchedule- >>"${S}/logs/kubectl.log" 2>&1 \
        || { tail -n 20 "${S}/logs/kubectl.log" >&2; die "untainting node ${NODE_NAME} failed"; }
    fi
  else
    spawn kube-scheduler "${KUBE_SCHEDULER_BIN}" \
      --kubeconfig="${S}/kubeconfig" \
      --authentication-kubeconfig="${S}/kubeconfig" --authorization-kubeconfig="${S}/kubeconfig" \
      --bind-address="${HOST}" --secure-port="${sport}" --leader-elect=false \
      --kube-api-qps="${KWOK_CLIENT_QPS}" --kube-api-burst="$((2 * KWOK_CLIENT_QPS))"
    wait_for kube-scheduler "healthy on ${HOST}:${sport}" curl -sfk --max-time 2 "https://${HOST}:${sport}/healthz"
  fi
  spawn kwok "${KWOK_BIN}" \
    --kubeconfig="${S}/kubeconfig" \
    --config="${here}/kwok/stages.yaml" \
    --manage-nodes-with-label-selector=kwok.x-k8s.io/node=fake \
    --server-address="${HOST}:${kport}" \
    --node-ip=127.0.0.1 --cidr=10.64.0.0/12
  wait_for kwok "healthy on ${HOST}:${kport}" curl -sf --max-time 2 "http://${HOST}:${kport}/healthz"
  kwok_nodes_manifest | "${kc}" --kubeconfig="${S}/kubeconfig" apply -f - >>"${S}/logs/kubectl.log" 2>&1 \
    || { tail -n 20 "${S}/logs/kubectl.log" >&2; die "creating ${KWOK_NODES} fake nodes failed"; }
  "${kc}" --kubeconfig="${S}/kubeconfig" wait --for=condition=Ready --timeout="${WAIT}s" \
    node -l kwok.x-k8s.io/node=fake >>"${S}/logs/kubectl.log" 2>&1 \
    || { tail -n 20 "${S}/logs/kwok.log" >&2; die "fake nodes not Ready within ${WAIT}s"; }
  # The API server taints every new node not-ready; without the node lifecycle controller nobody
  # lifts it once the node is Ready, so do that here.
  "${kc}" --kubeconfig="${S}/kubeconfig" taint nodes -l kwok.x-k8s.io/node=fake \
    node.kubernetes.io/not-ready:NoSchedule- >>"${S}/logs/kubectl.log" 2>&1 \
    || { tail -n 20 "${S}/logs/kubectl.log" >&2; die "untainting the fake nodes failed"; }
  log "${KWOK_NODES} fake nodes Ready over ${KWOK_ZONES} zones"
  set_var KWOK_NODES "${KWOK_NODES}"
}
