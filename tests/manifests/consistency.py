"""Cross-checks for tests/manifests/check.sh: the built manifests agree with each other, with the
Dockerfile, with what the hook binary serves, and with the Metacontroller contract.

Schema validation (kubernetes-validate) cannot see any of this: a CompositeController whose
webhook URL names a port the Service does not have, or a child kind left on the default
OnDelete strategy, is perfectly valid YAML and silently broken in a cluster.

--built is the directory of `kustomize build` outputs written by check.sh:
deploy.yaml, metacontroller.yaml, metacontroller-servicemonitor.yaml, rbac.yaml,
rbac-servicemonitor.yaml.
"""

import argparse
import json
import pathlib
import re
import sys
import urllib.parse

import yaml

# ---- facts about the hook binary and the install -------------------------------------------------
HOOK_PORT = 8080  # `memcached-hook serve` listens on 0.0.0.0:8080
HOOK_PATHS = {"sync": "/sync", "customize": "/customize"}
PROBE_PATHS = {"livenessProbe": "/healthz", "readinessProbe": "/readyz"}
HOOK_NAMESPACE = "memcached-system"
HOOK_NAME = "memcached-hook"
# The ClusterRole the reload agents of memcached pods are bound to (pods/status patch only).
RELOAD_AGENT_ROLE = "memcached-hook-reload-agent"
CONTROLLER_NAME = "memcached-controller"
METACONTROLLER_NAMESPACE = "metacontroller"
METACONTROLLER_SERVICE_ACCOUNT = "metacontroller"
PARENT = {"apiVersion": "memcached.c5c3.io/v1beta1", "resource": "memcacheds"}
CRD_NAME = "memcacheds.memcached.c5c3.io"

# The child kinds the hook can return (spec.md 1.2), as (apiVersion, resource).
CHILDREN = [
    ("apps/v1", "deployments"),
    ("apps/v1", "statefulsets"),
    ("v1", "services"),
    ("policy/v1", "poddisruptionbudgets"),
    ("networking.k8s.io/v1", "networkpolicies"),
    ("autoscaling/v2", "horizontalpodautoscalers"),
    ("v1", "configmaps"),
    ("v1", "serviceaccounts"),
    ("rbac.authorization.k8s.io/v1", "rolebindings"),
]
# The ClusterRole that the reload agents' RoleBindings name: Metacontroller may bind it, nothing else.
RELOAD_AGENT_ROLE = "memcached-hook-reload-agent"
SERVICEMONITOR = ("monitoring.coreos.com/v1", "servicemonitors")

# Field names Metacontroller's CompositeController CRD knows (v4.17). The API server prunes
# unknown fields without a word, so a typo such as "responseUnmarshallMode" would quietly turn
# strict mode off; this allow-list catches it. None = free-form below this point.
WEBHOOK_FIELDS = {
    "url": None, "timeout": None, "path": None, "service": None, "responseUnMarshallMode": None,
    "etag": {"enabled": None, "cacheTimeoutSeconds": None, "cacheCleanupSeconds": None},
    "caBundle": {"inline": None, "secretRef": {"name": None, "namespace": None, "key": None},
                 "configMapRef": {"name": None, "namespace": None, "key": None}},
    "authorization": {"type": None, "secretRef": {"name": None, "namespace": None, "key": None}},
    "basicAuth": {"secretRef": {"name": None, "namespace": None}, "usernameKey": None,
                  "passwordKey": None},
    "clientTLS": {"secretRef": {"name": None, "namespace": None}, "certKey": None,
                  "privateKeyKey": None},
}
HOOK_FIELDS = {"version": None, "webhook": WEBHOOK_FIELDS}
CC_FIELDS = {
    "apiVersion": None, "kind": None, "metadata": None,
    "spec": {
        "generateSelector": None, "resyncPeriodSeconds": None, "endpointConfigs": None,
        "parentResource": {"apiVersion": None, "resource": None, "revisionHistory": None,
                           "labelSelector": None, "ignoreStatusChanges": None},
        "childResources": [{"apiVersion": None, "resource": None,
                            "updateStrategy": {"method": None, "statusChecks": None}}],
        "hooks": {"customize": HOOK_FIELDS, "sync": HOOK_FIELDS, "finalize": HOOK_FIELDS,
                  "preUpdateChild": HOOK_FIELDS, "postUpdateChild": HOOK_FIELDS},
    },
}

ALL_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}
READ_VERBS = {"get", "list", "watch"}

SAMPLES = ["minimal", "ha", "monitoring", "tls", "production", "autoscaling"]
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def __call__(self, condition, message):
        if condition:
            self.passed += 1
        else:
            self.failed.append(message)
            print(f"FAIL  {message}")
        return bool(condition)


check = Checks()


def load(path):
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def find(objects, kind, name=None):
    return [o for o in objects if o.get("kind") == kind
            and (name is None or o.get("metadata", {}).get("name") == name)]


