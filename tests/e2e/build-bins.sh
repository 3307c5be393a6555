#!/usr/bin/env bash
# Build the e2e binaries from the Go module proxy only, pinned, into a cache
# outside the repository clone:
#
#   $E2E_BIN_CACHE/etcd-<v>/etcd
#   $E2E_BIN_CACHE/kube-apiserver-<v>/kube-apiserver
#   $E2E_BIN_CACHE/kube-controller-manager-<v>/kube-controller-manager
#   $E2E_BIN_CACHE/kubectl-<v>/kubectl
#   $E2E_BIN_CACHE/kubelet-<v>/kubelet                    (the pods phase's node)
#   $E2E_BIN_CACHE/kube-scheduler-<v>/kube-scheduler
#   $E2E_BIN_CACHE/coredns-<v>/coredns                    (cluster DNS of the pods phase)
#   $E2E_BIN_CACHE/metacontroller-<v>/metacontroller and .../crds/*.yaml
#
# Usage: build-bins.sh [all | etcd | kube | coredns | metacontroller]...   (default: all)
#
# `kube` is the five Kubernetes commands; those missing are built by one `go build`, which
# compiles the packages they share once (cold, all five: ~15 min on 2 busy cores).
#
# A binary that already exists is not rebuilt. A binary whose *_BIN variable is
# set by the caller (prebuilt elsewhere) is not built at all. The wrapper
# modules (go.mod/go.sum) live in tools/; they are copied to a scratch dir for
# the build so the checkout is never modified.
#
# Exit status: 0 when everything asked for exists afterwards; 1 on a build
# failure; 3 when only Metacontroller could not be fetched from the module proxy
# (the reason is printed and kept in $E2E_BIN_CACHE/metacontroller-<v>.blocked).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Remember which binaries the caller provided before versions.sh fills defaults.
declare -A preset=()
for v in ETCD_BIN KUBE_APISERVER_BIN KUBE_CONTROLLER_MANAGER_BIN KUBECTL_BIN KUBELET_BIN \
  KUBE_SCHEDULER_BIN COREDNS_BIN METACONTROLLER_BIN; do
  if [[ -n "${!v:-}" ]]; then preset[$v]=1; fi
done
# shellcheck source=versions.sh
source "${here}/versions.sh"

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-mod=mod -trimpath"
# Builds share the machine with others: stay polite.
NICE=(nice -n "${E2E_BUILD_NICE:-10}")

log() { printf '[build-bins] %s\n' "$*" >&2; }

scratch="$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-e2e-build.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT

timings="${scratch}/timings"
: >"${timings}"
total_start=$SECONDS

# copy_module NAME: fresh copy of tools/NAME in the scratch dir; prints its path.
copy_module() {
  local dst="${scratch}/$1"
  rm -rf "${dst}"
  cp -R "${here}/tools/$1" "${dst}"
  printf '%s\n' "${dst}"
}

# build_one LABEL MODDIR PKG OUT [LDFLAGS]: go build PKG inside MODDIR into OUT,
# atomically (a killed build never leaves a binary that a later run would skip).
build_one() {
  local label="$1" moddir="$2" pkg="$3" out="$4" ldflags="${5:-}"
  local start=$SECONDS tmp
  mkdir -p "$(dirname "${out}")"
  tmp="${out}.tmp.$$"
  log "building ${label} (${pkg}) ..."
  (cd "${moddir}" && "${NICE[@]}" go build -ldflags="-s -w ${ldflags}" -o "${tmp}" "${pkg}")
  mv -f "${tmp}" "${out}"
  local took=$((SECONDS - start))
  echo "${label}: ${took}s" >>"${timings}"
  log "built ${label} in ${took}s -> ${out}"
}

# need VAR: true when the binary named by VAR must be built.
need() {
  local var="$1" path="${!1}"
  if [[ -n "${preset[$var]:-}" ]]; then
    [[ -x "${path}" ]] || { log "${var}=${path} is set but not executable"; exit 1; }
    log "using prebuilt ${var}=${path}"
    return 1
  fi
  if [[ -x "${path}" ]]; then
    log "cached: ${path}"
    return 1
  fi
  return 0
}

build_etcd() {
  need ETCD_BIN || return 0
  local mod
  mod="$(copy_module etcd)"
  build_one "etcd ${ETCD_VERSION}" "${mod}" . "${ETCD_BIN}" \
    "-X go.etcd.io/etcd/api/v3/version.GitSHA=${ETCD_VERSION}"
}

