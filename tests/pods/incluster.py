"""The in-cluster-api scenario of the pods phase (pods.py runs it as `in-cluster-api`).

A pod talks to the API server as any in-cluster client does: the address from the
KUBERNETES_SERVICE_HOST/PORT variables the kubelet sets (the `kubernetes` Service's ClusterIP and
port), the bearer token and the CA (`kube-root-ca.crt`) from the ServiceAccount volume at
/var/run/secrets/kubernetes.io/serviceaccount, the server's certificate verified against that CA
for the ClusterIP. The client is the client image's `openssl s_client` speaking HTTP/1.0, so the
checks see the very status codes and bodies the API server answers. A ServiceAccount bound to a
Role that grants its own pod (`get`) and that pod's `status` (`patch`) reads its Pod and writes a
condition with a strategic merge patch; a ServiceAccount without a binding, and the granted one
for another pod, get 403 from RBAC.
"""
import json
import time
import uuid

from harness import CLIENT_IMAGE, RESTRICTED_CONTAINER, RESTRICTED_POD, Namespace, Test, get, kubectl

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
CONDITION = "example.com/InClusterAPI"

# sh -c API_SH sh METHOD PATH [BODY [VERIFY_IP]]: one request to the API server with the in-cluster
# settings only; `@self` in PATH is the pod's own path (its namespace from the ServiceAccount
# volume, its name from the downward API). Prints the HTTP response, then `--- tls` and what
# openssl said about the handshake.
API_SH = f"""
sa={SA_DIR}
h=$KUBERNETES_SERVICE_HOST
case $h in *:*) addr="[$h]:$KUBERNETES_SERVICE_PORT" ;; *) addr="$h:$KUBERNETES_SERVICE_PORT" ;; esac
path=$(printf '%s' "$2" | sed "s#@self#/api/v1/namespaces/$(cat $sa/namespace)/pods/$POD_NAME#")
{{
  printf '%s %s HTTP/1.0\\r\\nHost: %s\\r\\nAuthorization: Bearer %s\\r\\nAccept: application/json\\r\\n' \\
    "$1" "$path" "$addr" "$(cat $sa/token)"
  if [ -n "$3" ]; then
    printf 'Content-Type: application/strategic-merge-patch+json\\r\\nContent-Length: %s\\r\\n' \\
      "$(printf '%s' "$3" | wc -c)"
  fi
  printf '\\r\\n%s' "$3"
}} | timeout 20 openssl s_client -quiet -connect "$addr" -CAfile $sa/ca.crt -verify_return_error \\
  -verify_ip "${{4:-$h}}" 2>/tmp/tls.log
printf '\\n--- tls\\n'
cat /tmp/tls.log
"""


class Answer:
    """An HTTP answer as the pod got it: status (None without one), body (JSON when it parses), the TLS log."""

    def __init__(self, out):
        resp, _, self.tls = out.partition("\n--- tls\n")
        head, _, body = resp.partition("\n\n")  # kubectl's output is read as text: CRLF became LF
        first = head.split(None, 2)
        self.status = int(first[1]) if len(first) > 1 and first[0].startswith("HTTP/") else None
        try:
            self.body = json.loads(body)
        except ValueError:
            self.body = body.strip()

    def __str__(self):
        return f"HTTP {self.status}: {json.dumps(self.body)[:500]}\ntls: {self.tls.strip()[:400]}"


def api(ns, pod, method, path, body=None, verify_ip=None):
    args = [method, path, json.dumps(body) if body else "", *([verify_ip] if verify_ip else [])]
    p = kubectl("exec", "-n", ns.name, pod, "--", "sh", "-c", API_SH, "sh", *args, check=False, timeout=60)
    return Answer(p.stdout + ("" if "\n--- tls\n" in p.stdout else p.stderr))