def one(objects, kind, name, where):
    found = find(objects, kind, name)
    check(len(found) == 1, f"{where}: expected exactly one {kind} {name}, found {len(found)}")
    return found[0] if found else None


def group_of(api_version):
    return api_version.split("/")[0] if "/" in api_version else ""


def selects(selector, labels):
    """matchLabels-only selector semantics; an empty selector would select everything."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def quantity(value):
    """Kubernetes quantity -> number (bytes for memory, cores for cpu)."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?", str(value))
    if not m:
        raise ValueError(f"not a quantity: {value!r}")
    factor = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
              "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
    return float(m.group(1)) * factor[m.group(2)]


def known_fields(obj, allowed, path):
    if allowed is None:
        return
    if isinstance(allowed, list):
        if check(isinstance(obj, list), f"{path}: expected a list"):
            for i, item in enumerate(obj):
                known_fields(item, allowed[0], f"{path}[{i}]")
        return
    if not check(isinstance(obj, dict), f"{path}: expected an object"):
        return
    for key, value in obj.items():
        if check(key in allowed, f"{path}.{key}: not a CompositeController field "
                 f"(a typo? the API server would drop it silently)"):
            known_fields(value, allowed[key], f"{path}.{key}")


# ---- CompositeController -------------------------------------------------------------------------
def check_webhook(hook_name, hook, where, scheme="http"):
    webhook = hook.get("webhook") or {}
    check(hook.get("version") in ("v1", "v2"), f"{where}: hooks.{hook_name}.version must be v1 or v2 "
          f"(explicit, so the hook API does not depend on Metacontroller's default)")
    check(webhook.get("responseUnMarshallMode") == "strict",
          f"{where}: hooks.{hook_name}.webhook.responseUnMarshallMode must be strict")
    timeout = webhook.get("timeout")
    check(isinstance(timeout, str) and GO_DURATION.match(timeout),
          f"{where}: hooks.{hook_name}.webhook.timeout must be a Go duration, got {timeout!r}")
    etag = webhook.get("etag")
    if etag is not None:
        check(("cacheTimeoutSeconds" in etag) == ("cacheCleanupSeconds" in etag),
              f"{where}: hooks.{hook_name}.webhook.etag: set both cacheTimeoutSeconds and "
              f"cacheCleanupSeconds or neither (Metacontroller dereferences a nil pointer otherwise)")
    # The service form, so that an overlay's `namespace:` moves the hook's address with the
    # hook (metacontroller/base/namespace-fields.yaml). Metacontroller calls
    # <protocol>://<name>.<namespace>:<port><path>.
    service = webhook.get("service")
    if not check(isinstance(service, dict) and "url" not in webhook,
                 f"{where}: hooks.{hook_name}.webhook must name the hook's Service (service + path), "
                 f"not a url: a url does not follow an overlay's namespace"):
        return None
    check(set(service) <= {"name", "namespace", "port", "protocol"},
          f"{where}: hooks.{hook_name}.webhook.service has unknown fields {sorted(service)}")
    url = (f"{service.get('protocol', 'http')}://{service.get('name')}.{service.get('namespace')}"
           f":{service.get('port', 80)}{webhook.get('path', '')}")
    parsed = urllib.parse.urlsplit(url)
    check(parsed.path == HOOK_PATHS[hook_name],
          f"{where}: hooks.{hook_name} URL path is {parsed.path!r}, the hook serves {HOOK_PATHS[hook_name]!r}")
    check(parsed.scheme == scheme, f"{where}: hooks.{hook_name} URL scheme {parsed.scheme!r}: the "
          f"hook Deployment it goes with serves {scheme}")
    return parsed


def check_composite_controller(objects, where, expected_children, scheme="http"):
    ccs = find(objects, "CompositeController")
    if not check(len(ccs) == 1, f"{where}: expected one CompositeController, found {len(ccs)}"):
        return None
    cc = ccs[0]
    known_fields(cc, CC_FIELDS, f"{where}: CompositeController")
    spec = cc.get("spec", {})
    check(cc["metadata"].get("name") == CONTROLLER_NAME, f"{where}: CompositeController name must be "
          f"{CONTROLLER_NAME} (Metacontroller's finalizer and event names derive from it)")
    check(spec.get("generateSelector") is True, f"{where}: generateSelector must be true "
          f"(Memcached has no spec.selector)")
    parent = {k: spec.get("parentResource", {}).get(k) for k in PARENT}
    check(parent == PARENT, f"{where}: parentResource {parent} != {PARENT}")

    children = spec.get("childResources") or []
    declared = [(c.get("apiVersion"), c.get("resource")) for c in children]
    check(len(declared) == len(set(declared)), f"{where}: duplicate childResources entries")
    check(set(declared) == set(expected_children),
          f"{where}: childResources {sorted(declared)} != expected {sorted(expected_children)}")
    for child in children:
        method = (child.get("updateStrategy") or {}).get("method")
        check(method == "InPlace", f"{where}: childResources {child.get('apiVersion')} "
              f"{child.get('resource')}: updateStrategy.method is {method!r}, must be InPlace "
              f"(the default OnDelete never updates a child)")

    hooks = spec.get("hooks") or {}
    check(set(hooks) == {"sync", "customize"}, f"{where}: hooks must be exactly sync and customize, "
          f"got {sorted(hooks)} (no finalize hook: children are garbage-collected via ownerReferences)")
    urls = {}
    for name in ("sync", "customize"):
        if name in hooks:
            urls[name] = check_webhook(name, hooks[name], where, scheme)
    sync_etag = ((hooks.get("sync") or {}).get("webhook") or {}).get("etag") or {}
    check(sync_etag.get("enabled") is True and isinstance(sync_etag.get("cacheTimeoutSeconds"), int)
          and isinstance(sync_etag.get("cacheCleanupSeconds"), int),
          f"{where}: hooks.sync.webhook.etag must be enabled with both cacheTimeoutSeconds and "
          f"cacheCleanupSeconds")
    if urls.get("sync") and urls.get("customize"):
        check(urls["sync"].netloc == urls["customize"].netloc,
              f"{where}: sync and customize hooks point at different hosts")
    return cc, urls.get("sync"), declared


