#!/usr/bin/env bash
# End-to-end checks of memcached-hook against a real kube-apiserver v1.35 (tests/e2e/cluster.sh,
# loopback only). Metacontroller is NOT part of these checks (tests/e2e/metacontroller.sh runs
# the hook under one when it is supplied); what runs here is everything that needs only the API server:
#
#   crd        deploy/crd/crd.yaml is accepted by the API server (preloaded by cluster.sh up);
#              if it is rejected, that is a failure, and the remaining checks run against a
#              copy whose memory-limit rule is replaced by e2e_lib.py's WORKAROUND_MEMORY_RULE
#              (announced loudly), so that one bad rule does not hide the others
#   cel        every tests/e2e/cel/*.yaml created through memcached.c5c3.io/v1beta1 and
#              v1alpha1: accepted (then its `# readback:` fields read back), or rejected with
#              `# message:` naming `# field:`; and `memcached-hook render` of the same object
#              agrees (rejects it naming the field, or renders it) unless `# hook:` says
#              otherwise; every config/samples/*.yaml is accepted through both versions
#   children   the children of every config/samples/*.yaml and tests/fixtures/cr/*.yaml
#              (render) and tests/fixtures/sync/*.json (replay) pass
#              `kubectl create --dry-run=server --validate=strict`, and come back from the
#              API server with every field the hook wrote unchanged; ServiceMonitors too when
#              the Prometheus Operator's CRD could be fetched from the Go module proxy; a
#              fixture whose golden snapshot (tests/it/snapshots) is `rejected` must fail to
#              replay, naming the snapshot's field
#   stability  [stand-in, NOT Metacontroller] ha.yaml's Deployment and statefulset.yaml's
#              StatefulSet, each with its Service and PDB, are
#              created for real with server-side apply, applied again unchanged: no
#              resourceVersion moves; then deleted
#   uninstall  kubectl apply -f crd.yaml, then -f install.yaml (release/install-yaml.sh, or
#              E2E_INSTALL_YAML; it must hold no CRD) installs; kubectl delete -f install.yaml (the
#              documented uninstall of the release artifacts) removes the hook and keeps the CRD, a
#              Memcached and the Deployment it owns; kubectl delete -k deploy/crd/ deletes them
#   reload condition  reload_condition.py: memcached with TLS and `memcached-hook reload-agent
#              --pod-condition` on 127.0.0.1 set the condition memcached.c5c3.io/SecretReload on a Pod
#              that never runs: True after the first delivery, False/ReloadFailed for a certificate
#              with a foreign key, True again, the Pod's other conditions kept (memcached and
#              openssl from apt when missing)
#
# Usage: tests/e2e/run.sh
# Environment:
#   MEMCACHED_HOOK_BIN   use this hook binary instead of building it
#   CARGO_TARGET_DIR     default $HOME/.cache/memcached-hook/target
#   E2E_RUN_TIMEOUT      bound of the whole run in seconds (default 2400: a cold build of
#                        the control plane takes ~10 min on 2 cores)
#   E2E_KEEP=1           keep the work dir (logs, rendered children) even when all pass
# Prints `e2e: N passed, M failed` and exits non-zero if anything failed.
# shellcheck source-path=SCRIPTDIR
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/../.." && pwd)"

# Bound the whole run. A watchdog (below) sends TERM to this shell alone after
# E2E_RUN_TIMEOUT seconds; the shell then stops at the next command and brings the cluster
# down. As a last resort the script runs under timeout(1) with 3 more minutes: timeout
# signals its process group, which holds only what this run started.
RUN_LIMIT="${E2E_RUN_TIMEOUT:-2400}"
# shellcheck source=../lib/watchdog.sh
source "${ROOT}/tests/lib/watchdog.sh"
bound_run "$((RUN_LIMIT + 180))" "$@"

# shellcheck source=versions.sh
source "${HERE}/versions.sh"
CACHE="${HOME}/.cache/memcached-hook"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CACHE}/target}"
PYYAML_VERSION=6.0.3
WORK="$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-e2e-run.XXXXXX")"
export E2E_STATE_DIR="${WORK}/cluster"
# These checks never use Metacontroller; don't start it even when it exists.
export E2E_METACONTROLLER=0

