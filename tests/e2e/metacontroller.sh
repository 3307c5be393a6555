#!/usr/bin/env bash
# The hook under a real Metacontroller, once per apply strategy (tests/e2e/mc_suite.py):
# samples converge to `memcached-hook render`, readiness, updates, Secret rotation, invalid spec,
# drift, idempotency, garbage collection, `kubectl scale` and an HPA on the Memcached (its own
# HPA controller), a hook release under a new own-image tag that restarts no cache; faults (hook down, 500, timeout, restart, two replicas,
# API server and Metacontroller restarts); 200 Memcacheds at once.
#
# Metacontroller is never built by this project (build it by hand outside the repository, see
# docs/testing.md), so this runs only when one is supplied:
#   METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR   a binary and the directory of its CRD manifests;
#                       a control plane is started per apply strategy with tests/e2e/cluster.sh
#   KUBECONFIG + E2E_HOOK_HOST   an existing cluster with Metacontroller installed, which reaches
#                       this machine at E2E_HOOK_HOST (the hook and its relay listen there);
#                       only E2E_APPLY_STRATEGY (what that Metacontroller runs) is tested, and
#                       the API server / Metacontroller restarts and the scale run are skipped
# Otherwise it prints one line saying the Metacontroller scenarios were skipped and why, and
# exits 77 (tests/run-all.sh's "skipped").
#
# Environment:
#   MEMCACHED_HOOK_BIN    the hook binary (default: cargo build into CARGO_TARGET_DIR)
#   E2E_APPLY_STRATEGIES  default "dynamic-apply server-side-apply"
#   E2E_MC_SCENARIOS      comma-separated subset of mc_suite.py's scenarios (default: all)
#   E2E_MC_SCALE          Memcacheds in the scale run (default 200; 0 skips it)
#   E2E_MC_SCALE_ARGS     Metacontroller flags for the scale run (default
#                         "--client-go-qps=100 --client-go-burst=200"; "" = Metacontroller's own)
#   E2E_MC_TIMEOUT        bound of the whole run in seconds (default 1500)
#   E2E_KEEP=1            keep the work dir
# Prints `e2e-metacontroller: N passed, M failed` (or the skip line) and exits 1 on failure.
# shellcheck source-path=SCRIPTDIR
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/../.." && pwd)"

LIMIT="${E2E_MC_TIMEOUT:-1500}"
# shellcheck source=../lib/watchdog.sh
source "${ROOT}/tests/lib/watchdog.sh"
bound_run "${LIMIT}" "$@"

# shellcheck source=versions.sh
source "${HERE}/versions.sh"
CACHE="${HOME}/.cache/memcached-hook"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CACHE}/target}"

mode=""
if metacontroller_supplied; then
  mode=local
elif [[ -n "${METACONTROLLER_BIN}${METACONTROLLER_CRDS_DIR}" ]]; then
  echo "SKIPPED Metacontroller scenarios: $(metacontroller_absent)"
  exit 77
elif [[ -n "${KUBECONFIG:-}" && -n "${E2E_HOOK_HOST:-}" ]]; then
  mode=existing
else
  echo "SKIPPED Metacontroller scenarios: no Metacontroller supplied (set METACONTROLLER_BIN and METACONTROLLER_CRDS_DIR, or KUBECONFIG and E2E_HOOK_HOST for a cluster running it); a Metacontroller ${METACONTROLLER_VERSION} build: docs/testing.md says how"
  exit 77
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-e2e-mc.XXXXXX")"
log() { printf '[e2e-mc +%ss] %s\n' "${SECONDS}" "$*" >&2; }
cluster_up=0
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if ((cluster_up)); then "${HERE}/cluster.sh" down >>"${WORK}/cluster-down.log" 2>&1 || true; fi
  if ((rc != 0)) || [[ "${E2E_KEEP:-0}" == 1 ]]; then echo "logs kept in ${WORK}"; else rm -rf "${WORK}"; fi
  exit "${rc}"
}
trap finish EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# shellcheck source=tests/lib/hook-bin.sh
source "${ROOT}/tests/lib/hook-bin.sh"
HOOK=$(hook_bin "${WORK}/cargo.log") || exit 1

