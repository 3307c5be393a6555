# shellcheck shell=bash
# The node of tests/e2e/cluster.sh (E2E_NODE=1): containerd (Debian's package) with its own
# root, state and socket under the state dir, a CNI bridge with no default route in the pods,
# CoreDNS serving the cluster domain on the bridge address, kube-scheduler and a kubelet. Sourced
# by cluster.sh, which provides S, HOST, SERVICE_CIDR, KUBERNETES_SERVICE_IP, WAIT, log, die, spawn,
# alive, stop, wait_for, free_ports, get_var, set_var and kubectl_bin.
#
# Every change to the host is recorded before it is made and undone by node_cleanup: the sysctls
# the kubelet sets (saved values written back), its iptables chains (only those chains and the
# rules that jump to them), the DNAT rule of the kubernetes Service, mounts under the state dir,
# the bridge and its veths, the cgroups containerd creates, /var/log/containers and /var/log/pods
# when they did not exist.
# `cluster.sh host-state` prints what is compared before `up` and after `down`.

NODE_NAME=localhost # resolves to 127.0.0.1: the API server reaches the kubelet over loopback
NODE_BRIDGE="${E2E_NODE_BRIDGE:-mchk-e2e0}"
NODE_CIDR="${E2E_POD_CIDR:-10.213.77.0/24}"
NODE_GW="${NODE_CIDR%.*}.1"
# What the node needs from Debian, each as the file probed after the install step and its package.
NODE_PACKAGES=(containerd=containerd runc=runc /usr/lib/cni/bridge=containernetworking-plugins
  buildah=buildah iptables=iptables)
# Set by the kubelet (vm.*, kernel.*) and by CNI (forwarding); written back by node_cleanup.
NODE_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
  net.ipv4.conf.all.forwarding net.ipv6.conf.all.forwarding)
NODE_CHAINS=(KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT KUBE-FORWARD)
# Created by the kubelet, containerd's shims and CNI at fixed paths whatever their settings
# (device-plugin socket, volume-plugin dir, CNI result cache, shim sockets, pod log links);
# removed by node_cleanup when `up` found them absent.
NODE_HOST_DIRS=(/var/log/containers /var/log/pods /var/lib/kubelet /var/lib/cni /run/containerd
  /usr/libexec/kubernetes)

