"""The proxy scenario: memcached's proxy (`spec.proxy`) in front of a zoned StatefulSet cache, its
zone-a pods on the real node and zone-b's and zone-c's on KWOK nodes, where a pod is Ready but no
process runs and its address (KWOK's pod range) is unreachable from the bridge's pods: two dead
zones. On the real node the zone-a proxy pod runs with its reload agent (a native sidecar in one
process namespace); a client pod writes and reads through it; the reads of zone-a's keys are timed
from the host over one connection; a new membership (zone replicas 1 -> 2) reaches the running
proxy through the agent's SIGHUP, same pod and no restart; `status.proxy` and `ProxyReady` are as
the hook reports them under Metacontroller.

The cluster has no kube-proxy, so the Service `<name>-proxy` (ClusterIP) is checked through its
EndpointSlice and the clients connect to the zone-a proxy pod's address, which is where the
Service would send a zone-a client (`trafficDistribution: PreferClose`).

Only under Metacontroller and with a memcached image that has the proxy (1.6.45, built from
the shared release tarball by tests/e2e/node-images.sh); else one SKIPPED line.
"""
import re
import socket
import time

from harness import (
    MEMCACHED_IMAGE,
    METACONTROLLER,
    Failed,
    Memcached,
    Namespace,
    Test,
    get,
    kubectl,
    pod_ready,
    restarts,
    wait_until,
)
from zones import KWOK_TAINT, REAL_NODE, ZONE_LABEL, ZONES, node_of_zone

PROXY_LABEL = "app.kubernetes.io/name=memcached-proxy"
# The proxy's routes come with memcached 1.6.45 (the default image's version).
PROXY_VERSION = (1, 6, 45)
# Reads of zone-a's keys never wait for the dead zones: each one within this bound (measured:
# well under a millisecond on the node's bridge; the bound leaves room for a loaded machine).
READ_BOUND_S = 0.05
READS = 200
# A write through the proxy reaches zone-a's pod within this many seconds of both being Ready
# (measured: about 1 s, the proxy's retry of a backend whose name did not resolve yet).
STORED_BOUND_S = 15
# The lines that end an answer.
ENDS = ("END", "STORED", "NOT_STORED", "DELETED", "NOT_FOUND", "ERROR", "EXISTS")


def image_version(image):
    m = re.search(r":(\d+)\.(\d+)\.(\d+)", image)
    return tuple(int(x) for x in m.groups()) if m else None


class Conn:
    """One memcached text connection from the host to a pod's address (the host is on the
    node's bridge)."""

    def __init__(self, ip, port=11211, timeout=5):
        self.sock = socket.create_connection((ip, port), timeout=timeout)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Failed(f"connection closed after {self.buf[:200]!r}")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode(errors="replace")

    def ask(self, request):
        """Sends request (str, CRLF added) and reads the answer's lines up to the one that ends
        it; returns them joined by CRLF."""
        self.sock.sendall(request.encode() + b"\r\n")
        out = []
        while True:
            out.append(self.line())
            if out[-1] in ENDS or out[-1].startswith(("SERVER_ERROR", "CLIENT_ERROR")):
                return "\r\n".join(out)

    def stats(self, what=""):
        out = self.ask(f"stats {what}".strip())
        return dict(ln.split()[1:3] for ln in out.splitlines() if ln.startswith("STAT ") and len(ln.split()) >= 3)

    def close(self):
        self.sock.close()


def proxy_pods(ns, zone):
    return [p for p in ns.pods(f"{PROXY_LABEL},{ZONE_LABEL}={zone}") if not p["metadata"].get("deletionTimestamp")]


def cache_pods(ns, zone):
    return [p for p in ns.pods(f"app.kubernetes.io/name=memcached,{ZONE_LABEL}={zone}")
            if not p["metadata"].get("deletionTimestamp")]


def agent_status(pod):
    return next((s for s in pod["status"].get("initContainerStatuses", []) if s["name"] == "reload-agent"), {})


