#!/usr/bin/env python3
"""The pods phase's scenarios: the hook's children run as real pods on the node of
tests/e2e/cluster.sh (E2E_NODE=1), and what a user would see is asserted.

  pods.py [SCENARIO...]     (default: all, in the order of SCENARIOS below)

Environment: what `cluster.sh env` prints (KUBECONFIG, E2E_KUBECTL, E2E_MEMCACHED_IMAGE,
E2E_CLIENT_IMAGE, E2E_CONTAINERD_ADDRESS), plus
  PODS_HOOK        the memcached-hook binary (render, replay)
  PODS_HOOK_IMAGE  the hook's own image as imported into the node (the reload agent)
  PODS_WORK        a scratch directory
  PODS_TIMES       file to append "scenario<TAB>what<TAB>seconds" lines to

No Metacontroller: `Memcached.sync()` does what it would. It sends the parent, the observed
children and the referenced Secrets through `memcached-hook replay` (the very code behind
/sync), applies the desired children with server-side apply, deletes observed children that
are no longer desired, and keeps the returned status as the parent's for the next sync.
The first children come from `memcached-hook render`, as a user previewing the Memcached
would see them.

Each scenario runs in a namespace of its own and prints `ok`/`FAIL` lines; a scenario that
raises stops there with one FAIL naming the exception. The last line is
`pods: N passed, M failed`. To add a scenario: write `def scenario_x(t: Test)` using the
helpers below and add it to SCENARIOS.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

KUBECTL = os.environ.get("E2E_KUBECTL", "kubectl")
HOOK = os.environ.get("PODS_HOOK", "memcached-hook")
HOOK_IMAGE = os.environ.get("PODS_HOOK_IMAGE", "")
MEMCACHED_IMAGE = os.environ.get("E2E_MEMCACHED_IMAGE", "")
CLIENT_IMAGE = os.environ.get("E2E_CLIENT_IMAGE", "")
WORK = os.environ.get("PODS_WORK") or tempfile.mkdtemp(prefix="memcached-hook-pods.")
TIMES = os.environ.get("PODS_TIMES", "")
LABEL = "app.kubernetes.io/instance"
# The children kinds a CompositeController for Memcached declares (metacontroller/).
CHILD_KINDS = "deployments.apps,statefulsets.apps,services,poddisruptionbudgets.policy"
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
        ],
    },
}


class Failed(Exception):
    """A check that must hold before the scenario can go on."""


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


class Namespace:
    """A namespace of the scenario's own, with a client pod; deleted by close()."""

    def __init__(self, name):
        self.name = name
        kubectl("create", "namespace", name)
        self.client_ready = False

    def apply(self, objs):
        for o in objs:
            o.setdefault("metadata", {})["namespace"] = self.name
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
        kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=memcached-hook-pods", "-f", "-",
                stdin=doc)

    def secret(self, name, data):
        self.apply([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque",
                     "data": {k: b64(v) for k, v in data.items()}}])

    def pods(self, selector):
        return get("pods", ns=self.name, selector=selector)["items"]

    def client(self, volumes=()):
        """The client pod (E2E_CLIENT_IMAGE: busybox and openssl), Ready; volumes: Secret names
        mounted at /secrets/<name>."""
        if not self.client_ready:
            spec = {
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 1,
                "securityContext": {"runAsUser": 65534, "runAsGroup": 65534, "runAsNonRoot": True},
                "containers": [{"name": "client", "image": CLIENT_IMAGE, "imagePullPolicy": "Never",
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

    def http_get(self, ip, port, path):
        """GET http://ip:port/path from the client pod (nc; busybox's wget is not used)."""
        return self.sh(f"printf 'GET {path} HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {ip} {port}")

    def memcached(self, host, commands, port=11211, tls=None):
        """Sends memcached text commands (list of lines, `quit` appended) from the client pod;
        tls: extra openssl s_client arguments, None for plaintext."""
        payload = "".join(c + "\\r\\n" for c in [*commands, "quit"])
        if tls is None:
            cmd = f"printf '{payload}' | nc -w 5 {host} {port}"
        else:
            cmd = (f"printf '{payload}' | timeout 10 openssl s_client -quiet -ign_eof -connect {host}:{port} "
                   f"-verify_return_error {tls} 2>&1")
        return self.sh(cmd)

    def close(self):
        if os.environ.get("PODS_KEEP_NAMESPACES") != "1":  # 1: left for a look after a failure
            kubectl("delete", "namespace", self.name, "--wait=false", check=False)


class Memcached:
    """One Memcached, kept in the harness (no CRD needed); children and status via the hook."""

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

    def hook_args(self):
        return ["--reload-agent-image", HOOK_IMAGE] if HOOK_IMAGE else []

    def render(self):
        """`memcached-hook render` of the Memcached, as a user previewing it sees it: the
        objects (as JSON, through kubectl's client-side dry run)."""
        path = os.path.join(WORK, f"{self.ns.name}-{self.name}.json")
        with open(path, "w") as f:
            json.dump(self.obj, f)
        out = run([HOOK, "render", *self.hook_args(), path]).stdout
        text = kubectl("create", "--dry-run=client", "-o", "json", "-f", "-", stdin=out).stdout
        objs, pos, dec = [], 0, json.JSONDecoder()
        while pos < len(text.rstrip()):  # one JSON document per object, one after the other
            o, pos = dec.raw_decode(text, pos)
            objs.append(o)
            while pos < len(text) and text[pos].isspace():
                pos += 1
        return objs

    def create(self):
        """Creates the children: render, and the first sync, which applies them as Metacontroller
        would (render cannot see Secrets, so only the sync puts their hash into the pod
        template). Raises Failed unless both name the same objects. Returns render's objects."""
        rendered = self.render()
        self.sync()
        synced = sorted((c["kind"], c["metadata"]["name"]) for c in self.last_desired)
        mine = sorted((c["kind"], c["metadata"]["name"]) for c in rendered)
        if synced != mine:
            raise Failed(f"render gives {mine}, the first sync {synced}")
        return rendered

    def update(self, spec):
        self.obj["spec"] = spec
        self.obj["metadata"]["generation"] += 1

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
        return out

    def sync(self):
        """One sync as Metacontroller does it; returns the status."""
        observed = self.observed()
        req = {"controller": CONTROLLER, "parent": self.obj, "children": observed,
               "related": self.related(), "finalizing": False}
        path = os.path.join(WORK, f"{self.ns.name}-{self.name}-sync.json")
        with open(path, "w") as f:
            json.dump(req, f)
        resp = json.loads(run([HOOK, "replay", *self.hook_args(), path]).stdout)
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


# ---- scenarios -----------------------------------------------------------------------------

def scenario_deployment(t: Test):
    """Deployment pods become Ready; a client pod sets and gets keys through the Service name;
    readiness becomes status (readyReplicas, Available, Ready), also when both pods' memcached
    is killed and comes back."""
    ns = Namespace("pods-deployment")
    try:
        mc = Memcached(ns, "cache", {"replicas": 2, "image": MEMCACHED_IMAGE,
                                     "highAvailability": {"podDisruptionBudget": {"enabled": True}}})
        start = time.monotonic()
        rendered = mc.create()
        ns.client()
        pods = mc.wait_ready(2)
        t.time("apply to 2 Ready pods", time.monotonic() - start)
        t.check("what render printed is what the sync applied (no Secrets: same objects)",
                sorted(map(without_namespace, rendered)) == sorted(map(without_namespace, mc.last_desired)))
        t.check("2 pods Ready", len(pods) == 2)
        st = mc.sync_until("status readyReplicas 2", lambda s: s.get("readyReplicas") == 2)
        t.check("status: readyReplicas 2, Available and Ready True",
                st.get("readyReplicas") == 2 and mc.condition("Available") == "True" and mc.condition("Ready") == "True",
                json.dumps(st, indent=1))
        t.check("status.serverList is the Service name", st.get("serverList") == [f"cache.{ns.name}:11211"],
                st.get("serverList"))
        # The serverList entry, as a client pod resolves it: the Ready pods' IPs.
        ips = sorted(p["status"]["podIP"] for p in pods)
        got = ns.resolve(st["serverList"][0].rsplit(":", 1)[0])
        t.check(f"the serverList entry resolves in a client pod to exactly the Ready pods' IPs ({got})",
                got == ips, f"pods: {ips}")
        # Through the Service name: set and get on one connection, whichever pod answers.
        code, out = ns.memcached(f"cache.{ns.name}", ["set greeting 0 0 5", "hello", "get greeting"])
        t.check("client pod: set and get through the Service name",
                "STORED" in out and "VALUE greeting 0 5" in out and "hello" in out, out)
        # Every pod behind the name serves keys.
        for ip in ips:
            code, out = ns.memcached(ip, [f"set k{ip.replace('.', '')} 0 0 2", "ok", f"get k{ip.replace('.', '')}"])
            t.check(f"pod {ip} stores and returns a key", "STORED" in out and "\nok" in out.replace("\r", ""), out)
        # Both memcached containers killed: readiness and status go down and come back.
        before = {p["metadata"]["name"]: (p["metadata"]["uid"], restarts(p)) for p in pods}
        start = time.monotonic()
        for p in pods:
            kill_container(p)
        st = mc.sync_until("status after the kill: readyReplicas 0",
                           lambda s: s.get("readyReplicas", 0) == 0, timeout=30, )
        t.check("killed: Available and Ready False, readyReplicas 0",
                mc.condition("Available") == "False" and mc.condition("Ready") == "False", json.dumps(st, indent=1))
        mc.wait_ready(2, timeout=120)
        t.time("kill to 2 Ready pods again", time.monotonic() - start)
        st = mc.sync_until("status back: readyReplicas 2", lambda s: s.get("readyReplicas") == 2)
        t.check("back: Available and Ready True, readyReplicas 2",
                mc.condition("Available") == "True" and mc.condition("Ready") == "True", json.dumps(st, indent=1))
        after = {p["metadata"]["name"]: (p["metadata"]["uid"], restarts(p)) for p in mc.pods()}
        t.check("same pods, each memcached container restarted once",
                set(after) == set(before) and all(after[n][0] == before[n][0] and after[n][1] == before[n][1] + 1
                                                  for n in before), f"before {before}\nafter {after}")
        code, out = ns.memcached(f"cache.{ns.name}", ["set again 0 0 3", "yes", "get again"])
        t.check("client pod: set and get after the restart", "VALUE again 0 3" in out, out)
    finally:
        ns.close()


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
        import threading
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


def scenario_statefulset(t: Test):
    """StatefulSet: pods keep their names; each serverList entry resolves to its pod in a client
    pod; a rolling update never has fewer Ready pods than the PDB promises."""
    ns = Namespace("pods-statefulset")
    try:
        spec = {"workload": "StatefulSet", "replicas": 3, "image": MEMCACHED_IMAGE,
                "memcached": {"maxMemoryMB": 64},
                "highAvailability": {"podDisruptionBudget": {"enabled": True, "minAvailable": 2},
                                     "gracefulShutdown": {"enabled": True, "preStopDelaySeconds": 2,
                                                          "terminationGracePeriodSeconds": 10}}}
        mc = Memcached(ns, "cache", spec)
        start = time.monotonic()
        mc.create()
        ns.client()
        pods = mc.wait_ready(3)
        t.time("apply to 3 Ready pods", time.monotonic() - start)
        names = sorted(p["metadata"]["name"] for p in pods)
        t.check("pods are cache-0, cache-1, cache-2", names == ["cache-0", "cache-1", "cache-2"], names)
        st = mc.sync_until("status readyReplicas 3", lambda s: s.get("readyReplicas") == 3)
        want = [f"cache-{i}.cache.{ns.name}.svc:11211" for i in range(3)]
        t.check("status.serverList lists the per-pod names in ordinal order", st.get("serverList") == want,
                st.get("serverList"))

        def resolves_to_pods():
            ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in mc.ready_pods()}
            bad = []
            for entry in st.get("serverList", []):
                host = entry.rsplit(":", 1)[0]
                got = ns.resolve(host)
                if got != [ips.get(host.split(".")[0])]:
                    bad.append(f"{host} -> {got}, pod IP {ips.get(host.split('.')[0])}")
            return bad

        bad = resolves_to_pods()
        t.check("each serverList entry resolves to its pod's IP in a client pod", not bad, "\n".join(bad))
        # A key written through a per-pod name is on that very pod.
        host = want[1].rsplit(":", 1)[0]
        ns.memcached(host, ["set owner 0 0 7", "cache-1"])
        ip1 = next(p["status"]["podIP"] for p in mc.ready_pods() if p["metadata"]["name"] == "cache-1")
        code, out = ns.memcached(ip1, ["get owner"])
        t.check("a key set through cache-1's name is on cache-1's IP", "VALUE owner 0 7" in out, out)
        # A deleted pod comes back with the same name and DNS follows it.
        old = next(p for p in mc.pods() if p["metadata"]["name"] == "cache-1")
        kubectl("delete", "pod", "cache-1", "-n", ns.name, "--wait=false")
        start = time.monotonic()
        wait_until("cache-1 recreated and Ready", lambda: any(
            p["metadata"]["name"] == "cache-1" and p["metadata"]["uid"] != old["metadata"]["uid"]
            for p in mc.ready_pods()), timeout=90)
        t.time("deleted cache-1 to Ready again", time.monotonic() - start)
        wait_until("3 Ready pods", lambda: len(mc.ready_pods()) == 3, timeout=60)
        t.check("cache-1 came back under its name (new UID)",
                sorted(p["metadata"]["name"] for p in mc.pods()) == names)
        bad = wait_until("per-pod names resolve after the restart", lambda: not resolves_to_pods() or None,
                         timeout=30) and []
        t.check("after the restart each name still resolves to its pod", not bad)
        # Rolling update (a new -m): Ready pods never below the PDB's minAvailable.
        spec["memcached"]["maxMemoryMB"] = 80
        mc.update(spec)
        watch = ReadyWatch(mc)
        start = time.monotonic()
        mc.sync()

        def rolled():
            sts = get("statefulset", "cache", ns=ns.name)["status"]
            return (sts.get("updateRevision") == sts.get("currentRevision") and sts.get("updatedReplicas") == 3
                    and len(mc.ready_pods()) == 3)
        try:
            wait_until("the rolling update to finish", rolled, timeout=240, interval=1)
        finally:
            lowest = watch.done()
        t.time("rolling update of 3 pods", time.monotonic() - start)
        t.check(f"rolling update: Ready pods never below minAvailable 2 (lowest {lowest}, {watch.samples} samples)",
                lowest is not None and lowest >= 2 and watch.samples > 10)
        pods = mc.pods()
        t.check("after the update: the same three names, each running -m 80",
                sorted(p["metadata"]["name"] for p in pods) == names
                and all("80" in p["spec"]["containers"][0]["args"] for p in pods))
        st = mc.sync_until("status after the update", lambda s: s.get("readyReplicas") == 3
                           and mc.condition("Progressing") == "False")
        t.check("status after the update: Ready, not Progressing, same serverList",
                mc.condition("Ready") == "True" and st.get("serverList") == want, json.dumps(st, indent=1))
    finally:
        ns.close()


def crashloop(mc, pod_name, timeout=60):
    """Kills the pod's memcached until the kubelet holds it in CrashLoopBackOff (not Ready)."""
    def waiting():
        pod = next(p for p in mc.pods() if p["metadata"]["name"] == pod_name)
        for cs in pod["status"].get("containerStatuses", []):
            if cs["name"] == "memcached" and cs.get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff":
                return pod
            if cs["name"] == "memcached" and cs.get("state", {}).get("running"):
                try:
                    kill_container(pod)
                except Failed:
                    pass
        return None
    return wait_until(f"{pod_name} in CrashLoopBackOff", waiting, timeout=timeout, interval=0.5)


def scenario_drain(t: Test):
    """The eviction API (what `kubectl drain` calls) honours the PDB the hook renders: one
    eviction at a time while the replacement is not Ready; with the shipped
    unhealthyPodEvictionPolicy (unset: IfHealthyBudget) a not-Ready pod is evicted while the
    budget holds, a Ready one is refused."""
    ns = Namespace("pods-drain")
    try:
        mc = Memcached(ns, "cache", {"replicas": 3, "image": MEMCACHED_IMAGE,
                                     "highAvailability": {"podDisruptionBudget": {"enabled": True, "minAvailable": 2},
                                                          "gracefulShutdown": {"enabled": False}}})
        start = time.monotonic()
        mc.create()
        pods = mc.wait_ready(3)
        t.time("apply to 3 Ready pods", time.monotonic() - start)
        pdb = get("pdb", "cache", ns=ns.name)
        t.check("the PDB leaves unhealthyPodEvictionPolicy unset (IfHealthyBudget)",
                "unhealthyPodEvictionPolicy" not in pdb["spec"], pdb["spec"])
        wait_until("PDB allows 1 disruption", lambda: get("pdb", "cache", ns=ns.name)["status"].get(
            "disruptionsAllowed") == 1, timeout=30)
        mc.sync()
        t.check("status: DisruptionBudgetBlocking False at 3 Ready",
                mc.condition("DisruptionBudgetBlocking") == "False", json.dumps(mc.obj["status"], indent=1))
        a, b = sorted(p["metadata"]["name"] for p in pods)[:2]
        okay, msg = evict(ns, a)
        t.check(f"first eviction ({a}) allowed", okay, msg)
        okay, msg = evict(ns, b)
        t.check(f"second eviction ({b}) refused while the replacement is not Ready",
                not okay and "disruption budget" in msg, msg)
        # DisruptionBudgetBlocking judges the budget against the replica count, not the moment:
        # it stays False while the PDB's live status allows 0.
        pdb = get("pdb", "cache", ns=ns.name)
        mc.sync()
        t.check(f"status: DisruptionBudgetBlocking still False (PDB live disruptionsAllowed "
                f"{pdb['status'].get('disruptionsAllowed')})", mc.condition("DisruptionBudgetBlocking") == "False")
        wait_until("3 Ready pods again", lambda: len(mc.ready_pods()) == 3, timeout=90)
        wait_until("PDB allows 1 disruption again", lambda: get("pdb", "cache", ns=ns.name)["status"].get(
            "disruptionsAllowed") == 1, timeout=30)
        okay, msg = evict(ns, b)
        t.check(f"eviction of {b} allowed once the replacement is Ready", okay, msg)
        wait_until("3 Ready pods again", lambda: len(mc.ready_pods()) == 3, timeout=90)
        wait_until("PDB allows 1 disruption again", lambda: get("pdb", "cache", ns=ns.name)["status"].get(
            "disruptionsAllowed") == 1, timeout=30)
        # One pod not Ready (memcached crash-looping): 2 healthy = minAvailable.
        names = sorted(p["metadata"]["name"] for p in mc.pods())
        sick, healthy = names[0], names[1]
        crashloop(mc, sick)
        wait_until("PDB allows 0 disruptions", lambda: get("pdb", "cache", ns=ns.name)["status"].get(
            "disruptionsAllowed") == 0, timeout=30)
        okay, msg = evict(ns, healthy)
        t.check("with one pod not Ready: evicting a Ready pod is refused", not okay and "disruption budget" in msg, msg)
        okay, msg = evict(ns, sick)
        t.check("with one pod not Ready: evicting that pod is allowed (the drain does not hang on it)", okay, msg)
        wait_until("3 Ready pods again", lambda: len(mc.ready_pods()) == 3, timeout=90)
    finally:
        ns.close()


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


def listeners(pod, ns):
    """The TCP listeners in a pod's network namespace, as (address, port) pairs (read from the
    host through the memcached container's PID)."""
    cid = next(cs["containerID"].split("://", 1)[1] for cs in pod["status"]["containerStatuses"]
               if cs["name"] == "memcached")
    pid = next(line.split()[1] for line in ctr("tasks", "ls").stdout.splitlines() if line.startswith(cid))
    out = run(["nsenter", "-t", pid, "-n", "ss", "-Hltn"]).stdout
    return sorted({(w.rsplit(":", 1)[0], int(w.rsplit(":", 1)[1])) for w in (line.split()[3] for line in out.splitlines())})


def scenario_secure(t: Test):
    """SASL, TLS and mTLS pods become Ready and serve a client pod through the Service; under
    strict TLS no port of a pod IP answers plaintext memcached; the reload agent's metrics are
    scraped from the client pod."""
    ns = Namespace("pods-secure")
    try:
        c = certs(ns.name, "tls", 1)
        tls_secrets(ns, "tls-cert", c)
        # The mTLS Memcached's certificate: same CA, its own names.
        cm = certs(ns.name, "mtls", 2, ca=c)
        ns.secret("mtls-cert", {"tls.crt": cm["tls.crt"], "tls.key": cm["tls.key"], "ca.crt": cm["ca.crt"]})
        ns.secret("sasl", {"password-file": "app:s3cret\n"})
        img = {"replicas": 1, "image": MEMCACHED_IMAGE}
        mcs = {
            "sasl": Memcached(ns, "sasl", {**img, "security": {
                "sasl": {"enabled": True, "credentialsSecretRef": {"name": "sasl"}}, "secretRotation": "Reload"}}),
            "tls": Memcached(ns, "tls", {**img, "security": {
                "tls": {"enabled": True, "certificateSecretRef": {"name": "tls-cert"}, "allowPlaintext": False},
                "secretRotation": "Reload"}}),
            "mtls": Memcached(ns, "mtls", {**img, "security": {
                "tls": {"enabled": True, "certificateSecretRef": {"name": "mtls-cert"}, "enableClientCert": True,
                        "allowPlaintext": False},
                "secretRotation": "Reload"}}),
            # The control of the plaintext probe: allowPlaintext opens a plaintext port.
            "open": Memcached(ns, "open", {**img, "security": {
                "tls": {"enabled": True, "certificateSecretRef": {"name": "tls-cert"}, "allowPlaintext": True},
                "secretRotation": "Reload"}}),
        }
        start = time.monotonic()
        for mc in mcs.values():
            mc.create()
        ns.client(volumes=("client-tls",))
        for name, mc in mcs.items():
            mc.wait_ready(1, timeout=120)
            t.time(f"apply to Ready ({name})", time.monotonic() - start)
            st = mc.sync_until(f"{name}: status Ready", lambda s: s.get("readyReplicas") == 1)
            t.check(f"{name}: pod Ready, status Ready", mc.condition("Ready") == "True", json.dumps(st, indent=1))
        # SASL: refused without the password, served with it.
        code, out = ns.memcached(f"sasl.{ns.name}", ["get x"])
        t.check("sasl: a client without credentials is refused", "VALUE" not in out and "ERROR" in out, out)
        code, out = ns.memcached(f"sasl.{ns.name}", [*AUTH, "set k 0 0 2", "v1", "get k"])
        t.check("sasl: a client with the password sets and gets", "VALUE k 0 2" in out, out)
        # TLS through the Service name, the certificate checked against the CA.
        code, out = ns.memcached(f"tls.{ns.name}", ["set k 0 0 2", "v1", "get k"], tls=CA_ARGS)
        t.check("tls: set and get over TLS through the Service name (certificate verified)",
                "VALUE k 0 2" in out, out)
        # mTLS: no client certificate, no service.
        code, out = ns.memcached(f"mtls.{ns.name}", ["version"], tls=CA_ARGS)
        t.check("mtls: a client without a certificate gets no answer", "VERSION" not in out, out)
        code, out = ns.memcached(f"mtls.{ns.name}", ["set k 0 0 2", "v1", "get k"], tls=CLIENT_ARGS)
        t.check("mtls: a client with a certificate sets and gets", "VALUE k 0 2" in out, out)
        # Strict TLS: every TCP listener on the pod IP, plaintext `version` gets no VERSION.
        for name in ("tls", "mtls", "open"):
            pod = mcs[name].ready_pods()[0]
            ip = pod["status"]["podIP"]
            socks = listeners(pod, ns)
            public = [port for addr, port in socks if not addr.startswith("127.")]
            plaintext = []
            for port in sorted(set(public)):
                if port == 9151:  # the reload agent's metrics (HTTP), checked below
                    continue
                code, out = ns.memcached(ip, ["version"], port=port)
                if "VERSION" in out:
                    plaintext.append(port)
            if name == "open":
                t.check(f"open (allowPlaintext): the probe finds the plaintext port (listeners {socks})",
                        plaintext != [], f"plaintext on {plaintext}")
                continue
            t.check(f"{name}: no pod IP port answers plaintext memcached (listeners {socks})",
                    public and not plaintext, f"plaintext on {plaintext}")
            code, out = ns.http_get(ip, 9151, "/metrics")
            t.check(f"{name}: the reload agent's metrics scraped from the client pod",
                    code == 0 and "reload" in out and " 200 " in out, out[:600])
    finally:
        ns.close()


def served_serial(ns, host, port=11211):
    """The serial of the certificate a new TLS connection to host is served (from the client pod)."""
    code, out = ns.sh(f"printf 'quit\\r\\n' | timeout 10 openssl s_client -connect {host}:{port} {CLIENT_ARGS} "
                      f"2>/dev/null | openssl x509 -noout -serial")
    return out.strip().split("=", 1)[-1] if "serial=" in out else out.strip()


def scenario_rotation(t: Test):
    """Secret rotation under Reload in a real pod: the kubelet refreshes the volume, the reload
    agent applies it; same pod UID, same memcached process (keys kept), new clients see the new
    certificate, the old password is refused. Under RollingRestart the pods roll."""
    ns = Namespace("pods-rotation")
    try:
        c = certs(ns.name, "cache", 11)
        ns.secret("cache-tls", {"tls.crt": c["tls.crt"], "tls.key": c["tls.key"], "ca.crt": c["ca.crt"]})
        ns.secret("client-tls", {"tls.crt": c["client.crt"], "tls.key": c["client.key"], "ca.crt": c["ca.crt"]})
        ns.secret("cache-sasl", {"password-file": "app:s3cret\n"})
        spec = {"replicas": 1, "image": MEMCACHED_IMAGE, "security": {
            "sasl": {"enabled": True, "credentialsSecretRef": {"name": "cache-sasl"}},
            "tls": {"enabled": True, "certificateSecretRef": {"name": "cache-tls"}, "enableClientCert": True,
                    "allowPlaintext": False},
            "secretRotation": "Reload"}}
        mc = Memcached(ns, "cache", spec)
        start = time.monotonic()
        mc.create()
        ns.client(volumes=("client-tls",))
        pod = mc.wait_ready(1)[0]
        t.time("apply to Ready (SASL + mTLS + reload agent)", time.monotonic() - start)
        mc.sync()
        host = f"cache.{ns.name}"
        code, out = ns.memcached(host, [*AUTH, "set before 0 0 4", "kept", "get before"], tls=CLIENT_ARGS)
        t.check("SASL over mTLS: set and get", "VALUE before 0 4" in out, out)
        t.check("the served certificate is the first one (serial 0B)", served_serial(ns, host) == "0B",
                served_serial(ns, host))
        # Rotate: a new server certificate (same CA) and a new password, in place.
        c2 = certs(ns.name, "cache", 12, ca=c)
        start = time.monotonic()
        ns.secret("cache-tls", {"tls.crt": c2["tls.crt"], "tls.key": c2["tls.key"], "ca.crt": c["ca.crt"]})
        ns.secret("cache-sasl", {"password-file": "app:n3wpass\n"})
        mc.sync()  # Metacontroller syncs on a related Secret's change
        wait_until("the new certificate served", lambda: served_serial(ns, host) == "0C", timeout=120, interval=2)
        t.time("Secret update to the new certificate served", time.monotonic() - start)
        new_auth = auth("n3wpass")
        wait_until("the new password accepted", lambda: "VALUE before" in ns.memcached(
            host, [*new_auth, "get before"], tls=CLIENT_ARGS)[1], timeout=60, interval=2)
        t.time("Secret update to the new password accepted", time.monotonic() - start)
        after = mc.pods()
        t.check("same pod (UID), memcached not restarted",
                len(after) == 1 and after[0]["metadata"]["uid"] == pod["metadata"]["uid"] and restarts(after[0]) == 0,
                [(p["metadata"]["name"], p["metadata"]["uid"], restarts(p)) for p in after])
        code, out = ns.memcached(host, [*new_auth, "get before"], tls=CLIENT_ARGS)
        t.check("the key written before the rotation is still there", "VALUE before 0 4" in out, out)
        code, out = ns.memcached(host, [*AUTH, "get before"], tls=CLIENT_ARGS)
        t.check("the old password is refused", "VALUE before" not in out and "ERROR" in out, out)
        code, out = ns.http_get(after[0]["status"]["podIP"], 9151, "/metrics")
        t.check("the reload agent counts the reloads", "reload" in out, out[:800])
        # RollingRestart: the next rotation rolls the pod.
        spec["security"]["secretRotation"] = "RollingRestart"
        mc.update(spec)
        mc.sync()
        wait_until("Ready after the switch to RollingRestart", lambda: len(mc.ready_pods()) == 1
                   and get("deployment", "cache", ns=ns.name)["status"].get("updatedReplicas") == 1, timeout=120)
        uid = mc.ready_pods()[0]["metadata"]["uid"]
        start = time.monotonic()
        ns.secret("cache-sasl", {"password-file": "app:th1rdpw\n"})
        mc.sync()
        wait_until("a new pod after the rotation", lambda: any(
            p["metadata"]["uid"] != uid for p in mc.ready_pods()) and len(mc.pods()) == 1, timeout=120)
        t.time("RollingRestart: Secret update to a new Ready pod", time.monotonic() - start)
        code, out = ns.memcached(host, [*auth("th1rdpw"), "version"], tls=CLIENT_ARGS)
        t.check("RollingRestart: the pod rolled and takes the new password", "VERSION" in out, out)
    finally:
        ns.close()


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


def scenario_limits(t: Test):
    """The memory the hook derives is what the pod gets; memcached filled past -m stays within
    the derived request (no limit) and is not OOM-killed under a limit of -m + 32 MiB."""
    ns = Namespace("pods-limits")
    try:
        mb = 64
        spec = {"replicas": 1, "image": MEMCACHED_IMAGE, "memcached": {"maxMemoryMB": mb}}
        mcs = {"derived": Memcached(ns, "derived", spec),
               "limited": Memcached(ns, "limited", {**spec, "resources": {"limits": {"memory": f"{mb + 32}Mi"}}})}
        start = time.monotonic()
        rendered = {n: mc.create() for n, mc in mcs.items()}
        ns.client()
        for name, mc in mcs.items():
            pod = mc.wait_ready(1)[0]
            t.time(f"apply to Ready ({name})", time.monotonic() - start)
            workload = next(o for o in rendered[name] if o["kind"] == "Deployment")
            want = workload["spec"]["template"]["spec"]["containers"][0]["resources"]
            res = pod["spec"]["containers"][0]["resources"]
            # The API server defaults a missing request to the limit.
            expect = {**want, "requests": want.get("requests") or want.get("limits")}
            t.check(f"{name}: the pod has the resources the hook rendered ({want})", res == expect, f"pod: {res}")
            cg = memory_cgroup(pod)
            limit = cgroup_value(cg, "memory.limit_in_bytes", "memory.max")
            want_limit = (mb + 32) << 20 if name == "limited" else None
            t.check(f"{name}: the container's memory cgroup limit is {want_limit}",
                    (limit == want_limit) if want_limit else (limit is None or limit > 1 << 40), limit)
            ip = pod["status"]["podIP"]
            code, out = ns.sh(f"({FILL}) | nc -w 10 {ip} 11211 | grep -c STORED", timeout=120)
            t.check(f"{name}: 120 values of 900 kB stored (about 1.7 times -m)", out.strip() == "120", out)
            code, out = ns.memcached(ip, ["stats"])
            stats = dict(ln.split()[1:3] for ln in out.replace("\r", "").splitlines() if ln.startswith("STAT "))
            t.check(f"{name}: memcached is full and evicting (bytes {stats.get('bytes')}, evictions "
                    f"{stats.get('evictions')})",
                    int(stats.get("evictions", 0)) > 0 and int(stats.get("limit_maxbytes", 0)) == mb << 20, stats)
            peak = cgroup_value(cg, "memory.max_usage_in_bytes", "memory.peak")
            request = res["requests"]["memory"]
            req_bytes = int(request[:-2]) << 20 if request.endswith("Mi") else int(request)
            print(f"     {name}: memcached peak memory {peak / 1048576:.1f} MiB; request {request}", flush=True)
            t.check(f"{name}: peak memory of the full cache within the request {request}",
                    peak is not None and peak <= req_bytes, peak)
            after = mc.pods()[0]
            last = after["status"]["containerStatuses"][0].get("lastState", {})
            t.check(f"{name}: not OOM-killed (no restart, no terminated state)",
                    restarts(after) == 0 and "terminated" not in last, f"restarts {restarts(after)}, lastState {last}")
    finally:
        ns.close()


SCENARIOS = {
    "deployment": scenario_deployment,
    "statefulset": scenario_statefulset,
    "drain": scenario_drain,
    "secure": scenario_secure,
    "rotation": scenario_rotation,
    "limits": scenario_limits,
}


def main(argv):
    names = argv or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s): {' '.join(unknown)}; known: {' '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    t = Test()
    for n in names:
        t.scenario = n
        start = time.monotonic()
        print(f"--- scenario {n}", flush=True)
        try:
            SCENARIOS[n](t)
        except Exception as e:  # a scenario stops at its first broken precondition
            t.check("ran to the end", False, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
        t.time("scenario", time.monotonic() - start)
    if t.failures:
        print("failures:")
        for f in t.failures:
            print(f"  {f}")
    print(f"scenarios: {t.passed} passed, {t.failed} failed")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