passed=0
failed=0
skipped=0
failures=()
phases=()
cluster_started=0
phase_start=${SECONDS}

log() { printf '[e2e +%ss] %s\n' "${SECONDS}" "$*" >&2; }
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$*"; }
bad() {
  failed=$((failed + 1)); failures+=("$1"); printf 'FAIL %s\n' "$1"
  if [[ -n "${2:-}" ]]; then printf '%s\n' "$2" | head -n 15 | sed 's/^/       /'; fi
}
skip() { skipped=$((skipped + 1)); printf 'skip %s\n' "$*"; }
banner() { printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n'; printf '!!! %s\n' "$@"; printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n'; }
phase() { phases+=("$1: $((SECONDS - phase_start))s"); phase_start=${SECONDS}; }

finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n "${watchdog_pid:-}" ]]; then kill "${watchdog_pid}" 2>/dev/null || true; fi
  if ((cluster_started)); then
    "${HERE}/cluster.sh" down >>"${WORK}/cluster-down.log" 2>&1 || log "cluster.sh down failed (see ${WORK}/cluster-down.log)"
    phase "cluster down"
  fi
  if ((rc != 0)) && { ((failed == 0)) || ((rc == 130 || rc == 143)); }; then
    bad "run aborted (exit ${rc}; 143: E2E_RUN_TIMEOUT reached or terminated)"
  fi
  echo
  printf 'time: %s\n' "${phases[@]}" "total: ${SECONDS}s"
  if ((failed)); then
    echo "failures:"
    printf '  %s\n' "${failures[@]}"
  fi
  ((skipped)) && echo "(${skipped} skipped, see 'skip' lines)"
  if ((failed)) || [[ "${E2E_KEEP:-0}" == 1 ]]; then
    echo "logs and rendered objects kept in ${WORK}"
  else
    rm -rf "${WORK}"
  fi
  echo "e2e: ${passed} passed, ${failed} failed"
  if ((failed)); then exit 1; fi
  exit 0
}
trap finish EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
start_watchdog "${RUN_LIMIT}" "[e2e] E2E_RUN_TIMEOUT=${RUN_LIMIT}s"

# ---- tools ---------------------------------------------------------------------------------------
log "building the hook (CARGO_TARGET_DIR=${CARGO_TARGET_DIR})"
# shellcheck source=tests/lib/hook-bin.sh
source "${ROOT}/tests/lib/hook-bin.sh"
HOOK=$(hook_bin "${WORK}/cargo.log") || { bad "cargo build"; exit 1; }
[[ -x "${HOOK}" ]] || { bad "hook binary ${HOOK} missing"; exit 1; }

log "building the control plane (tests/e2e/build-bins.sh)"
"${HERE}/build-bins.sh" >"${WORK}/build-bins.log" 2>&1 \
  || { tail -n 30 "${WORK}/build-bins.log" >&2; bad "build-bins.sh"; exit 1; }

PY="${CACHE}/venv-schema/e2e-pyyaml-${PYYAML_VERSION}/bin/python"
if [[ ! -f "${PY%/bin/python}/.complete" ]]; then
  log "creating a venv with PyYAML ${PYYAML_VERSION} (PyPI)"
  rm -rf "${PY%/bin/python}"
  python3 -m venv "${PY%/bin/python}" \
    || { bad "venv for PyYAML"; exit 1; }
  if ! timeout 300 "${PY%/bin/python}/bin/pip" install --quiet --disable-pip-version-check "PyYAML==${PYYAML_VERSION}"; then
    rm -rf "${PY%/bin/python}"; bad "install PyYAML ${PYYAML_VERSION}"; exit 1
  fi
  touch "${PY%/bin/python}/.complete"
fi
lib() { "${PY}" "${HERE}/e2e_lib.py" "$@"; }

SM_CRD=""
if SM_CRD="$("${HERE}/fetch-servicemonitor-crd.sh" 2>"${WORK}/smcrd.log")"; then
  log "ServiceMonitor CRD: ${SM_CRD}"
else
  SM_CRD=""
  banner "ServiceMonitor CRD NOT AVAILABLE; ServiceMonitor children are skipped:" "$(cat "${WORK}/smcrd.log")"
