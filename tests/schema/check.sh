#!/usr/bin/env bash
# Schema and security-posture checks of what the hook emits and of the hook's own manifests.
#
#   validate   every child rendered from config/samples/*.yaml and tests/fixtures/cr/*.yaml
#              (`memcached-hook render`) and replayed from tests/fixtures/sync/*.json
#              (`memcached-hook replay`, except the fixtures whose golden snapshot in tests/it
#              says the hook rejects them)
#              passes `kubernetes-validate --strict` for Kubernetes $K8S_VERSION, one check
#              per child; ServiceMonitors are validated against the Prometheus Operator's own
#              CRD schema (fetched from the Go module proxy by
#              tests/e2e/fetch-servicemonitor-crd.sh, unknown fields rejected), or skipped
#              with the reason printed when it cannot be fetched
#   checkov    checkov on the children rendered from config/samples/production.yaml and on
#              deploy/ (plain files, without the overlays' patches): every finding must be in
#              checkov-allowlist.txt
#              (with a reason), and every allow-list entry must still be found
#   controls   a deliberately invalid Service and ServiceMonitor fail validation, and a
#              privileged Deployment gets a checkov finding that the allow-list does not cover
#
# Usage: tests/schema/check.sh [EXTRA-CHILD.json|yaml ...]
#   Extra files are validated like rendered children (to see a broken child fail it).
# Environment: MEMCACHED_HOOK_BIN (else cargo build into CARGO_TARGET_DIR, default
#   $HOME/.cache/memcached-hook/target), SCHEMA_TIMEOUT (bound of the run, default 1200 s).
# Prints `schema: N passed, M failed`; exits non-zero on any failure.
# shellcheck source-path=SCRIPTDIR
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/../.." && pwd)"
# shellcheck source=../lib/watchdog.sh
source "${ROOT}/tests/lib/watchdog.sh"
bound_run "${SCHEMA_TIMEOUT:-1200}" "$@"

K8S_VERSION=1.35.0
CACHE="${HOME}/.cache/memcached-hook"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${CACHE}/target}"
REQ="${HERE}/requirements.txt"
VENV="${CACHE}/venv-schema/tools-$(sha256sum "${REQ}" | cut -c1-12)"
ALLOW="${HERE}/checkov-allowlist.txt"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-schema.XXXXXX")"
EXTRA=("$@")

passed=0
failed=0
skipped=0
failures=()
t0=${SECONDS}
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$*"; }
bad() {
  failed=$((failed + 1)); failures+=("$1"); printf 'FAIL %s\n' "$1"
  if [[ -n "${2:-}" ]]; then printf '%s\n' "$2" | head -n 15 | sed 's/^/       /'; fi
}
skip() { skipped=$((skipped + 1)); printf 'skip %s\n' "$*"; }
log() { printf '[schema +%ss] %s\n' "$((SECONDS - t0))" "$*" >&2; }
finish() {
  local rc=$?
  trap - EXIT TERM INT
  if ((rc != 0 && failed == 0)) || ((rc == 143)); then bad "run aborted (exit ${rc})"; fi
  if ((failed)); then echo "failures:"; printf '  %s\n' "${failures[@]}"; echo "work dir kept: ${WORK}"
  else rm -rf "${WORK}"; fi
  ((skipped)) && echo "(${skipped} skipped, see 'skip' lines)"
  echo "time: ${SECONDS}s"
  echo "schema: ${passed} passed, ${failed} failed"
  if ((failed)); then exit 1; fi
  exit 0
}
trap finish EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# ---- tools ---------------------------------------------------------------------------------------
if [[ ! -f "${VENV}/.complete" ]]; then
  log "installing kubernetes-validate and checkov (PyPI, pinned in ${REQ#"${ROOT}/"}) into ${VENV}"
  rm -rf "${VENV}"
  if ! { python3 -m venv "${VENV}" \
    && timeout 900 "${VENV}/bin/pip" install --quiet --disable-pip-version-check -r "${REQ}"; } >"${WORK}/pip.log" 2>&1; then
    tail -n 20 "${WORK}/pip.log" >&2
    rm -rf "${VENV}"
    bad "install the pinned Python tools"; exit 1
  fi
  touch "${VENV}/.complete"
fi
PY="${VENV}/bin/python"
lib() { "${PY}" "${ROOT}/tests/e2e/e2e_lib.py" "$@"; }
log "kubernetes-validate $("${VENV}/bin/kubernetes-validate" --version), checkov $("${VENV}/bin/checkov" --version 2>/dev/null)"

# shellcheck source=tests/lib/hook-bin.sh
source "${ROOT}/tests/lib/hook-bin.sh"
HOOK=$(hook_bin "${WORK}/cargo.log") || { bad "cargo build"; exit 1; }