# host-state: what `up` may change on the host and `down` must restore, one fact a line.
node_host_state() {
  echo "# sysctl"
  sysctl -a 2>/dev/null | grep -Ev '^(fs\.(dentry-state|file-nr|inode-nr|inode-state|quota\.)|kernel\.(ns_last_pid|random\.)|net\.netfilter\.nf_conntrack_count)' || true
  # Rules, user chains and non-ACCEPT policies per table: a table holding nothing else (the
  # kubelet makes nat, filter and mangle exist) filters nothing, so it counts as absent.
  local t
  for t in iptables-save ip6tables-save; do
    echo "# ${t}"
    command -v "${t}" >/dev/null || continue
    "${t}" 2>/dev/null | awk '
      /^\*/ { table = $1; next }
      /^:(INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) ACCEPT/ { next }
      /^(#|COMMIT)/ { next }
      { sub(/ \[[0-9]+:[0-9]+\]/, ""); print table, $0 }' || true
  done
  echo "# links"
  ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | sort
  echo "# addresses"
  ip -o addr show | awk '{ print $2, $3, $4 }' | sort
  echo "# routes"
  ip route show | sort
  # Network namespaces of other tests (tests/peers) come and go under /run/netns; containerd's would
  # be named cni-*, and the node keeps its own under the state dir.
  echo "# mounts"
  awk '{ print $5 }' /proc/self/mountinfo | grep -Ev '^/run/netns(/|$)' | sort
  find /run/netns -maxdepth 1 -name 'cni-*' 2>/dev/null | sort
  # Every top-level cgroup of each hierarchy, and below them what containerd and the kubelet make
  # (k8s.io, kubepods); the rest belongs to other programs of the machine, which come and go.
  echo "# cgroups"
  {
    find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d 2>/dev/null
    find /sys/fs/cgroup -mindepth 3 -maxdepth 5 -type d \( -path '*/k8s.io*' -o -path '*/kubepods*' \) 2>/dev/null
  } | grep -v libpod | sort -u
  echo "# paths"
  local p
  for p in "${NODE_HOST_DIRS[@]}" /etc/cni /var/lib/containerd /opt/containerd /etc/kubernetes; do
    if [[ -e "${p}" ]]; then echo "${p}"; fi
  done
  return 0
}

node_preflight() {
  [[ $(id -u) -eq 0 ]] || die "the node needs root (containerd, mounts, network)"
  # shellcheck source=../lib/apt.sh
  source "${here}/../lib/apt.sh"
  apt_need "${NODE_PACKAGES[@]}" >&2 || die "the node's Debian packages"
  local b
  for b in "${KUBELET_BIN}" "${KUBE_SCHEDULER_BIN}" "${COREDNS_BIN}"; do
    [[ -x "${b}" ]] || die "missing ${b} (run tests/e2e/build-bins.sh kube coredns)"
  done
  ip link show "${NODE_BRIDGE}" >/dev/null 2>&1 && die "bridge ${NODE_BRIDGE} exists already (another cluster?)"
  local r
  r="$(ip route show to match "${NODE_GW}" | grep -v '^default' || true)"
  [[ -z "${r}" ]] || die "pod network ${NODE_CIDR} overlaps a host route (${r}); set E2E_POD_CIDR"
  return 0
}

# Records what node_cleanup restores: sysctl values, pre-existing chains and directories.
node_save_host() {
  local k v t c
  : >"${S}/node/sysctls"
  for k in "${NODE_SYSCTLS[@]}"; do
    v="$(sysctl -n "${k}" 2>/dev/null)" && printf '%s=%s\n' "${k}" "${v}" >>"${S}/node/sysctls"
  done
  : >"${S}/node/chains-before"
  for t in iptables ip6tables; do
    command -v "${t}-save" >/dev/null || continue
    for c in "${NODE_CHAINS[@]}"; do
      "${t}-save" 2>/dev/null | grep -q "^:${c} " && echo "${t} ${c}" >>"${S}/node/chains-before"
    done
  done
  : >"${S}/node/dirs-created"
  for k in "${NODE_HOST_DIRS[@]}"; do [[ -e "${k}" ]] || echo "${k}" >>"${S}/node/dirs-created"; done
  : >"${S}/node/cgroups-before"
  find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d -name k8s.io >>"${S}/node/cgroups-before" 2>/dev/null || true
}

node_containerd() {
  local c="${S}/node/containerd"
  mkdir -p "${c}/root" "${c}/state" "${c}/opt"
  cat >"${c}/config.toml" <<EOF
version = 2
root = "${c}/root"
state = "${c}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${c}/containerd.sock"
[ttrpc]
  address = "${c}/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "${c}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$(cat "${S}/node/images/pause.ref")"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${c}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${S}/node/cni"
EOF
  spawn containerd /usr/bin/containerd --config "${c}/config.toml"
  wait_for containerd "serving ${c}/containerd.sock" node_ctr version
}

# node_ctr ARGS...: ctr against the node's containerd, in the kubelet's namespace.
node_ctr() { ctr --address "${S}/node/containerd/containerd.sock" --namespace k8s.io "$@"; }

# Imports the images node-images.sh built and every archive named in E2E_NODE_IMAGES
# (colon-separated docker-archive or OCI archive files).
node_images() {
  local start=${SECONDS} f
  bash "${here}/node-images.sh" "${S}/node/images" 2>>"${S}/logs/node-images.log" \
    || { tail -n 20 "${S}/logs/node-images.log" >&2; die "building the node's images"; }
  log "node images built in $((SECONDS - start))s"
}

node_import() {
  local f
  local -a files=("${S}"/node/images/*.tar)
  local -a extra=()
  IFS=: read -r -a extra <<<"${E2E_NODE_IMAGES:-}"
  for f in "${extra[@]}"; do [[ -n "${f}" ]] && files+=("${f}"); done
  for f in "${files[@]}"; do
    node_ctr images import --all-platforms "${f}" >>"${S}/logs/ctr.log" 2>&1 \
      || { tail -n 20 "${S}/logs/ctr.log" >&2; die "ctr images import ${f}"; }
  done
  log "images in the node's containerd: $(node_ctr images ls -q | grep -v '^sha256:' | tr '\n' ' ')"
}

# The bridge is made here, with the gateway address, so CoreDNS can listen on it before the
# first pod; the bridge plugin then only attaches veths (isGateway false: it sets no forwarding,
# and the pods get no default route, so nothing leaves the machine).
node_network() {
  local cni="${S}/node/cni"
  mkdir -p "${cni}" "${S}/node/ipam"
  ip link add "${NODE_BRIDGE}" type bridge
  echo "${NODE_BRIDGE}" >"${S}/node/bridge"
  ip addr add "${NODE_GW}/${NODE_CIDR#*/}" dev "${NODE_BRIDGE}"
  ip link set "${NODE_BRIDGE}" up
  cat >"${cni}/10-e2e.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${NODE_BRIDGE}",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "${NODE_CIDR}", "gateway": "${NODE_GW}"}]],
        "routes": [{"dst": "${SERVICE_CIDR}", "gw": "${NODE_GW}"}],
        "dataDir": "${S}/node/ipam"
      }
    },
    {"type": "loopback"}
  ]
}
EOF
  log "pod network ${NODE_CIDR} on bridge ${NODE_BRIDGE} (${NODE_GW}), no default route"
  node_api_route
}

