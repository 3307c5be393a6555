# Pinned versions and cache locations of the e2e binaries. Sourced by
# build-bins.sh and cluster.sh; override any of these from the environment.
# The wrapper modules under tools/ pin the same versions: change both together.
# METACONTROLLER_VERSION is the release the Metacontroller scenarios were run against.

ETCD_VERSION="${ETCD_VERSION:-v3.5.21}"
K8S_VERSION="${K8S_VERSION:-v1.35.8}"
METACONTROLLER_VERSION="${METACONTROLLER_VERSION:-v4.17.2}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
# KWOK (simulated nodes and pods for bench/scale.sh), built with `go install` of its own module.
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"

# Outside the repository clone, so that it survives a fresh clone (CI).
E2E_BIN_CACHE="${E2E_BIN_CACHE:-${HOME}/.cache/memcached-hook/e2e-bin}"

# Where build-bins.sh puts each binary; cluster.sh uses these unless the
# corresponding *_BIN variable is already set (prebuilt binaries).
ETCD_BIN="${ETCD_BIN:-${E2E_BIN_CACHE}/etcd-${ETCD_VERSION}/etcd}"
KUBE_APISERVER_BIN="${KUBE_APISERVER_BIN:-${E2E_BIN_CACHE}/kube-apiserver-${K8S_VERSION}/kube-apiserver}"
KUBE_CONTROLLER_MANAGER_BIN="${KUBE_CONTROLLER_MANAGER_BIN:-${E2E_BIN_CACHE}/kube-controller-manager-${K8S_VERSION}/kube-controller-manager}"
KUBECTL_BIN="${KUBECTL_BIN:-${E2E_BIN_CACHE}/kubectl-${K8S_VERSION}/kubectl}"
KUBELET_BIN="${KUBELET_BIN:-${E2E_BIN_CACHE}/kubelet-${K8S_VERSION}/kubelet}"
KUBE_SCHEDULER_BIN="${KUBE_SCHEDULER_BIN:-${E2E_BIN_CACHE}/kube-scheduler-${K8S_VERSION}/kube-scheduler}"
COREDNS_BIN="${COREDNS_BIN:-${E2E_BIN_CACHE}/coredns-${COREDNS_VERSION}/coredns}"
KWOK_BIN="${KWOK_BIN:-${E2E_BIN_CACHE}/kwok-${KWOK_VERSION}/kwok}"

# Metacontroller is never built by this project: the user builds it by hand outside the
# repository and supplies the binary and the directory of its CRD manifests (*.yaml).
# Empty means not supplied.
METACONTROLLER_BIN="${METACONTROLLER_BIN:-}"
METACONTROLLER_CRDS_DIR="${METACONTROLLER_CRDS_DIR:-}"

# metacontroller_supplied: true when both are given and exist.
metacontroller_supplied() {
  [[ -n "${METACONTROLLER_BIN}" && -x "${METACONTROLLER_BIN}" && -n "${METACONTROLLER_CRDS_DIR}" ]] &&
    compgen -G "${METACONTROLLER_CRDS_DIR}/*.yaml" >/dev/null
}

# metacontroller_absent: why metacontroller_supplied is false, for a skip or an error line.
metacontroller_absent() {
  echo "no Metacontroller (METACONTROLLER_BIN=${METACONTROLLER_BIN:-<unset>}, METACONTROLLER_CRDS_DIR=${METACONTROLLER_CRDS_DIR:-<unset>}: an executable and a directory of its CRD *.yaml; docs/testing.md says how to supply them)"
}