def proxy_condition(mc):
    return next((c for c in mc.obj.get("status", {}).get("conditions", []) if c["type"] == "ProxyReady"), {})


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def timed_reads(ip, key, n):
    """n gets of key over one connection: (latencies in s, answers that were not a hit)."""
    c = Conn(ip)
    lat, bad = [], []
    try:
        for _ in range(n):
            start = time.perf_counter()
            out = c.ask(f"get {key}")
            lat.append(time.perf_counter() - start)
            if not out.startswith(f"VALUE {key} "):
                bad.append(out.strip())
    finally:
        c.close()
    return lat, bad


def scenario_proxy(t: Test):
    """memcached's proxy on the real node with two dead zones (see the module's docstring)."""
    if not METACONTROLLER:
        print("SKIPPED proxy: needs Metacontroller's syncs on every child change (run under it)", flush=True)
        return
    version = image_version(MEMCACHED_IMAGE)
    if version is None or version < PROXY_VERSION:
        print(f"SKIPPED proxy: the pods' memcached image {MEMCACHED_IMAGE} has no proxy routes (needs 1.6.45: "
              "the shared release tarball beside the clone)", flush=True)
        return
    ns = Namespace("pods-proxy")
    try:
        t.check(f"the real node {REAL_NODE} is zone-a, KWOK nodes are zone-b and zone-c",
                node_of_zone("zone-a") == [REAL_NODE] and all(len(node_of_zone(z)) == 1 for z in ZONES[1:]),
                {z: node_of_zone(z) for z in ZONES})
        spec = {"replicas": 1, "workload": "StatefulSet", "image": MEMCACHED_IMAGE,
                "zones": {"names": ZONES}, "tolerations": [KWOK_TAINT],
                "proxy": {"enabled": True, "replicas": 1}}
        mc = Memcached(ns, "cache", spec)
        start = time.monotonic()
        mc.create()
        ns.client()
        proxy = wait_until("the zone-a proxy pod Ready", lambda: (lambda ps: len(ps) == 1 and pod_ready(ps[0])
                                                                  and ps[0])(proxy_pods(ns, "zone-a")), timeout=120)
        a_pod = wait_until("the zone-a cache pod Ready", lambda: (lambda ps: len(ps) == 1 and pod_ready(ps[0])
                                                                  and ps[0])(cache_pods(ns, "zone-a")), timeout=120)
        both_ready = time.monotonic()
        t.time("apply to the zone-a proxy and cache pods Ready", both_ready - start)
        # How soon a write through the proxy reaches zone-a's pod once both are Ready.
        ip, a_ip = proxy["status"]["podIP"], a_pod["status"]["podIP"]
        tries = []

        def stored():
            c = Conn(ip)
            try:
                tries.append((round(time.monotonic() - both_ready, 1), c.ask("set probe 0 0 1\r\nx")))
            finally:
                c.close()
            d = Conn(a_ip)
            try:
                return d.ask("get probe").startswith("VALUE probe ")
            finally:
                d.close()
        took, seen = None, ""
        try:
            wait_until("a write through the proxy stored on the zone-a pod", stored, timeout=STORED_BOUND_S,
                       interval=0.5)
            took = time.monotonic() - both_ready
            t.time("both Ready to a write through the proxy stored in zone-a", took)
        except Failed:  # what the proxy's pod resolves and the proxy counts, for the failure
            _, dns = ns.container_sh(proxy["metadata"]["name"], "proxy",
                                     f"busybox nslookup cache-zone-a-0.cache.{ns.name}.svc")
            c = Conn(ip)
            st = c.stats()
            c.close()
            seen = f"{dns}\n{ {k: v for k, v in st.items() if 'proxy' in k or 'backend' in k} }"
        print(f"     the first writes through the proxy: {tries[:4]}", flush=True)
        t.check(f"a write through the proxy is stored in zone-a within {STORED_BOUND_S} s of both pods Ready "
                f"({took and round(took, 1)} s: the pod's name resolves once it is Ready, the proxy retries a "
                "failed backend after 1 s)", took is not None, seen)

        agent = agent_status(proxy)
        t.check("the zone-a proxy pod runs on the real node, Ready, with its reload agent started and ready "
                "(a native sidecar) in one process namespace",
                proxy["spec"].get("nodeName") == REAL_NODE and agent.get("started") and agent.get("ready")
                and "running" in agent.get("state", {}) and proxy["spec"].get("shareProcessNamespace") is True,
                {"node": proxy["spec"].get("nodeName"), "agent": agent})

        # What the hook reports: every zone's proxy Ready (KWOK's count as Ready: the hook sees
        # readiness only).
        st = mc.sync_until("status.proxy: 3/3 ready", lambda s: (s.get("proxy") or {}).get("ready") == "3/3",
                           timeout=120)
        t.check("status.proxy: the Service's address, 3/3 ready, one ready per zone",
                st["proxy"].get("address") == f"cache-proxy.{ns.name}:11211"
                and st["proxy"].get("readyReplicas") == 3 and st["proxy"].get("desiredReplicas") == 3
                and st["proxy"].get("zones") == [{"name": z, "readyReplicas": 1} for z in ZONES], st.get("proxy"))
        cond = proxy_condition(mc)
        t.check("ProxyReady True/ProxyPodsReady: 3 of 3 proxy pods ready",
                cond.get("status") == "True" and cond.get("reason") == "ProxyPodsReady"
                and cond.get("message", "").startswith("3 of 3 proxy pods ready"), cond)

        # The Service: no kube-proxy here, so its EndpointSlice says where it sends clients.
        slices = get("endpointslices", ns=ns.name, selector="kubernetes.io/service-name=cache-proxy")["items"]
        eps = [e for s in slices for e in s.get("endpoints") or []]
        mine = next((e for e in eps if ip in e.get("addresses", [])), {})
        t.check(f"the Service cache-proxy sends zone-a's clients to the zone-a proxy pod ({ip}: ready, zone-a, "
                "hinted for zone-a)",
                mine.get("conditions", {}).get("ready") and mine.get("zone") == "zone-a"
                and {"name": "zone-a"} in (mine.get("hints") or {}).get("forZones", []), eps)

        # A client pod writes and reads through the proxy; the value is on zone-a's pod.
        code, out = ns.memcached(ip, ["set through 0 0 5", "hello", "get through"])
        print(f"     set and get through the proxy with two dead zones: {out.strip()!r}", flush=True)
        t.check("a client pod's set through the proxy is stored in zone-a and answered with the dead zones' "
                "SERVER_ERROR; its get through the proxy hits",
                "SERVER_ERROR" in out and "VALUE through 0 5\nhello" in out, out)
        code, out = ns.memcached(a_ip, ["get through"])
        t.check("the value is on the zone-a memcached pod, read directly", "VALUE through 0 5\nhello" in out, out)

        # Reads of a zone-a key with two dead zones, timed from the host over one connection.
        lat, bad = timed_reads(ip, "through", READS)
        p50, p99, worst = (percentile(lat, 0.5), percentile(lat, 0.99), max(lat))
        print(f"     {READS} gets through the proxy: p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms, "
              f"max {worst * 1e3:.2f} ms", flush=True)
        t.check(f"{READS} gets of a zone-a key through the proxy: every one a hit, each within "
                f"{READ_BOUND_S * 1e3:.0f} ms (max {worst * 1e3:.2f} ms)", not bad and worst <= READ_BOUND_S,
                bad[:3])
        c = Conn(ip)
        try:
            # A miss in zone-a is asked of the other zones; with all of them failing, routelib's
            # zfailover has no result to return and the proxy answers `SERVER_ERROR bad response`.
            for what, req, want in (("a miss (asked of every zone)", "get nowhere", "SERVER_ERROR bad response"),
                                    ("a set (to every zone)", "set timed 0 0 2\r\nok",
                                     "SERVER_ERROR backend failure")):
                times, answers = [], set()
                for _ in range(20):
                    s0 = time.perf_counter()
                    answers.add(c.ask(req).strip())
                    times.append(time.perf_counter() - s0)
                print(f"     20 x {what}: max {max(times) * 1e3:.2f} ms, p50 {percentile(times, 0.5) * 1e3:.2f} ms, "
                      f"answers {sorted(answers)}", flush=True)
                t.check(f"{what} with two dead zones: `{want}` every time, within 1 s, the backends' timeout "
                        f"(max {max(times) * 1e3:.1f} ms)", answers == {want} and max(times) < 1.0, sorted(answers))
        finally:
            c.close()

        # A new membership: zone replicas 1 -> 2 changes the routes; the agent has the running
        # proxy load them.
        c = Conn(ip)
        before = c.stats()
        c.close()
        uid, restarted = proxy["metadata"]["uid"], (restarts(proxy, "proxy"), agent.get("restartCount"))
        reloads = int(before.get("proxy_config_reloads", -1))
        t.check(f"the proxy's stats count its configuration loads ({reloads} so far, none refused)",
                reloads >= 1 and before.get("proxy_config_reload_fails") == "0",
                {k: v for k, v in before.items() if k.startswith("proxy")})
        start = time.monotonic()
        mc.update({**spec, "replicas": 2})
        wait_until("the routes ConfigMap lists cache-zone-a-1", lambda: "cache-zone-a-1." in (
            get("configmap", "cache-proxy", ns=ns.name).get("data", {}).get("routes.lua", "")), timeout=60)
        changed = time.monotonic()

        def reloaded():
            conn = Conn(ip)
            try:
                s = conn.stats()
            finally:
                conn.close()
            return int(s.get("proxy_config_reloads", 0)) > reloads and s
        after = wait_until("the running proxy loaded the new routes", reloaded, timeout=180, interval=2)
        t.time("routes ConfigMap changed to loaded by the running proxy", time.monotonic() - changed)
        t.time("replicas 1 -> 2 applied to the new routes loaded", time.monotonic() - start)
        t.check("the proxy loaded the new routes, none refused",
                after.get("proxy_config_reload_fails") == "0", {k: v for k, v in after.items()
                                                                if k.startswith("proxy")})
        now = proxy_pods(ns, "zone-a")
        t.check("same proxy pod (UID), neither the proxy nor its agent restarted",
                len(now) == 1 and now[0]["metadata"]["uid"] == uid
                and (restarts(now[0], "proxy"), agent_status(now[0]).get("restartCount")) == restarted == (0, 0),
                [(p["metadata"]["name"], p["metadata"]["uid"], restarts(p, "proxy"), agent_status(p))
                 for p in now])
        logs = kubectl("logs", "-n", ns.name, now[0]["metadata"]["name"], "-c", "reload-agent", check=False).stdout
        outcomes = [ln for ln in logs.splitlines() if '"what":"routes"' in ln]
        for ln in outcomes:
            if "reload failed" in ln:
                print(f"     the agent logged: {ln[:400]}", flush=True)
        t.check("the agent's log says the new routes were reloaded (its last routes outcome: reload succeeded)",
                bool(outcomes) and "reload succeeded" in outcomes[-1], logs[-1200:])
        code, out = ns.http_get(ip, 9151, "/metrics")
        counts = {o: sum(int(float(ln.split()[-1])) for ln in out.splitlines()
                         if ln.startswith("memcached_reload_agent_reloads_total{") and 'what="routes"' in ln
                         and f'outcome="{o}"' in ln) for o in ("success", "failure")}
        print(f"     the agent's routes reloads: {counts}", flush=True)
        t.check(f"the agent counts successful routes reloads on its metrics ({counts})", counts["success"] >= 1,
                out[:1200])

        # The new pod of zone-a gets its share of the writes through the proxy.
        wait_until("2 Ready zone-a cache pods", lambda: (lambda ps: len(ps) == 2 and all(map(pod_ready, ps)))(
            cache_pods(ns, "zone-a")), timeout=120)
        keys = [f"k{i}" for i in range(20)]
        ns.memcached(ip, [x for k in keys for x in (f"set {k} 0 0 1", "v")])
        new_ip = next(p for p in cache_pods(ns, "zone-a") if p["metadata"]["name"] == "cache-zone-a-1")[
            "status"]["podIP"]
        code, out = ns.memcached(new_ip, [f"get {k}" for k in keys])
        on_new = out.count("VALUE ")
        code, out = ns.memcached(ip, [f"get {k}" for k in keys])
        through = out.count("VALUE ")
        t.check(f"writes through the proxy after the change reach the new pod cache-zone-a-1 ({on_new} of 20 "
                f"keys there), and every key reads back through the proxy ({through} of 20)",
                0 < on_new < 20 and through == 20, out[:400])
    finally:
        ns.close()
