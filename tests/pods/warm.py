"""The warm-restart scenario of the pods phase (pods.py runs it as `warm-restart`).

Static hostPath PersistentVolumes, made by the test in a directory of its own and removed at
the end, stand in for a storage provisioner. Two StatefulSets of 3 pods get 10 000 keys per pod,
then the same rolling restart (a pod annotation, which keeps memcached's memory layout): with
`warmRestart` the keys are still there, without it they are gone. Then, with the node cordoned so
the new pods wait, a corrupt and an empty `.meta` are written into two volumes after a graceful
stop: both pods start Ready with an empty cache and no restart. Last, a new `maxItemSize` is
announced in the WarmRestart condition from the sync that starts its rollout until the rollout
is done, and the pods start cold as announced. Then warmRestart is turned off: the StatefulSet, whose claim template cannot
change, is replaced through a Deployment while some pod stays Ready.
"""
import json
import os
import shutil
import time

from harness import (MEMCACHED_IMAGE, WORK, Failed, Memcached, Namespace, ReadyWatch, Test, get, kubectl, restarts,
                     wait_until)

KEYS_PER_POD = 10_000
CLASS = "pods-warm-restart"
GUARD = "warm-restart-guard"
META = "memory.meta"


def write_keys(ns, ip, first, n):
    """Sets keys k<first>..k<first+n-1> (7-byte values equal to the key) on memcached at ip."""
    script = (f"i={first}; end={first + n}; {{ while [ $i -lt $end ]; do "
              f"printf 'set k%06d 0 0 7 noreply\\r\\nk%06d\\r\\n' $i $i; i=$((i+1)); done; "
              f"printf 'mn\\r\\nquit\\r\\n'; }} | nc -w 10 {ip} 11211")
    code, out = ns.sh(script, timeout=120)
    if "MN" not in out:
        raise Failed(f"writing {n} keys to {ip}: {out[-300:]}")


