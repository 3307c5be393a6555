#!/usr/bin/env python3
"""The measuring half of bench/scale.sh: a fleet of Memcacheds on simulated nodes.

usage: scale.py run --system hook|reference --ns NS --n N --replicas R --steady S --zone Z
                    --timeout T --bound B --syncs-metrics URL --syncs-metric NAME:LABEL
                    --client-metrics URL --pids NAME=PID,... --summary FILE
                    [--zones A,B,... [--rollout-image IMAGE]] [--proxy]
       scale.py compare SUMMARY.json SUMMARY.json...
       scale.py customize-stub --port P

`run` talks to the API server of E2E_APISERVER_URL with E2E_TOKEN (CA: the serving certificate
under E2E_STATE_DIR), creates N Memcacheds (R replicas, a PodDisruptionBudget with maxUnavailable
1, pods spread over zones), then measures three phases and prints one block each:

- create: time until every parent is Ready with status.readyReplicas == R and its
  observedGeneration current; CPU and peak RSS (VmHWM) of each process in --pids; the API
  server's requests by verb and resource per parent (bench/api_requests.py); the controller's
  own requests by method per parent (client-go's rest_client_requests_total on --client-metrics:
  Metacontroller's, or the reference operator's); syncs per parent (the counter NAME of
  --syncs-metrics summed over LABEL: the hook's memcached_hook_sync_outcomes_total, or the
  reference's controller_runtime_reconcile_total);
- steady: S seconds with nothing changing; the writes that only the controller makes (to
  memcacheds, their status, deployments, statefulsets, configmaps, services,
  poddisruptionbudgets, and the HPAs, NetworkPolicies and ServiceMonitors the reference deletes
  when disabled), those that succeeded,
  per minute must be 0; the sync counter is sampled every 3 s to tell when the last sync came;
- drain: the nodes of zone Z (or of every zone of a comma-separated list) cordoned, their pods
  evicted through the eviction API, 16 at a time (a
  429, the budget refusing, is retried after 5 s, as kubectl drain does); time until the zone is empty and
  every parent is Ready again, the 429s, and for how long at most a parent's status.readyReplicas
  differed from its Deployment's (the truth), against the bound B seconds; skipped with
  --zone none.

With --zones (the hook only), every Memcached has spec.zones with those names (the nodes'
topology.kubernetes.io/zone values) and R replicas per zone, a budget per zone; Ready also needs
status.zonesReady Z/Z and readyReplicas R x Z. Two phases change:

- rollout (with --rollout-image, after the steady state): every parent's image changed; every
  second every parent's zone Deployments are read; a zone is rolling while its Deployment
  carries the new image and is not settled (observedGeneration current, replicas, updated,
  ready and available all R). Fails when two zones of one parent roll at once, when a zone
  carries the new image before every zone before it (names order) is settled on it, or when
  the fleet does not converge;
- drain (unless --zone none): half of the first zone's nodes and half of the second zone's
  cordoned (the other half takes the evicted pods: a zone's pods need its nodes). Drainer 1
  evicts the pods of the first zone's half; drainer 2, once drainer 1's first round is sent,
  tries every second to evict the pods of the second zone's half, each parent's as soon as the
  hook has answered its first zone's disruption (its second zone's budget seen at
  maxUnavailable 0, or its first zone seen short and whole again). Before each eviction it reads
  the parent's first-zone Deployment: one that succeeds while that zone is not whole (ready R,
  none going) is a violation. Fails on a violation, when a pod on a node not drained is gone,
  when the second zone's half is not emptied, or when the fleet does not re-converge.

With --proxy (the hook only), every Memcached is a StatefulSet with spec.proxy on (two proxy pods
per zone, or in all without zones): Ready also needs ProxyReady True, and the objects per parent
count its proxy Deployments, Service and routes ConfigMap. Neither the rollout nor the drain,
which follow the cache's zone Deployments, runs with it.

`upgrade` (after `run --own-image`, the hook restarted with its own image at a new tag) waits
three resync periods and fails when a Deployment or StatefulSet was written (anything but its
status), changed its generation or pod template, or a parent does not say UpToDate False.

The same numbers go to --summary as JSON; `compare` prints the summaries of several systems side
by side (measures of one run of each, on the same fleet), with the ratio of each to the first.

`customize-stub` answers Metacontroller's customize calls by asking for related Pods of a name no
pod has: Metacontroller then keeps an informer (a cache of every Pod in the cluster) without
sending any Pod to the sync hook. Used to measure what watching Pods costs Metacontroller.

Standard library only; loopback only; every loop bounded in count and time.
"""

import argparse
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_requests import counts  # noqa: E402 (a sibling script)

HERE = os.path.dirname(os.path.abspath(__file__))
GROUP = "/apis/memcached.c5c3.io/v1beta1"
POLL = 3.0
# Evictions in flight at once (kubectl drain evicts every pod of a node at once).
EVICTORS = 16
# Writes no one but the controller makes for these parents: (resource, subresource).
MC_WRITES = {("memcacheds", ""), ("memcacheds", "status"), ("deployments", ""),
             ("statefulsets", ""), ("configmaps", ""),
             ("services", ""), ("poddisruptionbudgets", ""), ("horizontalpodautoscalers", ""),
             ("networkpolicies", ""), ("servicemonitors", "")}
