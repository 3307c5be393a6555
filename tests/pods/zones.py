"""The zones scenario: a Memcached over three zones, its zone-a pod on the real node and the
zone-b and zone-c pods on KWOK nodes (run.sh starts them beside the node, tainted so that only
pods tolerating the taint go there). `kubectl drain` of the real node completes, while a
`kubectl drain` of zone-b's node started after it waits until zone-a is whole again; memcached in
zone-a serves again afterwards. Then zones are turned off: the zone workloads serve until the
Deployment without zones is Ready, and go after it.

First, a Memcached whose third zone has no node at all: every budget blocks while the zones are
starting, until the zone has been short for `outageTimeoutSeconds` (60 here); then it is lost,
Metacontroller's resync (asked for by the answer, no child changed) opens the other zones'
budgets, and an eviction in zone-a passes.

Only under Metacontroller: the budgets follow the disruption sync by sync, which needs the syncs
Metacontroller makes on every change of a child (without it the scenario prints one SKIPPED line).
"""
import os
import subprocess
import time

from harness import (
    KUBECTL,
    MEMCACHED_IMAGE,
    METACONTROLLER,
    PARENT,
    Memcached,
    Namespace,
    Test,
    evict,
    get,
    kubectl,
    pod_ready,
    wait_until,
)

ZONES = ["zone-a", "zone-b", "zone-c"]
ZONE_LABEL = "memcached.c5c3.io/zone"
REAL_NODE = os.environ.get("E2E_NODE_NAME", "localhost")
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}


def zone_condition(mc):
    for c in mc.obj.get("status", {}).get("conditions", []):
        if c["type"] == "ZoneDisruption":
            return c
    return {}


def zone_pod(mc, zone):
    """The zone's pod that is not being deleted, or None."""
    pods = [p for p in mc.ns.pods(f"{ZONE_LABEL}={zone}") if not p["metadata"].get("deletionTimestamp")]
    return pods[0] if pods else None


def budget(ns, zone, name="cache"):
    pdb = get("pdb", f"{name}-{zone}", ns=ns.name, check=False) or {}
    return pdb.get("spec", {}).get("maxUnavailable")


def node_of_zone(zone):
    nodes = get("nodes", selector=f"topology.kubernetes.io/zone={zone}")["items"]
    return [n["metadata"]["name"] for n in nodes]


def drain(node, timeout):
    return [KUBECTL, "drain", node, f"--pod-selector={ZONE_LABEL}", "--ignore-daemonsets",
            "--delete-emptydir-data", f"--timeout={timeout}s"]


def serves(ns, pod, key):
    if pod is None:
        return False, "no pod to ask"
    ip = pod["status"]["podIP"]
    _, out = ns.memcached(ip, [f"set {key} 0 0 5", "hello", f"get {key}"])
    return "STORED" in out and "VALUE" in out, out


def zone_without_nodes(t: Test, ns):
    """A zone no node carries stops blocking the others after the outage timeout."""
    zones = ["zone-a", "zone-b", "zone-nowhere"]
    mc = Memcached(ns, "lone", {
        "replicas": 1, "image": MEMCACHED_IMAGE,
        "zones": {"names": zones, "outageTimeoutSeconds": 60},
        "tolerations": [KWOK_TAINT],
        "highAvailability": {"podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
                             "gracefulShutdown": {"enabled": False}},
    })
    start = time.monotonic()
    mc.create()
    mc.sync_until("zone-a and zone-b Ready, zone-nowhere short",
                  lambda s: s.get("zonesReady") == "2/3", timeout=120)
    since = {z["name"]: z.get("shortSince") for z in mc.obj["status"].get("zones", [])}
    cond = zone_condition(mc)
    if cond.get("reason") == "ZonesStarting":
        t.check("while zone-nowhere is short and not lost every budget blocks (ZonesStarting)",
                all(budget(ns, z, "lone") == 0 for z in zones), {z: budget(ns, z, "lone") for z in zones})
    t.check("status.zones names since when zone-nowhere is short, and only it",
            since.get("zone-nowhere") and not since.get("zone-a") and not since.get("zone-b"), since)
    mc.sync_until("zone-nowhere lost (ZoneLost) after outageTimeoutSeconds 60",
                  lambda s: zone_condition(mc).get("reason") == "ZoneLost", timeout=150)
    lost_after = time.monotonic() - start
    t.time("zone without nodes: created to ZoneLost (timeout 60 s)", lost_after)
    t.check(f"ZoneLost after the timeout and within a minute of it ({lost_after:.0f} s from creation): "
            "Metacontroller synced again without a child change",
            60 <= lost_after <= 150, lost_after)
    wait_until("zone-a's and zone-b's budgets open (maxUnavailable 1), zone-nowhere's blocks",
               lambda: [budget(ns, z, "lone") for z in zones] == [1, 1, 0], timeout=60)
    blocking = next((c for c in mc.sync().get("conditions", []) if c["type"] == "DisruptionBudgetBlocking"), {})
    t.check("DisruptionBudgetBlocking True, ZoneBudgetsBlock, naming zone-nowhere",
            blocking.get("reason") == "ZoneBudgetsBlock" and "zone-nowhere" in blocking.get("message", ""),
            blocking)
    a = next((p for p in ns.pods(f"{ZONE_LABEL}=zone-a") if p["metadata"]["name"].startswith("lone-")), None)
    okay, msg = evict(ns, a["metadata"]["name"]) if a else (False, "no zone-a pod of lone")
    t.check("an eviction of the zone-a pod passes while zone-nowhere is lost", okay, msg)
    kubectl("delete", PARENT, "lone", "-n", ns.name, "--wait=true", "--timeout=60s", check=False)
    wait_until("lone's pods gone", lambda: not [p for p in ns.pods(ZONE_LABEL)
                                               if p["metadata"]["name"].startswith("lone-")], timeout=90)


