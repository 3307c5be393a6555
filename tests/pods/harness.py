#!/usr/bin/env python3
"""The pods phase's harness (tests/pods/pods.py has the scenarios): kubectl and the hook as
subprocesses, a namespace with a client pod (`Namespace`), a Memcached synced as Metacontroller
would, or by a real Metacontroller (`Memcached`), the counting of checks (`Test`), and helpers
for containers, evictions, certificates, DNS and cgroups. Environment: see pods.py.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_lib import Hook, diff_subset  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
KUBECTL = os.environ.get("E2E_KUBECTL", "kubectl")
HOOK = os.environ.get("PODS_HOOK", "memcached-hook")
HOOK_IMAGE = os.environ.get("PODS_HOOK_IMAGE", "")
MEMCACHED_IMAGE = os.environ.get("E2E_MEMCACHED_IMAGE", "")
CLIENT_IMAGE = os.environ.get("E2E_CLIENT_IMAGE", "")
WORK = os.environ.get("PODS_WORK") or tempfile.mkdtemp(prefix="memcached-hook-pods.")
TIMES = os.environ.get("PODS_TIMES", "")
# 1: a real Metacontroller (started by cluster.sh) syncs the Memcacheds, which are applied to the
# API server as a user would; the hook runs as `memcached-hook serve` on 127.0.0.1.
METACONTROLLER = os.environ.get("PODS_METACONTROLLER") == "1"
PARENT = "memcacheds.memcached.c5c3.io"
LABEL = "app.kubernetes.io/instance"
# The children kinds a CompositeController for Memcached declares (metacontroller/).
CHILD_KINDS = ("deployments.apps,statefulsets.apps,services,poddisruptionbudgets.policy,configmaps,"
               "serviceaccounts,rolebindings.rbac.authorization.k8s.io")
CONTROLLER = {
    "apiVersion": "metacontroller.k8s.io/v1alpha1",
    "kind": "CompositeController",
    "metadata": {"name": "memcached-controller"},
    "spec": {
        "parentResource": {"apiVersion": "memcached.c5c3.io/v1beta1", "resource": "memcacheds"},
        "childResources": [
            {"apiVersion": "apps/v1", "resource": "deployments"},
            {"apiVersion": "apps/v1", "resource": "statefulsets"},
            {"apiVersion": "v1", "resource": "services"},
            {"apiVersion": "policy/v1", "resource": "poddisruptionbudgets"},
            {"apiVersion": "v1", "resource": "configmaps"},
            {"apiVersion": "v1", "resource": "serviceaccounts"},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "resource": "rolebindings"},
        ],
    },
}


class Failed(Exception):
    """A check that must hold before the scenario can go on."""


def hook_args():
    """The hook's global options: its own image for the reload agent, and the pods related (the
    warm-restart scenario reads their last starts from the status, reload-report their reload
    agents' outcomes)."""
    return ["--relate-pods", *(["--reload-agent-image", HOOK_IMAGE] if HOOK_IMAGE else [])]


def run(args, stdin=None, check=True, timeout=120):
    p = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise Failed(f"{' '.join(args[:6])}... exit {p.returncode}: {(p.stderr or p.stdout).strip()[:800]}")
    return p


def kubectl(*args, stdin=None, check=True, timeout=120):
    return run([KUBECTL, *args], stdin=stdin, check=check, timeout=timeout)


def get(kind, name=None, ns=None, selector=None, check=True):
    args = ["get", kind, "-o", "json"]
    if name:
        args.insert(2, name)
    if ns:
        args += ["-n", ns]
    if selector:
        args += ["-l", selector]
    p = kubectl(*args, check=check)
    return json.loads(p.stdout) if p.returncode == 0 else None


def pod_ready(pod):
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", [])
    )


