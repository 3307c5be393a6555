#!/usr/bin/env python3
"""The measuring half of bench/scale.sh: a fleet of Memcacheds on simulated nodes.

usage: scale.py run --system hook|reference --ns NS --n N --replicas R --steady S --zone Z
                    --timeout T --bound B --syncs-metrics URL --syncs-metric NAME:LABEL
                    --client-metrics URL --pids NAME=PID,... --summary FILE
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
  memcacheds, their status, deployments, services, poddisruptionbudgets, and the HPAs,
  NetworkPolicies and ServiceMonitors the reference deletes when disabled), those that succeeded,
  per minute must be 0; the sync counter is sampled every 3 s to tell when the last sync came;
- drain: the nodes of zone Z (or of every zone of a comma-separated list) cordoned, their pods
  evicted through the eviction API, 16 at a time (a
  429, the budget refusing, is retried after 5 s, as kubectl drain does); time until the zone is empty and
  every parent is Ready again, the 429s, and for how long at most a parent's status.readyReplicas
  differed from its Deployment's (the truth), against the bound B seconds; skipped with
  --zone none.

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
             ("services", ""), ("poddisruptionbudgets", ""), ("horizontalpodautoscalers", ""),
             ("networkpolicies", ""), ("servicemonitors", "")}
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


def memcached(ns, i, replicas):
    name = f"cache-{i:04d}"
    return {
        "apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "highAvailability": {
            "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
            "topologySpreadConstraints": [{
                "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": name}}}]}},
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
          f"services, pdbs, hpas, networkpolicies, servicemonitors): {int(writes)}")
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

def fleet(api, ns, replicas):
    """(ready parent count, {name: (status.readyReplicas, deployment readyReplicas)})."""
    ready = 0
    seen = {}
    for m in api.items(f"{GROUP}/namespaces/{ns}/memcacheds"):
        st = m.get("status") or {}
        cond = {c["type"]: c["status"] for c in st.get("conditions") or []}
        ok = (st.get("observedGeneration") == m["metadata"]["generation"]
              and st.get("readyReplicas") == replicas and cond.get("Ready") == "True")
        ready += ok
        seen[m["metadata"]["name"]] = st.get("readyReplicas", 0)
    truth = {d["metadata"]["name"]: (d.get("status") or {}).get("readyReplicas", 0)
             for d in api.items(f"/apis/apps/v1/namespaces/{ns}/deployments")}
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
        ready, pairs = fleet(api, args.ns, args.replicas)
        if tracker:
            tracker.observe(pairs, time.monotonic())
        if ready >= args.n:
            return ready
        time.sleep(POLL)
    return ready


# --- phases ----------------------------------------------------------------------------------

def create(api, args):
    for i in range(args.n):
        code, body = api.call("POST", f"{GROUP}/namespaces/{args.ns}/memcacheds",
                              memcached(args.ns, i, args.replicas))
        if code != 201:
            sys.exit(f"creating Memcached {i}: {code} {str(body)[:300]}")


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
    print(f"N={args.n} Memcacheds x {args.replicas} replicas, each with a PDB (maxUnavailable 1); "
          f"{os.cpu_count()} CPUs", flush=True)
    summary = {"system": args.system, "n": args.n, "replicas": args.replicas,
               "steady_seconds": args.steady, "zone": args.zone}
    save = lambda: json.dump(summary, open(args.summary, "w"), indent=1)  # noqa: E731
    start = Snapshot(api, args, workdir, "start")
    create(api, args)
    ready = wait_ready(api, args, time.monotonic() + args.timeout)
    converged = Snapshot(api, args, workdir, "converged")
    summary["create"] = report(f"create: {ready}/{args.n} Ready with readyReplicas "
                               f"{args.replicas}", args.n, start, converged)
    summary["create"]["ready"] = ready
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

    if args.zone == "none":
        return
    tracker = WrongTracker()
    deadline = time.monotonic() + args.timeout
    holder = {}
    worker = threading.Thread(target=lambda: holder.update(r=drain(api, args, deadline)))
    worker.start()
    while worker.is_alive() and time.monotonic() < deadline:
        tracker.observe(fleet(api, args.ns, args.replicas)[1], time.monotonic())
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
    r.add_argument("--syncs-metrics", required=True, help="URL of the page with the sync counter")
    r.add_argument("--syncs-metric", required=True, help="NAME:LABEL of the sync counter")
    r.add_argument("--client-metrics", required=True, help="URL of the controller's client metrics")
    r.add_argument("--summary", required=True, help="file the summary JSON is written to")
    r.add_argument("--pids", required=True,
                   type=lambda s: {k: int(v) for k, v in (x.split("=") for x in s.split(","))})
    c = sub.add_parser("compare")
    c.add_argument("summaries", nargs="+")
    s = sub.add_parser("customize-stub")
    s.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    if args.cmd == "run":
        run(args)
    elif args.cmd == "compare":
        compare([json.load(open(f)) for f in args.summaries])
    else:
        http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Stub).serve_forever()


if __name__ == "__main__":
    main()