# The kinds counted as objects per parent once the fleet is Ready.
OBJECT_KINDS = [("apps/v1", "deployments"), ("apps/v1", "statefulsets"), ("v1", "services"),
                ("v1", "configmaps"), ("policy/v1", "poddisruptionbudgets"), ("v1", "pods")]
# The controller processes: their CPU and peak RSS are summed as "controller".
CONTROLLERS = {"metacontroller", "hook", "reference"}
WRITE_VERBS = {"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}


class Api:
    """A minimal client of the e2e API server (bearer token, its own CA)."""

    def __init__(self):
        self.url = os.environ["E2E_APISERVER_URL"]
        self.token = os.environ["E2E_TOKEN"]
        ca = os.path.join(os.environ["E2E_STATE_DIR"], "certs/ca.crt")
        self.ctx = ssl.create_default_context(cafile=ca)

    def call(self, method, path, body=None, content_type="application/json"):
        """Returns (status code, decoded JSON or raw text)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as resp:
                raw = resp.read()
                code = resp.status
        except urllib.error.HTTPError as err:
            raw, code = err.read(), err.code
        try:
            return code, json.loads(raw)
        except ValueError:
            return code, raw.decode(errors="replace")

    def get(self, path):
        code, body = self.call("GET", path)
        if code != 200:
            raise RuntimeError(f"GET {path}: {code} {str(body)[:300]}")
        return body

    def items(self, path):
        return self.get(path)["items"]

    def metrics(self):
        req = urllib.request.Request(self.url + "/metrics")
        req.add_header("Authorization", "Bearer " + self.token)
        with urllib.request.urlopen(req, context=self.ctx, timeout=60) as resp:
            return resp.read().decode()


# The Secret the fleet's SASL reads with --own-image (every pod then runs the reload agent, the
# hook's own image).
SASL_SECRET = "scale-sasl"


def memcached(ns, i, replicas, zones=None, own_image=False, proxy=False):
    name = f"cache-{i:04d}"
    if zones:
        # A full copy per zone (replicas per zone), a budget per zone; the zone is required.
        spec = {"replicas": replicas, "zones": {"names": zones}, "highAvailability": {
            "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1}}}
    else:
        spec = {"replicas": replicas, "highAvailability": {
            "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
            "topologySpreadConstraints": [{
                "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": name}}}]}}
    if proxy:
        spec["workload"] = "StatefulSet"
        spec["proxy"] = {"enabled": True}
    if own_image:
        spec["security"] = {"secretRotation": "Reload", "sasl": {
            "enabled": True, "credentialsSecretRef": {"name": SASL_SECRET}}}
    return {
        "apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
        "metadata": {"name": name, "namespace": ns}, "spec": spec,
    }


# --- process and metrics snapshots -----------------------------------------------------------

def proc(pid):
    """(CPU seconds, peak RSS in MiB) of a live process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return cpu, hwm


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()


def counter(text, name, label):
    """The counter `name` of a Prometheus text page, summed per value of `label`."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line.rsplit(" ", 1)
            key = labels.split(f'{label}="')[1].split('"')[0] if f'{label}="' in labels else ""
            out[key] = out.get(key, 0.0) + float(value)
    return out


class Snapshot:
    """Everything compared between the start and the end of a phase."""

    def __init__(self, api, args, workdir, tag):
        self.at = time.monotonic()
        self.procs = {name: proc(pid) for name, pid in args.pids.items()}
        name, label = args.syncs_metric.split(":")
        self.syncs = counter(scrape(args.syncs_metrics), name, label)
        self.client = counter(scrape(args.client_metrics), "rest_client_requests_total", "method")
        self.metrics_file = os.path.join(workdir, f"metrics-{tag}.txt")
        with open(self.metrics_file, "w") as f:
            f.write(api.metrics())


def mc_writes(before, after):
    """Writes to MC_WRITES resources between two /metrics files that succeeded (the reference's
    DELETEs of the HPA, NetworkPolicy and ServiceMonitor it does not have are answered 404)."""
    a, b = counts(before, succeeded_only=True), counts(after, succeeded_only=True)
    total = 0.0
    for (verb, res), value in b.items():
        name, _, sub = res.partition("/")
        if verb in WRITE_VERBS and (name, sub) in MC_WRITES:
            total += value - a.get((verb, res), 0)
    return total


def delta(start, end):
    return {k: v - start.get(k, 0) for k, v in end.items() if v - start.get(k, 0)}


def report(title, n, start, end):
    """Prints a phase's block; returns its summary."""
    load = open("/proc/loadavg").read().split()[:3]
    print(f"\n== {title}: {end.at - start.at:.1f} s, load average {' '.join(load)}")
    procs = {}
    for name in end.procs:
        c0, _ = start.procs[name]
        c1, hwm = end.procs[name]
        procs[name] = (c1 - c0, hwm)
        print(f"   {name:<24} CPU {c1 - c0:7.2f} s   peak RSS {hwm:7.1f} MiB")
    syncs = delta(start.syncs, end.syncs)
    total = sum(syncs.values())
    detail = ", ".join(f"{k} {int(v)}" for k, v in sorted(syncs.items()))
    print(f"   syncs {int(total)} ({total / n:.2f} per parent; {detail or 'none'})")
    client = delta(start.client, end.client)
    detail = ", ".join(f"{k} {v / n:.2f}" for k, v in sorted(client.items()))
    print(f"   the controller's own requests per parent: {sum(client.values()) / n:.2f} "
          f"({detail or 'none'})")
    writes = mc_writes(start.metrics_file, end.metrics_file)
    print(f"   the controller's writes that succeeded (memcacheds, their status, deployments, "
          f"statefulsets, configmaps, services, pdbs, hpas, networkpolicies, servicemonitors): "
          f"{int(writes)}")
    a, b = counts(start.metrics_file), counts(end.metrics_file)
    api_total = sum(v - a.get(k, 0) for k, v in b.items())
    sys.stdout.flush()
    subprocess.run([sys.executable, os.path.join(HERE, "api_requests.py"), start.metrics_file,
                    end.metrics_file, str(n)], check=False)
    sys.stdout.flush()
    return {"seconds": end.at - start.at, "load": " ".join(load), "procs": procs,
            "syncs": total / n, "client": sum(client.values()) / n, "writes": writes,
            "api": api_total / n}


# --- the fleet's state -----------------------------------------------------------------------

def fleet(api, ns, replicas, zones=None, proxy=False):
    """(ready parent count, {name: (status.readyReplicas, its workloads' readyReplicas)}).
    With zones: Ready also needs every zone ready (status.zonesReady Z/Z), readyReplicas counts
    every zone's pods and the truth is the sum of the workloads <name>-<zone>. With the proxy,
    ProxyReady True too."""
    ready = 0
    seen = {}
    total = replicas * (len(zones) if zones else 1)
    for m in api.items(f"{GROUP}/namespaces/{ns}/memcacheds"):
        st = m.get("status") or {}
        cond = {c["type"]: c["status"] for c in st.get("conditions") or []}
        ok = (st.get("observedGeneration") == m["metadata"]["generation"]
              and st.get("readyReplicas") == total and cond.get("Ready") == "True")
        if zones:
            ok = ok and st.get("zonesReady") == f"{len(zones)}/{len(zones)}"
        if proxy:
            ok = ok and cond.get("ProxyReady") == "True"
        ready += ok
        seen[m["metadata"]["name"]] = st.get("readyReplicas", 0)
    truth = {}
    workloads = (api.items(f"/apis/apps/v1/namespaces/{ns}/deployments")
                 + api.items(f"/apis/apps/v1/namespaces/{ns}/statefulsets"))
    for d in workloads:
        name = d["metadata"]["name"]
        for z in zones or ():
            if name.endswith("-" + z):
                name = name[:-len(z) - 1]
                break
        truth[name] = truth.get(name, 0) + (d.get("status") or {}).get("readyReplicas", 0)
    return ready, {k: (v, truth.get(k)) for k, v in seen.items()}


class WrongTracker:
    """For how long each parent's status.readyReplicas has differed from its Deployment's."""

    def __init__(self):
        self.since = {}
        self.longest = 0.0
        self.longest_name = ""

    def observe(self, pairs, now):
        for name, (status, truth) in pairs.items():
            if truth is not None and status != truth:
                start = self.since.setdefault(name, now)
                if now - start > self.longest:
                    self.longest, self.longest_name = now - start, name
            else:
                self.since.pop(name, None)


def wait_ready(api, args, deadline, tracker=None):
    """Polls until every parent is Ready; returns the count Ready at the end."""
    ready = 0
    while time.monotonic() < deadline:
        ready, pairs = fleet(api, args.ns, args.replicas, args.zones, args.proxy)
        if tracker:
            tracker.observe(pairs, time.monotonic())
        if ready >= args.n:
            return ready
        time.sleep(POLL)
    return ready


# --- phases ----------------------------------------------------------------------------------

def create(api, args):
    if args.own_image:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SASL_SECRET},
                  "data": {"password-file": "dXNlcjpvbmUK"}}
        code, body = api.call("POST", f"/api/v1/namespaces/{args.ns}/secrets", secret)
        if code != 201:
            sys.exit(f"creating Secret {SASL_SECRET}: {code} {str(body)[:300]}")
    for i in range(args.n):
        code, body = api.call("POST", f"{GROUP}/namespaces/{args.ns}/memcacheds",
                              memcached(args.ns, i, args.replicas, args.zones, args.own_image,
                                        args.proxy))
        if code != 201:
            sys.exit(f"creating Memcached {i}: {code} {str(body)[:300]}")


