#!/usr/bin/env bash
# A throw-away Kubernetes control plane plus Metacontroller, as local processes
# on 127.0.0.1 only: etcd, kube-apiserver, kube-controller-manager (namespace,
# garbage-collector and serviceaccount controllers: enough for ownerRef
# cascades; there is no scheduler, kubelet or Deployment controller), then
# Metacontroller with its CRDs. The cluster has a CA of its own (certs/ca.crt: the kubeconfig's and
# the controller manager's --root-ca-file) that signs the API server's certificate, and the API
# server authorizes with Node,RBAC; every client but the kubelet uses the admin token.
#
# With E2E_NODE=1 the cluster also gets a node that runs real pods (tests/e2e/node.sh):
# containerd (Debian's package, its own root/state/socket under the state dir), a CNI bridge
# on a private /24 with no default route in the pods, CoreDNS serving cluster.local on the
# bridge address (Service and per-pod names resolve in pods as in any cluster), the `kubernetes`
# Service's ClusterIP routed to the API server (one DNAT rule), kube-scheduler,
# a kubelet, and kube-controller-manager with all its controllers; the images are built here
# (node-images.sh) and imported. It needs root, takes ~10 s more when its binaries and images
# are cached, changes the host (sysctls, iptables chains, a DNAT rule, mounts, a bridge, cgroups)
# and undoes every change in `down`. It is opt-in so that the e2e phase, which needs no pods, stays fast;
# the pods phase (tests/pods/run.sh) sets it.
#
# With E2E_KWOK_NODES=N the cluster gets N simulated nodes instead (tests/e2e/kwok.sh): KWOK's
# controller plays the kubelet for them, kube-scheduler places the pods, and the controller
# manager runs its controllers but the node lifecycle one, so Deployments make ReplicaSets and
# pods that become Ready without any container or host change (bench/scale.sh). Both together
# (E2E_NODE=1 with E2E_KWOK_NODES) give a real node in zone-a beside simulated nodes in the next
# zones; the simulated ones are tainted `kwok.x-k8s.io/node=fake:NoSchedule`, so only pods that
# tolerate it leave the real node (the pods phase's zones scenario).
#
# Usage: cluster.sh up | down | env | status | restart-metacontroller | restart-apiserver
#        | host-state
#
#   up     start everything (each wait is bounded); prints the `env` lines
#   down   stop exactly the processes `up` started (by recorded PID), keep logs
#   env    print shell `export` lines for a running environment:
#            KUBECONFIG, E2E_KUBECTL, E2E_APISERVER_URL, E2E_TOKEN, E2E_STATE_DIR,
#            E2E_METACONTROLLER (running|absent), E2E_APPLY_STRATEGY,
#            E2E_METACONTROLLER_METRICS_URL
#   restart-metacontroller  stop Metacontroller and start it again (e.g. with
#            another E2E_APPLY_STRATEGY) against the same API server
#   restart-apiserver  stop kube-apiserver and start it again (same port, etcd, token)
#   host-state  print the host facts the node changes while it runs (sysctls, iptables,
#            links, addresses, routes, mounts, cgroups, paths): the same before `up` and
#            after `down`, which the pods phase checks
#
# Environment:
#   E2E_STATE_DIR       state dir (logs, PIDs, certs, kubeconfig);
#                       default ${TMPDIR:-/tmp}/memcached-hook-e2e-$(id -u)
#   E2E_APPLY_STRATEGY  dynamic-apply (default) | server-side-apply
#   E2E_METACONTROLLER  auto (default: start it when METACONTROLLER_BIN and METACONTROLLER_CRDS_DIR
#                       are given and exist)
#                       | 1 (required) | 0 (never)
#   E2E_KCM_CONTROLLERS kube-controller-manager --controllers (default: enough for
#                       ownerRef cascades; '*' with E2E_NODE=1; '*,-node-lifecycle-controller'
#                       with E2E_KWOK_NODES)
#   E2E_NODE            1: start the node too (default 0)
#   E2E_NODE_IMAGES     with E2E_NODE=1: colon-separated image archives (docker-archive or
#                       OCI) imported into the node's containerd besides its own images
#   E2E_KWOK_NODES      number of simulated nodes (default 0: none); E2E_KWOK_ZONES their zones
#                       (default 3); E2E_KWOK_CLIENT_QPS the controller manager's and the
#                       scheduler's client rate limit with them (default 200, burst twice that)
#   E2E_POD_CIDR        the pods' /24 (default 10.213.77.0/24); E2E_NODE_BRIDGE its bridge
#   E2E_PRELOAD_MANIFESTS  colon-separated files/dirs applied (kubectl apply -f)
#                       before kube-controller-manager starts, e.g. the parent
#                       CRD, so that the garbage collector watches it at once
#   E2E_MC_LOG_LEVEL    Metacontroller --zap-log-level (default 4; 5 diffs, 6 bodies)
#   E2E_MC_TUNING       install (default: the flags and environment of metacontroller/components/tuning) | stock
#   E2E_MC_ARGS         extra Metacontroller flags, e.g. --discovery-interval=1s
#   E2E_MC_EXTRA_ARGS   more Metacontroller flags after E2E_MC_ARGS, split on spaces
#   E2E_WAIT_SECONDS    bound of each readiness wait (default 120)
#   ETCD_BIN KUBE_APISERVER_BIN KUBE_CONTROLLER_MANAGER_BIN KUBECTL_BIN
#   KUBELET_BIN KUBE_SCHEDULER_BIN COREDNS_BIN (E2E_NODE=1) KWOK_BIN (E2E_KWOK_NODES)
#   METACONTROLLER_BIN METACONTROLLER_CRDS_DIR   Metacontroller built by hand outside the
#                       repository and the directory of its CRD manifests (no default)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.sh
source "${here}/versions.sh"