def check_url_reaches_hook(url, deploy, where, namespace=HOOK_NAMESPACE):
    """The URL's host names the hook Service, its port is a Service port, and that port leads to
    the container port the binary listens on."""
    host = url.hostname or ""
    labels = host.split(".")
    check(len(labels) >= 2 and labels[2:] in ([], ["svc"], ["svc", "cluster", "local"]),
          f"{where}: URL host {host!r} is not <service>.<namespace>[.svc[.cluster.local]]")
    svc_name, svc_ns = (labels + ["", ""])[:2]
    check((svc_name, svc_ns) == (HOOK_NAME, namespace),
          f"{where}: URL host {host!r} does not name Service {HOOK_NAME} in {namespace}")
    port = url.port or 80
    service = one(deploy, "Service", svc_name, "deploy")
    deployment = one(deploy, "Deployment", HOOK_NAME, "deploy")
    if not service or not deployment:
        return
    check(service["metadata"].get("namespace") == svc_ns,
          f"deploy: Service {svc_name} is in namespace {service['metadata'].get('namespace')!r}, "
          f"the URL says {svc_ns!r}")
    ports = [p for p in service["spec"].get("ports", []) if p.get("port") == port]
    if not check(len(ports) == 1, f"{where}: URL port {port} is not a port of Service {svc_name} "
                 f"(ports: {[p.get('port') for p in service['spec'].get('ports', [])]})"):
        return
    target = ports[0].get("targetPort", port)
    container_ports = {}
    for c in deployment["spec"]["template"]["spec"]["containers"]:
        for p in c.get("ports", []):
            container_ports[p.get("name")] = p["containerPort"]
    resolved = container_ports.get(target) if isinstance(target, str) else target
    check(resolved == HOOK_PORT, f"{where}: Service port {port} leads to container port {resolved!r}, "
          f"the hook listens on {HOOK_PORT}")
    check(selects(service["spec"].get("selector"), deployment["spec"]["template"]["metadata"]["labels"]),
          "deploy: Service selector does not select the hook pods")


def mounted_secret_file(deployment, path):
    """(Secret name, key) whose item is mounted at `path` in the hook container, else None."""
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for container in pod.get("containers", []):
        for mount in container.get("volumeMounts", []):
            secret = (volumes.get(mount["name"]) or {}).get("secret")
            if not secret:
                continue
            for item in secret.get("items", []):
                if f"{mount['mountPath'].rstrip('/')}/{item['path']}" == path:
                    return secret.get("secretName"), item["key"]
    return None


