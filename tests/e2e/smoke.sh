#!/usr/bin/env bash
# Sanity check of the e2e environment itself, independent of the Rust hook:
# brings up cluster.sh in a private state dir, then
#   1. the API server reports the pinned version;
#   2. a CRD becomes Established and accepts a custom resource;
#   3. the garbage collector deletes a ConfigMap owned by a deleted CR;
#   4. the namespace controller finalizes a deleted namespace;
#   5. if Metacontroller runs: a CompositeController pointing at a throw-away
#      Python hook on 127.0.0.1 gets its child ConfigMap created and its status
#      written, and the child is garbage-collected with the parent.
# and brings everything down again (also on failure). Every wait is bounded.
#
# Usage: smoke.sh      (E2E_APPLY_STRATEGY / E2E_METACONTROLLER as for cluster.sh; Metacontroller
#                      runs only when METACONTROLLER_BIN and METACONTROLLER_CRDS_DIR are supplied)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.sh
source "${here}/versions.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-e2e-smoke.XXXXXX")"
export E2E_STATE_DIR="${work}/cluster"
hook_pid=""

cleanup() {
  local rc=$?
  if [[ -n "${hook_pid}" ]]; then kill "${hook_pid}" 2>/dev/null || true; fi
  "${here}/cluster.sh" down || true
  if ((rc == 0)); then rm -rf "${work}"; else echo "[smoke] FAILED; logs in ${work}" >&2; fi
  exit "${rc}"
}
trap cleanup EXIT

log() { printf "[smoke +%ss] %s\n" "${SECONDS}" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# until_true SECONDS DESCRIPTION CMD...: poll CMD, bounded.
until_true() {
  local limit="$1" what="$2" deadline; shift 2
  deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "${what} (not within ${limit}s)"
    sleep 0.5
  done
  log "ok: ${what}"
}

# The test CRD is applied by cluster.sh before the controller manager starts,
# so that the garbage collector watches it from the start.
cat >"${work}/widgets-crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.e2e.test
spec:
  group: smoke.e2e.test
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              greeting: {type: string}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
EOF
export E2E_PRELOAD_MANIFESTS="${work}/widgets-crd.yaml"
eval "$("${here}/cluster.sh" up)"
k() { "${E2E_KUBECTL}" --kubeconfig="${KUBECONFIG}" "$@"; }

# 1. version
ver="$(k version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')"
[[ "${ver}" == "${K8S_VERSION}" ]] || die "server version ${ver}, expected ${K8S_VERSION}"
log "ok: server version ${ver}"

# 2. the preloaded CRD (with the status subresource: Metacontroller ignores
#    parents without it) is Established
k wait --for=condition=Established --timeout=60s crd/widgets.smoke.e2e.test >/dev/null
log "ok: CRD Established"

# 3. garbage collection through ownerReferences
k apply -f - >/dev/null <<'EOF'
apiVersion: smoke.e2e.test/v1
kind: Widget
metadata: {name: gc-parent, namespace: default}
spec: {greeting: hello}
EOF
uid="$(k get widget gc-parent -o jsonpath='{.metadata.uid}')"
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: gc-child
  namespace: default
  ownerReferences:
  - {apiVersion: smoke.e2e.test/v1, kind: Widget, name: gc-parent, uid: "${uid}", controller: true, blockOwnerDeletion: true}
data: {a: b}
EOF
k delete widget gc-parent --wait=false >/dev/null
until_true 60 "garbage collector deleted the owned ConfigMap" \
  bash -c "! '${E2E_KUBECTL}' --kubeconfig='${KUBECONFIG}' get configmap gc-child -n default"

# 4. namespace lifecycle
k create namespace smoke-ns >/dev/null
until_true 60 "serviceaccount controller created smoke-ns/default" k get serviceaccount default -n smoke-ns
k create configmap leftover -n smoke-ns >/dev/null
k delete namespace smoke-ns --wait=false >/dev/null
until_true 60 "namespace controller finalized smoke-ns" \
  bash -c "! '${E2E_KUBECTL}' --kubeconfig='${KUBECONFIG}' get namespace smoke-ns"

# 5. Metacontroller round trip
if [[ "${E2E_METACONTROLLER}" != running ]]; then
  log "SKIP: Metacontroller round trip (E2E_METACONTROLLER=${E2E_METACONTROLLER}; METACONTROLLER_BIN=${METACONTROLLER_BIN:-<unset>}, METACONTROLLER_CRDS_DIR=${METACONTROLLER_CRDS_DIR:-<unset>})"
  exit 0
fi
hook_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat >"${work}/hook.py" <<'EOF'
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        parent = req["parent"]
        meta = parent["metadata"]
        child = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": meta["name"] + "-child"},
            "data": {"greeting": parent.get("spec", {}).get("greeting", "")},
        }
        body = json.dumps({
            "status": {"observedGeneration": meta.get("generation", 0),
                       "children": len(req.get("children", {}).get("ConfigMap.v1", {}))},
            "children": [child],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("sync", meta["namespace"], meta["name"], flush=True)

HTTPServer(("127.0.0.1", int(sys.argv[1])), Hook).serve_forever()
EOF
python3 "${work}/hook.py" "${hook_port}" >"${work}/hook.log" 2>&1 &
hook_pid=$!
until_true 20 "throw-away hook listening on 127.0.0.1:${hook_port}" \
  bash -c "exec 3<>/dev/tcp/127.0.0.1/${hook_port}"

k apply -f - >/dev/null <<EOF
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata: {name: smoke-widgets}
spec:
  generateSelector: true
  resyncPeriodSeconds: 3600
  parentResource: {apiVersion: smoke.e2e.test/v1, resource: widgets}
  childResources:
  - apiVersion: v1
    resource: configmaps
    updateStrategy: {method: InPlace}
  hooks:
    sync:
      webhook: {url: "http://127.0.0.1:${hook_port}/sync", timeout: 10s}
EOF
k apply -f - >/dev/null <<'EOF'
apiVersion: smoke.e2e.test/v1
kind: Widget
metadata: {name: mc-parent, namespace: default}
spec: {greeting: hi}
EOF
until_true 60 "Metacontroller created the child ConfigMap" k get configmap mc-parent-child -n default
[[ "$(k get configmap mc-parent-child -o jsonpath='{.data.greeting}')" == hi ]] || die "child data"
[[ "$(k get configmap mc-parent-child -o jsonpath='{.metadata.ownerReferences[0].name}')" == mc-parent ]] \
  || die "child has no ownerReference to its parent"
until_true 60 "Metacontroller wrote the parent status" \
  bash -c "[[ \$('${E2E_KUBECTL}' --kubeconfig='${KUBECONFIG}' get widget mc-parent -o jsonpath='{.status.observedGeneration}') == 1 ]]"
grep -q '^sync default mc-parent' "${work}/hook.log" || die "hook was not called"
k patch widget mc-parent --type=merge -p '{"spec":{"greeting":"bye"}}' >/dev/null
until_true 60 "InPlace update reached the child" \
  bash -c "[[ \$('${E2E_KUBECTL}' --kubeconfig='${KUBECONFIG}' get configmap mc-parent-child -o jsonpath='{.data.greeting}') == bye ]]"
k delete widget mc-parent --wait=false >/dev/null
until_true 60 "child garbage-collected with its parent" \
  bash -c "! '${E2E_KUBECTL}' --kubeconfig='${KUBECONFIG}' get configmap mc-parent-child -n default"
log "all checks passed (apply strategy ${E2E_APPLY_STRATEGY})"