build_kube() {
  local mod="" v="${K8S_VERSION#v}" ld=""
  local major="${v%%.*}" minor
  minor="${v#*.}"; minor="${minor%%.*}"
  # What hack/lib/version.sh would stamp; without it the binaries report
  # v0.0.0-master and clients may mis-detect the server version.
  local p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X ${p}.gitVersion=${K8S_VERSION} -X ${p}.gitMajor=${major} -X ${p}.gitMinor=${minor}"
    ld+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
  done
  local name var start=$SECONDS
  local -a names=() pkgs=()
  for name in kube-apiserver kube-controller-manager kubectl kubelet kube-scheduler; do
    var="$(tr 'a-z-' 'A-Z_' <<<"${name}")_BIN"
    need "${var}" || continue
    names+=("${name}")
    pkgs+=("k8s.io/kubernetes/cmd/${name}")
  done
  ((${#names[@]})) || return 0
  mod="$(copy_module kubernetes)"
  local out="${scratch}/kube-out"
  mkdir -p "${out}"
  log "building ${names[*]} ${K8S_VERSION} (one go build) ..."
  (cd "${mod}" && "${NICE[@]}" go build -ldflags="-s -w ${ld}" -o "${out}/" "${pkgs[@]}")
  for name in "${names[@]}"; do
    var="$(tr 'a-z-' 'A-Z_' <<<"${name}")_BIN"
    mkdir -p "$(dirname "${!var}")"
    mv -f "${out}/${name}" "${!var}"
    log "built ${name} -> ${!var}"
  done
  echo "${names[*]} ${K8S_VERSION}: $((SECONDS - start))s" >>"${timings}"
}

# CoreDNS with only the plugins the pods phase's cluster DNS uses (tools/coredns/main.go).
build_coredns() {
  need COREDNS_BIN || return 0
  local mod
  mod="$(copy_module coredns)"
  build_one "coredns ${COREDNS_VERSION}" "${mod}" . "${COREDNS_BIN}" \
    "-X github.com/coredns/coredns/coremain.GitCommit=${COREDNS_VERSION}"
}

# Returns 3 (and records why) when the module proxy refuses Metacontroller.
build_metacontroller() {
  local blocked="${E2E_BIN_CACHE}/metacontroller-${METACONTROLLER_VERSION}.blocked"
  local have_crds=0
  compgen -G "${METACONTROLLER_CRDS_DIR}/*.yaml" >/dev/null && have_crds=1
  if [[ -n "${preset[METACONTROLLER_BIN]:-}" || -x "${METACONTROLLER_BIN}" ]] && ((have_crds)); then
    need METACONTROLLER_BIN || true
    log "Metacontroller CRDs: ${METACONTROLLER_CRDS_DIR}"
    return 0
  fi
  local mod out dir start=$SECONDS
  mod="$(copy_module metacontroller)"
  log "fetching Metacontroller ${METACONTROLLER_VERSION} from the module proxy ..."
  if ! out="$(cd "${mod}" && go mod download -json metacontroller 2>&1)" \
     || grep -q '"Error"' <<<"${out}"; then
    mkdir -p "${E2E_BIN_CACHE}"
    {
      echo "command: (cd tests/e2e/tools/metacontroller && go mod download -json metacontroller)"
      echo "${out}"
    } >"${blocked}"
    log "BLOCKED: Metacontroller cannot be fetched from the Go module proxy:"
    sed 's/^/    /' "${blocked}" >&2
    return 3
  fi
  rm -f "${blocked}"
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"${out}")"
  [[ -d "${dir}" ]] || { log "no module Dir in: ${out}"; return 1; }
  echo "metacontroller download: $((SECONDS - start))s" >>"${timings}"

  # The CRDs come from the very module the binary is built from.
  local crd="${dir}/manifests/production/metacontroller-crds-v1.yaml"
  if [[ ! -f "${crd}" ]]; then
    log "expected ${crd}; CRD manifests found in the module:"
    grep -rl --include='*.yaml' 'kind: CustomResourceDefinition' "${dir}" >&2 || true
    return 1
  fi
  mkdir -p "${METACONTROLLER_CRDS_DIR}"
  install -m 0644 "${crd}" "${METACONTROLLER_CRDS_DIR}/"

  if need METACONTROLLER_BIN; then
    build_one "metacontroller ${METACONTROLLER_VERSION}" "${mod}" \
      metacontroller/pkg/cmd/metacontroller "${METACONTROLLER_BIN}" \
      "-X main.version=${METACONTROLLER_VERSION}"
  fi
}

# Metacontroller runs in a subshell with errexit on, so that its failure is
# reported (exit 3 = blocked at the proxy) after everything else was built.
try_metacontroller() {
  set +e
  (set -e; build_metacontroller)
  local r=$?
  set -e
  ((r == 0)) || rc=${r}
}

targets=("$@")
((${#targets[@]})) || targets=(all)
rc=0
for t in "${targets[@]}"; do
  case "$t" in
    all) build_etcd; build_kube; build_coredns; try_metacontroller ;;
    etcd) build_etcd ;;
    kube | kubernetes) build_kube ;;
    coredns) build_coredns ;;
    metacontroller) try_metacontroller ;;
    *) echo "usage: $0 [all|etcd|kube|coredns|metacontroller]..." >&2; exit 2 ;;
  esac
done

while read -r t; do log "time ${t}"; done <"${timings}"
log "total $((SECONDS - total_start))s; cache ${E2E_BIN_CACHE} ($(du -sh "${E2E_BIN_CACHE}" 2>/dev/null | cut -f1))"
exit "${rc}"