# ---- render and replay ---------------------------------------------------------------------------
C="${WORK}/children"
mkdir -p "${C}"
: >"${WORK}/children.list"
for f in "${ROOT}"/config/samples/*.yaml "${ROOT}"/tests/fixtures/cr/*.yaml "${ROOT}"/tests/fixtures/sync/*.json; do
  [[ "${f}" == *.expected.yaml ]] && continue
  rel="${f#"${ROOT}/"}"
  prefix="$(tr '/.' '__' <<<"${rel}")"
  if [[ "${f}" == *.json ]]; then
    # Replays that fail on purpose (their golden snapshot in tests/it says `rejected`) have
    # no children; tests/e2e/run.sh checks that they fail.
    [[ "$(lib replay-expectation "${f}")" == rejected* ]] && continue
    cmd=("${HOOK}" replay "${f}" --output json --now 2026-01-01T00:00:00Z); flag=--json
  else
    cmd=("${HOOK}" render "${f}"); flag=
  fi
  if ! "${cmd[@]}" >"${C}/${prefix}.out" 2>"${C}/${prefix}.err"; then
    bad "${rel}: render/replay" "$(cat "${C}/${prefix}.err")"; continue
  fi
  # shellcheck disable=SC2086
  lib children "${C}/${prefix}.out" "${C}" "${prefix}" ${flag} >>"${WORK}/children.list" \
    || bad "${rel}: split the children"
done
i=0
for f in "${EXTRA[@]}"; do
  # JSON is YAML too: one object or several YAML documents per file.
  i=$((i + 1))
  if ! lib children "${f}" "${C}" "extra-${i}" >"${WORK}/extra-${i}.list" 2>"${WORK}/extra-${i}.err" \
    || ! grep -q . "${WORK}/extra-${i}.list"; then
    bad "extra file ${f}: no object to validate" "$(cat "${WORK}/extra-${i}.err")"
  fi
  cat "${WORK}/extra-${i}.list" >>"${WORK}/children.list"
done
log "$(grep -c . "${WORK}/children.list") children"

# ---- kubernetes-validate --strict ----------------------------------------------------------------
# Controls: a deliberately invalid Service (port not a number, unknown field) must fail.
CTL="${WORK}/controls"
mkdir -p "${CTL}"
cat >"${CTL}/invalid-service.json" <<'EOF'
{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "control"},
 "spec": {"clusterIP": "None", "ports": [{"port": "eleven", "nmae": "memcached"}]}}
EOF
cat >"${CTL}/invalid-servicemonitor.json" <<'EOF'
{"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "control"},
 "spec": {"selector": {}, "endpoints": [{"port": "metrics", "intervall": "30s"}]}}
EOF

builtin=()
sms=()
while IFS= read -r child; do
  [[ -n "${child}" ]] || continue
  case "${child}" in
    *~~ServiceMonitor~~*) sms+=("${child}") ;;
    *) builtin+=("${child}") ;;
  esac
done <"${WORK}/children.list"

"${VENV}/bin/kubernetes-validate" --strict -k "${K8S_VERSION}" "${builtin[@]}" "${CTL}/invalid-service.json" \
  >"${WORK}/kv.out" 2>&1
for child in "${builtin[@]}"; do
  label="kubernetes-validate ${K8S_VERSION} $(basename "${child}" .json | sed 's/~~/ /g')"
  line="$(grep -F -- " ${child} " "${WORK}/kv.out")"
  if [[ "${line}" == "INFO ${child} passed "* ]]; then ok "${label}"
  else bad "${label}" "${line:-no output for ${child}; see ${WORK}/kv.out}"; fi
done
line="$(grep -F -- " ${CTL}/invalid-service.json " "${WORK}/kv.out")"
if [[ "${line}" == "ERROR "* ]]; then ok "control: kubernetes-validate rejects an invalid Service (${line##*: })"
else bad "control: kubernetes-validate rejects an invalid Service" "${line}"; fi

# ---- ServiceMonitor against the Prometheus Operator's CRD ----------------------------------------
if SM_CRD="$("${ROOT}/tests/e2e/fetch-servicemonitor-crd.sh" 2>"${WORK}/smcrd.err")"; then
  lib servicemonitor-schema "${SM_CRD}" "${WORK}/servicemonitor.schema.json"
  for child in "${sms[@]}"; do
    label="ServiceMonitor schema ($(basename "$(dirname "${SM_CRD}")")) $(basename "${child}" .json | sed 's/~~/ /g')"
    if out="$(lib validate-jsonschema "${WORK}/servicemonitor.schema.json" "${child}" 2>&1)"; then ok "${label}"
    else bad "${label}" "${out}"; fi
  done
  if out="$(lib validate-jsonschema "${WORK}/servicemonitor.schema.json" "${CTL}/invalid-servicemonitor.json" 2>&1)"; then
    bad "control: the ServiceMonitor schema rejects an unknown field" "accepted"
  else
    ok "control: the ServiceMonitor schema rejects an unknown field (${out##*: })"
  fi
else
  for child in "${sms[@]}"; do
    skip "$(basename "${child}" .json | sed 's/~~/ /g'): no ServiceMonitor schema: $(tr '\n' ' ' <"${WORK}/smcrd.err")"
  done
fi

# ---- checkov -------------------------------------------------------------------------------------
# Scanned as a tree so that the reported paths are stable: deploy/... for the hook's own
# manifests, rendered/production.yaml for the production sample's children (the NetworkPolicy
# next to the Deployment answers checkov's "pods without a NetworkPolicy" graph check), and
# control/ for the deliberately bad Deployment (not covered by the allow-list).
SCAN="${WORK}/checkov"
mkdir -p "${SCAN}/rendered" "${SCAN}/control"
# Every plain manifest under deploy/, keeping its path; overlays/ holds kustomize patches
# (partial objects), which checkov would misread as incomplete resources.
(cd "${ROOT}" && find deploy -name '*.yaml' -not -path 'deploy/overlays/*' -print0 \
  | xargs -0 cp --parents -t "${SCAN}/") || bad "copy deploy/ for checkov"
echo "note: deploy/overlays/ (kustomize patches) is not scanned by checkov as plain files"
"${HOOK}" render "${ROOT}/config/samples/production.yaml" >"${SCAN}/rendered/production.yaml" \
  || bad "render config/samples/production.yaml for checkov"
cat >"${SCAN}/control/privileged.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: control
  namespace: control
spec:
  selector: {matchLabels: {app: control}}
  template:
    metadata: {labels: {app: control}}
    spec:
      containers:
      - name: c
        image: memcached:1.6.38
        securityContext: {privileged: true}
EOF
(cd "${SCAN}" && timeout 600 "${VENV}/bin/checkov" --quiet --compact --skip-download --framework kubernetes \
  -o json -d .) >"${WORK}/checkov.json" 2>"${WORK}/checkov.err"
crc=$?
if ((crc > 1)); then
  bad "checkov ran (exit ${crc})" "$(tail -n 15 "${WORK}/checkov.err")"
else
  "${PY}" - "${WORK}/checkov.json" "${ALLOW}" >"${WORK}/checkov.verdict" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
reports = report if isinstance(report, list) else [report]
found = set()
for r in reports:
    for c in r.get("results", {}).get("failed_checks", []):
        found.add((c["file_path"].lstrip("/"), c["check_id"], c["resource"], c["check_name"]))
allowed = {}
for n, line in enumerate(open(sys.argv[2], encoding="utf-8"), 1):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    entry, _, reason = line.partition(" # ")
    parts = entry.split()
    if len(parts) != 3 or not reason.strip():
        print(f"BADLINE allow-list line {n}: want 'FILE CHECK_ID RESOURCE # reason': {line}")
        continue
    allowed[tuple(parts)] = reason.strip()
control = [f for f in found if f[0].startswith("control/")]
found = {f for f in found if not f[0].startswith("control/")}
keys = {(f, c, r) for f, c, r, _ in found}
for f, c, r, name in sorted(found):
    if (f, c, r) in allowed:
        print(f"ALLOWED {f} {c} {r} ({name}) # {allowed[(f, c, r)]}")
    else:
        print(f"NEW {f} {c} {r} ({name})")
for k in sorted(set(allowed) - keys):
    print(f"STALE {' '.join(k)} # {allowed[k]}")
if any(c == "CKV_K8S_16" for _, c, _, _ in control):
    print("CONTROL ok: the privileged control Deployment gets CKV_K8S_16, which no allow-list entry covers")
else:
    print(f"CONTROL missing: the privileged control Deployment got {sorted(c for _, c, _, _ in control)}")
EOF
  while IFS= read -r v; do
    case "${v}" in
      ALLOWED*) ok "checkov: allow-listed: ${v#ALLOWED }" ;;
      NEW*) bad "checkov: new finding (fix it, or allow-list it with a reason): ${v#NEW }" ;;
      STALE*) bad "checkov: allow-list entry no longer found (remove it): ${v#STALE }" ;;
      BADLINE*) bad "checkov: ${v#BADLINE }" ;;
      "CONTROL ok"*) ok "control: ${v#CONTROL ok: }" ;;
      CONTROL*) bad "control: ${v#CONTROL }" ;;
    esac
  done <"${WORK}/checkov.verdict"
  summary="$("${PY}" -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r if isinstance(r,list) else [r]; print(" ".join(str(x["summary"].get(k)) for x in r for k in ("passed","failed","resource_count")))' "${WORK}/checkov.json")"
  read -r cp cf cn <<<"${summary}"
  log "checkov: ${cp} checks passed, ${cf} failed on ${cn} resources (control included)"
  if ((cp > 0)); then ok "checkov: ${cp} checks pass on ${cn} resources"
  else bad "checkov: no check passed (did it scan anything?)"; fi
fi
