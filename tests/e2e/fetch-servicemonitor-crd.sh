#!/usr/bin/env bash
# Fetch the Prometheus Operator's ServiceMonitor CRD from the Go module proxy (the module
# github.com/prometheus-operator/prometheus-operator at a pinned version ships it as
# example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml) into the e2e
# binary cache, and print its path.
#
# Usage: fetch-servicemonitor-crd.sh
#   exit 0: the path is printed on stdout
#   exit 3: the module proxy refused; the exact command and answer are printed on stderr
#           and kept in $E2E_BIN_CACHE/prometheus-operator-<v>.blocked
#   exit 1: anything else
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.sh
source "${here}/versions.sh"

PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
module=github.com/prometheus-operator/prometheus-operator
file=example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml
dir="${E2E_BIN_CACHE}/prometheus-operator-${PROMETHEUS_OPERATOR_VERSION}"
out="${dir}/monitoring.coreos.com_servicemonitors.yaml"
blocked="${E2E_BIN_CACHE}/prometheus-operator-${PROMETHEUS_OPERATOR_VERSION}.blocked"

if [[ -s "${out}" ]]; then
  printf '%s\n' "${out}"
  exit 0
fi
command -v go >/dev/null || { echo "go not found" >&2; exit 1; }

scratch="$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-smcrd.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT
cmd=(go mod download -json "${module}@${PROMETHEUS_OPERATOR_VERSION}")
# Outside any module, so that no go.mod is read or written.
if ! answer="$(cd "${scratch}" && GOFLAGS="" timeout 300 "${cmd[@]}" 2>&1)" || grep -q '"Error"' <<<"${answer}"; then
  mkdir -p "${E2E_BIN_CACHE}"
  { echo "command: ${cmd[*]}"; echo "${answer}"; } >"${blocked}"
  echo "refused by the Go module proxy:" >&2
  sed 's/^/    /' "${blocked}" >&2
  exit 3
fi
rm -f "${blocked}"
moddir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"${answer}")"
[[ -f "${moddir}/${file}" ]] || { echo "no ${file} in ${moddir}" >&2; exit 1; }
mkdir -p "${dir}"
install -m 0644 "${moddir}/${file}" "${out}.tmp.$$"
mv -f "${out}.tmp.$$" "${out}"
printf '%s\n' "${out}"