def count_keys(ns, ip, first, n):
    """How many of keys k<first>.. are on memcached at ip with their own value."""
    script = (f"i={first}; end={first + n}; {{ while [ $i -lt $end ]; do printf 'get'; j=0; "
              f"while [ $j -lt 100 ] && [ $i -lt $end ]; do printf ' k%06d' $i; i=$((i+1)); j=$((j+1)); done; "
              f"printf '\\r\\n'; done; printf 'quit\\r\\n'; }} | nc -w 10 {ip} 11211 | "
              "awk '/^VALUE/ {k=$2; getline v; sub(/\\r$/, \"\", v); if (v == k) ok++} END {print ok+0}'")
    code, out = ns.sh(script, timeout=120)
    try:
        return int(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise Failed(f"counting keys on {ip}: {out[-300:]}")


def by_name(mc):
    return {p["metadata"]["name"]: p for p in mc.ready_pods()}


def fill(ns, mc):
    """10 000 keys through each pod; returns the pods' UIDs by name."""
    pods = by_name(mc)
    for i, name in enumerate(sorted(pods)):
        write_keys(ns, pods[name]["status"]["podIP"], i * KEYS_PER_POD, KEYS_PER_POD)
    return {n: p["metadata"]["uid"] for n, p in pods.items()}


def counted(ns, mc):
    """Keys found with their value, per pod name (each pod asked for its own range)."""
    pods = by_name(mc)
    return {name: count_keys(ns, pods[name]["status"]["podIP"], i * KEYS_PER_POD, KEYS_PER_POD)
            for i, name in enumerate(sorted(pods))}


def rolled(mc, ns):
    sts = get("statefulset", mc.name, ns=ns.name)
    st = sts["status"]
    return (st.get("observedGeneration", 0) >= sts["metadata"]["generation"]
            and st.get("updateRevision") == st.get("currentRevision") and st.get("updatedReplicas") == 3
            and len(mc.ready_pods()) == 3)


def roll(t, mc, ns, spec, what):
    """Applies spec through one sync and waits for the rolling update; returns that sync's status."""
    mc.update(spec)
    start = time.monotonic()
    status = mc.sync()
    wait_until(f"{mc.name}: the rolling update to finish", lambda: rolled(mc, ns), timeout=300, interval=1)
    t.time(f"{mc.name}: {what}, 3 pods", time.monotonic() - start)
    return status


def guard_results(mc):
    """The guard's termination message per pod name."""
    out = {}
    for p in mc.pods():
        for cs in p["status"].get("initContainerStatuses", []):
            if cs["name"] == GUARD:
                out[p["metadata"]["name"]] = cs.get("state", {}).get("terminated", {}).get("message", "").strip()
    return out


def warm_condition(status):
    return next((c for c in status.get("conditions", []) if c["type"] == "WarmRestart"), {})


def check_reported(t, mc, label, want):
    """The WarmRestart condition reports the pods' last starts as their guards did: the sync
    sees the pods as related objects (under Metacontroller, a pod's change triggers the sync)."""
    def says():
        message = warm_condition(mc.sync()).get("message", "")
        return message if want in message else None
    try:
        message = wait_until(f"{mc.name}: WarmRestart to report {want!r}", says, timeout=60, interval=1)
    except Failed as e:
        message = str(e)
    t.check(f"{label}: the WarmRestart condition says {want!r}", want in message, message)


class Volumes:
    """hostPath PersistentVolumes of the class CLASS in a directory of the test's own."""

    def __init__(self, n):
        self.root = os.path.join(WORK, "warm-restart-volumes")
        self.names = [f"pods-warm-restart-{i}" for i in range(n)]
        for name in self.names:
            path = os.path.join(self.root, name)
            os.makedirs(path)
            os.chown(path, 11211, 11211)  # memcached's user; hostPath volumes ignore fsGroup
            os.chmod(path, 0o700)
        os.chmod(self.root, 0o755)
        pvs = [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": CLASS,
                         "hostPath": {"path": os.path.join(self.root, name), "type": "Directory"}}}
               for name in self.names]
        kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": pvs}))

    def dir_of(self, ns, pod):
        """The host directory of the volume bound to pod's claim."""
        pvc = get("pvc", f"warm-restart-{pod}", ns=ns.name)
        return os.path.join(self.root, pvc["spec"]["volumeName"])

    def remove(self):
        kubectl("delete", "pv", *self.names, "--ignore-not-found", "--wait=false", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def node_name():
    """The real node (the cluster also has KWOK nodes, labelled kwok.x-k8s.io/node=fake)."""
    nodes = get("nodes", selector="!kwok.x-k8s.io/node")["items"]
    return nodes[0]["metadata"]["name"]


def check_rollout(t, label, before, after, uids, mc, want_warm):
    total = sum(before.values())
    kept = sum(after.values())
    fraction = kept / total if total else 0.0
    print(f"time {t.scenario}: {label}: {kept} of {total} keys readable after the rolling restart "
          f"({fraction:.1%})", flush=True)
    new = {p["metadata"]["name"]: p["metadata"]["uid"] for p in mc.pods()}
    t.check(f"{label}: every pod replaced (new UIDs, same names)",
            sorted(new) == sorted(uids) and all(new[n] != uids[n] for n in uids), f"{uids} -> {new}")
    if want_warm:
        failed = [e.get("message", "") for e in get("events", ns=mc.ns.name)["items"]
                  if e.get("reason") == "FailedPreStopHook"]
        print(f"     {label}: FailedPreStopHook events: {len(failed)} {failed[:1]}", flush=True)
        t.check(f"{label}: >= 95% of the 30000 keys readable through the new pods ({fraction:.1%})",
                total == 3 * KEYS_PER_POD and fraction >= 0.95, after)
        results = guard_results(mc)
        t.check(f"{label}: each guard restored", len(results) == 3 and all(
            r.startswith("restore: ") for r in results.values()), results)
        check_reported(t, mc, label, "3 of 3 pods restored their items at their last start (warm-0, warm-1, warm-2)")
    else:
        t.check(f"{label}: about 0% of the keys readable ({fraction:.1%})", total == 3 * KEYS_PER_POD
                and fraction <= 0.01, after)
    t.check(f"{label}: memcached never restarted in a pod",
            all(restarts(p) == 0 for p in mc.pods()), [restarts(p) for p in mc.pods()])


def corrupt_and_empty(t, ns, mc, volumes):
    """A corrupt and an empty .meta in the volumes of cache-0 and cache-1 after a graceful stop."""
    node = node_name()
    kubectl("cordon", node)
    try:
        old = {p["metadata"]["name"]: p["metadata"]["uid"] for p in mc.pods()}
        kubectl("delete", "pod", "warm-0", "warm-1", "-n", ns.name, "--wait=false")
        gone = {old["warm-0"], old["warm-1"]}
        left = []

        def stopped():  # by UID: the StatefulSet recreates each name at once (Pending: cordoned)
            left[:] = [(p["metadata"]["name"], p["status"].get("phase"),
                        [c.get("state") for c in p["status"].get("containerStatuses") or []])
                       for p in mc.pods() if p["metadata"]["uid"] in gone]
            return not left

        # Each stop is the preStop (SIGUSR1, memcached writes its metadata) within the grace period;
        # bounded well above two of them on a loaded machine.
        try:
            wait_until("warm-0 and warm-1 stopped and deleted", stopped, timeout=240, interval=1)
        except Failed as e:
            raise Failed(f"{e}; still there: {str(left)[:600]}") from None
        metas = {pod: os.path.join(volumes.dir_of(ns, pod), META) for pod in ("warm-0", "warm-1")}
        saved = {pod: os.path.exists(path) for pod, path in metas.items()}
        t.check("a graceful stop (preStop, SIGUSR1) saved memory.meta in both volumes", all(saved.values()), saved)
        with open(metas["warm-0"], "w") as f:  # memcached 1.6.18 calls abort() on a first line that is no tag
            f.write("Kmaxbytes 67108864\nTmain\n")
        with open(metas["warm-1"], "w"):  # memcached 1.6.18 calls abort() on an empty one too
            pass
    finally:
        kubectl("uncordon", node)
    wait_until("warm-0 and warm-1 back and Ready", lambda: rolled(mc, ns) and all(
        p["metadata"]["uid"] != old[p["metadata"]["name"]] for p in mc.pods()
        if p["metadata"]["name"] in ("warm-0", "warm-1")), timeout=120, interval=1)
    results = guard_results(mc)
    t.check("corrupt .meta: the guard starts warm-0 cold",
            results.get("warm-0") == "cold: metadata invalid: the first line is not a tag", results)
    t.check("empty .meta: the guard starts warm-1 cold", results.get("warm-1") == "cold: metadata invalid: empty",
            results)
    check_reported(t, mc, "corrupt and empty .meta", "1 of 3 pods restored their items at their last start (warm-2); "
                   "started empty (warm-0: metadata invalid: the first line is not a tag, "
                   "warm-1: metadata invalid: empty)")
    counts = counted(ns, mc)
    t.check("warm-0 and warm-1 Ready with an empty cache, warm-2 keeps its keys",
            counts["warm-0"] == 0 and counts["warm-1"] == 0 and counts["warm-2"] >= 0.95 * KEYS_PER_POD, counts)
    pods = {p["metadata"]["name"]: p for p in mc.pods()}
    t.check("no crash loop: memcached's restartCount is 0 in every pod",
            all(restarts(p) == 0 for p in pods.values()), {n: restarts(p) for n, p in pods.items()})


RUNNING_LAYOUTS = "memcached.c5c3.io/running-layouts"
LAYOUT_1M, LAYOUT_2M = ["-I", "1m", "-m", "64"], ["-I", "2m", "-m", "64"]


def running_layouts(sts):
    """The StatefulSet's running-layouts annotation, decoded (None when absent)."""
    text = (sts["metadata"].get("annotations") or {}).get(RUNNING_LAYOUTS)
    return json.loads(text) if text is not None else None


def memcached_args(sts):
    return next(c.get("args", []) for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "memcached")


def layout_change(t, ns, mc, spec):
    """A new maxItemSize: announced by the sync that starts the rollout and by every sync until
    the StatefulSet has rolled out (Metacontroller applies the new template at once, so the
    syncs after the first one observe it already: the StatefulSet's running-layouts annotation
    keeps the old layout meanwhile); the pods start cold; then Enabled again."""
    fill(ns, mc)
    t.check("before the change the StatefulSet records the running layout (-I 1m)",
            running_layouts(get("statefulset", mc.name, ns=ns.name)) == [LAYOUT_1M],
            get("statefulset", mc.name, ns=ns.name)["metadata"].get("annotations"))
    spec["memcached"]["maxItemSize"] = "2m"
    mc.update(spec)
    start = time.monotonic()
    c = warm_condition(mc.sync())
    t.check("the sync that starts the rollout announces it discards the cache (WarmRestart LayoutChange)",
            c.get("reason") == "LayoutChange" and "-I 1m -> 2m" in c.get("message", ""), c)
    during = []  # each status read while the rollout ran after the new template was applied

    def sample():
        reason = warm_condition(mc.sync()).get("reason")  # the status first: written before what follows
        sts = get("statefulset", mc.name, ns=ns.name)
        if rolled(mc, ns):
            return True
        if "2m" in memcached_args(sts):
            during.append((reason, running_layouts(sts), sts["status"].get("updatedReplicas"),
                           sts["status"].get("updateRevision") == sts["status"].get("currentRevision")))
        return False
    wait_until(f"{mc.name}: the rolling update to finish", sample, timeout=300, interval=1)
    t.time(f"{mc.name}: rolling update to a new maxItemSize, 3 pods", time.monotonic() - start)
    both = [d for d in during if d[1] == [LAYOUT_1M, LAYOUT_2M]]
    t.check(f"while the new template rolls out, every status says LayoutChange ({len(during)} read, "
            f"{len(both)} after a sync that observed the new template)",
            len(both) >= 3 and all(d[0] == "LayoutChange" for d in during), during)
    t.check("meanwhile the StatefulSet records both layouts (running-layouts [-I 1m, -I 2m])",
            all(d[1] in ([LAYOUT_1M], [LAYOUT_1M, LAYOUT_2M]) for d in during), during)
    results = guard_results(mc)
    t.check("every guard started cold for the new layout", len(results) == 3 and all(
        r == "cold: memory layout changed: item_size_max 1048576 -> 2097152" for r in results.values()), results)
    counts = counted(ns, mc)
    t.check("the cache is empty after the rollout, as announced", sum(counts.values()) == 0, counts)
    try:
        status = mc.sync_until("WarmRestart Enabled once rolled out",
                               lambda s: warm_condition(s).get("reason") == "Enabled", timeout=60)
    except Failed:
        status = mc.obj.get("status", {})
    t.check("once rolled out, the condition is back to Enabled", warm_condition(status).get("reason") == "Enabled",
            warm_condition(status))
    t.check("and the StatefulSet records the new layout only",
            running_layouts(get("statefulset", mc.name, ns=ns.name)) == [LAYOUT_2M],
            get("statefulset", mc.name, ns=ns.name)["metadata"].get("annotations"))


def switch_off(t, ns, mc, spec):
    """warmRestart turned off: the claim template cannot change in place, so a Deployment takes over,
    the StatefulSet is deleted, and a new one without volumes replaces the Deployment; some pod
    stays Ready throughout."""
    spec["warmRestart"] = {"enabled": False}
    mc.update(spec)
    watch = ReadyWatch(mc)
    start = time.monotonic()
    migrating = []

    def done():
        status = mc.sync()
        if mc.condition("Progressing") == "True":
            migrating.append(next(c for c in status["conditions"] if c["type"] == "Progressing")["reason"])
        sts = get("statefulset", mc.name, ns=ns.name, check=False)
        dep = get("deployment", mc.name, ns=ns.name, check=False)
        fresh = sts and not sts["spec"].get("volumeClaimTemplates")
        return fresh and not dep and rolled(mc, ns) and len(mc.pods()) == 3
    try:
        wait_until("the StatefulSet replaced through a Deployment", done, timeout=300, interval=2)
    finally:
        lowest = watch.done()
    t.time(f"{mc.name}: warmRestart turned off, StatefulSet replaced through a Deployment", time.monotonic() - start)
    sts = get("statefulset", mc.name, ns=ns.name)
    t.check("warmRestart off: a new StatefulSet without volumes, 3 Ready pods, no Deployment left",
            not sts["spec"].get("volumeClaimTemplates") and not get("deployment", mc.name, ns=ns.name, check=False)
            and len(mc.ready_pods()) == 3, sts["spec"].get("volumeClaimTemplates"))
    t.check(f"during the replacement Progressing said WorkloadMigration ({len(migrating)} syncs)",
            "WorkloadMigration" in migrating, migrating)
    t.check(f"some pod Ready throughout the replacement (lowest {lowest}, {watch.samples} samples)",
            lowest is not None and lowest >= 1 and watch.samples > 10)


def scenario_warm_restart(t: Test):
    """warmRestart: a rolling restart keeps >= 95% of 30000 keys (and without it ~0%); a corrupt or
    empty .meta gives a Ready pod with an empty cache and no restart; a layout change is announced
    before its rollout and starts cold."""
    ns = Namespace("pods-warm-restart")
    volumes = None
    try:
        volumes = Volumes(3)
        base = {"workload": "StatefulSet", "replicas": 3, "image": MEMCACHED_IMAGE,
                "memcached": {"maxMemoryMB": 64}}
        warm_spec = {**base, "warmRestart": {"enabled": True, "storageClassName": CLASS}}
        warm, cold = Memcached(ns, "warm", warm_spec), Memcached(ns, "cold", dict(base))
        start = time.monotonic()
        warm.create()
        cold.create()
        ns.client()
        warm.wait_ready(3, timeout=180)
        cold.wait_ready(3, timeout=180)
        t.time("apply to 2 x 3 Ready pods", time.monotonic() - start)
        status = warm.sync()
        t.check("WarmRestart Enabled on the warm cache", warm_condition(status).get("reason") == "Enabled",
                warm_condition(status))
        t.check("WarmRestart Disabled on the other", warm_condition(cold.sync()).get("reason") == "Disabled")
        first = guard_results(warm)
        t.check("first start: each guard reports a cold start without saved items", len(first) == 3 and all(
            r.startswith("cold: no saved items") for r in first.values()), first)
        check_reported(t, warm, "first start", "0 of 3 pods restored their items at their last start; started "
                       "empty (warm-0: no saved items")
        uids = {"warm": fill(ns, warm), "cold": fill(ns, cold)}
        before = {"warm": counted(ns, warm), "cold": counted(ns, cold)}
        for mc, spec in ((warm, warm_spec), (cold, dict(base))):
            spec["podAnnotations"] = {"example.com/restarted": "1"}
            roll(t, mc, ns, spec, "rolling restart (a pod annotation)")
        check_rollout(t, "warmRestart on", before["warm"], counted(ns, warm), uids["warm"], warm, True)
        check_rollout(t, "warmRestart off", before["cold"], counted(ns, cold), uids["cold"], cold, False)
        corrupt_and_empty(t, ns, warm, volumes)
        layout_change(t, ns, warm, warm_spec)
        switch_off(t, ns, warm, warm_spec)
    finally:
        kubectl("delete", "namespace", ns.name, "--wait=true", "--timeout=180s", check=False)
        if volumes:
            volumes.remove()