PYYAML_VERSION=6.0.3
PY="${CACHE}/venv-schema/e2e-pyyaml-${PYYAML_VERSION}/bin/python"
if [[ ! -f "${PY%/bin/python}/.complete" ]]; then
  log "creating a venv with PyYAML ${PYYAML_VERSION} (PyPI)"
  rm -rf "${PY%/bin/python}"
  python3 -m venv "${PY%/bin/python}" &&
    timeout 300 "${PY%/bin/python}/bin/pip" install --quiet --disable-pip-version-check "PyYAML==${PYYAML_VERSION}" &&
    touch "${PY%/bin/python}/.complete" || { rm -rf "${PY%/bin/python}"; echo "FAIL venv for PyYAML"; exit 1; }
fi

passed=0
failed=0
summary=()
run_suite() { # run_suite STRATEGY SERVICEMONITOR-CRD-OR-EMPTY
  local strategy="$1" sm="$2" out="${WORK}/${1}"
  mkdir -p "${out}"
  "${PY}" "${HERE}/mc_suite.py" --strategy "${strategy}" --hook "${HOOK}" --root "${ROOT}" --work "${out}" \
    --scenarios "${E2E_MC_SCENARIOS:-}" --scale "${E2E_MC_SCALE:-200}" \
    --scale-mc-args "${E2E_MC_SCALE_ARGS---client-go-qps=100 --client-go-burst=200}" \
    --servicemonitor "${sm}" | tee "${out}/output.txt"
  local p f
  p="$(grep -c '^ok  ' "${out}/output.txt")"
  f="$(grep -c '^FAIL' "${out}/output.txt")"
  passed=$((passed + p)); failed=$((failed + f))
  [[ -f "${out}/summary.txt" ]] && mapfile -t -O "${#summary[@]}" summary <"${out}/summary.txt"
  [[ -f "${out}/summary.txt" ]] || { failed=$((failed + 1)); summary+=("${strategy} suite did not finish"); }
}

if [[ "${mode}" == local ]]; then
  log "building/locating the control plane (tests/e2e/build-bins.sh kube etcd)"
  "${HERE}/build-bins.sh" etcd kube >"${WORK}/build-bins.log" 2>&1 || { tail -n 30 "${WORK}/build-bins.log"; exit 1; }
  SM_CRD="$("${HERE}/fetch-servicemonitor-crd.sh" 2>/dev/null)" || SM_CRD=""
  # KUBE_CONTROLLER_MANAGER_BIN: the scale_subresource scenario runs its HPA controller.
  export METACONTROLLER_BIN METACONTROLLER_CRDS_DIR E2E_METACONTROLLER=1 KUBE_CONTROLLER_MANAGER_BIN
  export E2E_STATE_DIR="${WORK}/cluster"
  for strategy in ${E2E_APPLY_STRATEGIES:-dynamic-apply server-side-apply}; do
    log "control plane + Metacontroller (${METACONTROLLER_BIN}, --apply-strategy=${strategy})"
    preload="${ROOT}/deploy/crd/crd.yaml"
    [[ -n "${SM_CRD}" ]] && preload+=":${SM_CRD}"
    cluster_up=1
    # (`cluster.sh env` of the previous strategy exported E2E_METACONTROLLER=running)
    if ! E2E_METACONTROLLER=1 E2E_APPLY_STRATEGY="${strategy}" E2E_PRELOAD_MANIFESTS="${preload}" \
      "${HERE}/cluster.sh" up >"${WORK}/env-${strategy}.sh" 2>"${WORK}/cluster-up-${strategy}.log"; then
      tail -n 20 "${WORK}/cluster-up-${strategy}.log"
      failed=$((failed + 1)); summary+=("${strategy} cluster.sh up FAILED"); continue
    fi
    # shellcheck disable=SC1090
    source "${WORK}/env-${strategy}.sh"
    run_suite "${strategy}" "${SM_CRD}"
    cp -r "${E2E_STATE_DIR}/logs" "${WORK}/${strategy}/cluster-logs" 2>/dev/null || true
    "${HERE}/cluster.sh" down >>"${WORK}/cluster-down.log" 2>&1 || true
    cluster_up=0
  done
else
  strategy="${E2E_APPLY_STRATEGY:-dynamic-apply}"
  E2E_KUBECTL="${KUBECTL_BIN}"; [[ -x "${E2E_KUBECTL}" ]] || E2E_KUBECTL="$(command -v kubectl)"
  export E2E_KUBECTL
  log "existing cluster (KUBECONFIG=${KUBECONFIG}), Metacontroller's strategy given as ${strategy}"
  run_suite "${strategy}" ""
fi

echo
echo "strategy           scenario                       result"
printf '%s\n' "${summary[@]}"
echo "e2e-metacontroller: ${passed} passed, ${failed} failed (${SECONDS}s)"
((failed == 0))