fi
phase "build and fetch"

# ---- cluster -------------------------------------------------------------------------------------
CRD_UNDER_TEST="${ROOT}/deploy/crd/crd.yaml"
up() { # up CRD-FILE: cluster.sh up with CRD-FILE (and the ServiceMonitor CRD) preloaded
  local preload="$1"
  [[ -n "${SM_CRD}" ]] && preload+=":${SM_CRD}"
  cluster_started=1
  E2E_PRELOAD_MANIFESTS="${preload}" "${HERE}/cluster.sh" up >"${WORK}/env.sh" 2>>"${WORK}/cluster-up.log"
}
log "starting kube-apiserver ${K8S_VERSION} with deploy/crd/crd.yaml preloaded"
if up "${ROOT}/deploy/crd/crd.yaml"; then
  ok "crd: deploy/crd/crd.yaml accepted by kube-apiserver ${K8S_VERSION}"
else
  cp "${E2E_STATE_DIR}/logs/kubectl.log" "${WORK}/crd-rejected.log" 2>/dev/null || true
  if grep -q 'CustomResourceDefinition "memcacheds.memcached.c5c3.io" is invalid' "${WORK}/crd-rejected.log" 2>/dev/null; then
    bad "crd: deploy/crd/crd.yaml accepted by kube-apiserver ${K8S_VERSION}" \
      "$(sed -n '/memcacheds.memcached.c5c3.io" is invalid/,$p' "${WORK}/crd-rejected.log")"
    CRD_UNDER_TEST="${WORK}/crd-workaround.yaml"
    lib crd-workaround "${ROOT}/deploy/crd/crd.yaml" "${CRD_UNDER_TEST}" >"${WORK}/crd-workaround.txt" \
      || { bad "crd: building the workaround CRD"; exit 1; }
    banner "deploy/crd/crd.yaml IS REJECTED BY THE API SERVER (see the FAIL above)." \
      "The checks below run against a copy whose memory-limit CEL rule is replaced:" \
      "$(cat "${WORK}/crd-workaround.txt")"
    if up "${CRD_UNDER_TEST}"; then
      ok "crd: the workaround CRD (memory-limit rule replaced) is accepted"
    else
      tail -n 20 "${WORK}/cluster-up.log" >&2
      bad "crd: the workaround CRD is accepted too"; exit 1
    fi
  else
    tail -n 30 "${WORK}/cluster-up.log" >&2
    bad "cluster.sh up"; exit 1
  fi
fi
# shellcheck disable=SC1091
source "${WORK}/env.sh"
k() { timeout 60 "${E2E_KUBECTL}" --kubeconfig="${KUBECONFIG}" --request-timeout=45s "$@"; }
served="$(k get crd memcacheds.memcached.c5c3.io -o jsonpath='{range .spec.versions[*]}{.name}={.served}/{.storage} {end}')"
if [[ "${served}" == *"v1alpha1=true/false"* && "${served}" == *"v1beta1=true/true"* ]]; then
  ok "crd: v1beta1 served and stored, v1alpha1 served"
else
  bad "crd: versions served/stored" "${served}"
fi
phase "cluster up"