def pod(name, sa):
    spec = {
        "serviceAccountName": sa,
        "automountServiceAccountToken": True,
        "terminationGracePeriodSeconds": 1,
        "securityContext": RESTRICTED_POD,
        "containers": [{"name": "client", "image": CLIENT_IMAGE, "imagePullPolicy": "Never",
                        "securityContext": RESTRICTED_CONTAINER,
                        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def grant(name, pod_name):
    """A ServiceAccount allowed to read its pod and patch that pod's status, nothing else."""
    rules = [{"apiGroups": [""], "resources": ["pods"], "resourceNames": [pod_name], "verbs": ["get"]},
             {"apiGroups": [""], "resources": ["pods/status"], "resourceNames": [pod_name], "verbs": ["patch"]}]
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
    return [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name}, "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
             "roleRef": ref, "subjects": [{"kind": "ServiceAccount", "name": name}]}]


def condition(pod_obj, kind):
    return next((c for c in pod_obj["status"].get("conditions", []) if c["type"] == kind), None)


def scenario_in_cluster_api(t: Test):
    """A pod reaches the API server through the `kubernetes` Service with its ServiceAccount token,
    the server's certificate verified; RBAC grants exactly what its Role says."""
    ns = Namespace("pods-api")
    try:
        start = time.monotonic()
        ns.apply([*grant("api-client", "api-client"),
                  {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "no-grant"}},
                  pod("api-client", "api-client"), pod("no-grant", "no-grant")])
        kubectl("wait", "-n", ns.name, "--for=condition=Ready", "--timeout=60s", "pod/api-client", "pod/no-grant")
        t.time("apply to 2 Ready pods with ServiceAccount tokens", time.monotonic() - start)
        svc = get("service", "kubernetes", ns="default")["spec"]
        env = dict(line.split("=", 1) for line in kubectl("exec", "-n", ns.name, "api-client", "--", "env")
                   .stdout.splitlines() if "=" in line)
        want = (svc["clusterIP"], str(svc["ports"][0]["port"]))
        got = (env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT"))
        t.check(f"the kubelet sets KUBERNETES_SERVICE_HOST/PORT to the kubernetes Service ({':'.join(want)})",
                got == want, got)

        uid = get("pod", "api-client", ns=ns.name)["metadata"]["uid"]
        r = api(ns, "api-client", "GET", "@self")
        t.check("GET of its own Pod with the token, the server verified against ca.crt for the ClusterIP: 200",
                r.status == 200 and isinstance(r.body, dict) and r.body["metadata"].get("uid") == uid, r)
        r = api(ns, "api-client", "GET", "@self", verify_ip="192.0.2.1")
        t.check("the same request checking the certificate for another address fails in the TLS handshake",
                r.status is None and "mismatch" in r.tls, r)

        nonce = str(uuid.uuid4())
        patch = {"status": {"conditions": [{"type": CONDITION, "status": "True", "reason": "Patched",
                                            "message": nonce, "lastTransitionTime": "2026-11-26T00:00:00Z"}]}}
        r = api(ns, "api-client", "PATCH", "@self/status", patch)
        t.check("PATCH of its own pods/status (strategic merge): 200", r.status == 200, r)
        live = get("pod", "api-client", ns=ns.name)
        mine, ready = condition(live, CONDITION), condition(live, "Ready")
        t.check("the condition is on the Pod as written, the kubelet's Ready condition kept",
                mine is not None and mine.get("message") == nonce and mine.get("reason") == "Patched"
                and ready is not None and ready["status"] == "True", live["status"].get("conditions"))

        r = api(ns, "api-client", "GET", f"/api/v1/namespaces/{ns.name}/pods/no-grant")
        t.check("its Role names only its own pod: GET of another pod is 403",
                r.status == 403 and isinstance(r.body, dict) and r.body.get("reason") == "Forbidden", r)
        user = f"system:serviceaccount:{ns.name}:no-grant"
        r = api(ns, "no-grant", "GET", "@self")
        t.check(f"a ServiceAccount without a binding: GET of its own Pod is 403 for {user}",
                r.status == 403 and isinstance(r.body, dict) and user in r.body.get("message", ""), r)
        r = api(ns, "no-grant", "PATCH", "@self/status", patch)
        t.check("a ServiceAccount without a binding: PATCH of its pods/status is 403, the Pod unchanged",
                r.status == 403 and condition(get("pod", "no-grant", ns=ns.name), CONDITION) is None, r)
    finally:
        ns.close()