# The `kubernetes` Service as pods reach it in any cluster (KUBERNETES_SERVICE_HOST/PORT from the
# kubelet, the ServiceAccount token, kube-root-ca.crt), without kube-proxy: the pods route the
# Service range to the bridge address (the CNI config above), and one DNAT rule sends what comes in
# on the bridge for the ClusterIP's port 443, and only that, to the API server on loopback.
# `route_localnet` on the bridge alone lets the kernel deliver those packets to 127.0.0.1 and
# route the replies back; the kubelet's KUBE-FIREWALL chain drops any other packet from outside
# to 127.0.0.0/8 (not DNATed). The rule is recorded before it is added; the sysctl goes with the
# bridge.
node_api_route() {
  local -a rule=(-i "${NODE_BRIDGE}" -d "${KUBERNETES_SERVICE_IP}/32" -p tcp --dport 443
    -m comment --comment "memcached-hook e2e: the kubernetes Service"
    -j DNAT --to-destination "${HOST}:$(get_var API_PORT)")
  printf '%s\n' "${rule[@]}" >"${S}/node/nat-rule"
  sysctl -q -w "net.ipv4.conf.${NODE_BRIDGE}.route_localnet=1" || die "route_localnet on ${NODE_BRIDGE}"
  iptables -w -t nat -A PREROUTING "${rule[@]}" || die "iptables: the DNAT rule of the kubernetes Service"
  log "kubernetes Service ${KUBERNETES_SERVICE_IP}:443 from the pods: DNAT to ${HOST}:$(get_var API_PORT)"
}

node_coredns() {
  local ready_port
  read -r ready_port <<<"$(free_ports 1)"
  cat >"${S}/node/Corefile" <<EOF
cluster.local:53 {
    bind ${NODE_GW}
    errors
    log . "{remote} {type} {name} {rcode}"
    ready ${HOST}:${ready_port}
    kubernetes cluster.local {
        kubeconfig ${S}/kubeconfig e2e
        ttl 5
    }
}
EOF
  spawn coredns "${COREDNS_BIN}" -conf "${S}/node/Corefile"
  wait_for coredns "ready (cluster.local on ${NODE_GW}:53)" curl -sf --max-time 2 "http://${HOST}:${ready_port}/ready"
}