# ---- cel: the table --------------------------------------------------------------------------------
header() { sed -n "s/^# $1: //p" "$2" | head -n 1; }
VERSIONS=(v1beta1 v1alpha1)
for ver in "${VERSIONS[@]}"; do
  ns="cel-${ver}"
  k create namespace "${ns}" >/dev/null || { bad "create namespace ${ns}"; continue; }
  for f in "${HERE}"/cel/*.yaml; do
    name="$(basename "${f}" .yaml)"
    expect="$(header expect "${f}")"
    message="$(header message "${f}")"
    field="$(header field "${f}")"
    hook_expect="$(header hook "${f}")"; hook_expect="${hook_expect:-${expect}}"
    hook_field="$(header hook-field "${f}")"; hook_field="${hook_field:-${field}}"
    doc="${WORK}/cel-${ver}-${name}.yaml"
    sed "s#^apiVersion: memcached.c5c3.io/v1beta1\$#apiVersion: memcached.c5c3.io/${ver}#" "${f}" >"${doc}"
    label="cel ${ver} ${name}"

    out="$(k create -n "${ns}" -f "${doc}" 2>&1)"; rc=$?
    case "${expect}" in
      accepted)
        if ((rc == 0)); then
          ok "${label}: accepted"
          while IFS= read -r line; do
            jp="${line%% =*}"
            want="${line#*=}"; want="${want# }"
            got="$(k get "memcacheds.${ver}.memcached.c5c3.io" "${name}" -n "${ns}" -o "jsonpath=${jp}" 2>&1)"
            if [[ "${got}" == "${want}" ]]; then ok "${label}: ${jp} reads back '${want}'"
            else bad "${label}: ${jp} reads back '${want}'" "got: '${got}'"; fi
          done < <(sed -n 's/^# readback: //p' "${f}")
        else
          bad "${label}: accepted" "${out}"
        fi ;;
      rejected)
        if ((rc != 0)) && [[ "${out}" == *"${field}: "* && "${out}" == *"${message}"* ]]; then
          ok "${label}: rejected at ${field}: ${message}"
        else
          bad "${label}: rejected at ${field}: ${message}" "exit ${rc}: ${out}"
        fi ;;
      *) bad "${label}: bad '# expect:' header in ${f}" ;;
    esac

    hout="$("${HOOK}" render "${doc}" 2>&1 >/dev/null)"; hrc=$?
    case "${hook_expect}" in
      accepted)
        if ((hrc == 0)); then ok "${label}: hook renders it"
        else bad "${label}: hook renders it" "${hout}"; fi ;;
      rejected)
        if ((hrc != 0)) && [[ "${hout}" == *"${hook_field}: "* ]]; then ok "${label}: hook rejects it at ${hook_field}"
        else bad "${label}: hook rejects it at ${hook_field}" "exit ${hrc}: ${hout}"; fi ;;
      *) bad "${label}: bad '# hook:' header in ${f}" ;;
    esac
  done

  for f in "${ROOT}"/config/samples/*.yaml; do
    doc="${WORK}/sample-${ver}-$(basename "${f}")"
    sed "s#^apiVersion: memcached.c5c3.io/v1beta1\$#apiVersion: memcached.c5c3.io/${ver}#" "${f}" >"${doc}"
    if out="$(k create -n "${ns}" -f "${doc}" 2>&1)"; then ok "cel ${ver} sample $(basename "${f}"): accepted"
    else bad "cel ${ver} sample $(basename "${f}"): accepted" "${out}"; fi
  done
done
phase "cel"

# ---- children: rendered and replayed children against the API server -------------------------------
mkdir -p "${WORK}/children"
CH_NS=children
k create namespace "${CH_NS}" >/dev/null || bad "create namespace ${CH_NS}"
# Whether a fixture's replay fails on purpose comes from its golden snapshot in tests/it.
sources=()  # "label|children-file|--json or empty"
for f in "${ROOT}"/config/samples/*.yaml "${ROOT}"/tests/fixtures/cr/*.yaml; do
  [[ "${f}" == *.expected.yaml ]] && continue
  rel="${f#"${ROOT}/"}"
  out="${WORK}/children/$(tr '/' '_' <<<"${rel}").children.yaml"
  if "${HOOK}" render "${f}" >"${out}" 2>"${out}.err"; then
    ok "children ${rel}: rendered"
    sources+=("${rel}|${out}|")
  else
    bad "children ${rel}: rendered" "$(cat "${out}.err")"
  fi
done
for f in "${ROOT}"/tests/fixtures/sync/*.json; do
  rel="${f#"${ROOT}/"}"
  base="$(basename "${f}" .json)"
  y="${WORK}/children/${base}.replay.yaml"
  j="${WORK}/children/${base}.replay.json"
  "${HOOK}" replay "${f}" --output json --now 2026-01-01T00:00:00Z >"${j}" 2>"${j}.err"; jrc=$?
  "${HOOK}" replay "${f}" --output yaml --now 2026-01-01T00:00:00Z >"${y}" 2>"${y}.err"; yrc=$?
  expectation="$(lib replay-expectation "${f}")"
  if [[ "${expectation}" == rejected* ]]; then
    efield="${expectation#rejected }"
    label="children ${rel}: replay fails naming ${efield}, as its golden snapshot says"
    if ((jrc != 0 && yrc != 0)) && grep -qF -- "${efield}: " "${j}.err"; then ok "${label}"
    else bad "${label}" "json exit ${jrc}, yaml exit ${yrc}: $(cat "${j}.err")"; fi
    continue
  fi
  [[ "${expectation}" == children ]] || log "note: ${rel} has no golden snapshot; expecting children"
  if ((jrc != 0 || yrc != 0)); then
    bad "children ${rel}: replayed" "$(cat "${j}.err" "${y}.err")"
    continue
  fi
  ok "children ${rel}: replayed"
  if diffout="$(lib same-children "${y}" "${j}" 2>&1)"; then
    ok "children ${rel}: replay --output yaml lists the same children as --output json"
  else
    bad "children ${rel}: replay --output yaml lists the same children as --output json" "${diffout}"
  fi
  # The JSON children are checked against the API server (the YAML ones must be equal anyway).
  sources+=("${rel}|${j}|--json")
done

for s in "${sources[@]}"; do
  IFS='|' read -r rel file flag <<<"${s}"
  prefix="$(tr '/.' '__' <<<"${rel}")"
  # shellcheck disable=SC2086
  if ! lib children "${file}" "${WORK}/children" "${prefix}" ${flag} >"${WORK}/children/${prefix}.list" 2>"${WORK}/children/${prefix}.list.err"; then
    bad "children ${rel}: split into objects" "$(cat "${WORK}/children/${prefix}.list.err")"
    continue
  fi
  while IFS= read -r child; do
    [[ -n "${child}" ]] || continue
    IFS='~' read -r _ _ _ _ kind _ cname <<<"$(basename "${child}" .json)"
    label="children ${rel}: ${kind}/${cname}"
    if [[ "${kind}" == ServiceMonitor && -z "${SM_CRD}" ]]; then
      skip "${label}: no ServiceMonitor CRD (the module proxy refused it, see above)"
      continue
    fi
    live="${child%.json}.live.json"
    if out="$(k create --dry-run=server --validate=strict -n "${CH_NS}" -f "${child}" -o json 2>&1 >"${live}")"; then
      ok "${label}: accepted (create --dry-run=server --validate=strict)"
      if d="$(lib subset "${child}" "${live}")"; then ok "${label}: every field comes back unchanged"
      else bad "${label}: every field comes back unchanged" "${d}"; fi
    else
      bad "${label}: accepted (create --dry-run=server --validate=strict)" "${out}"
    fi
  done <"${WORK}/children/${prefix}.list"
done

# Controls: the two checks above must be able to fail.
cat >"${WORK}/children/control-unknown-field.json" <<'EOF'
{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "control"},
 "spec": {"clusterIP": "None", "ports": [{"port": 11211, "targetPort": "memcached", "nmae": "typo"}]}}
EOF
if out="$(k create --dry-run=server --validate=strict -n "${CH_NS}" -f "${WORK}/children/control-unknown-field.json" 2>&1)"; then
  bad "children control: a Service with an unknown field is rejected" "${out}"
else
  ok "children control: a Service with an unknown field is rejected"
fi
cat >"${WORK}/children/control-quantity.json" <<'EOF'
{"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "control"},
 "spec": {"limits": [{"type": "Container", "default": {"cpu": "1000m", "memory": "1024Ki"}}]}}
EOF
if k create --dry-run=server --validate=strict -n "${CH_NS}" -f "${WORK}/children/control-quantity.json" -o json \
  >"${WORK}/children/control-quantity.live.json" 2>&1 \
  && ! lib subset "${WORK}/children/control-quantity.json" "${WORK}/children/control-quantity.live.json" >/dev/null; then
  ok "children control: non-canonical quantities (1000m, 1024Ki) come back changed"
else
  bad "children control: non-canonical quantities (1000m, 1024Ki) come back changed"
fi
# Quantities the hook computes or rewrites, over a range of sizes: each workload must come back
# from the API server with every quantity as the hook wrote it, or Metacontroller would see a
# difference on every sync (the item memory around each power-of-two GiB, extstore files on both
# volume kinds, user resources in many spellings).
QDIR="${WORK}/children/quantities"
mkdir -p "${QDIR}"
if ncr="$(lib quantity-crs "${QDIR}/crs.yaml")" \
  && "${HOOK}" render "${QDIR}/crs.yaml" >"${QDIR}/rendered.yaml" 2>"${QDIR}/err" \
  && nwl="$(lib quantity-list "${QDIR}/rendered.yaml" "${QDIR}/list.json" 2>>"${QDIR}/err")"; then
  ok "quantities: ${ncr} Memcacheds over a range of sizes render ${nwl} workloads"
  if out="$(k create --dry-run=server --validate=strict -n "${CH_NS}" -f "${QDIR}/list.json" -o json 2>&1 >"${QDIR}/live.json")"; then
    if d="$(lib quantity-compare "${QDIR}/list.json" "${QDIR}/live.json")"; then ok "quantities: ${d##*$'\n'}"
    else bad "quantities: every workload comes back with its quantities as written" "$(head -c 3000 <<<"${d}")"; fi
  else
    bad "quantities: the API server accepts every workload (create --dry-run=server)" "$(head -c 3000 <<<"${out}")"
  fi
else
  bad "quantities: Memcacheds over a range of sizes render" "$(head -c 3000 "${QDIR}/err")"
fi
phase "children"

# ---- stability: server-side apply twice (a stand-in for idempotency, NOT Metacontroller) ----------
ST="[stand-in, not Metacontroller]"
# ha.yaml (Deployment mode) and statefulset.yaml (StatefulSet mode): the workload, Service and PDB.
for SSA_PAIR in ha:Deployment statefulset:StatefulSet; do
SSA_SAMPLE="${ROOT}/config/samples/${SSA_PAIR%%:*}.yaml"
SSA_WORKLOAD="${SSA_PAIR#*:}"
SSA_NS="stability-${SSA_PAIR%%:*}"
mkdir -p "${WORK}/ssa/${SSA_NS}"
rvs() { k get deployments,statefulsets,services,poddisruptionbudgets -n "${SSA_NS}" \
  -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}' | sort; }
if k create namespace "${SSA_NS}" >/dev/null \
  && "${HOOK}" render "${SSA_SAMPLE}" >"${WORK}/ssa/${SSA_NS}/all.yaml" \
  && lib children "${WORK}/ssa/${SSA_NS}/all.yaml" "${WORK}/ssa/${SSA_NS}" ha >"${WORK}/ssa/${SSA_NS}/list"; then
  files=()
  while IFS= read -r c; do
    case "${c}" in *~~"${SSA_WORKLOAD}"~~* | *~~Service~~* | *~~PodDisruptionBudget~~*) files+=("${c}") ;; esac
  done <"${WORK}/ssa/${SSA_NS}/list"
  if ((${#files[@]} == 3)); then ok "${ST} ${SSA_SAMPLE##*/} renders a ${SSA_WORKLOAD}, a Service and a PDB"
  else bad "${ST} ${SSA_SAMPLE##*/} renders a ${SSA_WORKLOAD}, a Service and a PDB" "$(cat "${WORK}/ssa/${SSA_NS}/list")"; fi
  fargs=(); for c in "${files[@]}"; do fargs+=(-f "${c}"); done
  ssa() { k apply --server-side --field-manager=memcached-hook-e2e -n "${SSA_NS}" "${fargs[@]}"; }
  if out="$(ssa 2>&1)"; then
    ok "${ST} server-side apply creates them"
    before="$(rvs)"
    if out="$(ssa 2>&1)"; then
      after="$(rvs)"
      if [[ -n "${before}" && "${before}" == "${after}" ]]; then
        ok "${ST} server-side apply of the same objects again: no resourceVersion changes"
      else
        bad "${ST} server-side apply of the same objects again: no resourceVersion changes" \
          "$(diff <(echo "${before}") <(echo "${after}"))"
      fi
    else
      bad "${ST} second server-side apply" "${out}"
    fi
    if out="$(k diff --server-side --field-manager=memcached-hook-e2e -n "${SSA_NS}" "${fargs[@]}" 2>&1)"; then
      ok "${ST} kubectl diff --server-side: nothing to change"
    else
      bad "${ST} kubectl diff --server-side: nothing to change" "${out}"
    fi
    for c in "${files[@]}"; do
      IFS='~' read -r _ _ _ _ kind _ cname <<<"$(basename "${c}" .json)"
      k get "${kind,,}" "${cname}" -n "${SSA_NS}" -o json >"${c%.json}.live.json" 2>&1
      if d="$(lib subset "${c}" "${c%.json}.live.json")"; then ok "${ST} live ${kind}/${cname} holds every field as rendered"
      else bad "${ST} live ${kind}/${cname} holds every field as rendered" "${d}"; fi
    done
    if out="$(k delete -n "${SSA_NS}" "${fargs[@]}" --wait=true --timeout=60s 2>&1)" && [[ -z "$(rvs)" ]]; then
      ok "${ST} deleted again"
    else
      bad "${ST} deleted again" "${out}"
    fi
  else
    bad "${ST} server-side apply creates them" "${out}"
  fi