def objects(api, ns, n):
    """The objects of each of OBJECT_KINDS in ns, per parent."""
    out = {}
    for version, plural in OBJECT_KINDS:
        prefix = "/api/v1" if version == "v1" else f"/apis/{version}"
        out[plural] = len(api.items(f"{prefix}/namespaces/{ns}/{plural}")) / n
    return out


def evict(api, pod):
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns}}
    code, _ = api.call("POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction", body)
    return code


def zone_pods(api, nodes):
    pods = api.items("/api/v1/pods?fieldSelector=status.phase!=Succeeded")
    return [p for p in pods if p["spec"].get("nodeName") in nodes
            and not p["metadata"].get("deletionTimestamp")]


def drain(api, args, deadline):
    """Cordons the zone, evicts its pods until none is left; returns (evicted, 429s, other)."""
    selector = urllib.parse.quote(f"topology.kubernetes.io/zone in ({args.zone})")
    nodes = {n["metadata"]["name"] for n in api.items(f"/api/v1/nodes?labelSelector={selector}")}
    if not nodes:
        sys.exit(f"no node in zone {args.zone}")
    for node in sorted(nodes):
        code, body = api.call("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}},
                              "application/strategic-merge-patch+json")
        if code != 200:
            sys.exit(f"cordoning {node}: {code} {str(body)[:300]}")
    evicted = refused = other = 0
    for _ in range(1000):
        if time.monotonic() >= deadline:
            break
        pods = zone_pods(api, nodes)
        if not pods:
            break
        with ThreadPoolExecutor(EVICTORS) as pool:
            codes = list(pool.map(lambda p: evict(api, p), pods))
        evicted += codes.count(201) + codes.count(200)
        refused += codes.count(429)
        other += len(codes) - codes.count(201) - codes.count(200) - codes.count(429)
        if 429 in codes:
            time.sleep(5)
    return len(nodes), evicted, refused, other