node_scheduler() {
  local port
  read -r port <<<"$(free_ports 1)"
  spawn kube-scheduler "${KUBE_SCHEDULER_BIN}" \
    --kubeconfig="${S}/kubeconfig" \
    --authentication-kubeconfig="${S}/kubeconfig" --authorization-kubeconfig="${S}/kubeconfig" \
    --bind-address="${HOST}" --secure-port="${port}" --leader-elect=false
  wait_for kube-scheduler "healthy on ${HOST}:${port}" curl -sfk --max-time 2 "https://${HOST}:${port}/healthz"
}

node_kubelet() {
  local k="${S}/node/kubelet" port hport
  read -r port hport <<<"$(free_ports 2)"
  mkdir -p "${k}/root" "${k}/pki" "${k}/pod-logs" "${k}/volume-plugins"
  sed -e "s/token: .*/token: $(get_var KUBELET_TOKEN)/" -e 's/name: admin/name: kubelet/' \
    -e 's/user: admin/user: kubelet/' "${S}/kubeconfig" >"${k}/kubeconfig"
  chmod 600 "${k}/kubeconfig"
  cat >"${k}/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${HOST}
port: ${port}
readOnlyPort: 0
healthzBindAddress: ${HOST}
healthzPort: ${hport}
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://${S}/node/containerd/containerd.sock
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
localStorageCapacityIsolation: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
syncFrequency: 10s
clusterDNS: [${NODE_GW}]
clusterDomain: cluster.local
resolvConf: ""
podLogsDir: ${k}/pod-logs
serializeImagePulls: false
maxPods: 60
EOF
  spawn kubelet "${KUBELET_BIN}" --config="${k}/config.yaml" --kubeconfig="${k}/kubeconfig" \
    --root-dir="${k}/root" --cert-dir="${k}/pki" \
    --volume-plugin-dir="${k}/volume-plugins" --hostname-override="${NODE_NAME}" --v=2
  local kc
  kc="$(kubectl_bin)"
  wait_for kubelet "healthy on ${HOST}:${hport}" curl -sf --max-time 2 "http://${HOST}:${hport}/healthz"
  wait_for kubelet "node ${NODE_NAME} Ready" "${kc}" --kubeconfig="${S}/kubeconfig" \
    wait --for=condition=Ready --timeout=2s "node/${NODE_NAME}"
}

# After kube-controller-manager: everything the node needs, then the node itself.
node_up() {
  node_images
  node_network
  node_containerd
  node_import
  node_coredns
  node_scheduler
  node_kubelet
  set_var NODE 1
}

# Before the processes stop: the pods go through the kubelet (CNI DEL, unmounts), bounded.
node_drain_pods() {
  alive kubelet || return 0
  local kc deadline
  kc="$(kubectl_bin)"
  # Controllers first (a run stopped half-way leaves them), so that no pod is made again.
  "${kc}" --kubeconfig="${S}/kubeconfig" delete deployments,statefulsets,replicasets,daemonsets,jobs \
    --all --all-namespaces --wait=false >>"${S}/logs/kubectl.log" 2>&1 || true
  "${kc}" --kubeconfig="${S}/kubeconfig" delete pods --all --all-namespaces --grace-period=1 \
    --wait=false >>"${S}/logs/kubectl.log" 2>&1 || true
  deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    [[ -z "$(node_ctr tasks ls -q 2>/dev/null)" ]] && break
    sleep 0.5
  done
  # Sandboxes stop a moment after their last task; give the kubelet that moment.
  sleep 2
}

# After the kubelet stopped, with containerd still running: whatever is left is removed
# through containerd (tasks killed, containers deleted).
node_remove_leftovers() {
  alive containerd || return 0
  local id i
  for id in $(node_ctr tasks ls -q 2>/dev/null); do
    log "leftover task ${id}: killing it"
    node_ctr tasks kill -s SIGKILL "${id}" >/dev/null 2>&1 || true
  done
  for ((i = 0; i < 20; i++)); do
    [[ -z "$(node_ctr tasks ls -q 2>/dev/null | head -n 1)" ]] && break
    for id in $(node_ctr tasks ls -q 2>/dev/null); do node_ctr tasks delete "${id}" >/dev/null 2>&1 || true; done
    sleep 0.5
  done
  for id in $(node_ctr containers ls -q 2>/dev/null); do
    node_ctr containers delete "${id}" >/dev/null 2>&1 || true
  done
}