def check_tls_pair(cc_objects, deploy, where):
    """metacontroller/overlays/tls and deploy/overlays/tls-auth belong together: Metacontroller
    calls https:// with the CA and the token of the very Secrets the hook mounts."""
    result = check_composite_controller(cc_objects, where, CHILDREN, scheme="https")
    if not result:
        return
    cc, sync_url, _ = result
    if sync_url:
        check_url_reaches_hook(sync_url, deploy, where)
    deployment = one(deploy, "Deployment", HOOK_NAME, "deploy-tls-auth")
    if not deployment:
        return
    env = {e["name"]: e.get("value") for c in deployment["spec"]["template"]["spec"]["containers"]
           for e in c.get("env", [])}
    token_file = env.get("MEMCACHED_HOOK_AUTH_TOKEN_FILE")
    cert_file = env.get("MEMCACHED_HOOK_TLS_CERT_FILE")
    token_source = mounted_secret_file(deployment, token_file) if token_file else None
    cert_source = mounted_secret_file(deployment, cert_file) if cert_file else None
    check(token_source is not None, f"deploy-tls-auth: the token file {token_file!r} is not a "
          f"mounted Secret item")
    check(cert_source is not None, f"deploy-tls-auth: the certificate file {cert_file!r} is not a "
          f"mounted Secret item")
    for name, hook in (cc["spec"].get("hooks") or {}).items():
        webhook = hook.get("webhook") or {}
        auth = webhook.get("authorization") or {}
        ref = auth.get("secretRef") or {}
        check(auth.get("type", "Bearer").lower() == "bearer",
              f"{where}: hooks.{name}.webhook.authorization.type must be Bearer (the hook reads a "
              f"token; Metacontroller refuses Basic here)")
        check("basicAuth" not in webhook, f"{where}: hooks.{name}.webhook: authorization and "
              f"basicAuth are mutually exclusive")
        check(token_source is not None and ref.get("namespace") == HOOK_NAMESPACE
              and (ref.get("name"), ref.get("key")) == token_source,
              f"{where}: hooks.{name}.webhook.authorization.secretRef {ref} is not the Secret item "
              f"the hook reads its token from ({token_source} in {HOOK_NAMESPACE})")
        ca = (webhook.get("caBundle") or {}).get("secretRef") or {}
        check(cert_source is not None and ca.get("namespace") == HOOK_NAMESPACE
              and ca.get("name") == cert_source[0] and ca.get("key", "ca.crt") == "ca.crt",
              f"{where}: hooks.{name}.webhook.caBundle.secretRef {ca} must be ca.crt of the Secret "
              f"the hook's certificate comes from ({cert_source})")


# ---- deploy/ -------------------------------------------------------------------------------------
def check_crd(built, deploy):
    """The CRD is deploy/crd/'s one object and never part of deploy/ (whose deletion uninstalls the
    hook: with the CRD in it, `kubectl delete -k deploy/` would delete every Memcached)."""
    check([o.get("kind") for o in built] == ["CustomResourceDefinition"],
          f"crd: deploy/crd/ must hold the CRD alone, not {[o.get('kind') for o in built]}")
    check(not [o for o in deploy if o.get("kind") == "CustomResourceDefinition"],
          "deploy: holds a CRD; `kubectl delete -k deploy/` would delete every Memcached")
    crd = one(built, "CustomResourceDefinition", CRD_NAME, "crd")
    if not crd:
        return
    spec = crd["spec"]
    versions = {v["name"]: v for v in spec.get("versions", [])}
    check(set(versions) == {"v1beta1", "v1alpha1"}, f"deploy: CRD versions {sorted(versions)} != "
          f"['v1alpha1', 'v1beta1']")
    check(versions.get("v1beta1", {}).get("storage") is True, "deploy: v1beta1 must be the storage version")
    check(spec.get("scope") == "Namespaced", "deploy: the CRD must be namespaced")
    for name, v in versions.items():
        check(v.get("served") is True, f"deploy: CRD version {name} must be served")
        check("status" in (v.get("subresources") or {}), f"deploy: CRD version {name} has no status "
              f"subresource (Metacontroller ignores the CompositeController without it)")
        status = v.get("schema", {}).get("openAPIV3Schema", {}).get("properties", {}).get("status", {})
        og = status.get("properties", {}).get("observedGeneration", {})
        check(og.get("type") == "integer", f"deploy: CRD version {name}: status.observedGeneration must "
              f"be an integer field (Metacontroller writes it; unknown status fields are pruned)")
        columns = {c.get("name") for c in v.get("additionalPrinterColumns", [])}
        check({"Pods", "Ready", "Status", "Age"} <= columns,
              f"deploy: CRD version {name}: printer columns {sorted(columns)} lack Replicas/Ready/Status/Age")


