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
#   $E2E_BIN_CACHE/kwok-<v>/kwok                          (simulated nodes of bench/scale.sh;
#                                                          only when asked for: not in `all`)
#
# Metacontroller is not built here: it is supplied by the user (METACONTROLLER_BIN and
# METACONTROLLER_CRDS_DIR, see docs/testing.md).
#
# Usage: build-bins.sh [all | etcd | kube | coredns | kwok]...   (default: all)
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
# failure; 2 on a bad argument.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Remember which binaries the caller provided before versions.sh fills defaults.
declare -A preset=()
for v in ETCD_BIN KUBE_APISERVER_BIN KUBE_CONTROLLER_MANAGER_BIN KUBECTL_BIN KUBELET_BIN \
  KUBE_SCHEDULER_BIN COREDNS_BIN KWOK_BIN; do
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

# KWOK: `go install` of its command at the pinned version, so its own go.mod and go.sum (checked
# against the checksum database) pin every dependency; no wrapper module (cold: ~2 min).
build_kwok() {
  need KWOK_BIN || return 0
  local start=$SECONDS gobin="${scratch}/kwok-bin"
  mkdir -p "${gobin}" "$(dirname "${KWOK_BIN}")"
  log "building kwok ${KWOK_VERSION} (go install) ..."
  (cd "${scratch}" && GOBIN="${gobin}" "${NICE[@]}" go install -ldflags="-s -w" \
    "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}")
  mv -f "${gobin}/kwok" "${KWOK_BIN}"
  echo "kwok ${KWOK_VERSION}: $((SECONDS - start))s" >>"${timings}"
  log "built kwok -> ${KWOK_BIN}"
}

targets=("$@")
((${#targets[@]})) || targets=(all)
for t in "${targets[@]}"; do
  case "$t" in
    all) build_etcd; build_kube; build_coredns ;;
    etcd) build_etcd ;;
    kube | kubernetes) build_kube ;;
    coredns) build_coredns ;;
    kwok) build_kwok ;;
    *) echo "usage: $0 [all|etcd|kube|coredns|kwok]..." >&2; exit 2 ;;
  esac
done

while read -r t; do log "time ${t}"; done <"${timings}"
log "total $((SECONDS - total_start))s; cache ${E2E_BIN_CACHE} ($(du -sh "${E2E_BIN_CACHE}" 2>/dev/null | cut -f1))"