else
  bad "${ST} render ${SSA_SAMPLE} and create namespace ${SSA_NS}"
fi
done
phase "stability"

# ---- uninstall: what the documented commands remove ------------------------------------------------
# docs/install.md: `kubectl delete -f install.yaml` (the hook and the CompositeController, as
# `kubectl delete -k deploy/` for the hook) removes the hook and keeps the CRD, every Memcached and
# what it owns (here a Deployment with the owner reference Metacontroller sets; the garbage
# collector runs in this cluster); only `kubectl delete -f crd.yaml` (deploy/crd/) deletes the caches.
UN_NS=uninstall
un_owned() { # un_owned UID: a Deployment owned by the Memcached cache-minimal, as Metacontroller makes it
  cat <<EOF
{"apiVersion": "apps/v1", "kind": "Deployment",
 "metadata": {"name": "cache-minimal", "namespace": "${UN_NS}",
  "ownerReferences": [{"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached", "name": "cache-minimal",
   "uid": "$1", "controller": true, "blockOwnerDeletion": true}]},
 "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "uninstall"}},
  "template": {"metadata": {"labels": {"app": "uninstall"}},
   "spec": {"containers": [{"name": "memcached", "image": "memcached:1.6"}]}}}}
EOF
}
un_left() { k get crd/memcacheds.memcached.c5c3.io -o name 2>/dev/null
  k get memcached/cache-minimal deployment/cache-minimal -n "${UN_NS}" -o name 2>/dev/null; }