def wait_until(what, fn, timeout=120, interval=0.5):
    """Poll fn() until it returns a truthy value; return it, or raise Failed after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise Failed(f"{what}: not within {timeout}s (last: {str(last)[:300]})")


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


class Test:
    """Counts checks and records timings; one per run."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []
        self.scenario = ""

    def check(self, what, cond, detail=""):
        name = f"{self.scenario}: {what}"
        if cond:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            self.failures.append(name)
            print(f"FAIL {name}", flush=True)
            for line in str(detail).splitlines()[:15]:
                print(f"       {line}", flush=True)
        return cond

    def time(self, what, seconds):
        print(f"time {self.scenario}: {what}: {seconds:.1f}s", flush=True)
        if TIMES:
            with open(TIMES, "a") as f:
                f.write(f"{self.scenario}\t{what}\t{seconds:.1f}\n")


# Every scenario's namespace enforces the Pod Security Standards' `restricted` profile: the hook's
# pods, and the scenarios' own, must pass it to be created at all.
POD_SECURITY = {"pod-security.kubernetes.io/enforce": "restricted"}
# What the scenarios' own pods (client pods) run with to pass `restricted`.
RESTRICTED_POD = {"runAsUser": 65534, "runAsGroup": 65534, "runAsNonRoot": True,
                  "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


class Namespace:
    """A namespace of the scenario's own (enforcing Pod Security `restricted`), with a client pod;
    deleted by close()."""

    def __init__(self, name):
        self.name = f"mc-{name}" if METACONTROLLER else name  # both modes can share a cluster
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.name, "labels": POD_SECURITY}}
        kubectl("create", "-f", "-", stdin=json.dumps(ns))
        self.client_ready = False

    def refuses_privileged(self):
        """Whether the API server refuses a privileged pod in this namespace, naming Pod Security
        (the label is honoured); returns (refused, what it answered)."""
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "privileged", "namespace": self.name},
               "spec": {"containers": [{"name": "c", "image": CLIENT_IMAGE, "imagePullPolicy": "Never",
                                        "securityContext": {"privileged": True}}]}}
        p = kubectl("create", "-f", "-", stdin=json.dumps(pod), check=False)
        out = (p.stdout + p.stderr).strip()
        if p.returncode == 0:
            kubectl("delete", "pod", "-n", self.name, "privileged", "--wait=false", check=False)
        return p.returncode != 0 and "PodSecurity" in out and "restricted" in out, out[:400]

    def apply(self, objs):
        for o in objs:
            o.setdefault("metadata", {})["namespace"] = self.name
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
        kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=memcached-hook-pods", "-f", "-",
                stdin=doc)

    def secret(self, name, data, string_data=False):
        """A Secret with `data`, or with `stringData` (the API server stores the strings as they are) when
        string_data."""
        field = {"stringData": dict(data)} if string_data else {"data": {k: b64(v) for k, v in data.items()}}
        self.apply([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque", **field}])

    def container_sh(self, pod, container, script):
        """Runs script with the image's busybox in a container of one of the scenario's pods (the memcached image
        has no sh of its own); returns (exit status, stdout + stderr)."""
        p = kubectl("exec", "-n", self.name, pod, "-c", container, "--", "busybox", "sh", "-c", script, check=False)
        return p.returncode, p.stdout + p.stderr

    def pods(self, selector):
        return get("pods", ns=self.name, selector=selector)["items"]

    def client(self, volumes=()):
        """The client pod (E2E_CLIENT_IMAGE: busybox and openssl), Ready; volumes: Secret names
        mounted at /secrets/<name>."""
        if not self.client_ready:
            spec = {
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 1,
                "securityContext": RESTRICTED_POD,
                "containers": [{"name": "client", "image": CLIENT_IMAGE, "imagePullPolicy": "Never",
                                "securityContext": RESTRICTED_CONTAINER,
                                "volumeMounts": [{"name": v, "mountPath": f"/secrets/{v}"} for v in volumes]}],
                "volumes": [{"name": v, "secret": {"secretName": v}} for v in volumes],
            }
            self.apply([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"}, "spec": spec}])
            kubectl("wait", "-n", self.name, "--for=condition=Ready", "--timeout=60s", "pod/client")
            self.client_ready = True
        return self

    def sh(self, script, check=False, timeout=60):
        """Runs script in the client pod; returns (exit status, stdout + stderr)."""
        p = kubectl("exec", "-n", self.name, "client", "--", "sh", "-c", script, check=check, timeout=timeout)
        return p.returncode, p.stdout + p.stderr

    def resolve(self, host):
        """The IPv4 addresses the client pod's C library resolves host to (search domains and
        all, as a client would): `getent ahostsv4`."""
        code, out = self.sh(f"getent ahostsv4 {host}")
        return sorted({line.split()[0] for line in out.splitlines() if "STREAM" in line}) or [out.strip()]

    def resolve_until(self, host, want, timeout=20):
        """resolve(host) until it gives `want` (sorted IPs) or `timeout` seconds pass; returns
        the last answer. A name follows the pods' readiness through the EndpointSlice and the
        DNS server's watch of it, so a client sees a new Ready pod a moment after the kubelet
        reports it; the wait is bounded and the check after it still compares exactly."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.resolve(host)
            if got == want or time.monotonic() >= deadline:
                return got
            time.sleep(0.5)

    def http_get(self, ip, port, path):
        """GET http://ip:port/path from the client pod (nc; busybox's wget is not used). The
        request side stays open for 3 s: nc half-closes at the end of its input, and an HTTP
        server may drop a request whose client has closed before the answer is ready."""
        return self.sh(f"(printf 'GET {path} HTTP/1.0\\r\\n\\r\\n'; sleep 3) | nc -w 5 {ip} {port}")

    def memcached(self, host, commands, port=11211, tls=None, pause=0):
        """Sends memcached text commands (list of lines, `quit` appended) from the client pod;
        tls: extra openssl s_client arguments, None for plaintext; pause: seconds between the
        commands and `quit` (memcached 1.6.45 closes an unauthenticated connection at `quit`
        without sending the answers before it)."""
        payload = "".join(c + "\\r\\n" for c in commands)
        send = f"printf '{payload}'; sleep {pause}; printf 'quit\\r\\n'" if pause else f"printf '{payload}quit\\r\\n'"
        if tls is None:
            cmd = f"({send}) | nc -w 5 {host} {port}"
        else:
            cmd = (f"({send}) | timeout 10 openssl s_client -quiet -ign_eof -connect {host}:{port} "
                   f"-verify_return_error {tls} 2>&1")
        return self.sh(cmd)

    def close(self):
        if os.environ.get("PODS_KEEP_NAMESPACES") != "1":  # 1: left for a look after a failure
            kubectl("delete", "namespace", self.name, "--wait=false", check=False)


class Memcached:
    """One Memcached. Without Metacontroller it is kept in the harness (no CRD needed) and
    children and status come from the hook's answers; under Metacontroller (METACONTROLLER) it
    is applied to the API server and what Metacontroller writes is read back."""

    def __init__(self, ns, name, spec):
        self.ns = ns
        self.obj = {
            "apiVersion": "memcached.c5c3.io/v1beta1",
            "kind": "Memcached",
            "metadata": {"name": name, "namespace": ns.name, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"memcached-hook-pods/{ns.name}/{name}")),
                         "generation": 1, "creationTimestamp": "2026-11-25T00:00:00Z"},
            "spec": spec,
        }
        self.name = name

    def render(self):
        """`memcached-hook render` of the Memcached, as a user previewing it sees it: the
        objects (as JSON, through kubectl's client-side dry run)."""
        path = os.path.join(WORK, f"{self.ns.name}-{self.name}.json")
        with open(path, "w") as f:
            json.dump(self.obj, f)
        out = run([HOOK, "render", *hook_args(), path]).stdout
        text = kubectl("create", "--dry-run=client", "-o", "json", "-f", "-", stdin=out).stdout
        objs, pos, dec = [], 0, json.JSONDecoder()
        while pos < len(text.rstrip()):  # one JSON document per object, one after the other
            o, pos = dec.raw_decode(text, pos)
            objs.append(o)
            while pos < len(text) and text[pos].isspace():
                pos += 1
        return objs

    def apply_parent(self):
        """Under Metacontroller: `kubectl apply` of the Memcached, as a user would."""
        meta = {"name": self.name, "namespace": self.ns.name}
        doc = {"apiVersion": self.obj["apiVersion"], "kind": "Memcached", "metadata": meta, "spec": self.obj["spec"]}
        kubectl("apply", "-f", "-", stdin=json.dumps(doc))

    def create(self):
        """Creates the children: render, and the first sync, which applies them as Metacontroller
        would (render cannot see Secrets, so only the sync puts their hash into the pod
        template); under Metacontroller, applies the Memcached and waits for the children
        Metacontroller creates. Raises Failed unless both name the same objects. Returns render's
        objects."""
        rendered = self.render()
        mine = sorted((c["kind"], c["metadata"]["name"]) for c in rendered)
        if METACONTROLLER:
            self.apply_parent()
            self.last_desired = None
            wait_until(f"Metacontroller created {mine}", lambda: sorted(
                (o["kind"], o["metadata"]["name"]) for objs in self.observed().values() for o in objs.values()) == mine,
                timeout=60)
            return rendered
        self.sync()
        synced = sorted((c["kind"], c["metadata"]["name"]) for c in self.last_desired)
        if synced != mine:
            raise Failed(f"render gives {mine}, the first sync {synced}")
        return rendered

    def differences(self, rendered):
        """How the children applied differ from render's objects: without Metacontroller the
        sync's answer must equal them; under it every rendered field must be on the live child
        (the API server and Metacontroller add defaults and labels). [] when they agree."""
        if not METACONTROLLER:
            same = sorted(map(without_namespace, rendered)) == sorted(map(without_namespace, self.last_desired))
            return [] if same else ["the first sync's children are not render's objects"]
        live = {(o["kind"], o["metadata"]["name"]): o for objs in self.observed().values() for o in objs.values()}
        out = []
        for c in rendered:
            diffs = []
            # render prints no namespace (kubectl's dry run fills in its default)
            diff_subset(json.loads(without_namespace(c)), live.get((c["kind"], c["metadata"]["name"]), {}),
                        f"{c['kind']}/{c['metadata']['name']}", diffs)
            out += [f"{p}: rendered {json.dumps(w)[:100]}, live {json.dumps(g)[:100]}" for p, w, g in diffs]
        return out

    def update(self, spec):
        """A new spec; under Metacontroller applied at once, else sent by the next sync."""
        self.obj["spec"] = spec
        self.obj["metadata"]["generation"] += 1
        if METACONTROLLER:
            self.apply_parent()

    def observed(self):
        items = get(CHILD_KINDS, ns=self.ns.name, selector=f"{LABEL}={self.name}")["items"]
        children = {}
        for o in items:
            children.setdefault(f"{o['kind']}.{o['apiVersion']}", {})[o["metadata"]["name"]] = o
        return children

    def related(self):
        sec = self.obj["spec"].get("security", {})
        names = [sec.get("sasl", {}).get("credentialsSecretRef", {}).get("name"),
                 sec.get("tls", {}).get("certificateSecretRef", {}).get("name")]
        out = {}
        for n in filter(None, names):
            s = get("secret", n, ns=self.ns.name, check=False)
            if s:
                out.setdefault("Secret.v1", {})[n] = s
        # As the customize hook asks under --relate-pods: the pods, with warm restart on a
        # StatefulSet or with Secrets reloaded in place.
        spec = self.obj["spec"]
        warm = spec.get("workload") == "StatefulSet" and spec.get("warmRestart", {}).get("enabled")
        reloads = (sec.get("sasl", {}).get("enabled") or sec.get("tls", {}).get("enabled")) \
            and sec.get("secretRotation", "Reload") == "Reload"
        if warm or reloads:
            for p in self.pods():
                out.setdefault("Pod.v1", {})[p["metadata"]["name"]] = p
        return out

    def sync(self):
        """One sync as Metacontroller does it; returns the status. Under Metacontroller: the
        status it wrote for the Memcached's current generation (waited for, bounded)."""
        if METACONTROLLER:
            return self.written_status()
        observed = self.observed()
        req = {"controller": CONTROLLER, "parent": self.obj, "children": observed,
               "related": self.related(), "finalizing": False}
        path = os.path.join(WORK, f"{self.ns.name}-{self.name}-sync.json")
        with open(path, "w") as f:
            json.dump(req, f)
        resp = json.loads(run([HOOK, "replay", *hook_args(), path]).stdout)
        desired = resp.get("children", [])
        self.last_desired = desired
        if desired:
            self.ns.apply(desired)
        want = {(c["kind"], c["metadata"]["name"]) for c in desired}
        for objs in observed.values():
            for o in objs.values():
                if (o["kind"], o["metadata"]["name"]) not in want:
                    kubectl("delete", o["kind"], o["metadata"]["name"], "-n", self.ns.name, "--wait=false")
        self.obj["status"] = resp.get("status", {})
        return self.obj["status"]

    def written_status(self):
        def current():
            live = get(PARENT, self.name, ns=self.ns.name)
            st = live.get("status") or {}
            return st if st.get("observedGeneration") == live["metadata"]["generation"] else None
        self.obj["status"] = wait_until(f"Metacontroller wrote the status of {self.name}'s generation", current,
                                        timeout=60)
        return self.obj["status"]

    def condition(self, type_):
        for c in self.obj.get("status", {}).get("conditions", []):
            if c["type"] == type_:
                return c["status"]
        return None

    def selector(self):
        return f"{LABEL}={self.name}"

    def pods(self):
        return self.ns.pods(self.selector())

    def ready_pods(self):
        return [p for p in self.pods() if pod_ready(p) and not p["metadata"].get("deletionTimestamp")]

    def settled(self, n):
        """The Ready pods when the workload has rolled out n up-to-date Ready replicas and no
        other pod is left; else None."""
        kind = "statefulset" if self.obj["spec"].get("workload") == "StatefulSet" else "deployment"
        w = get(kind, self.name, ns=self.ns.name, check=False)
        if not w:
            return None
        st = w.get("status", {})
        if (st.get("observedGeneration", 0) < w["metadata"]["generation"] or st.get("updatedReplicas") != n
                or st.get("readyReplicas") != n or st.get("replicas") != n):
            return None
        pods, ready = self.pods(), self.ready_pods()
        return ready if len(pods) == n and len(ready) == n else None

    def wait_ready(self, n, timeout=120):
        return wait_until(f"{n} up-to-date Ready pods of {self.name}", lambda: self.settled(n), timeout=timeout)

    def sync_until(self, what, pred, timeout=90):
        """Syncs until pred(status) holds (Metacontroller resyncs on every child change)."""
        return wait_until(what, lambda: pred(self.sync()) and self.obj["status"], timeout=timeout, interval=1)


# The hook serve_hook started: the upgrade scenario starts it again with other options.
SERVED = []


def serve_hook():
    """Under Metacontroller: `memcached-hook serve` on 127.0.0.1 and the repository's
    CompositeController (metacontroller/base/) with both webhooks pointed at it. Returns the
    Hook; stop() it at the end."""
    hook = Hook(HOOK, "pods", WORK, args=hook_args())
    hook.start()
    SERVED.append(hook)
    path = os.path.join(ROOT, "metacontroller", "base", "compositecontroller.yaml")
    cc = json.loads(kubectl("create", "--dry-run=client", "-o", "json", "-f", path).stdout)
    for name in ("sync", "customize"):
        webhook = cc["spec"]["hooks"][name]["webhook"]
        webhook.pop("service")  # the in-cluster Service; this hook runs on the host
        webhook["url"] = f"http://127.0.0.1:{hook.port}{webhook.pop('path')}"
    kubectl("apply", "-f", "-", stdin=json.dumps(cc))
    return hook


def restart_hook(args):
    """Under Metacontroller: the hook of serve_hook stopped and started again on the same port with
    `args` as its global options, as a new release behind the same Service; returns it."""
    hook = SERVED[-1]
    hook.stop()
    hook.args = list(args)
    hook.start()
    return hook


def without_namespace(obj):
    """obj as sorted JSON without metadata.namespace (for comparing objects)."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "namespace"}
    return json.dumps({**obj, "metadata": meta}, sort_keys=True)


def ctr(*args):
    return run(["ctr", "--address", os.environ["E2E_CONTAINERD_ADDRESS"], "--namespace", "k8s.io", *args])


def kill_container(pod, name="memcached"):
    """SIGKILL one container of a pod through containerd: the kubelet sees it die and restarts it."""
    for cs in pod["status"].get("containerStatuses", []):
        if cs["name"] == name:
            cid = cs["containerID"].split("://", 1)[1]
            ctr("tasks", "kill", "-s", "SIGKILL", cid)
            return cid
    raise Failed(f"no container {name} in pod {pod['metadata']['name']}")


def restarts(pod, name="memcached"):
    return next((cs["restartCount"] for cs in pod["status"].get("containerStatuses", []) if cs["name"] == name), 0)


def evict(ns, pod):
    """The eviction API, as `kubectl drain` calls it: (HTTP-ish outcome, message)."""
    body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                       "metadata": {"name": pod, "namespace": ns.name}})
    p = kubectl("create", "--raw", f"/api/v1/namespaces/{ns.name}/pods/{pod}/eviction", "-f", "-",
                stdin=body, check=False)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


class ReadyWatch:
    """Counts the Ready pods of a Memcached every 0.3 s in a thread; min is the lowest seen."""

    def __init__(self, mc):
        self.mc, self.min, self.samples, self.stop = mc, None, 0, threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.is_set():
            try:
                n = len(self.mc.ready_pods())
            except Exception:  # one failed poll is not a sample
                continue
            self.min = n if self.min is None else min(self.min, n)
            self.samples += 1
            time.sleep(0.3)

    def done(self):
        self.stop.set()
        self.thread.join(10)
        return self.min


def uptime():
    """The host's /proc/uptime: the clock a client pod's /proc/uptime shows too (one kernel)."""
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def srv_answer_targets(answer):
    """The targets of a busybox `nslookup -type=SRV` answer (`<name> service = <priority>
    <weight> <port> <target>` lines)."""
    return sorted(line.split()[-1].rstrip(".") for line in answer.splitlines() if "service = " in line)


def srv_targets(ns, srv):
    """The target host names of the SRV name `srv` as the client pod's resolver answers, and
    the answer."""
    _, out = ns.sh(f"nslookup -type=SRV {srv}")
    return srv_answer_targets(out), out


class SrvWatch:
    """Looks the DNS SRV name `srv` up from the client pod in a thread: batches of `busybox
    nslookup -type=SRV`, one lookup every 0.2 s, at most `limit`. Each sample is (the pod's
    uptime, the targets, the answer); `low()` the answers with fewer targets than `want` names,
    `failed()` the lookups that got no answer at all."""

    BATCH = 10

    def __init__(self, ns, srv, want, limit=3000):
        self.ns, self.srv, self.want, self.limit = ns, srv, sorted(want), limit
        self.samples = []  # (uptime, targets, answer)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        script = (f"i=0; while [ $i -lt {self.BATCH} ]; do read t _ </proc/uptime; "
                  f"a=$(nslookup -type=SRV {self.srv} 2>&1); printf 'srv %s %s\\n' \"$t\" "
                  f"\"$(printf '%s' \"$a\" | tr '\\n\\t' '~ ')\"; i=$((i+1)); sleep 0.2; done")
        while not self.stop.is_set() and len(self.samples) < self.limit:
            _, out = self.ns.sh(script, timeout=30)
            for line in out.splitlines():
                parts = line.split(" ", 2)
                if parts[0] != "srv" or len(parts) < 3:
                    continue
                answer = parts[2].replace("~", "\n")
                self.samples.append((float(parts[1]), srv_answer_targets(answer), answer))

    def done(self):
        self.stop.set()
        self.thread.join(40)
        return self

    @staticmethod
    def unanswered(answer):
        """A lookup that got no answer (timeout, SERVFAIL): not an answer with fewer targets."""
        return any(w in answer for w in ("timed out", "no servers could be reached", "SERVFAIL"))

    def answered(self):
        return [s for s in self.samples if not self.unanswered(s[2])]

    def failed(self):
        return [s for s in self.samples if self.unanswered(s[2])]

    def low(self):
        """The answers with fewer targets than `want`."""
        return [s for s in self.answered() if s[1] != self.want]

    def longest_short(self):
        """The longest time in seconds from a short answer to the next full one."""
        longest, since = 0.0, None
        for at, targets, _ in self.answered():
            if targets != self.want:
                since = at if since is None else since
            elif since is not None:
                longest, since = max(longest, at - since), None
        return round(longest, 1)

    def lowest(self):
        return min((len(s[1]) for s in self.answered()), default=None)


class PodTimeline:
    """Watches a Memcached's pods (`kubectl get --watch`) in a thread and records, at each
    event, the host's uptime and the names of the pods an EndpointSlice can list: existing,
    with an IP, not terminal. A watch sees every change, however short."""

    def __init__(self, mc):
        # The pods as listed now, so that the watch's first events (one per pod) change nothing.
        self.listable = {p["metadata"]["name"]: self.can_list(p) for p in mc.pods()}
        self.states = [(uptime(), frozenset(n for n, ok in self.listable.items() if ok))]
        self.proc = subprocess.Popen(
            [KUBECTL, "get", "pods", "-n", mc.ns.name, "-l", mc.selector(), "--watch", "--output-watch-events",
             "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    @staticmethod
    def can_list(pod, deleted=False):
        st = pod.get("status", {})
        return not deleted and bool(st.get("podIP")) and st.get("phase") not in ("Succeeded", "Failed")

    def loop(self):
        listable, buf, dec = self.listable, "", json.JSONDecoder()
        for line in self.proc.stdout:
            buf += line
            try:
                event, end = dec.raw_decode(buf.lstrip())
            except ValueError:
                continue  # an event spans several lines
            buf = buf.lstrip()[end:]
            pod = event.get("object", {})
            listable[pod.get("metadata", {}).get("name")] = self.can_list(pod, event.get("type") == "DELETED")
            self.states.append((uptime(), frozenset(n for n, ok in listable.items() if ok)))

    def done(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.thread.join(10)
        return self

    def absent(self, host, at, before=3.0, after=0.5):
        """Whether the pod `host` names (its first label) was not listable at some moment from
        `before` seconds before `at` to `after` seconds after it (DNS follows the API a moment
        later)."""
        pod = host.split(".")[0]
        lo, hi = at - before, at + after
        in_force = [names for t, names in self.states if t <= lo][-1:]
        during = [names for t, names in self.states if lo < t <= hi]
        return any(pod not in names for names in in_force + during)


def crashloop(mc, *pod_names, timeout=90):
    """Kills the pods' memcached until the kubelet holds each in CrashLoopBackOff at the same
    time (not Ready); returns those pods."""
    def waiting():
        pods = [p for p in mc.pods() if p["metadata"]["name"] in pod_names]
        looping = []
        for pod in pods:
            cs = next(c for c in pod["status"].get("containerStatuses", []) if c["name"] == "memcached")
            if cs.get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff":
                looping.append(pod)
            elif cs.get("state", {}).get("running"):
                try:
                    kill_container(pod)
                except Failed:
                    pass
        return looping if len(looping) == len(pod_names) else None
    return wait_until(f"{', '.join(pod_names)} in CrashLoopBackOff", waiting, timeout=timeout, interval=0.5)


def certs(ns, service, serial, ca=None):
    """A CA (or the given one), a server certificate for service's names and a client
    certificate, made with openssl; returns {"ca.crt", "ca.key", "tls.crt", "tls.key",
    "client.crt", "client.key"} as text."""
    d = tempfile.mkdtemp(dir=WORK)
    f = lambda n: os.path.join(d, n)  # noqa: E731
    out = {}
    if ca is None:
        run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f("ca.key"), "-out", f("ca.crt"), "-days", "2", "-subj", f"/CN=pods-test-ca-{serial}"])
    else:
        for k in ("ca.crt", "ca.key"):
            with open(f(k), "w") as fh:
                fh.write(ca[k])
    names = [f"{service}.{ns}", f"{service}.{ns}.svc", f"{service}.{ns}.svc.cluster.local",
             f"*.{service}.{ns}.svc", f"*.{service}.{ns}.svc.cluster.local"]
    for who, cn, ext in (("tls", service, "subjectAltName=" + ",".join(f"DNS:{n}" for n in names)),
                         ("client", "pods-client", "extendedKeyUsage=clientAuth")):
        run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f(f"{who}.key"), "-out", f(f"{who}.csr"), "-subj", f"/CN={cn}"])
        run(["openssl", "x509", "-req", "-in", f(f"{who}.csr"), "-CA", f("ca.crt"), "-CAkey", f("ca.key"),
             "-set_serial", str(serial), "-days", "2", "-out", f(f"{who}.crt"), "-extfile", "/dev/stdin"],
            stdin=ext)
    for k in ("ca.crt", "ca.key", "tls.crt", "tls.key", "client.crt", "client.key"):
        with open(f(k)) as fh:
            out[k] = fh.read()
    return out


def tls_secrets(ns, name, c):
    """The server Secret the Memcached references and the client's."""
    ns.secret(name, {"tls.crt": c["tls.crt"], "tls.key": c["tls.key"], "ca.crt": c["ca.crt"]})
    ns.secret("client-tls", {"tls.crt": c["client.crt"], "tls.key": c["client.key"], "ca.crt": c["ca.crt"]})


CA_ARGS = "-CAfile /secrets/client-tls/ca.crt"
CLIENT_ARGS = CA_ARGS + " -cert /secrets/client-tls/tls.crt -key /secrets/client-tls/tls.key"


def auth(password, user="app"):
    """memcached's ASCII authentication: a `set` whose data is "user password"."""
    return [f"set auth 0 0 {len(user) + 1 + len(password)}", f"{user} {password}"]


AUTH = auth("s3cret")


def listeners(pod):
    """The TCP listeners in a pod's network namespace, as (address, port) pairs (read from the
    host through the memcached container's PID)."""
    cid = next(cs["containerID"].split("://", 1)[1] for cs in pod["status"]["containerStatuses"]
               if cs["name"] == "memcached")
    pid = next(line.split()[1] for line in ctr("tasks", "ls").stdout.splitlines() if line.startswith(cid))
    out = run(["nsenter", "-t", pid, "-n", "ss", "-Hltn"]).stdout
    return sorted({(w.rsplit(":", 1)[0], int(w.rsplit(":", 1)[1])) for w in (line.split()[3] for line in out.splitlines())})


def served_serial(ns, host, port=11211):
    """The serial of the certificate a new TLS connection to host is served (from the client pod)."""
    code, out = ns.sh(f"printf 'quit\\r\\n' | timeout 10 openssl s_client -connect {host}:{port} {CLIENT_ARGS} "
                      f"2>/dev/null | openssl x509 -noout -serial")
    return out.strip().split("=", 1)[-1] if "serial=" in out else out.strip()


def memory_cgroup(pod):
    """The memory cgroup directory of a pod's memcached container (cgroup v1 or v2)."""
    cid = next(cs["containerID"].split("://", 1)[1] for cs in pod["status"]["containerStatuses"]
               if cs["name"] == "memcached")
    pid = next(line.split()[1] for line in ctr("tasks", "ls").stdout.splitlines() if line.startswith(cid))
    with open(f"/proc/{pid}/cgroup") as f:
        lines = [ln.strip().split(":", 2) for ln in f]
    v1 = [p for _, ctl, p in lines if "memory" in ctl.split(",")]
    return f"/sys/fs/cgroup/memory{v1[0]}" if v1 else f"/sys/fs/cgroup{lines[0][2]}"


def cgroup_value(cg, v1, v2):
    for name in (v1, v2):
        path = os.path.join(cg, name)
        if os.path.exists(path):
            with open(path) as f:
                raw = f.read().strip()
            return None if raw == "max" else int(raw)
    return None


FILL = ("i=0; while [ $i -lt 120 ]; do printf 'set k%d 0 0 900000\\r\\n' $i; "
        "head -c 900000 /dev/zero | tr '\\0' x; printf '\\r\\n'; i=$((i+1)); done; printf 'quit\\r\\n'")