def scenario_zones(t: Test):
    """Zone-by-zone disruption on a real node and two simulated ones (see the module's
    docstring)."""
    if not METACONTROLLER:
        print("SKIPPED zones: needs Metacontroller's syncs on every child change (run under it)", flush=True)
        return
    ns = Namespace("pods-zones")
    cordoned = []
    drainer = None
    try:
        t.check(f"the real node {REAL_NODE} is zone-a, KWOK nodes are zone-b and zone-c",
                node_of_zone("zone-a") == [REAL_NODE] and len(node_of_zone("zone-b")) == 1
                and len(node_of_zone("zone-c")) == 1,
                {z: node_of_zone(z) for z in ZONES})
        zone_b_node = node_of_zone("zone-b")[0]
        zone_without_nodes(t, ns)
        mc = Memcached(ns, "cache", {
            "replicas": 1, "image": MEMCACHED_IMAGE,
            "zones": {"names": ZONES},
            "tolerations": [KWOK_TAINT],
            "highAvailability": {"podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
                                 "gracefulShutdown": {"enabled": False}},
        })
        start = time.monotonic()
        mc.create()
        ns.client()
        mc.sync_until("every zone whole and every budget the user's (AllZonesWhole)",
                      lambda s: s.get("zonesReady") == "3/3"
                      and zone_condition(mc).get("reason") == "AllZonesWhole", timeout=120)
        t.time("apply to 3 zones Ready, budgets open", time.monotonic() - start)
        placed = {z: (zone_pod(mc, z) or {}).get("spec", {}).get("nodeName") for z in ZONES}
        t.check("each zone's pod runs on its zone's node (zone-a on the real node)",
                placed["zone-a"] == REAL_NODE and placed["zone-b"] == zone_b_node
                and placed["zone-c"] == node_of_zone("zone-c")[0], placed)
        okay, out = serves(ns, zone_pod(mc, "zone-a"), "before")
        t.check("memcached in zone-a serves (set/get from the client pod)", okay, out)

        # Drain the real node: zone-a's budget is open, the drain completes.
        start = time.monotonic()
        cordoned.append(REAL_NODE)
        p = kubectl(*drain(REAL_NODE, 60)[1:], check=False, timeout=90)
        t.time("kubectl drain of the real node (zone-a)", time.monotonic() - start)
        t.check(f"kubectl drain {REAL_NODE} (zone-a) completes", p.returncode == 0,
                (p.stdout + p.stderr)[-600:])
        wait_until("the budgets of zone-b and zone-c block (maxUnavailable 0)",
                   lambda: budget(ns, "zone-b") == 0 and budget(ns, "zone-c") == 0, timeout=60)
        mc.sync()
        cond = zone_condition(mc)
        t.check("ZoneDisruption says zone-a may be disrupted and the others block",
                cond.get("reason") == "ZoneDisrupted" and "Zone zone-a" in cond.get("message", ""), cond)

        # A second drain, of zone-b's node, waits while zone-a is short.
        cordoned.append(zone_b_node)
        drainer = subprocess.Popen(drain(zone_b_node, 150), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
        held_since = time.monotonic()
        time.sleep(15)
        b = zone_pod(mc, "zone-b")
        t.check(f"after 15 s the drain of {zone_b_node} (zone-b) still waits and zone-b's pod is still there",
                drainer.poll() is None and b is not None and pod_ready(b),
                f"drain exit {drainer.poll()}, pod {b and b['metadata']['name']}")
        if b is not None:
            okay, msg = evict(ns, b["metadata"]["name"])
            t.check("an eviction of zone-b's pod is refused by its budget", not okay and "disruption budget" in msg,
                    msg)

        # zone-a whole again: the drain of zone-b proceeds only after that.
        kubectl("uncordon", REAL_NODE)
        cordoned.remove(REAL_NODE)
        uncordoned = time.monotonic()
        a_ready = b_gone = None
        deadline = uncordoned + 150
        while time.monotonic() < deadline and (a_ready is None or b_gone is None or drainer.poll() is None):
            now = time.monotonic()
            a = zone_pod(mc, "zone-a")
            if a_ready is None and a is not None and pod_ready(a):
                a_ready = now
            b = zone_pod(mc, "zone-b")  # read once: the pod may go between two reads
            if b_gone is None and (b is None or b["spec"].get("nodeName") != zone_b_node):
                b_gone = now
            time.sleep(0.5)
        out = drainer.communicate(timeout=30)[0] if drainer.poll() is not None else "(still running)"
        t.check(f"kubectl drain {zone_b_node} (zone-b) completes once zone-a is whole again",
                drainer.returncode == 0, out[-600:])
        t.check("zone-b's pod left only after zone-a's new pod was Ready",
                a_ready is not None and b_gone is not None and a_ready <= b_gone,
                f"zone-a Ready at +{a_ready and round(a_ready - uncordoned, 1)}s, zone-b pod gone at "
                f"+{b_gone and round(b_gone - uncordoned, 1)}s after uncordon")
        if a_ready and b_gone:
            t.time("zone-a Ready after uncordon", a_ready - uncordoned)
            t.time("zone-b drain waited in all", b_gone - held_since)
        okay, out = serves(ns, zone_pod(mc, "zone-a"), "after")
        t.check("memcached in zone-a serves after the drain", okay, out)

        kubectl("uncordon", zone_b_node)
        cordoned.remove(zone_b_node)
        mc.sync_until("every zone whole again (AllZonesWhole)",
                      lambda s: s.get("zonesReady") == "3/3"
                      and zone_condition(mc).get("reason") == "AllZonesWhole", timeout=120)
        t.check("every zone whole again and every budget reopened",
                all(budget(ns, z) == 1 for z in ZONES), {z: budget(ns, z) for z in ZONES})

        # Zones off: the zone workloads keep serving until the Deployment without zones is Ready.
        spec = dict(mc.obj["spec"])
        del spec["zones"]
        spec["replicas"] = 2
        spec.pop("tolerations", None)
        spec["nodeSelector"] = {"kubernetes.io/hostname": REAL_NODE}  # both new pods real
        start = time.monotonic()
        mc.update(spec)
        gaps = []
        switching_seen = False
        deadline = start + 180
        while time.monotonic() < deadline:
            # The zone workloads first, then the new one: a zone pod gone while the Deployment read
            # after it is not settled yet is a gap, whatever happened between the reads.
            zone_ready = sum(((get("deployment", f"cache-{z}", ns=ns.name, check=False) or {}).get("status", {})
                              .get("readyReplicas") or 0) for z in ZONES)
            new = get("deployment", "cache", ns=ns.name, check=False)
            settled = bool(new) and new.get("status", {}).get("readyReplicas") == 2 and new["status"].get(
                "updatedReplicas") == 2
            live = get(PARENT, "cache", ns=ns.name)
            progressing = next((c for c in live.get("status", {}).get("conditions", [])
                                if c["type"] == "Progressing"), {})
            switching_seen = switching_seen or progressing.get("reason") == "ZoneSwitch"
            if not settled and zone_ready < 3:
                gaps.append(f"+{time.monotonic() - start:.1f}s: new not settled, zone pods ready {zone_ready}")
            if settled and zone_ready == 0 and not any(
                    get("deployment", f"cache-{z}", ns=ns.name, check=False) for z in ZONES):
                break
            time.sleep(1)
        t.time("zones off: the Deployment Ready and the zone workloads gone", time.monotonic() - start)
        t.check("zones off: Progressing said ZoneSwitch while it ran", switching_seen)
        t.check("zones off: every zone pod served until the Deployment without zones was Ready",
                not gaps, gaps[:5])
        t.check("zones off: the zone workloads are gone once the Deployment is Ready",
                not any(get("deployment", f"cache-{z}", ns=ns.name, check=False) for z in ZONES))
        pods = [p for p in mc.ready_pods() if p["spec"].get("nodeName") == REAL_NODE]
        okay, out = serves(ns, pods[0], "unzoned") if pods else (False, "no Ready pod on the real node")
        t.check("memcached serves after zones were turned off", okay, out)
    finally:
        if drainer is not None and drainer.poll() is None:
            drainer.kill()
            drainer.wait(timeout=10)
        for node in cordoned:
            kubectl("uncordon", node, check=False)
        ns.close()