S="${E2E_STATE_DIR:-${TMPDIR:-/tmp}/memcached-hook-e2e-$(id -u)}"
APPLY_STRATEGY="${E2E_APPLY_STRATEGY:-dynamic-apply}"
WANT_MC="${E2E_METACONTROLLER:-auto}"
NODE="${E2E_NODE:-0}"
if [[ "${NODE}" == 1 && "${E2E_KWOK_NODES:-0}" == 0 ]]; then
  KCM_CONTROLLERS="${E2E_KCM_CONTROLLERS:-*}"
elif [[ "${E2E_KWOK_NODES:-0}" != 0 ]]; then
  KCM_CONTROLLERS="${E2E_KCM_CONTROLLERS:-*,-node-lifecycle-controller}"
else
  KCM_CONTROLLERS="${E2E_KCM_CONTROLLERS:-namespace-controller,garbage-collector-controller,serviceaccount-controller}"
fi
WAIT="${E2E_WAIT_SECONDS:-120}"
HOST=127.0.0.1
# The Service range and the `kubernetes` Service's ClusterIP (its first address), which the API
# server's certificate names; the node routes it to the API server (node.sh).
SERVICE_CIDR=10.0.0.0/24
KUBERNETES_SERVICE_IP=10.0.0.1
case "${APPLY_STRATEGY}" in
  dynamic-apply | server-side-apply) ;;
  *) echo "E2E_APPLY_STRATEGY must be dynamic-apply or server-side-apply, not ${APPLY_STRATEGY}" >&2; exit 2 ;;
esac