def check_hook_install(deploy, dockerfile_uid):
    for obj in deploy:
        if obj["kind"] not in ("CustomResourceDefinition", "Namespace", "ClusterRole"):
            check(obj["metadata"].get("namespace") == HOOK_NAMESPACE,
                  f"deploy: {obj['kind']} {obj['metadata']['name']} is not in namespace {HOOK_NAMESPACE}")
    one(deploy, "Namespace", HOOK_NAMESPACE, "deploy")
    # The hook itself needs no RBAC; the only RBAC object is the reload agents' ClusterRole, which
    # allows exactly a patch of pods/status (the agent's Pod condition).
    rbac_kinds = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
    rbac = [(o["kind"], o["metadata"]["name"]) for o in deploy if o["kind"] in rbac_kinds]
    check(rbac == [("ClusterRole", RELOAD_AGENT_ROLE)],
          f"deploy: the only RBAC object must be ClusterRole {RELOAD_AGENT_ROLE}, found {rbac}")
    role = one(deploy, "ClusterRole", RELOAD_AGENT_ROLE, "deploy")
    if role:
        want = [{"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]}]
        check(role.get("rules") == want,
              f"deploy: ClusterRole {RELOAD_AGENT_ROLE} must allow exactly {want}, has {role.get('rules')}")

    sa = one(deploy, "ServiceAccount", HOOK_NAME, "deploy")
    if sa:
        check(sa.get("automountServiceAccountToken") is False,
              "deploy: ServiceAccount must set automountServiceAccountToken: false")
    dep = one(deploy, "Deployment", HOOK_NAME, "deploy")
    if not dep:
        return
    dspec = dep["spec"]
    pod = dspec["template"]["spec"]
    pod_labels = dspec["template"]["metadata"]["labels"]
    check(dspec.get("replicas") == 2, f"deploy: hook replicas {dspec.get('replicas')} != 2")
    check(selects(dspec["selector"].get("matchLabels"), pod_labels),
          "deploy: Deployment selector does not match its pod template labels")
    check(pod.get("serviceAccountName") == HOOK_NAME, f"deploy: pod must run as ServiceAccount {HOOK_NAME}")
    check(pod.get("automountServiceAccountToken") is False,
          "deploy: pod must set automountServiceAccountToken: false")
    psc = pod.get("securityContext") or {}
    check(psc.get("runAsNonRoot") is True, "deploy: pod securityContext.runAsNonRoot must be true")
    uid = psc.get("runAsUser")
    check(isinstance(uid, int) and uid > 0, f"deploy: pod runAsUser must be a non-zero number, got {uid!r}")
    check(uid == dockerfile_uid, f"deploy: pod runAsUser {uid!r} != Dockerfile USER {dockerfile_uid!r}")
    check((psc.get("seccompProfile") or {}).get("type") == "RuntimeDefault",
          "deploy: pod seccompProfile must be RuntimeDefault")
    tsc = pod.get("topologySpreadConstraints") or []
    check(tsc and all(selects((t.get("labelSelector") or {}).get("matchLabels"), pod_labels) for t in tsc),
          "deploy: topologySpreadConstraints missing or not selecting the hook pods")
    for c in pod["containers"]:
        name = f"deploy: container {c['name']}"
        sc = c.get("securityContext") or {}
        check(sc.get("allowPrivilegeEscalation") is False, f"{name}: allowPrivilegeEscalation must be false")
        check(sc.get("readOnlyRootFilesystem") is True, f"{name}: readOnlyRootFilesystem must be true")
        check((sc.get("capabilities") or {}).get("drop") == ["ALL"], f"{name}: capabilities must drop ALL")
        check(not (sc.get("capabilities") or {}).get("add"), f"{name}: must not add capabilities")
        check(sc.get("privileged") in (None, False), f"{name}: must not be privileged")
        res = c.get("resources") or {}
        check({"cpu", "memory"} <= set(res.get("requests") or {}), f"{name}: needs cpu and memory requests")
        check("memory" in (res.get("limits") or {}), f"{name}: needs a memory limit")
        image = c.get("image", "")
        check(":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"),
              f"{name}: image {image!r} must carry an explicit, non-latest tag")
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        check(HOOK_PORT in ports.values(), f"{name}: no containerPort {HOOK_PORT}")
        for probe, path in PROBE_PATHS.items():
            get = (c.get(probe) or {}).get("httpGet") or {}
            port = get.get("port")
            port = ports.get(port) if isinstance(port, str) else port
            check(get.get("path") == path and port == HOOK_PORT,
                  f"{name}: {probe} must be GET {path} on port {HOOK_PORT}, got {get.get('path')!r} "
                  f"on {port!r}")

    pdb = one(deploy, "PodDisruptionBudget", HOOK_NAME, "deploy")
    if pdb:
        check(selects(pdb["spec"]["selector"].get("matchLabels"), pod_labels),
              "deploy: PodDisruptionBudget does not select the hook pods")
        min_available = pdb["spec"].get("minAvailable")
        check(isinstance(min_available, int) and 0 < min_available < dspec.get("replicas", 0),
              "deploy: PodDisruptionBudget minAvailable must be an integer between 0 and replicas "
              "(exclusive), so drains can always proceed")

    np = one(deploy, "NetworkPolicy", HOOK_NAME, "deploy")
    if np:
        nspec = np["spec"]
        check(selects(nspec["podSelector"].get("matchLabels"), pod_labels),
              "deploy: NetworkPolicy does not select the hook pods")
        check("Ingress" in (nspec.get("policyTypes") or []), "deploy: NetworkPolicy must restrict Ingress")
        rules = nspec.get("ingress") or []
        check(rules, "deploy: NetworkPolicy admits nothing (no ingress rule)")
        for rule in rules:
            peers = rule.get("from") or []
            check(peers == [{"namespaceSelector": {"matchLabels": {
                "kubernetes.io/metadata.name": METACONTROLLER_NAMESPACE}}}],
                f"deploy: NetworkPolicy ingress must admit only namespace {METACONTROLLER_NAMESPACE}, "
                f"got {json.dumps(peers)}")
            ports = [p.get("port") for p in rule.get("ports") or []]
            check(ports == [HOOK_PORT], f"deploy: NetworkPolicy ingress ports {ports} != [{HOOK_PORT}]")


# ---- Dockerfile ----------------------------------------------------------------------------------
def parse_dockerfile(path):
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"\\\n", " ", text)  # join continuation lines
    instructions = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            instructions.append((op.upper(), rest.strip()))
    return instructions