# The install is the release's crd.yaml (deploy/crd/crd.yaml) and install.yaml (release/install-yaml.sh:
# deploy/ and metacontroller/), built here with `kubectl kustomize`, or the file E2E_INSTALL_YAML
# names. Without Metacontroller's CRDs on this API server its CompositeController is left out, and
# the line says so.
UN_INSTALL="${WORK}/install.yaml"
UN_NOTE="all of it"
if [[ -n "${E2E_INSTALL_YAML:-}" ]]; then cp "${E2E_INSTALL_YAML}" "${UN_INSTALL}"
else bash "${ROOT}/release/install-yaml.sh" "${E2E_KUBECTL}" kustomize >"${UN_INSTALL}" 2>"${WORK}/install-yaml.err" || : >"${UN_INSTALL}"; fi
if ! k get crd compositecontrollers.metacontroller.k8s.io >/dev/null 2>&1; then
  python3 - "${UN_INSTALL}" <<'PY'
import sys
path = sys.argv[1]
docs = open(path).read().split("\n---\n")
keep = [d for d in docs if "\nkind: CompositeController\n" not in "\n" + d + "\n"]
assert len(keep) == len(docs) - 1, "install.yaml holds no CompositeController"
open(path, "w").write("\n---\n".join(keep))
PY
  UN_NOTE="all but the CompositeController (no Metacontroller CRDs on this API server)"