log() { printf "[cluster +%ss] %s\n" "${SECONDS}" "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=node.sh
source "${here}/node.sh"
# shellcheck source=kwok.sh
source "${here}/kwok.sh"

kubectl_bin() {
  if [[ -x "${KUBECTL_BIN}" ]]; then printf '%s\n' "${KUBECTL_BIN}"
  else command -v kubectl || die "no kubectl (run build-bins.sh or set KUBECTL_BIN)"; fi
}

# free_ports N: N distinct free TCP ports on 127.0.0.1 (all held while chosen).
free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# start_time PID: the kernel's start time of PID (guards against PID reuse).
start_time() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"          # drop "pid (comm) ", comm may contain spaces
  # shellcheck disable=SC2086
  set -- ${stat}
  printf '%s\n' "${20}"        # field 22 of the full line
}

# alive NAME: the process recorded as NAME is still the one we started (same
# PID and start time) and not a zombie.
alive() {
  local f="${S}/pids/$1" pid st stat
  [[ -f "${f}" ]] || return 1
  read -r pid st <"${f}"
  [[ "$(start_time "${pid}" 2>/dev/null)" == "${st}" ]] || return 1
  stat="$(cat "/proc/${pid}/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z ]]
}

# spawn NAME BIN ARGS...: start in the background, log to $S/logs/NAME.log,
# record "PID STARTTIME" in $S/pids/NAME and the order in $S/pids/order.
spawn() {
  local name="$1"; shift
  [[ -x "$1" ]] || die "$name: binary not found or not executable: $1"
  "$@" >>"${S}/logs/${name}.log" 2>&1 </dev/null &
  local pid=$!
  printf '%s %s\n' "${pid}" "$(start_time "${pid}")" >"${S}/pids/${name}"
  grep -qx "${name}" "${S}/pids/order" || echo "${name}" >>"${S}/pids/order"
  log "started ${name} (pid ${pid}, log ${S}/logs/${name}.log)"
}

# wait_for NAME WHAT CMD...: poll CMD for at most $WAIT seconds; fail early if
# the process NAME has died.
wait_for() {
  local name="$1" what="$2"; shift 2
  local deadline=$((SECONDS + WAIT))
  until "$@" >/dev/null 2>&1; do
    if ! alive "${name}"; then
      tail -n 30 "${S}/logs/${name}.log" >&2 || true
      die "${name} exited before ${what}"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "${S}/logs/${name}.log" >&2 || true
      die "${name}: ${what} not reached within ${WAIT}s"
    fi
    sleep 0.3
  done
  log "${name}: ${what}"
}

# stop NAME: TERM the recorded process, KILL it after 15 s; only if it is still
# the very process we started.
stop() {
  local name="$1" f="${S}/pids/$1" pid st i
  [[ -f "${f}" ]] || return 0
  read -r pid st <"${f}"
  if alive "${name}"; then
    kill -TERM "${pid}" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do alive "${name}" || break; sleep 0.3; done
    if alive "${name}"; then
      log "${name} (pid ${pid}) ignored TERM; sending KILL"
      kill -KILL "${pid}" 2>/dev/null || true
      for ((i = 0; i < 20; i++)); do alive "${name}" || break; sleep 0.3; done
    fi
    log "stopped ${name} (pid ${pid})"
  fi
  rm -f "${f}"
}

get_var() { sed -n "s/^$1=//p" "${S}/vars" | tail -n 1; }
set_var() { printf '%s=%s\n' "$1" "$2" >>"${S}/vars"; }

# Metacontroller's settings from the install (metacontroller/components/tuning/args.yaml), less
# the log level (E2E_MC_LOG_LEVEL); E2E_MC_TUNING=stock: Metacontroller's own defaults instead;
# E2E_MC_ARGS: extra flags (later flags win).
mc_settings() {
  [[ "${E2E_MC_TUNING:-install}" == stock ]] && return 0
  sed -n 's/^  - \(--[a-z-]*=.*\)$/\1/p' "${here}/../../metacontroller/components/tuning/args.yaml" \
    | grep -v '^--zap-log-level='
}