# --- zones: a zone-by-zone rollout, and two drains in two zones ---------------------------------

def deployments(api, ns):
    return {d["metadata"]["name"]: d for d in api.items(f"/apis/apps/v1/namespaces/{ns}/deployments")}


def settled(d, replicas):
    """Whether a Deployment runs all its replicas from its latest spec, updated and ready (what
    the hook calls settled)."""
    st = d.get("status") or {}
    return (st.get("observedGeneration", 0) >= d["metadata"].get("generation", 1)
            and d["spec"].get("replicas", 1) == replicas
            and all(st.get(k, 0) == replicas
                    for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")))


def whole(d, replicas):
    """Whether a zone's Deployment has all its pods ready, none of them going."""
    st = (d or {}).get("status") or {}
    return st.get("readyReplicas", 0) >= replicas and st.get("replicas", 0) == replicas


def image_of(d):
    return [c.get("image") for c in d["spec"]["template"]["spec"]["containers"]
            if c.get("name") == "memcached"] or [None]


def rollout(api, args, deadline):
    """Patches every parent's image; polls every second every parent's zone Deployments. A zone
    is rolling while its Deployment carries the new image and is not settled. Returns the
    summary: the most zones of one parent rolling at once, zones started out of order, seconds
    until every zone runs the new image settled and until every parent is Ready again."""
    image = args.rollout_image
    parents = [f"cache-{i:04d}" for i in range(args.n)]
    start = time.monotonic()
    for name in parents:
        code, body = api.call("PATCH", f"{GROUP}/namespaces/{args.ns}/memcacheds/{name}",
                              {"spec": {"image": image}}, "application/merge-patch+json")
        if code != 200:
            sys.exit(f"patching {name}: {code} {str(body)[:300]}")
    most, twice, disorder, polls, rolled_at = 0, [], [], 0, None
    first_seen = {}  # (parent, zone) -> seconds after the patch the zone carried the new image
    while time.monotonic() < deadline and polls < 100000:
        polls += 1
        t = time.monotonic()
        deps = deployments(api, args.ns)
        done = 0
        for p in parents:
            states = []
            for z in args.zones:
                d = deps.get(f"{p}-{z}")
                new = d is not None and image_of(d)[0] == image
                states.append((new, new and settled(d, args.replicas)))
                if new:
                    first_seen.setdefault((p, z), t - start)
            rolling = sum(new and not ok for new, ok in states)
            most = max(most, rolling)
            if rolling > 1:
                twice.append((round(t - start, 1), p, rolling))
            for i, (new, _) in enumerate(states):
                if new and not all(ok for _, ok in states[:i]):
                    disorder.append((round(t - start, 1), p, args.zones[i]))
            done += all(ok for _, ok in states)
        if done == len(parents):
            rolled_at = time.monotonic() - start
            break
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t)))
    ready = wait_ready(api, args, deadline)
    out = {"most_rolling": most, "two_rolling": len(twice), "out_of_order": len(disorder),
           "rolled": rolled_at if rolled_at is not None else -1,
           "ready_after": time.monotonic() - start, "ready": ready, "polls": polls,
           "per_zone": {z: max((v for (_, zz), v in first_seen.items() if zz == z), default=-1)
                        for z in args.zones}}
    for what, seen in (("two zones of one parent rolling", twice),
                       ("a zone started before the zones before it were done", disorder)):
        for entry in seen[:5]:
            print(f"   VIOLATION {what}: {entry}")
    return out


def zone_nodes(api, zone):
    selector = urllib.parse.quote(f"topology.kubernetes.io/zone={zone}")
    return sorted(n["metadata"]["name"] for n in api.items(f"/api/v1/nodes?labelSelector={selector}"))


def cordon(api, nodes):
    for node in nodes:
        code, body = api.call("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}},
                              "application/strategic-merge-patch+json")
        if code != 200:
            sys.exit(f"cordoning {node}: {code} {str(body)[:300]}")


def parent_of(pod):
    return pod["metadata"].get("labels", {}).get("app.kubernetes.io/instance", "")