fi
if [[ -s "${UN_INSTALL}" ]] && grep -q '^kind: CustomResourceDefinition$' "${UN_INSTALL}"; then
  out="install.yaml holds a CRD: kubectl delete -f install.yaml would delete every Memcached"
  : >"${UN_INSTALL}"
fi
if [[ -s "${UN_INSTALL}" ]] && out="$(k apply -f "${CRD_UNDER_TEST}" 2>&1 && k apply -f "${UN_INSTALL}" 2>&1 \
  && k create namespace "${UN_NS}" 2>&1 && k apply -n "${UN_NS}" -f "${ROOT}/config/samples/minimal.yaml" 2>&1)" \
  && uid="$(k get -n "${UN_NS}" memcached cache-minimal -o jsonpath='{.metadata.uid}')" \
  && out="$(un_owned "${uid}" | k apply -f - 2>&1)" \
  && k -n memcached-system get deployment memcached-hook >/dev/null 2>&1; then
  ok "uninstall: kubectl apply -f crd.yaml and -f install.yaml (${UN_NOTE}) install the CRD and the hook; a Memcached owns a Deployment"
  if out="$(k delete -f "${UN_INSTALL}" --wait=true --timeout=50s 2>&1)" \
    && ! k get namespace memcached-system >/dev/null 2>&1 && [[ "$(un_left | wc -l)" == 3 ]]; then
    ok "uninstall: kubectl delete -f install.yaml removes the hook and its namespace; the CRD, the Memcached and its Deployment stay"
  else
    bad "uninstall: kubectl delete -f install.yaml removes the hook and keeps the CRD, the Memcached and its Deployment" \
      "${out}" "left: $(un_left | tr '\n' ' ')"
  fi
  # The control: deleting deploy/crd/ does delete the Memcached and, through garbage collection, its
  # Deployment, so the check above can fail. The CRD is put back for what follows.
  gone=""
  if out="$(k delete -k "${ROOT}/deploy/crd/" --wait=true --timeout=50s 2>&1)"; then
    for _ in $(seq 1 60); do
      k get -n "${UN_NS}" deployment/cache-minimal >/dev/null 2>&1 || { gone=1; break; }
      sleep 1
    done
  fi
  if [[ -n "${gone}" ]]; then
    ok "uninstall: kubectl delete -k deploy/crd/ deletes the Memcached and, by garbage collection, its Deployment"
  else
    bad "uninstall: kubectl delete -k deploy/crd/ deletes the Memcached and its Deployment" "${out}"
  fi
  if ! k apply -f "${CRD_UNDER_TEST}" >/dev/null 2>&1 \
    || ! k wait --for condition=Established --timeout=60s crd/memcacheds.memcached.c5c3.io >/dev/null 2>&1; then
    bad "uninstall: the CRD applied again"
  fi
  k delete namespace "${UN_NS}" --wait=false >/dev/null 2>&1 || true