# After every process stopped: the host as it was before `up`.
node_cleanup() {
  [[ -d "${S}/node" ]] || return 0
  local m pid line t c br veth d
  # Shims of our containerd (their command line names our socket) that outlived it.
  for pid in $(pgrep -f "containerd-shim.*-address ${S}/node/containerd/containerd.sock" 2>/dev/null); do
    log "containerd shim ${pid} outlived containerd: killing it"
    kill -KILL "${pid}" 2>/dev/null || true
  done
  # Mounts under the state dir, deepest first.
  while read -r m; do
    umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null || log "cannot unmount ${m}"
  done < <(awk -v s="${S}/" 'index($5, s) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  # The bridge and any veth still attached to it.
  if [[ -f "${S}/node/bridge" ]]; then
    br="$(cat "${S}/node/bridge")"
    for veth in $(ip -o link show master "${br}" 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
      ip link delete "${veth}" 2>/dev/null || true
    done
    ip link delete "${br}" 2>/dev/null || true
    rm -f "${S}/node/bridge"
  fi
  # The DNAT rule of the kubernetes Service.
  if [[ -f "${S}/node/nat-rule" ]]; then
    local -a rule
    mapfile -t rule <"${S}/node/nat-rule"
    while iptables -w -t nat -C PREROUTING "${rule[@]}" 2>/dev/null; do
      iptables -w -t nat -D PREROUTING "${rule[@]}" || { log "cannot delete the DNAT rule ${rule[*]}"; break; }
    done
    rm -f "${S}/node/nat-rule"
  fi
  # The kubelet's iptables chains that were not there before: jumps to them first.
  for t in iptables ip6tables; do
    command -v "${t}-save" >/dev/null || continue
    for c in "${NODE_CHAINS[@]}"; do
      grep -qx "${t} ${c}" "${S}/node/chains-before" 2>/dev/null && continue
      node_delete_chain "${t}" "${c}"
    done
  done
  # Sysctls as they were.
  while IFS='=' read -r k v; do
    [[ "$(sysctl -n "${k}" 2>/dev/null)" == "${v}" ]] || sysctl -q -w "${k}=${v}" >/dev/null 2>&1 || log "cannot restore ${k}"
  done <"${S}/node/sysctls"
  # containerd's cgroups (k8s.io under each hierarchy), when it created them.
  while read -r d; do
    grep -qx "${d}" "${S}/node/cgroups-before" 2>/dev/null && continue
    find "${d}" -depth -type d -exec rmdir {} + 2>/dev/null || log "cannot remove cgroup ${d}"
  done < <(find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d -name k8s.io 2>/dev/null)
  # Host directories the kubelet created.
  while read -r d; do
    [[ -n "${d}" ]] && rm -rf "${d}"
  done <"${S}/node/dirs-created"
  : >"${S}/node/dirs-created"
  rm -rf "${S}/node/containerd/root" "${S}/node/kubelet/root" 2>/dev/null || log "cannot remove the node's data"
}

# node_delete_chain TOOL CHAIN: in every table, delete the rules that jump to CHAIN, then CHAIN.
node_delete_chain() {
  local t="$1" c="$2" table rule
  for table in filter nat mangle raw; do
    "${t}" -t "${table}" -S 2>/dev/null | grep -q -- "^-N ${c}$" || continue
    while read -r rule; do
      # shellcheck disable=SC2086
      "${t}" -t "${table}" ${rule/-A/-D} 2>/dev/null || true
    done < <("${t}" -t "${table}" -S 2>/dev/null | grep -- "-j ${c}\( \|$\)")
    "${t}" -t "${table}" -F "${c}" 2>/dev/null || true
    "${t}" -t "${table}" -X "${c}" 2>/dev/null || log "cannot delete ${t} -t ${table} chain ${c}"
  done
}