def zoned_drain(api, args, deadline):
    """Two drainers, in two zones A and B (the first two of the parents' zones), each on half of
    its zone's nodes (the other half takes the evicted pods: a pod must stay in its zone).
    Drainer 1 evicts every pod of A's drained nodes, as drain() does. Drainer 2, once drainer
    1's first round is sent, tries every second to evict the pods on B's drained nodes: a
    parent's pod as soon as the hook has answered the disruption of its zone A (its zone-B
    budget seen at maxUnavailable 0, or its zone A seen short and whole again; at once for a
    parent with no pod in A's drained nodes). Before each of its evictions it reads the parent's
    zone-A Deployment: an eviction that succeeds while that zone is not whole is a violation.
    Every pod on a node not drained must still run at the end."""
    za, zb = args.zones[0], args.zones[1]
    a_nodes, b_nodes = zone_nodes(api, za), zone_nodes(api, zb)
    if len(a_nodes) < 2 or len(b_nodes) < 2:
        sys.exit(f"zones {za} and {zb} need 2 nodes each, not {len(a_nodes)} and {len(b_nodes)}")
    a_nodes, b_nodes = set(a_nodes[:len(a_nodes) // 2]), set(b_nodes[:len(b_nodes) // 2])
    before = api.items(f"/api/v1/namespaces/{args.ns}/pods")
    kept = {p["metadata"]["uid"]: p["metadata"]["name"] for p in before
            if p["spec"].get("nodeName") not in a_nodes | b_nodes}
    in_b = {parent_of(p) for p in before if p["spec"].get("nodeName") in b_nodes}
    in_a = {parent_of(p) for p in before if p["spec"].get("nodeName") in a_nodes}
    cordon(api, sorted(a_nodes) + sorted(b_nodes))
    start = time.monotonic()
    first_round = threading.Event()
    affected = set()
    r1 = {"evicted": 0, "refused": 0, "other": 0, "emptied": -1}

    def drainer1():
        for n in range(1000):
            if time.monotonic() >= deadline:
                break
            pods = zone_pods(api, a_nodes)
            if not pods:
                r1["emptied"] = time.monotonic() - start
                break
            with ThreadPoolExecutor(EVICTORS) as pool:
                codes = list(pool.map(lambda p: evict(api, p), pods))
            for pod, code in zip(pods, codes):
                if code in (200, 201):
                    affected.add(parent_of(pod))
            r1["evicted"] += codes.count(201) + codes.count(200)
            r1["refused"] += codes.count(429)
            r1["other"] += len(codes) - codes.count(201) - codes.count(200) - codes.count(429)
            first_round.set()
            if 429 in codes:
                time.sleep(5)
        first_round.set()

    r2 = {"attempts": 0, "refused_short": 0, "evicted_whole": 0, "violations": [],
          "refused_whole": 0, "other": 0, "emptied": -1, "first_evicted": -1}
    seen_short, eligible = set(), set()
    # A drained parent's zone-a first read whole, and how long its zone-b pod waited after that.
    whole_at, handover = {}, []
    lock = threading.Lock()

    def try_b(pod):
        p = parent_of(pod)
        code, d = api.call("GET", f"/apis/apps/v1/namespaces/{args.ns}/deployments/{p}-{za}")
        ok_a = code == 200 and whole(d, args.replicas)
        code = evict(api, pod)
        t = time.monotonic() - start
        with lock:
            r2["attempts"] += 1
            if ok_a and p in affected:
                whole_at.setdefault(p, t)
            if code in (200, 201) and p in whole_at:
                handover.append(t - whole_at[p])
            if code in (200, 201):
                if ok_a:
                    r2["evicted_whole"] += 1
                    if r2["first_evicted"] < 0:
                        r2["first_evicted"] = t
                else:
                    r2["violations"].append((round(t, 1), p, pod["metadata"]["name"]))
            elif code == 429:
                r2["refused_short" if not ok_a else "refused_whole"] += 1
            else:
                r2["other"] += 1

    def drainer2():
        first_round.wait(max(deadline - time.monotonic(), 0))
        for _ in range(100000):
            t = time.monotonic()
            if t >= deadline:
                break
            pods = zone_pods(api, b_nodes)
            if not pods:
                r2["emptied"] = t - start
                break
            deps = deployments(api, args.ns)
            closed = {b["metadata"]["name"] for b in api.items(
                f"/apis/policy/v1/namespaces/{args.ns}/poddisruptionbudgets")
                if b["spec"].get("maxUnavailable") == 0}
            for p in {parent_of(pod) for pod in pods}:
                if p not in affected or f"{p}-{zb}" in closed:
                    eligible.add(p)
                elif not whole(deps.get(f"{p}-{za}"), args.replicas):
                    seen_short.add(p)
                elif p in seen_short:
                    eligible.add(p)
            with ThreadPoolExecutor(EVICTORS) as pool:
                list(pool.map(try_b, [pod for pod in pods if parent_of(pod) in eligible]))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t)))

    workers = [threading.Thread(target=drainer1), threading.Thread(target=drainer2)]
    for w in workers:
        w.start()
    tracker = WrongTracker()
    while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
        tracker.observe(fleet(api, args.ns, args.replicas, args.zones, args.proxy)[1], time.monotonic())
        workers[1].join(POLL)
    for w in workers:
        w.join(max(deadline - time.monotonic(), 0) + 60)
    emptied = time.monotonic()
    ready = wait_ready(api, args, deadline, tracker)
    after = {p["metadata"]["uid"] for p in api.items(f"/api/v1/namespaces/{args.ns}/pods")}
    lost = sorted(name for uid, name in kept.items() if uid not in after)
    return {"a_nodes": len(a_nodes), "b_nodes": len(b_nodes), "affected": len(affected),
            "both": len(in_a & in_b),
            "handover": max(handover, default=-1),
            "handover_median": sorted(handover)[len(handover) // 2] if handover else -1,
            "drainer1": r1, "drainer2": {**r2, "violations": len(r2["violations"])},
            "violation_list": r2["violations"][:5], "lost": lost, "ready": ready,
            "emptied": emptied - start, "lag": tracker.longest, "lag_name": tracker.longest_name}


def quiet(args, converged):
    """Waits out the steady state, sampling the sync counter; returns how long after its start
    the counter last moved (-1: never)."""
    name, label = args.syncs_metric.split(":")
    last, seen = -1.0, sum(converged.syncs.values())
    end = converged.at + args.steady
    while time.monotonic() < end:
        time.sleep(min(POLL, max(end - time.monotonic(), 0)))
        now = sum(counter(scrape(args.syncs_metrics), name, label).values())
        if now != seen:
            last, seen = time.monotonic() - converged.at, now
    return last


def run(args):
    api = Api()
    workdir = os.environ.get("SCALE_WORKDIR", "/tmp")
    if args.zones:
        print(f"N={args.n} Memcacheds x {args.replicas} replicas in each of the zones "
              f"{', '.join(args.zones)}, a PDB per zone (maxUnavailable 1); {os.cpu_count()} CPUs",
              flush=True)
    else:
        print(f"N={args.n} Memcacheds x {args.replicas} replicas, each with a PDB "
              f"(maxUnavailable 1); {os.cpu_count()} CPUs", flush=True)
    summary = {"system": args.system, "n": args.n, "replicas": args.replicas,
               "steady_seconds": args.steady, "zone": args.zone, "zones": args.zones}
    save = lambda: json.dump(summary, open(args.summary, "w"), indent=1)  # noqa: E731
    start = Snapshot(api, args, workdir, "start")
    create(api, args)
    ready = wait_ready(api, args, time.monotonic() + args.timeout)
    converged = Snapshot(api, args, workdir, "converged")
    total = args.replicas * (len(args.zones) if args.zones else 1)
    summary["create"] = report(f"create: {ready}/{args.n} Ready with readyReplicas "
                               f"{total}", args.n, start, converged)
    summary["create"]["ready"] = ready
    summary["objects"] = objects(api, args.ns, args.n)
    print("   objects per parent: " + ", ".join(f"{k} {v:.2f}" for k, v in summary["objects"].items()))
    save()
    if ready < args.n:
        sys.exit(f"not converged within {args.timeout} s")

    last_sync = quiet(args, converged)
    steady = Snapshot(api, args, workdir, "steady")
    writes = mc_writes(converged.metrics_file, steady.metrics_file)
    summary["steady"] = report(f"steady state ({args.steady} s): the controller's writes "
                               f"{writes * 60 / max(args.steady, 1):.2f} per minute", args.n,
                               converged, steady)
    summary["steady"]["last_sync"] = last_sync
    print(f"   the last sync came {last_sync:.0f} s into the steady state (sampled every "
          f"{POLL:.0f} s)" if last_sync >= 0 else "   no sync in the steady state")
    save()

    if args.zones and args.rollout_image:
        r = rollout(api, args, time.monotonic() + args.timeout)
        rolled = Snapshot(api, args, workdir, "rolled")
        per_zone = ", ".join(f"{z} {v:.1f} s" for z, v in r["per_zone"].items())
        print(f"\nrollout to {args.rollout_image}: at most {r['most_rolling']} zone(s) of a parent "
              f"rolling at once (polled every second, {r['polls']} polls); {r['two_rolling']} "
              f"polls with two zones rolling, {r['out_of_order']} zones out of order; last zone "
              f"started: {per_zone}; every zone rolled after {r['rolled']:.1f} s, "
              f"{r['ready']}/{args.n} Ready after {r['ready_after']:.1f} s")
        summary["rollout"] = report(f"zone-by-zone rollout: {r['ready']}/{args.n} Ready again",
                                    args.n, steady, rolled)
        summary["rollout"].update(r)
        save()
        if r["two_rolling"] or r["out_of_order"] or r["rolled"] < 0 or r["ready"] < args.n:
            sys.exit("the rollout broke its rule or did not converge")
        steady = rolled
    if args.zone == "none":
        return
    if args.zones:
        r = zoned_drain(api, args, time.monotonic() + args.timeout)
        drained = Snapshot(api, args, workdir, "drained")
        d1, d2 = r["drainer1"], r["drainer2"]
        za, zb = args.zones[0], args.zones[1]
        print(f"\n{za}: {r['a_nodes']} of its nodes drained: {d1['evicted']} pods evicted "
              f"({r['affected']} parents), {d1['refused']} refused (429), {d1['other']} other "
              f"answers; empty after {d1['emptied']:.1f} s")
        print(f"{zb}: {r['b_nodes']} of its nodes drained beside it ({r['both']} parents have a "
              f"pod on both zones' drained nodes): {d2['attempts']} eviction "
              f"attempts, {d2['refused_short']} refused (429) while the parent's {za} was short, "
              f"{d2['violations']} succeeded while it was short, {d2['evicted_whole']} succeeded "
              f"once it was whole (the first after {d2['first_evicted']:.1f} s), "
              f"{d2['refused_whole']} refused with it whole, {d2['other']} other answers; "
              f"empty after {d2['emptied']:.1f} s")
        print(f"a drained parent's {zb} pod went at most {r['handover']:.1f} s (median "
              f"{r['handover_median']:.1f} s) after its {za} was read whole (tried every second)")
        for v in r["violation_list"]:
            print(f"   VIOLATION a {zb} pod evicted while its parent's {za} was short: {v}")
        print(f"pods gone from nodes not drained: {len(r['lost'])} {r['lost'][:5]}")
        print(f"both drains done and {r['ready']}/{args.n} Ready after {r['emptied']:.1f} s + "
              f"re-convergence; status.readyReplicas differed from the Deployments' for at most "
              f"{r['lag']:.1f} s ({r['lag_name'] or 'never'}; polled every {POLL:.0f} s; bound "
              f"{args.bound} s: {'ok' if r['lag'] <= args.bound else 'EXCEEDED'})")
        summary["drain"] = report(f"zone drains ({za}, {zb} beside it): {r['ready']}/{args.n} "
                                  f"Ready again", args.n, steady, drained)
        r.pop("violation_list")
        summary["drain"].update(r, evicted=d1["evicted"] + d2["evicted_whole"],
                                refused=d1["refused"] + d2["refused_short"] + d2["refused_whole"],
                                lost=len(r["lost"]))
        save()
        if d2["violations"] or r["lost"] or d2["emptied"] < 0 or r["ready"] < args.n:
            sys.exit("the zone drains broke the budget rule or did not converge")
        return
    tracker = WrongTracker()
    deadline = time.monotonic() + args.timeout
    holder = {}
    worker = threading.Thread(target=lambda: holder.update(r=drain(api, args, deadline)))
    worker.start()
    while worker.is_alive() and time.monotonic() < deadline:
        tracker.observe(fleet(api, args.ns, args.replicas, args.zones, args.proxy)[1], time.monotonic())
        worker.join(POLL)
    worker.join(max(deadline - time.monotonic(), 0) + 60)
    nodes, evicted, refused, other = holder.get("r", (0, 0, 0, 0))
    emptied = time.monotonic()
    ready = wait_ready(api, args, deadline, tracker)
    drained = Snapshot(api, args, workdir, "drained")
    print(f"\nzone {args.zone}: {nodes} nodes cordoned, {evicted} pods evicted, {refused} evictions "
          f"refused by a PDB (429), {other} other answers; zone empty after "
          f"{emptied - steady.at:.1f} s")
    print(f"status.readyReplicas differed from the Deployment's for at most "
          f"{tracker.longest:.1f} s ({tracker.longest_name or 'never'}; polled every {POLL:.0f} s; "
          f"bound {args.bound} s: {'ok' if tracker.longest <= args.bound else 'EXCEEDED'})")
    summary["drain"] = report(f"zone drain: {ready}/{args.n} Ready again", args.n, steady, drained)
    summary["drain"].update(ready=ready, emptied=emptied - steady.at, evicted=evicted,
                            refused=refused, other=other, lag=tracker.longest)
    save()
    if ready < args.n:
        sys.exit(f"not re-converged within {args.timeout} s")


def workloads(api, ns):
    """Every Deployment and StatefulSet of `ns`: name -> (generation, pod template)."""
    out = {}
    for kind in ("deployments", "statefulsets"):
        for o in api.items(f"/apis/apps/v1/namespaces/{ns}/{kind}"):
            out[f"{kind}/{o['metadata']['name']}"] = (o["metadata"].get("generation"),
                                                     o["spec"]["template"])
    return out


def upgrade(args):
    """The hook was just restarted with its own image at a new tag: over three resync periods no
    workload may be written (a write of a Deployment or StatefulSet other than its status), none
    may change its generation or pod template, and every parent says UpToDate False."""
    api = Api()
    workdir = os.environ.get("SCALE_WORKDIR", "/tmp")
    before = workloads(api, args.ns)
    start = Snapshot(api, args, workdir, "upgrade-start")
    time.sleep(3 * args.period)
    end = Snapshot(api, args, workdir, "upgraded")
    after = workloads(api, args.ns)
    a, b = counts(start.metrics_file, succeeded_only=True), counts(end.metrics_file, succeeded_only=True)
    writes = sum(v - a.get(k, 0) for k, v in b.items()
                 if k[0] in WRITE_VERBS and k[1] in ("deployments", "statefulsets"))
    moved = sorted(k for k in before if after.get(k) != before[k])
    parents = api.items(f"{GROUP}/namespaces/{args.ns}/memcacheds")
    behind = sum(1 for p in parents for c in (p.get("status") or {}).get("conditions") or []
                 if c["type"] == "UpToDate" and c["status"] == "False")
    r = report(f"hook restarted with its own image at a new tag, {3 * args.period} s (three "
               f"resync periods): {int(writes)} workload writes (goal 0), {len(moved)} of "
               f"{len(before)} workloads with another generation or pod template, UpToDate False "
               f"on {behind}/{len(parents)} parents", args.n, start, end)
    summary = json.load(open(args.summary)) if os.path.exists(args.summary) else {}
    summary["upgrade"] = dict(r, workload_writes=writes, moved=len(moved), behind=behind)
    json.dump(summary, open(args.summary, "w"), indent=1)
    if writes or moved or behind < len(parents):
        sys.exit(f"the upgrade wrote workloads or left parents unaware: {moved[:5]}")


def controller(phase):
    """(CPU seconds, peak RSS MiB) of the controller processes together."""
    cpu = sum(c for name, (c, _) in phase["procs"].items() if name in CONTROLLERS)
    rss = sum(h for name, (_, h) in phase["procs"].items() if name in CONTROLLERS)
    return cpu, rss


def measures(phase):
    """The measures of one phase compared between systems: (label, value, format)."""
    cpu, rss = controller(phase)
    api_cpu, api_rss = phase["procs"].get("kube-apiserver", (0, 0))
    rows = [("time, s", phase["seconds"], "{:.1f}"),
            ("controller CPU, s", cpu, "{:.2f}"), ("controller peak RSS, MiB", rss, "{:.1f}"),
            ("API server CPU, s", api_cpu, "{:.1f}"), ("API server peak RSS, MiB", api_rss, "{:.0f}"),
            ("syncs per parent", phase["syncs"], "{:.2f}"),
            ("controller's requests per parent", phase["client"], "{:.2f}"),
            ("API requests per parent (all clients)", phase["api"], "{:.2f}")]
    for key, label, fmt in (("last_sync", "last sync after, s (-1: none)", "{:.0f}"),
                            ("emptied", "zone empty after, s", "{:.1f}"),
                            ("refused", "evictions refused (429)", "{:.0f}"),
                            ("lag", "longest status lag, s", "{:.1f}")):
        if key in phase:
            rows.append((label, phase[key], fmt))
    return rows


def compare(summaries):
    """Prints each phase's measures of every system side by side, with the ratio to the first."""
    names = [s["system"] for s in summaries]
    first = summaries[0]
    print(f"N={first['n']} x {first['replicas']} replicas; ratio = {names[-1]} / {names[0]}; "
          "controller = Metacontroller + hook, or the reference operator")
    for phase in ("create", "steady", "drain"):
        if not all(phase in s for s in summaries):
            continue
        loads = ", ".join(f"{s['system']} {s[phase]['load']}" for s in summaries)
        print(f"\n-- {phase} (load average at the end: {loads})")
        print(f"   {'measure':<40}" + "".join(f"{n:>12}" for n in names) + f"{'ratio':>9}")
        table = [measures(s[phase]) for s in summaries]
        for i, (label, _, fmt) in enumerate(table[0]):
            values = [t[i][1] for t in table]
            ratio = f"{values[-1] / values[0]:.2f}" if min(values) > 0 else "-"
            print(f"   {label:<40}" + "".join(f"{fmt.format(v):>12}" for v in values)
                  + f"{ratio:>9}")


class Stub(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", 0))
        parent = json.loads(self.rfile.read(length))["parent"]["metadata"]
        answer = {"relatedResources": [{
            "apiVersion": "v1", "resource": "pods", "namespace": parent["namespace"],
            "names": [parent["name"] + "-no-such-pod"]}]}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_):
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--system", choices=["hook", "reference"], default="hook")
    r.add_argument("--ns", required=True)
    r.add_argument("--n", type=int, required=True)
    r.add_argument("--replicas", type=int, default=3)
    r.add_argument("--steady", type=int, default=600)
    r.add_argument("--zone", default="zone-a")
    r.add_argument("--timeout", type=int, default=1200)
    r.add_argument("--bound", type=float, default=30)
    r.add_argument("--zones", default="", type=lambda s: [z for z in s.split(",") if z],
                   help="spec.zones.names of every Memcached, comma-separated (none: no zones)")
    r.add_argument("--rollout-image", default="",
                   help="with --zones: the image every Memcached is moved to after the steady state")
    r.add_argument("--syncs-metrics", required=True, help="URL of the page with the sync counter")
    r.add_argument("--syncs-metric", required=True, help="NAME:LABEL of the sync counter")
    r.add_argument("--client-metrics", required=True, help="URL of the controller's client metrics")
    r.add_argument("--summary", required=True, help="file the summary JSON is written to")
    r.add_argument("--pids", required=True,
                   type=lambda s: {k: int(v) for k, v in (x.split("=") for x in s.split(","))})
    r.add_argument("--proxy", action="store_true",
                   help="every Memcached a StatefulSet with spec.proxy (no rollout, no drain)")
    r.add_argument("--own-image", action="store_true",
                   help="every Memcached runs the hook's own image (SASL with the reload agent)")
    u = sub.add_parser("upgrade")
    u.add_argument("--ns", required=True)
    u.add_argument("--n", type=int, required=True)
    u.add_argument("--period", type=int, required=True, help="the resync period, seconds")
    for flag in ("--syncs-metrics", "--syncs-metric", "--client-metrics", "--summary"):
        u.add_argument(flag, required=True)
    u.add_argument("--pids", required=True,
                   type=lambda s: {k: int(v) for k, v in (x.split("=") for x in s.split(","))})
    c = sub.add_parser("compare")
    c.add_argument("summaries", nargs="+")
    s = sub.add_parser("customize-stub")
    s.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    if args.cmd == "run":
        run(args)
    elif args.cmd == "upgrade":
        upgrade(args)
    elif args.cmd == "compare":
        compare([json.load(open(f)) for f in args.summaries])
    else:
        http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Stub).serve_forever()


if __name__ == "__main__":
    main()