# The environment the install gives Metacontroller (metacontroller/components/tuning/env.yaml), as
# NAME=VALUE lines; none with E2E_MC_TUNING=stock.
mc_env() {
  [[ "${E2E_MC_TUNING:-install}" == stock ]] && return 0
  awk '/^  - name: / { name = $3; next }
       /^    value: / && name != "" { v = $2; gsub(/"/, "", v); print name "=" v; name = "" }' \
    "${here}/../../metacontroller/components/tuning/env.yaml"
}

start_metacontroller() {
  local mport hport
  local -a settings extra environment
  read -r mport hport <<<"$(free_ports 2)"
  mapfile -t settings < <(mc_settings)
  mapfile -t environment < <(mc_env)
  read -r -a extra <<<"${E2E_MC_ARGS:-} ${E2E_MC_EXTRA_ARGS:-}"
  # env execs Metacontroller in place: the recorded pid stays Metacontroller's.
  spawn metacontroller /usr/bin/env "${environment[@]}" "${METACONTROLLER_BIN}" \
    --kubeconfig="${S}/kubeconfig" \
    "${settings[@]}" "${extra[@]}" \
    --metrics-address="${HOST}:${mport}" \
    --health-probe-bind-address="${HOST}:${hport}" \
    --apply-strategy="${APPLY_STRATEGY}" \
    --zap-log-level="${E2E_MC_LOG_LEVEL:-4}"
  wait_for metacontroller "healthy on ${HOST}:${hport}" \
    curl -sf --max-time 2 "http://${HOST}:${hport}/healthz"
  set_var METACONTROLLER running
  set_var APPLY_STRATEGY "${APPLY_STRATEGY}"
  set_var METRICS_URL "http://${HOST}:${mport}/metrics"
}

# The cluster's CA (certs/ca.crt: the kubeconfig's, and every pod's kube-root-ca.crt through the
# controller manager's --root-ca-file) and the API server's serving certificate signed by it, for
# the names and addresses clients use: loopback from the host, the `kubernetes` Service's ClusterIP
# and DNS names from pods. EC P-256, valid for 2 days (a throw-away cluster).
make_certs() {
  local c="${S}/certs" l="${S}/logs/certs.log" san
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "${c}/ca.key" -out "${c}/ca.crt" -subj "/CN=memcached-hook-e2e-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>>"${l}" || die "openssl: the cluster's CA (${l})"
  san="DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  san+=",DNS:kubernetes.default.svc.cluster.local,IP:${HOST},IP:${KUBERNETES_SERVICE_IP}"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=kube-apiserver" \
    -keyout "${c}/apiserver.key" -out "${c}/apiserver.csr" 2>>"${l}" || die "openssl: the API server's key (${l})"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n' "${san}" \
    >"${c}/apiserver.ext"
  openssl x509 -req -in "${c}/apiserver.csr" -CA "${c}/ca.crt" -CAkey "${c}/ca.key" -CAcreateserial \
    -days 2 -extfile "${c}/apiserver.ext" -out "${c}/apiserver.crt" 2>>"${l}" \
    || die "openssl: the API server's certificate (${l})"
  rm -f "${c}/apiserver.csr" "${c}/apiserver.ext"
  openssl genrsa -out "${c}/sa.key" 2048 2>>"${l}" || die "openssl: the ServiceAccount signing key (${l})"
  openssl rsa -in "${c}/sa.key" -pubout -out "${c}/sa.pub" 2>>"${l}" || die "openssl: sa.pub (${l})"
}

# Authorization as in a kubeadm cluster: Node (the kubelet, as system:node:<name>) and RBAC. The
# control plane, CoreDNS, Metacontroller and the tests use the admin token (system:masters); a
# pod's ServiceAccount gets only what a Role grants it.
start_apiserver() {
  local etcd_port="$1" api_port="$2" token="$3"
  spawn kube-apiserver "${KUBE_APISERVER_BIN}" \
    --etcd-servers="http://${HOST}:${etcd_port}" \
    --bind-address="${HOST}" --advertise-address="${HOST}" \
    --secure-port="${api_port}" \
    --tls-cert-file="${S}/certs/apiserver.crt" --tls-private-key-file="${S}/certs/apiserver.key" \
    --external-hostname=localhost \
    --token-auth-file="${S}/tokens.csv" \
    --authorization-mode=Node,RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="${S}/certs/sa.pub" \
    --service-account-signing-key-file="${S}/certs/sa.key" \
    --service-cluster-ip-range="${SERVICE_CIDR}" \
    --endpoint-reconciler-type=none \
    --allow-privileged=true \
    --kubelet-preferred-address-types=Hostname,InternalIP
  wait_for kube-apiserver "ready on https://${HOST}:${api_port}" \
    curl -sf --cacert "${S}/certs/ca.crt" --max-time 2 -H "Authorization: Bearer ${token}" \
      "https://${HOST}:${api_port}/readyz"
}

cmd_up() {
  local n
  if [[ -d "${S}/pids" ]]; then
    for n in $(cat "${S}/pids/order" 2>/dev/null); do
      alive "${n}" && die "${S} still has running processes (${n}); run '$0 down' first"
    done
  fi
  case "${WANT_MC}" in
    1) metacontroller_supplied || die "Metacontroller required: $(metacontroller_absent)" ;;
    0 | auto) ;;
    *) die "E2E_METACONTROLLER must be auto, 1 or 0" ;;
  esac
  local b
  for b in "${ETCD_BIN}" "${KUBE_APISERVER_BIN}" "${KUBE_CONTROLLER_MANAGER_BIN}"; do
    [[ -x "${b}" ]] || die "missing ${b} (run tests/e2e/build-bins.sh, or set the *_BIN variables)"
  done
  case "${NODE}" in
    0 | 1) ;;
    *) die "E2E_NODE must be 0 or 1" ;;
  esac
  kwok_check
  rm -rf "${S}"
  mkdir -p "${S}/logs" "${S}/pids" "${S}/certs"
  if [[ "${NODE}" == 1 ]]; then
    mkdir -p "${S}/node"
    node_preflight
    node_save_host
  fi
  # A failed `up` leaves nothing running behind it.
  trap 'rc=$?; if ((rc)); then log "up failed; stopping what it started"; cmd_down; fi' EXIT
  chmod 700 "${S}"
  : >"${S}/vars"
  : >"${S}/pids/order"
  local start=$SECONDS
  local etcd_port peer_port api_port kcm_port
  read -r etcd_port peer_port api_port kcm_port <<<"$(free_ports 4)"

  # --- etcd -----------------------------------------------------------------
  spawn etcd "${ETCD_BIN}" \
    --name=e2e --data-dir="${S}/etcd-data" \
    --listen-client-urls="http://${HOST}:${etcd_port}" \
    --advertise-client-urls="http://${HOST}:${etcd_port}" \
    --listen-peer-urls="http://${HOST}:${peer_port}" \
    --initial-advertise-peer-urls="http://${HOST}:${peer_port}" \
    --initial-cluster="e2e=http://${HOST}:${peer_port}" \
    --unsafe-no-fsync --log-level=warn
  wait_for etcd "healthy on ${HOST}:${etcd_port}" \
    curl -sf --max-time 2 "http://${HOST}:${etcd_port}/health"

  # --- kube-apiserver --------------------------------------------------------
  local token
  token="$(openssl rand -hex 24)"
  printf '%s,admin,admin,system:masters\n' "${token}" >"${S}/tokens.csv"
  if [[ "${NODE}" == 1 ]]; then
    local ktoken
    ktoken="$(openssl rand -hex 24)"
    printf '%s,system:node:%s,kubelet,system:nodes\n' "${ktoken}" "${NODE_NAME}" >>"${S}/tokens.csv"
    set_var KUBELET_TOKEN "${ktoken}"
  fi
  make_certs
  set_var ETCD_PORT "${etcd_port}"
  set_var API_PORT "${api_port}"
  start_apiserver "${etcd_port}" "${api_port}" "${token}"

  local ca="${S}/certs/ca.crt"
  cat >"${S}/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://${HOST}:${api_port}
    certificate-authority-data: $(base64 -w0 <"${ca}")