def check_dockerfile(path):
    instructions = parse_dockerfile(path)
    stages = [i for i, (op, _) in enumerate(instructions) if op == "FROM"]
    if not check(len(stages) >= 2, "Dockerfile: must be multi-stage"):
        return None
    builder = instructions[stages[0]][1]
    check(builder.startswith("rust:1.95-bookworm"), f"Dockerfile: builder image {builder!r} is not "
          f"rust:1.95-bookworm")
    final = instructions[stages[-1]:]
    base = final[0][1]
    check(base.startswith("gcr.io/distroless/static") or base == "scratch",
          f"Dockerfile: runtime image {base!r} is neither distroless static nor scratch")
    runs = " ".join(rest for op, rest in instructions[:stages[-1]] if op == "RUN")
    for flag in ("cargo build", "--release", "--locked", "+crt-static", "--target x86_64-unknown-linux-gnu"):
        check(flag in runs, f"Dockerfile: the builder's cargo command lacks {flag!r}")
    users = [rest for op, rest in final if op == "USER"]
    uid = None
    if check(users, "Dockerfile: final stage has no USER"):
        user = users[-1].split(":")[0]
        check(user.isdigit() and int(user) > 0, f"Dockerfile: USER {users[-1]!r} must be a numeric non-root uid")
        uid = int(user) if user.isdigit() else None
    exposes = [rest for op, rest in final if op == "EXPOSE"]
    check(exposes and exposes[-1].split("/")[0] == str(HOOK_PORT), f"Dockerfile: must EXPOSE {HOOK_PORT}")
    entry = [rest for op, rest in final if op == "ENTRYPOINT"]
    if check(entry, "Dockerfile: no ENTRYPOINT"):
        try:
            argv = json.loads(entry[-1])
        except json.JSONDecodeError:
            argv = None
        check(argv == ["/memcached-hook", "serve"],
              f"Dockerfile: ENTRYPOINT must be the exec form [\"/memcached-hook\", \"serve\"], got {entry[-1]}")
    copies = [rest for op, rest in final if op == "COPY"]
    check(any(c.startswith("--from=") and c.split()[-1] == "/memcached-hook" for c in copies),
          "Dockerfile: the final stage does not copy the binary to /memcached-hook")
    labels = " ".join(rest for op, rest in final if op == "LABEL")
    for key in ("title", "description", "version", "licenses", "source"):
        check(f"org.opencontainers.image.{key}=" in labels, f"Dockerfile: missing label org.opencontainers.image.{key}")
    return uid


# ---- RBAC ----------------------------------------------------------------------------------------
def check_rbac(objects, where, children):
    role = one(objects, "ClusterRole", "metacontroller-memcached", where)
    binding = one(objects, "ClusterRoleBinding", "metacontroller-memcached", where)
    if not role or not binding:
        return
    granted = {}
    for rule in role.get("rules", []):
        for field in ("apiGroups", "resources", "verbs"):
            check("*" not in rule.get(field, []), f"{where}: ClusterRole rule with {field} '*'")
        for g in rule.get("apiGroups", []):
            for r in rule.get("resources", []):
                granted.setdefault((g, r), set()).update(rule.get("verbs", []))
    expected = {
        ("metacontroller.k8s.io", "compositecontrollers"): READ_VERBS,
        ("metacontroller.k8s.io", "decoratorcontrollers"): READ_VERBS,
        ("metacontroller.k8s.io", "controllerrevisions"): READ_VERBS,
        ("apiextensions.k8s.io", "customresourcedefinitions"): READ_VERBS,
        ("memcached.c5c3.io", "memcacheds"): READ_VERBS | {"update", "patch"},
        ("memcached.c5c3.io", "memcacheds/status"): {"get", "update", "patch"},
        ("memcached.c5c3.io", "memcacheds/finalizers"): {"update"},
        ("", "secrets"): READ_VERBS,
        ("", "events"): {"create", "patch", "update"},
        ("rbac.authorization.k8s.io", "clusterroles"): {"bind"},
    }
    for rule in role.get("rules", []):
        if "clusterroles" in rule.get("resources", []):
            check(rule.get("resourceNames") == [RELOAD_AGENT_ROLE] and rule.get("verbs") == ["bind"],
                  f"{where}: clusterroles may only be bound, and only {RELOAD_AGENT_ROLE}")
    for api_version, resource in children:
        expected[(group_of(api_version), resource)] = ALL_VERBS
    for key in sorted(set(expected) | set(granted)):
        check(granted.get(key) == expected.get(key),
              f"{where}: ClusterRole grants {sorted(granted.get(key, []))} on {key}, "
              f"expected {sorted(expected.get(key, []))}")
    check(binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "metacontroller-memcached"},
          f"{where}: ClusterRoleBinding roleRef does not name the ClusterRole")
    check(binding.get("subjects") == [{"kind": "ServiceAccount", "name": METACONTROLLER_SERVICE_ACCOUNT,
                                       "namespace": METACONTROLLER_NAMESPACE}],
          f"{where}: ClusterRoleBinding must bind exactly ServiceAccount "
          f"{METACONTROLLER_NAMESPACE}/{METACONTROLLER_SERVICE_ACCOUNT}")
    for kind in ("Role", "RoleBinding"):
        for obj in find(objects, kind):
            check(obj["metadata"].get("namespace") == METACONTROLLER_NAMESPACE,
                  f"{where}: {kind} {obj['metadata']['name']} must live in namespace {METACONTROLLER_NAMESPACE}")
    for role in find(objects, "Role"):
        for rule in role.get("rules", []):
            check(rule.get("apiGroups") == ["coordination.k8s.io"] and rule.get("resources") == ["leases"],
                  f"{where}: Role {role['metadata']['name']} may only cover leader-election leases")