else
  bad "uninstall: install with kubectl apply -f crd.yaml and -f install.yaml (${UN_NOTE})" "${out:-}$(cat "${WORK}/install-yaml.err" 2>/dev/null)"
fi
phase "uninstall"

# ---- reload condition: the reload agent's Pod condition, real memcached + real API server ---------
# tests/e2e/reload_condition.py: memcached with TLS and `memcached-hook reload-agent --pod-condition`
# on 127.0.0.1, a Pod that never runs (no kubelet here) whose status the agent patches.
# shellcheck source=../lib/apt.sh
source "${ROOT}/tests/lib/apt.sh"
apt_need memcached=memcached openssl=openssl || bad "reload condition: Debian packages (memcached, openssl)"
if command -v memcached >/dev/null 2>&1; then
  rc_out="${WORK}/reload-condition.out"
  timeout --kill-after=10 240 "${PY}" "${HERE}/reload_condition.py" --hook "${HOOK}" \
    --kubectl "${E2E_KUBECTL}" --kubeconfig "${KUBECONFIG}" --apiserver-url "${E2E_APISERVER_URL}" \
    --clusterrole "${ROOT}/deploy/hook/reload-agent-clusterrole.yaml" >"${rc_out}" 2>&1
  rc=$?
  while IFS= read -r line; do
    case "${line}" in
      "ok   "*) ok "reload condition: ${line#ok   }" ;;
      "FAIL "*) bad "reload condition: ${line#FAIL }" ;;
      *) printf '     %s\n' "${line}" ;;
    esac
  done <"${rc_out}"
  grep -q '^FAIL ' "${rc_out}" || ((rc == 0)) || bad "reload condition: reload_condition.py exited ${rc}" "$(tail -n 15 "${rc_out}")"
fi
phase "reload condition"