users:
- name: admin
  user:
    token: ${token}
contexts:
- name: e2e
  context: {cluster: e2e, user: admin, namespace: default}
current-context: e2e
EOF
  chmod 600 "${S}/kubeconfig"
  set_var APISERVER_URL "https://${HOST}:${api_port}"
  set_var TOKEN "${token}"

  # --- CRDs before the controller manager ----------------------------------------
  # The garbage collector re-discovers resources only every 30 s (hard-coded in
  # kube-controller-manager), so CRDs applied before it starts are collected
  # from the first second on; CRDs applied later take up to ~30 s more.
  local kc
  kc="$(kubectl_bin)"
  local -a manifests=()
  if [[ "${WANT_MC}" != 0 ]] && metacontroller_supplied; then manifests+=("${METACONTROLLER_CRDS_DIR}"); fi
  local m
  local -a extra=()
  IFS=: read -r -a extra <<<"${E2E_PRELOAD_MANIFESTS:-}"
  for m in "${extra[@]}"; do [[ -n "${m}" ]] && manifests+=("${m}"); done
  for m in "${manifests[@]}"; do
    "${kc}" --kubeconfig="${S}/kubeconfig" apply -f "${m}" >>"${S}/logs/kubectl.log" 2>&1 \
      || { tail -n 20 "${S}/logs/kubectl.log" >&2; die "applying ${m} failed"; }
    log "applied ${m}"
  done
  if ((${#manifests[@]})); then
    "${kc}" --kubeconfig="${S}/kubeconfig" wait --for=condition=Established --timeout="${WAIT}s" \
      crd --all >>"${S}/logs/kubectl.log" 2>&1 \
      || { tail -n 20 "${S}/logs/kubectl.log" >&2; die "CRDs not Established within ${WAIT}s"; }
    log "CRDs Established"
  fi

  # --- kube-controller-manager -------------------------------------------------
  local -a kcm_extra
  mapfile -t kcm_extra < <(kwok_kcm_args)
  spawn kube-controller-manager "${KUBE_CONTROLLER_MANAGER_BIN}" \
    --kubeconfig="${S}/kubeconfig" \
    --bind-address="${HOST}" --secure-port="${kcm_port}" \
    --cert-dir="${S}/certs/kcm" \
    --leader-elect=false \
    --root-ca-file="${S}/certs/ca.crt" \
    --service-account-private-key-file="${S}/certs/sa.key" \
    --controllers="${KCM_CONTROLLERS}" "${kcm_extra[@]}"
  wait_for kube-controller-manager "healthy on ${HOST}:${kcm_port}" \
    curl -sfk --max-time 2 "https://${HOST}:${kcm_port}/healthz"

  # --- the node (E2E_NODE=1) -------------------------------------------------------
  if [[ "${NODE}" == 1 ]]; then node_up; fi
  # --- simulated nodes (E2E_KWOK_NODES) ----------------------------------------------
  kwok_up

  # --- Metacontroller ----------------------------------------------------------
  if [[ "${WANT_MC}" != 0 ]] && metacontroller_supplied; then
    start_metacontroller
  else
    log "Metacontroller not started (E2E_METACONTROLLER=${WANT_MC}; METACONTROLLER_BIN=${METACONTROLLER_BIN:-<unset>})"
    set_var METACONTROLLER absent
  fi
  log "up in $((SECONDS - start))s"
  trap - EXIT
  cmd_env
}

cmd_env() {
  [[ -f "${S}/vars" ]] || die "no environment in ${S} (run '$0 up')"
  local mc
  mc="$(get_var METACONTROLLER)"
  if [[ "${mc}" == running ]] && ! alive metacontroller; then mc=dead; fi
  printf 'export E2E_STATE_DIR=%q\n' "${S}"
  printf 'export KUBECONFIG=%q\n' "${S}/kubeconfig"
  printf 'export E2E_KUBECTL=%q\n' "$(kubectl_bin)"
  printf 'export E2E_APISERVER_URL=%q\n' "$(get_var APISERVER_URL)"
  printf 'export E2E_TOKEN=%q\n' "$(get_var TOKEN)"
  printf 'export E2E_METACONTROLLER=%q\n' "${mc}"
  printf 'export E2E_APPLY_STRATEGY=%q\n' "$(get_var APPLY_STRATEGY)"
  printf 'export E2E_METACONTROLLER_METRICS_URL=%q\n' "$(get_var METRICS_URL)"
  printf 'export E2E_KWOK_NODES=%q\n' "$(get_var KWOK_NODES)"
  if [[ "$(get_var NODE)" == 1 ]]; then
    printf 'export E2E_NODE=1\n'
    printf 'export E2E_NODE_NAME=%q\n' "${NODE_NAME}"
    printf 'export E2E_CLUSTER_DNS=%q\n' "${NODE_GW}"
    printf 'export E2E_POD_CIDR=%q\n' "${NODE_CIDR}"
    printf 'export E2E_CONTAINERD_ADDRESS=%q\n' "${S}/node/containerd/containerd.sock"
    printf 'export E2E_MEMCACHED_IMAGE=%q\n' "$(cat "${S}/node/images/memcached.ref")"
    printf 'export E2E_CLIENT_IMAGE=%q\n' "$(cat "${S}/node/images/client.ref")"
  fi
}

cmd_down() {
  [[ -f "${S}/pids/order" ]] || { log "nothing to stop in ${S}"; return 0; }
  local names n
  # Reverse start order: Metacontroller and the controller manager before the
  # API server, etcd last.
  names="$(tac "${S}/pids/order")"
  node_drain_pods
  for n in ${names}; do
    [[ "${n}" == containerd ]] && node_remove_leftovers
    stop "${n}"
  done
  : >"${S}/pids/order"
  node_cleanup
  rm -rf "${S}/etcd-data"
  log "down; logs kept in ${S}/logs"
}

cmd_restart_metacontroller() {
  [[ -f "${S}/vars" ]] || die "no environment in ${S}"
  alive kube-apiserver || die "kube-apiserver is not running"
  metacontroller_supplied || die "no Metacontroller binary/CRDs"
  stop metacontroller
  start_metacontroller
  cmd_env
}

# restart-apiserver: stop kube-apiserver and start it again on the same port, with the same
# etcd and token (its serving certificate is kept in the cert dir, so the kubeconfig stays valid).
cmd_restart_apiserver() {
  [[ -f "${S}/vars" ]] || die "no environment in ${S}"
  alive etcd || die "etcd is not running"
  stop kube-apiserver
  start_apiserver "$(get_var ETCD_PORT)" "$(get_var API_PORT)" "$(get_var TOKEN)"
}

cmd_status() {
  local n pid st
  for n in $(cat "${S}/pids/order" 2>/dev/null); do
    [[ -f "${S}/pids/${n}" ]] || continue
    read -r pid st <"${S}/pids/${n}"
    if alive "${n}"; then echo "${n} ${pid} running"; else echo "${n} ${pid} dead"; fi
  done
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  status) cmd_status ;;
  restart-metacontroller) cmd_restart_metacontroller ;;
  restart-apiserver) cmd_restart_apiserver ;;
  host-state) node_host_state ;;
  *) echo "usage: $0 up|down|env|status|restart-metacontroller|restart-apiserver|host-state" >&2; exit 2 ;;
esac