# ---- samples -------------------------------------------------------------------------------------
def check_sample_rules(name, cr):
    """The cross-field rules the CRD carries as CEL (spec.md 1.1), which schema validation skips."""
    where = f"config/samples/{name}.yaml"
    meta = cr.get("metadata", {})
    check(cr.get("apiVersion") == PARENT["apiVersion"] and cr.get("kind") == "Memcached",
          f"{where}: must be a {PARENT['apiVersion']} Memcached")
    check(DNS1035.match(meta.get("name", "")) and len(meta["name"]) <= 63,
          f"{where}: metadata.name must be a DNS-1035 label (it names the Service)")
    check("namespace" not in meta, f"{where}: leave metadata.namespace out so samples go anywhere")
    spec = cr.get("spec") or {}
    mem = spec.get("memcached") or {}
    limits = (spec.get("resources") or {}).get("limits") or {}
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "memory" in limits:
        need = ((mem.get("maxMemoryMB") or 64) + 32) * 2**20
        check(quantity(limits["memory"]) >= need, f"{where}: memory limit {limits['memory']} < maxMemoryMB + 32Mi")
    ha = spec.get("highAvailability") or {}
    gs = ha.get("gracefulShutdown") or {}
    if gs.get("enabled"):
        check(gs.get("terminationGracePeriodSeconds", 30) > gs.get("preStopDelaySeconds", 10),
              f"{where}: terminationGracePeriodSeconds must exceed preStopDelaySeconds")
    pdb = ha.get("podDisruptionBudget") or {}
    if pdb.get("enabled"):
        check(not ("minAvailable" in pdb and "maxUnavailable" in pdb),
              f"{where}: set only one of minAvailable and maxUnavailable")
    security = spec.get("security") or {}
    for block, ref in (("sasl", "credentialsSecretRef"), ("tls", "certificateSecretRef")):
        b = security.get(block) or {}
        if b.get("enabled"):
            check((b.get(ref) or {}).get("name"), f"{where}: security.{block}.{ref}.name is required")
    auto = spec.get("autoscaling") or {}
    if auto.get("enabled"):
        check("replicas" not in spec, f"{where}: spec.replicas and autoscaling are mutually exclusive")
        check(isinstance(auto.get("maxReplicas"), int), f"{where}: autoscaling.maxReplicas is required")
        check(auto.get("minReplicas", 1) <= auto.get("maxReplicas", 0), f"{where}: minReplicas > maxReplicas")
        metrics = auto.get("metrics") or [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization"}}}]
        cpu_util = any(m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu"
                       and ((m.get("resource") or {}).get("target") or {}).get("type") == "Utilization"
                       for m in metrics)
        if cpu_util:
            check("cpu" in requests, f"{where}: CPU utilisation autoscaling needs resources.requests.cpu")
    if (spec.get("proxy") or {}).get("enabled"):
        check(len(meta.get("name", "")) <= 57, f"{where}: metadata.name over 57 characters with the proxy")
        check(not (security.get("sasl") or {}).get("enabled"), f"{where}: the proxy with SASL")
        tls = security.get("tls") or {}
        check(not tls.get("enabled") or tls.get("allowPlaintext"), f"{where}: the proxy with TLS needs allowPlaintext")
        zones = (spec.get("zones") or {}).get("names") or []
        one_pod = not zones and not auto.get("enabled") and spec.get("replicas", 1) <= 1
        check(spec.get("workload", "Deployment") == "StatefulSet" or one_pod,
              f"{where}: the proxy needs workload StatefulSet unless the cache is one pod without zones")
        check(not any(z == "proxy" or z.startswith("proxy-") for z in zones),
              f"{where}: a zone named proxy or proxy-... with the proxy")
    return spec


def check_samples(samples_dir):
    for name in SAMPLES:
        path = samples_dir / f"{name}.yaml"
        if not check(path.exists(), f"config/samples/{name}.yaml is missing"):
            continue
        docs = load(path)
        if not check(len(docs) == 1, f"config/samples/{name}.yaml: expected one object"):
            continue
        spec = check_sample_rules(name, docs[0])
        where = f"config/samples/{name}.yaml"
        ha = spec.get("highAvailability") or {}
        security = spec.get("security") or {}
        if name == "ha":
            check(spec.get("replicas") == 3, f"{where}: replicas must be 3")
            check((ha.get("podDisruptionBudget") or {}).get("enabled"), f"{where}: needs a PDB")
            check(ha.get("antiAffinityPreset") == "soft", f"{where}: needs soft anti-affinity")
            check((ha.get("gracefulShutdown") or {}).get("enabled"), f"{where}: needs graceful shutdown")
            check(ha.get("topologySpreadConstraints"), f"{where}: needs topology spread constraints")
        elif name == "monitoring":
            mon = spec.get("monitoring") or {}
            check(mon.get("enabled") and "serviceMonitor" in mon, f"{where}: needs monitoring with serviceMonitor")
        elif name == "tls":
            tls = security.get("tls") or {}
            check(tls.get("enabled") and tls.get("enableClientCert"), f"{where}: needs TLS with client certificates")
        elif name == "production":
            check("memory" in ((spec.get("resources") or {}).get("limits") or {}), f"{where}: needs a memory limit")
            check(security.get("podSecurityContext") and security.get("containerSecurityContext"),
                  f"{where}: needs pod and container security contexts")
            check((security.get("networkPolicy") or {}).get("enabled"), f"{where}: needs a network policy")
            check((ha.get("podDisruptionBudget") or {}).get("enabled"), f"{where}: needs a PDB")
            check(spec.get("replicas", 1) >= 2 and ha.get("antiAffinityPreset"), f"{where}: needs HA scheduling")
            check(spec.get("nodeSelector") and spec.get("tolerations"),
                  f"{where}: needs a node pool (nodeSelector) and a toleration of its taint")
            check(spec.get("priorityClassName"), f"{where}: needs a priority class")
            check(spec.get("imagePullSecrets"), f"{where}: needs an image pull secret")
        elif name == "autoscaling":
            auto = spec.get("autoscaling") or {}
            check(auto.get("enabled") and "minReplicas" in auto and "maxReplicas" in auto,
                  f"{where}: needs autoscaling with minReplicas and maxReplicas")


def check_other_namespace(built):
    """An overlay with `namespace: platform-cache` over the hook and the CompositeController
    (deploy/overlays/platform-cache/, and the HTTPS pair in tests/manifests/fixtures/) moves the
    hook's address and Secrets with it: nothing names memcached-system any more."""
    for name, scheme in (("platform-cache", "http"), ("tls-platform-cache", "https")):
        objects = built.get(name) or []
        if not check(objects, f"{name}: no kustomize output (did the build fail?)"):
            continue
        check(HOOK_NAMESPACE not in json.dumps(objects),
              f"{name}: the output still names {HOOK_NAMESPACE}")
        result = check_composite_controller(objects, name, CHILDREN, scheme=scheme)
        if not result:
            continue
        cc, sync_url, _ = result
        for hook in ("sync", "customize"):
            service = ((cc["spec"]["hooks"].get(hook) or {}).get("webhook") or {}).get("service") or {}
            check(service.get("namespace") == "platform-cache",
                  f"{name}: hooks.{hook}.webhook.service.namespace is {service.get('namespace')!r}, "
                  f"not the overlay's platform-cache")
        if sync_url:
            check_url_reaches_hook(sync_url, objects, name, namespace="platform-cache")
        namespaces = [o["metadata"]["name"] for o in find(objects, "Namespace")]
        check(namespaces == ["platform-cache"], f"{name}: Namespace objects {namespaces}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, required=True)
    parser.add_argument("--built", type=pathlib.Path, required=True)
    args = parser.parse_args()

    built = {}
    for name in ("crd", "deploy", "deploy-tls-auth", "metacontroller", "metacontroller-servicemonitor",
                 "metacontroller-tls", "rbac", "rbac-servicemonitor", "platform-cache",
                 "tls-platform-cache"):
        path = args.built / f"{name}.yaml"
        built[name] = load(path) if path.exists() else []
        check(built[name], f"{name}: no kustomize output (did the build fail?)")

    uid = check_dockerfile(args.root / "Dockerfile")
    check_crd(built["crd"], built["deploy"])
    check_hook_install(built["deploy"], uid)
    for name, children in (("metacontroller", CHILDREN),
                           ("metacontroller-servicemonitor", CHILDREN + [SERVICEMONITOR])):
        result = check_composite_controller(built[name], name, children)
        if result and result[1]:
            check_url_reaches_hook(result[1], built["deploy"], name)
    check_tls_pair(built["metacontroller-tls"], built["deploy-tls-auth"], "metacontroller-tls")
    check_other_namespace(built)
    check_rbac(built["rbac"], "rbac", CHILDREN)
    check_rbac(built["rbac-servicemonitor"], "rbac-servicemonitor", CHILDREN + [SERVICEMONITOR])
    check_samples(args.root / "config" / "samples")

    print(f"consistency: {check.passed} checks passed, {len(check.failed)} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
