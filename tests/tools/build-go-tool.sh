#!/usr/bin/env bash
# Builds a pinned test tool from its Go module (the module proxy only) into a cache outside the
# clone, once per version:
#
#   tests/tools/build-go-tool.sh helm       -> $TOOLS_BIN_CACHE/helm-<v>/helm
#   tests/tools/build-go-tool.sh promtool   -> $TOOLS_BIN_CACHE/promtool-<v>/promtool
#
# Prints the binary's path on stdout (logs go to stderr). A binary that exists and reports the
# pinned version is not rebuilt; a binary named by HELM_BIN / PROMTOOL_BIN in the environment is
# used as it is. The build goes to a temporary name and is moved into place only when it
# succeeded, so an interrupted build is redone, never trusted.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
preset_helm="${HELM_BIN:-}"
preset_promtool="${PROMTOOL_BIN:-}"
# shellcheck source=versions.sh
source "${here}/versions.sh"
export PATH="/usr/local/go/bin:${PATH}"

log() { printf '[build-go-tool] %s\n' "$*" >&2; }

# build NAME PACKAGE VERSION OUT VERSION_CHECK LDFLAGS [TAGS]
build() {
  local name="$1" pkg="$2" version="$3" out="$4" check="$5" ldflags="$6" tags="${7:-}"
  if [[ -x "${out}" ]] && "${out}" "${check}" 2>&1 | grep -qF "${version#v}"; then
    log "cached: ${out}"
    printf '%s\n' "${out}"
    return 0
  fi
  command -v go >/dev/null || { log "go not found: needed to build ${name} from the Go module proxy"; return 1; }
  local dir tmp start=${SECONDS}
  dir="$(dirname "${out}")"
  mkdir -p "${dir}"
  tmp="$(mktemp -d "${dir}.tmp.XXXXXX")"
  log "building ${name} ${version} (${pkg}) ..."
  # GOTOOLCHAIN=local: never download another Go toolchain. CGO off: a static binary. Builds
  # share the machine with others: nice.
  if ! GOBIN="${tmp}" GOTOOLCHAIN=local GOFLAGS='-trimpath' CGO_ENABLED=0 timeout "${TOOLS_BUILD_TIMEOUT:-3000}" \
      nice -n "${TOOLS_BUILD_NICE:-10}" go install -tags="${tags}" -ldflags="-s -w ${ldflags}" "${pkg}@${version}" >&2; then
    rm -rf "${tmp}"
    log "building ${name} ${version} failed"
    return 1
  fi
  mv -f "${tmp}/${name}" "${out}"
  rm -rf "${tmp}"
  log "built ${name} ${version} in $((SECONDS - start))s -> ${out}"
  "${out}" "${check}" >&2 || true
  printf '%s\n' "${out}"
}

case "${1:-}" in
  helm)
    if [[ -n "${preset_helm}" ]]; then printf '%s\n' "${preset_helm}"; exit 0; fi
    build helm helm.sh/helm/v3/cmd/helm "${HELM_VERSION}" "${HELM_BIN}" version \
      "-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    ;;
  promtool)
    if [[ -n "${preset_promtool}" ]]; then printf '%s\n' "${preset_promtool}"; exit 0; fi
    v="${PROMETHEUS_MODULE_VERSION#v0.}"
    release="$((${v%%.*} / 100)).$((${v%%.*} % 100)).${v#*.}"
    # remove_all_sd: without Prometheus' service discovery plugins (cloud SDKs), which checking
    # and unit-testing rules never uses: 250 of 1365 packages fewer to compile on a cold machine.
    build promtool github.com/prometheus/prometheus/cmd/promtool "${PROMETHEUS_MODULE_VERSION}" \
      "${PROMTOOL_BIN}" --version \
      "-X github.com/prometheus/common/version.Version=${release} -X github.com/prometheus/common/version.Branch=module-${PROMETHEUS_MODULE_VERSION}" \
      remove_all_sd
    ;;
  *) echo "usage: $0 helm|promtool" >&2; exit 2 ;;
esac
