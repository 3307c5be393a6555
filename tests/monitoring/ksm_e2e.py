"""kube-state-metrics with deploy/monitoring/kube-state-metrics-config.yaml against a real
kube-apiserver (started by tests/monitoring/check.sh through tests/e2e/cluster.sh, KUBECONFIG set).

Creates a few Memcacheds, writes their status through the /status subresource the way
Metacontroller does, runs kube-state-metrics (--custom-resource-state-only) on loopback and
asserts the series and labels it exposes: every metric of the config appears, with the values and
labels each object implies, the optional ones are absent where the field is, and a status change
moves the condition series. Every wait is bounded.
"""

import argparse
import json
import pathlib
import re
import subprocess
import socket
import sys
import time
import urllib.request

import yaml
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
import procs  # noqa: E402

NS = "ksm-e2e"
GROUP = 'customresource_group="memcached.c5c3.io"'


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Run:
    def __init__(self, kubectl):
        self.kubectl = kubectl
        self.failures = 0
        self.checks = 0

    def kc(self, *args, stdin=None):
        r = subprocess.run([self.kubectl, *args], input=stdin, capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise SystemExit(f"kubectl {' '.join(args)} failed: {r.stderr.strip()}")
        return r.stdout

    def check(self, ok, what):
        self.checks += 1
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            self.failures += 1


def parse(text):
    """Prometheus text format -> list of (name, labels dict, value)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)', line)
        if not m:
            continue
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def find(series, name, **labels):
    return [(l, v) for n, l, v in series if n == name and all(l.get(k) == w for k, w in labels.items())]


def scrape(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return parse(r.read().decode())


def wait_for(url, predicate, what, seconds=60):
    deadline = time.monotonic() + seconds
    last = []
    while time.monotonic() < deadline:
        try:
            last = scrape(url)
            if predicate(last):
                return last
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"kube-state-metrics: {what} not seen within {seconds} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=pathlib.Path, required=True)
    ap.add_argument("--ksm", required=True)
    ap.add_argument("--kubectl", required=True)
    ap.add_argument("--work", type=pathlib.Path, required=True)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    run = Run(args.kubectl)
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    import check_monitoring  # noqa: E402  (the series the config declares)

    class Quiet:
        items = []

        def add(self, *_):
            pass

    declared = check_monitoring.check_ksm(Quiet(), args.root / "deploy/monitoring/kube-state-metrics-config.yaml",
                                          args.root / "deploy/crd/crd.yaml")
    crd = yaml.safe_load((args.root / "deploy/crd/crd.yaml").read_text())
    storage = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    has_workload = "workload" in storage["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]

    run.kc("create", "namespace", NS)
    objs = [
        {"metadata": {"name": "plain"}, "spec": {}},
        {"metadata": {"name": "ha"}, "spec": {"replicas": 3, "image": "memcached:1.6.38"}},
        {"metadata": {"name": "hpa"}, "spec": {
            "autoscaling": {"enabled": True, "maxReplicas": 4},
            "resources": {"requests": {"cpu": "100m"}}}},
    ]
    if has_workload:
        objs.append({"metadata": {"name": "sts"}, "spec": {"workload": "StatefulSet"}})
    for o in objs:
        o.update({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached"})
        o["metadata"]["namespace"] = NS
    run.kc("apply", "-f", "-", stdin="\n---\n".join(yaml.safe_dump(o) for o in objs))

    def cond(t, s, reason):
        return {"type": t, "status": s, "reason": reason, "message": f"{t} {s}",
                "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}

    def set_status(name, status):
        run.kc("-n", NS, "patch", "memcached", name, "--subresource=status", "--type=merge",
               "-p", json.dumps({"status": status}))

    set_status("plain", {"desiredReplicas": 1, "readyReplicas": 1, "observedGeneration": 1, "conditions": [
        cond("Available", "True", "Available"), cond("Ready", "True", "MemcachedReady"),
        cond("Degraded", "False", "NotDegraded")]})
    set_status("ha", {"desiredReplicas": 3, "readyReplicas": 1, "observedGeneration": 1, "conditions": [
        cond("Available", "True", "Available"), cond("Ready", "False", "MemcachedNotReady"),
        cond("Degraded", "True", "Degraded"),
        cond("DisruptionBudgetBlocking", "True", "NoDisruptionsAllowed")]})
    # hpa: no status yet (never synced).

    port, tport = free_port(), free_port()
    log = open(args.work / "kube-state-metrics.log", "w")
    ksm = subprocess.Popen([
        args.ksm, f"--kubeconfig={_kubeconfig()}", "--custom-resource-state-only=true",
        f"--custom-resource-state-config-file={args.root / 'deploy/monitoring/kube-state-metrics-config.yaml'}",
        "--host=127.0.0.1", f"--port={port}", "--telemetry-host=127.0.0.1", f"--telemetry-port={tport}",
    ], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        version = subprocess.run([args.ksm, "version"], capture_output=True, text=True, timeout=10)
        print(f"kube-state-metrics: {(version.stdout or version.stderr).strip().splitlines()[0]}")
        series = wait_for(url, lambda s: len(find(s, "kube_memcached_info")) >= len(objs),
                          f"kube_memcached_info for {len(objs)} objects")
        mine = [(n, l, v) for n, l, v in series if n.startswith("kube_memcached_")]
        (args.work / "metrics.txt").write_text(
            "\n".join(f"{n}{{{','.join(f'{k}={v!r}' for k, v in sorted(l.items()))}}} {v:g}" for n, l, v in mine))
        print(f"{len(mine)} kube_memcached_* series:")
        for n, l, v in sorted(mine, key=lambda x: (x[0], sorted(x[1].items()))):
            shown = {k: w for k, w in l.items() if not k.startswith("customresource_")}
            print(f"    {n}{json.dumps(shown, sort_keys=True)} {v:g}")

        names = {n for n, _, _ in mine}
        run.check(names == declared, f"series names are the config's: {sorted(names ^ declared) or 'all present'}")
        run.check(all(l.get("customresource_kind") == "Memcached" and GROUP.split("=")[1].strip('"') ==
                      l.get("customresource_group") for _, l, _ in mine), "every series names group and kind")
        run.check(all(l.get("namespace") == NS and l.get("memcached") for _, l, _ in mine),
                  "every series carries namespace and memcached")
        info = {l["memcached"]: l for l, _ in find(series, "kube_memcached_info")}
        run.check(info["plain"].get("image") == "memcached:1.6" and info["plain"].get("workload") == "Deployment",
                  "info(plain): the CRD's default image and workload, written by the API server")
        run.check(info["ha"].get("image") == "memcached:1.6.38", "info(ha): image from spec.image")
        if has_workload:
            run.check(info["sts"].get("workload") == "StatefulSet", "info(sts): workload=StatefulSet")
        else:
            print("note: the CRD has no spec.workload yet; the StatefulSet case is not exercised")
        rep = {l["memcached"]: v for l, v in find(series, "kube_memcached_spec_replicas")}
        run.check(rep.get("ha") == 3 and "hpa" not in rep and "plain" not in rep,
                  f"spec_replicas: ha=3, absent for hpa and plain (got {rep})")
        desired = {l["memcached"]: v for l, v in find(series, "kube_memcached_status_desired_replicas")}
        run.check(desired == {"plain": 1, "ha": 3},
                  f"status_desired_replicas: also for the defaulted plain, absent before the first sync (got {desired})")
        auto = {l["memcached"]: v for l, v in find(series, "kube_memcached_spec_autoscaling_enabled")}
        run.check(auto.get("hpa") == 1 and auto.get("plain") == 0, f"spec_autoscaling_enabled (got {auto})")
        ready = {l["memcached"]: v for l, v in find(series, "kube_memcached_status_ready_replicas")}
        run.check(ready == {"plain": 1, "ha": 1, "hpa": 0, **({"sts": 0} if has_workload else {})},
                  f"status_ready_replicas, 0 before the first sync (got {ready})")
        conds = {(l["memcached"], l["type"]): (l["status"], l["reason"], v)
                 for l, v in find(series, "kube_memcached_status_condition")}
        run.check(conds.get(("ha", "Degraded")) == ("True", "Degraded", 1)
                  and conds.get(("ha", "DisruptionBudgetBlocking")) == ("True", "NoDisruptionsAllowed", 1)
                  and conds.get(("plain", "Ready")) == ("True", "MemcachedReady", 1)
                  and len([k for k in conds if k[0] == "ha"]) == 4
                  and not any(k[0] == "hpa" for k in conds),
                  "status_condition: one series per condition with status and reason, none without status")
        gen = {l["memcached"]: v for l, v in find(series, "kube_memcached_metadata_generation")}
        obs = {l["memcached"]: v for l, v in find(series, "kube_memcached_status_observed_generation")}
        run.check(gen.get("ha") == 1 and obs.get("ha") == 1 and "hpa" not in obs,
                  f"generation and observedGeneration (got {gen} / {obs})")

        # A spec change (generation 2) and a status change move the series.
        run.kc("-n", NS, "patch", "memcached", "ha", "--type=merge", "-p", '{"spec":{"replicas":4}}')
        set_status("ha", {"readyReplicas": 4, "observedGeneration": 1, "conditions": [
            cond("Available", "True", "Available"), cond("Ready", "True", "MemcachedReady"),
            cond("Degraded", "False", "NotDegraded"),
            cond("DisruptionBudgetBlocking", "False", "DisruptionsAllowed")]})
        series = wait_for(url, lambda s: find(s, "kube_memcached_status_condition", memcached="ha", type="Ready",
                                              status="True"), "the new Ready condition of ha")
        run.check(not find(series, "kube_memcached_status_condition", memcached="ha", type="Ready", status="False"),
                  "the old Ready=False series of ha is gone")
        run.check([v for _, v in find(series, "kube_memcached_spec_replicas", memcached="ha")] == [4]
                  and [v for _, v in find(series, "kube_memcached_metadata_generation", memcached="ha")] == [2]
                  and [v for _, v in find(series, "kube_memcached_status_observed_generation", memcached="ha")] == [1],
                  "spec change: replicas 4, generation 2 ahead of observedGeneration 1 (MemcachedStatusStale)")
        run.kc("-n", NS, "delete", "memcached", "plain", "--wait=true")
        series = wait_for(url, lambda s: not find(s, "kube_memcached_info", memcached="plain"),
                          "plain's series gone after its deletion")
        run.check(not any(l.get("memcached") == "plain" for n, l, _ in series if n.startswith("kube_memcached_")),
                  "a deleted Memcached leaves no series")
    finally:
        procs.stop(ksm, 15)
        log.close()
    print(f"ksm: {run.checks - run.failures} passed, {run.failures} failed")
    if run.failures:
        print((args.work / "kube-state-metrics.log").read_text()[-3000:])
    return 1 if run.failures else 0


def _kubeconfig():
    import os
    return os.environ["KUBECONFIG"]


if __name__ == "__main__":
    sys.exit(main())
