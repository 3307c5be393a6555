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

  PODS_KEEP_NAMESPACES=1  leave each scenario's namespace in place
  PODS_METACONTROLLER=1   the Memcacheds are synced by the real Metacontroller that cluster.sh
                   started (with deploy/crd/crd.yaml preloaded), see below

Without Metacontroller (the default), `Memcached.sync()` (harness.py) does what it would. It sends the parent, the
observed children and the referenced Secrets through `memcached-hook replay` (the very code
behind /sync), applies the desired children with server-side apply, deletes observed children
that are no longer desired, and keeps the returned status as the parent's for the next sync.
`Memcached.create()` prints the children with `memcached-hook render`, as a user previewing the
Memcached sees them, and creates them through the first sync (render cannot see Secrets).

With PODS_METACONTROLLER=1 the hook runs as `memcached-hook serve` on 127.0.0.1, the repository's
CompositeController (metacontroller/base/) points Metacontroller at it, each Memcached is
applied with `kubectl apply` as a user would, Metacontroller creates and updates the children,
and `Memcached.sync()` reads back the status Metacontroller wrote for the current generation.
The scenarios are the same; their names and namespaces get a `metacontroller/` / `mc-` prefix.

Each scenario runs in a namespace of its own and prints `ok`/`FAIL` lines; a scenario that
raises stops there with one FAIL naming the exception. The last line is
`scenarios: N passed, M failed` (run.sh folds it into `pods: ...`). To add a scenario: write
`def scenario_x(t: Test)` with the helpers of harness.py and add it to SCENARIOS.
"""
import json
import os
import signal
import sys
import time
import traceback

from harness import (
    MEMCACHED_IMAGE,
    ROOT,
    Failed,
    kubectl,
    get,
    wait_until,
    Test,
    Namespace,
    Memcached,
    METACONTROLLER,
    serve_hook,
    kill_container,
    restarts,
    evict,
    ReadyWatch,
    SrvWatch,
    PodTimeline,
    srv_targets,
    crashloop,
    certs,
    tls_secrets,
    CA_ARGS,
    CLIENT_ARGS,
    auth,
    AUTH,
    listeners,
    served_serial,
    memory_cgroup,
    cgroup_value,
    FILL,
)
from incluster import scenario_in_cluster_api
from warm import scenario_warm_restart
from reload import scenario_reload_report
from zones import scenario_zones
from extstore import scenario_extstore
from migrate import scenario_migrate
from proxy import scenario_proxy
from upgrade import scenario_upgrade



def started(t: Test, mc, n):
    """Creates mc's children and the client pod; returns the n Ready pods (timed)."""
    start = time.monotonic()
    mc.create()
    mc.ns.client()
    pods = mc.wait_ready(n)
    t.time(f"apply to {n} Ready pods", time.monotonic() - start)
    return pods


def scenario_deployment(t: Test):
    """Deployment pods become Ready; a client pod sets and gets keys through the Service name;
    readiness becomes status (readyReplicas, Available, Ready), also when both pods' memcached
    is killed and comes back."""
    ns = Namespace("pods-deployment")
    try:
        refused, answer = ns.refuses_privileged()
        t.check("the namespace enforces Pod Security restricted: a privileged pod is refused", refused, answer)
        mc = Memcached(ns, "cache", {"replicas": 2, "image": MEMCACHED_IMAGE,
                                     "highAvailability": {"podDisruptionBudget": {"enabled": True}}})
        start = time.monotonic()
        rendered = mc.create()
        ns.client()
        pods = mc.wait_ready(2)
        t.time("apply to 2 Ready pods", time.monotonic() - start)
        diffs = mc.differences(rendered)
        t.check("what render printed is what was applied (no Secrets: same objects)", not diffs, "\n".join(diffs))
        t.check("2 pods Ready", len(pods) == 2)
        code, out = ns.container_sh(pods[0]["metadata"]["name"], "memcached",
                                    "busybox id -u; busybox id -g; busybox touch /written 2>&1; echo rc=$?")
        lines = out.split()
        t.check("memcached runs as uid and gid 11211 on a read-only root filesystem",
                lines[:2] == ["11211", "11211"] and "Read-only file system" in out and "rc=0" not in out, out[:300])
        st = mc.sync_until("status readyReplicas 2", lambda s: s.get("readyReplicas") == 2)
        t.check("status: readyReplicas 2, Available and Ready True",
                st.get("readyReplicas") == 2 and mc.condition("Available") == "True" and mc.condition("Ready") == "True",
                json.dumps(st, indent=1))
        t.check("status.serverList is the Service name", st.get("serverList") == [f"cache.{ns.name}:11211"],
                st.get("serverList"))
        # The serverList entry, as a client pod resolves it: the Ready pods' IPs.
        ips = sorted(p["status"]["podIP"] for p in pods)
        got = ns.resolve_until(st["serverList"][0].rsplit(":", 1)[0], ips)
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
        pods = started(t, mc, 3)
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

        try:  # CoreDNS follows the EndpointSlice within seconds of the pod turning Ready
            bad = wait_until("per-pod names resolve", lambda: not resolves_to_pods() or None, timeout=20) and []
        except Failed:
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


def restart_watched(mc, srv, names, stamp):
    """A rolling restart of mc's StatefulSet (pod-template annotation `stamp`) while the SRV name
    is looked up from the client pod, the pods are watched and their readiness polled, and the
    hook's answer is applied every second. Returns (SrvWatch, PodTimeline, lowest Ready, the
    ConfigMap resourceVersions seen, syncs, old pod UIDs)."""
    old = {p["metadata"]["name"]: p["metadata"]["uid"] for p in mc.pods()}
    spec = mc.obj["spec"]
    spec["podAnnotations"] = {"example.com/restarted-at": stamp}
    mc.update(spec)
    watch, timeline, ready = SrvWatch(mc.ns, srv, names), PodTimeline(mc), ReadyWatch(mc)
    versions, syncs = set(), 0

    def rolled():
        nonlocal syncs
        mc.sync()  # the hook's answer applied, the ConfigMap with it
        syncs += 1
        versions.add(get("configmap", "cache-servers", ns=mc.ns.name)["metadata"]["resourceVersion"])
        sts = get("statefulset", "cache", ns=mc.ns.name)["status"]
        return (sts.get("updateRevision") == sts.get("currentRevision") and sts.get("updatedReplicas") == 3
                and len(mc.ready_pods()) == 3)
    try:
        wait_until("the rolling restart to finish", rolled, timeout=240, interval=1)
        wait_until("the SRV name answers every pod again", lambda: srv_targets(mc.ns, srv)[0] == names, timeout=20)
        time.sleep(1)  # a last few lookups with every new pod in place
    finally:
        lowest_ready = ready.done()
        watch.done()
        timeline.done()
    return watch, timeline, lowest_ready, versions, syncs, old


def scenario_discovery(t: Test):
    """Server discovery through rolling restarts of a 3-pod StatefulSet with the server-list
    ConfigMap. A client pod sets and gets a key through each server of the ConfigMap's plain
    list, each on its own pod. While every pod is replaced (a pod-template annotation) the SRV
    name is looked up from the client pod every 0.2 s: with publishNotReadyAddresses an answer
    lacks a pod only while that pod has no IP (between the old pod's end and the new one's
    sandbox), never while it is merely not Ready (a lookup that gets no answer at all is counted
    apart); without it far more answers are short. The
    ConfigMap's resourceVersion does not change, though the hook's answer is applied at every
    step."""
    ns = Namespace("pods-discovery")
    try:
        spec = {"workload": "StatefulSet", "replicas": 3, "image": MEMCACHED_IMAGE,
                "service": {"publishNotReadyAddresses": True},
                "discovery": {"configMap": {"enabled": True}},
                "highAvailability": {"gracefulShutdown": {"enabled": True, "preStopDelaySeconds": 2,
                                                          "terminationGracePeriodSeconds": 10}}}
        mc = Memcached(ns, "cache", spec)
        pods = started(t, mc, 3)
        st = mc.sync_until("status readyReplicas 3", lambda s: s.get("readyReplicas") == 3)
        cm = get("configmap", "cache-servers", ns=ns.name)
        data = cm.get("data", {})
        want = [f"cache-{i}.cache.{ns.name}.svc:11211" for i in range(3)]
        t.check("ConfigMap cache-servers: the plain list is status.serverList, per-pod names in ordinal order",
                data.get("servers") == ",".join(want) and st.get("serverList") == want, json.dumps(data, indent=1))
        t.check("ConfigMap: every format key, the SRV name, no TLS key without TLS",
                sorted(data) == ["memcached-proxy-pools.lua", "oslo-cache-memcache-servers", "servers", "srv-name",
                                 "twemproxy-servers.yaml"] and data["srv-name"] == st.get("srvName"), sorted(data))
        # A client reads the plain list and uses every server in it: a key set through each
        # name is read back through that name and is on that very pod.
        ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in pods}
        for entry in data.get("servers", "").split(","):
            host, port = entry.rsplit(":", 1)
            pod = host.split(".")[0]
            code, out = ns.memcached(host, [f"set via-{pod} 0 0 {len(pod)}", pod, f"get via-{pod}"], port=int(port))
            t.check(f"client pod: set and get through {entry}", "STORED" in out
                    and f"VALUE via-{pod} 0 {len(pod)}" in out, out)
            code, out = ns.memcached(ips[pod], [f"get via-{pod}"])
            t.check(f"the key set through {host} is on pod {pod} ({ips[pod]})", f"VALUE via-{pod}" in out, out)
        srv = f"{st.get('srvName')}.cluster.local"
        names = [f"cache-{i}.cache.{ns.name}.svc.cluster.local" for i in range(3)]
        try:
            got, answer = wait_until("3 SRV targets", lambda: (lambda r: r if r[0] == names else None)(
                srv_targets(ns, srv)), timeout=20)
        except Failed:
            got, answer = srv_targets(ns, srv)
        t.check(f"SRV {srv} answers the 3 per-pod names in the client pod", got == names, answer)
        rv = cm["metadata"]["resourceVersion"]
        start = time.monotonic()
        watch, timeline, lowest_ready, versions, syncs, old = restart_watched(mc, srv, names, "1")
        t.time("rolling restart of 3 pods", time.monotonic() - start)
        after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in mc.pods()}
        t.check("every pod was replaced under its name",
                sorted(after) == sorted(old) and all(after[n] != old[n] for n in after), after)
        t.check(f"during the restart pods were not Ready (lowest Ready {lowest_ready})",
                lowest_ready is not None and lowest_ready < 3)
        low = watch.low()
        unexplained = [(at, sorted(set(names) - set(got)), answer) for at, got, answer in low
                       if not all(timeline.absent(h, at) for h in set(names) - set(got))]
        gone = sorted({h.split(".")[0] for _, got, _ in low for h in set(names) - set(got)})
        t.check(f"SRV lookups during the restart with publishNotReadyAddresses: {len(watch.answered())} answers "
                f"({len(watch.failed())} lookups unanswered), lowest {watch.lowest()} targets, {len(low)} short, "
                f"at most {watch.longest_short()} s in a row "
                f"(missing {', '.join(gone) or 'none'}); each missing target a pod without an IP at that moment "
                f"({len(timeline.states)} pod events)",
                len(watch.answered()) >= 20 and not unexplained,
                "\n".join(f"at {at}: missing {m}: {a.replace(chr(10), ' | ')[:400]}" for at, m, a in unexplained[:5]))
        versions.add(get("configmap", "cache-servers", ns=ns.name)["metadata"]["resourceVersion"])
        t.check(f"ConfigMap resourceVersion {rv} unchanged across the restart ({syncs} syncs applied)",
                versions == {rv} and syncs >= 5, sorted(versions))
        t.check("ConfigMap data unchanged", get("configmap", "cache-servers", ns=ns.name).get("data") == data)
        # The same restart without publishNotReadyAddresses: not-Ready pods leave the answer too.
        spec = mc.obj["spec"]
        spec["service"]["publishNotReadyAddresses"] = False
        mc.update(spec)
        mc.sync()
        wait_until("the Service without publishNotReadyAddresses", lambda: not get(
            "service", "cache", ns=ns.name)["spec"].get("publishNotReadyAddresses"), timeout=30)
        control, control_timeline, _, versions, syncs, _ = restart_watched(mc, srv, names, "2")
        control_low = control.low()
        listed_but_dropped = [at for at, got, _ in control_low
                              if not all(control_timeline.absent(h, at, before=0.5) for h in set(names) - set(got))]
        t.check(f"without publishNotReadyAddresses: {len(control.answered())} answers, lowest {control.lowest()} "
                f"targets, {len(control_low)} short ({len(listed_but_dropped)} while the missing pod had an IP), at most "
                f"{control.longest_short()} s in a row, "
                f"against {len(low)} short with it", len(control_low) > len(low) and listed_but_dropped)
        versions.add(get("configmap", "cache-servers", ns=ns.name)["metadata"]["resourceVersion"])
        t.check(f"ConfigMap resourceVersion {rv} unchanged across the second restart ({syncs} syncs)",
                versions == {rv})
    finally:
        ns.close()


def scenario_drain(t: Test):
    """The eviction API (what `kubectl drain` calls) honours the PDB the hook renders: one
    eviction at a time while the replacement is not Ready; with the shipped
    unhealthyPodEvictionPolicy (AlwaysAllow) a not-Ready pod is evicted even while the budget is
    exhausted, a Ready one is refused; under IfHealthyBudget the same drain waits. A rolling
    update keeps the budget too."""
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
        t.check("the PDB sets unhealthyPodEvictionPolicy AlwaysAllow (the default)",
                pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow", pdb["spec"])
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
        mc.wait_ready(3, timeout=90)
        # Two pods not Ready: 1 healthy < minAvailable 2, the budget is exhausted. Under
        # AlwaysAllow the not-Ready pods can still be evicted (a drain never waits on them) and the
        # Ready one cannot.
        names = sorted(p["metadata"]["name"] for p in mc.pods())
        crashloop(mc, names[0], names[1])
        okay, msg = evict(ns, names[2])
        t.check("with two of three pods not Ready: evicting the Ready pod is refused", not okay
                and "disruption budget" in msg, msg)
        okay, msg = evict(ns, names[0])
        t.check("with two of three pods not Ready: evicting a not-Ready pod is allowed (AlwaysAllow: the "
                "drain does not wait for it)", okay, msg)
        mc.wait_ready(3, timeout=120)
        # The same under IfHealthyBudget: the not-Ready pods cannot be evicted either.
        spec = mc.obj["spec"]
        spec["highAvailability"]["podDisruptionBudget"]["unhealthyPodEvictionPolicy"] = "IfHealthyBudget"
        mc.update(spec)
        mc.sync()
        wait_until("PDB under IfHealthyBudget", lambda: get("pdb", "cache", ns=ns.name)["spec"].get(
            "unhealthyPodEvictionPolicy") == "IfHealthyBudget", timeout=30)
        names = sorted(p["metadata"]["name"] for p in mc.pods())
        crashloop(mc, names[0], names[1])
        okay, msg = evict(ns, names[0])
        t.check("IfHealthyBudget, two of three pods not Ready: evicting a not-Ready pod is refused (the "
                "drain waits for them)", not okay and "disruption budget" in msg, msg)
        mc.wait_ready(3, timeout=120)
        # Rolling update of the Deployment (a new -m): Ready pods never below minAvailable.
        spec = mc.obj["spec"]
        spec["memcached"] = {"maxMemoryMB": 80}
        mc.update(spec)
        watch = ReadyWatch(mc)
        start = time.monotonic()
        mc.sync()
        try:
            mc.wait_ready(3, timeout=180)
        finally:
            lowest = watch.done()
        t.time("rolling update of 3 pods", time.monotonic() - start)
        t.check(f"Deployment rolling update: Ready pods never below minAvailable 2 (lowest {lowest}, "
                f"{watch.samples} samples)", lowest is not None and lowest >= 2 and watch.samples > 5)
        t.check("after the update every pod runs -m 80",
                all("80" in p["spec"]["containers"][0]["args"] for p in mc.pods()))
    finally:
        ns.close()


def scrape(ns, ip, port, want, timeout=30):
    """GET /metrics from the client pod until it holds `want` (a listener may still be starting);
    returns the last answer."""
    last = [""]

    def once():
        last[0] = ns.http_get(ip, port, "/metrics")[1]
        return want in last[0]
    try:
        wait_until(f"{want!r} on {ip}:{port}/metrics", once, timeout=timeout, interval=2)
    except Failed:
        pass
    return last[0]


def scenario_secure(t: Test):
    """SASL, TLS and mTLS pods become Ready and serve a client pod through the Service; a SASL
    password rotated in place (SIGHUP across the shared process namespace); under strict TLS no
    port of a pod IP answers plaintext memcached; the reload agent's metrics are scraped from the
    client pod."""
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
            # With monitoring on, the metrics sidecar under SASL is the hook's own stats exporter.
            "sasl": Memcached(ns, "sasl", {**img, "monitoring": {"enabled": True}, "security": {
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
        code, out = ns.memcached(f"sasl.{ns.name}", ["get x"], pause=1)
        t.check("sasl: a client without credentials is refused", "VALUE" not in out and "ERROR" in out, out)
        code, out = ns.memcached(f"sasl.{ns.name}", [*AUTH, "set k 0 0 2", "v1", "get k"])
        t.check("sasl: a client with the password sets and gets", "VALUE k 0 2" in out, out)
        sasl_ip = mcs["sasl"].ready_pods()[0]["status"]["podIP"]
        out = scrape(ns, sasl_ip, 9150, "memcached_up 1")
        t.check("sasl: the metrics sidecar, scraped from the client pod, reports the cache up (it logs in)",
                "memcached_up 1" in out and "memcached_current_connections" in out and "s3cret" not in out,
                out[:800])
        # SASL alone under Reload: the agent sends SIGHUP to memcached across the shared process
        # namespace; the same memcached then takes the new password and refuses the old one.
        pod = mcs["sasl"].ready_pods()[0]
        t.check("sasl: the pod shares its process namespace (the agent signals memcached)",
                pod["spec"].get("shareProcessNamespace") is True)
        start = time.monotonic()
        ns.secret("sasl", {"password-file": "app:n3wpass\n"})
        mcs["sasl"].sync()
        host = f"sasl.{ns.name}"
        wait_until("sasl: the new password accepted", lambda: "VALUE k 0 2" in ns.memcached(
            host, [*auth("n3wpass"), "get k"])[1], timeout=90, interval=2)
        t.time("SASL alone: Secret update to the new password accepted", time.monotonic() - start)
        code, out = ns.memcached(host, [*AUTH, "get k"], pause=1)
        t.check("sasl: after the rotation the old password is refused", "VALUE" not in out and "ERROR" in out, out)
        out = scrape(ns, sasl_ip, 9150, "memcached_up 1")
        t.check("sasl: after the rotation the metrics sidecar still logs in (the cache up, no password shown)",
                "memcached_up 1" in out and "n3wpass" not in out, out[:800])
        after = mcs["sasl"].pods()
        t.check("sasl: same pod, memcached not restarted, the key kept",
                [p["metadata"]["uid"] for p in after] == [pod["metadata"]["uid"]] and restarts(after[0]) == 0)
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
            socks = listeners(pod)
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
            out = scrape(ns, ip, 9151, "reload")
            t.check(f"{name}: the reload agent's metrics scraped from the client pod",
                    "reload" in out and " 200 " in out, out[:600])
    finally:
        ns.close()


def scenario_rotation(t: Test):
    """Secret rotation under Reload in a real pod: the kubelet refreshes the volume, the reload
    agent applies it; same pod UID, same memcached process (keys kept), new clients see the new
    certificate, the old password is refused. The SASL Secret is written as `stringData` without a
    last newline: the whole password logs in and the agent (logged in with it) applies a
    certificate rotated alone. A new CA rolls the pod. Under RollingRestart the pods roll."""
    ns = Namespace("pods-rotation")
    try:
        c = certs(ns.name, "cache", 11)
        ns.secret("cache-tls", {"tls.crt": c["tls.crt"], "tls.key": c["tls.key"], "ca.crt": c["ca.crt"]})
        ns.secret("client-tls", {"tls.crt": c["client.crt"], "tls.key": c["client.key"], "ca.crt": c["ca.crt"]})
        # As a user writes it: stringData, no last newline (memcached 1.6.18 would load "s3cre").
        ns.secret("cache-sasl", {"password-file": "app:s3cret"}, string_data=True)
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
        code, out = ns.memcached(host, [*auth("s3cre"), "get before"], tls=CLIENT_ARGS, pause=1)
        t.check("the password less its last byte is refused", "VALUE before" not in out and "ERROR" in out, out)
        code, out = ns.container_sh(pod["metadata"]["name"], "memcached",
                                    "busybox stat -c %a /run/memcached/sasl/password-file; busybox cat /proc/mounts")
        t.check("memcached reads its copy of the auth file, mode 444, on an in-memory volume",
                out.startswith("444") and any(line.split()[1:3] == ["/run/memcached/sasl", "tmpfs"]
                                              for line in out.splitlines()[1:] if len(line.split()) > 2),
                out[:200] if not out.startswith("444") else "444, tmpfs")
        t.check("the served certificate is the first one (serial 0B)", served_serial(ns, host) == "0B",
                served_serial(ns, host))
        # Rotate the certificate alone: the agent logs in with the whole password to apply it.
        c2 = certs(ns.name, "cache", 12, ca=c)
        start = time.monotonic()
        ns.secret("cache-tls", {"tls.crt": c2["tls.crt"], "tls.key": c2["tls.key"], "ca.crt": c["ca.crt"]})
        mc.sync()  # Metacontroller syncs on a related Secret's change
        wait_until("the new certificate served", lambda: served_serial(ns, host) == "0C", timeout=120, interval=2)
        t.time("Secret update to the new certificate served", time.monotonic() - start)
        t.check("the certificate rotated alone is served (serial 0C)", served_serial(ns, host) == "0C")
        # Then a new password, again stringData without a last newline.
        start = time.monotonic()
        ns.secret("cache-sasl", {"password-file": "app:n3wpass"}, string_data=True)
        mc.sync()
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
        code, out = ns.memcached(host, [*AUTH, "get before"], tls=CLIENT_ARGS, pause=1)
        t.check("the old password is refused", "VALUE before" not in out and "ERROR" in out, out)
        code, out = ns.memcached(host, [*auth("n3wpas"), "get before"], tls=CLIENT_ARGS, pause=1)
        t.check("the new password less its last byte is refused", "VALUE before" not in out and "ERROR" in out, out)
        code, out = ns.http_get(after[0]["status"]["podIP"], 9151, "/metrics")
        t.check("the reload agent counts the reloads, none failed",
                'what="tls",outcome="success"}' in out and 'what="auth",outcome="failure"} 0' in out
                and 'what="tls",outcome="failure"} 0' in out, out[:1200])
        # A new CA: memcached never stops trusting a CA it loaded, so the hook rolls the pod.
        c3 = certs(ns.name, "cache", 13)
        uid = after[0]["metadata"]["uid"]
        start = time.monotonic()
        ns.secret("client-tls", {"tls.crt": c3["client.crt"], "tls.key": c3["client.key"], "ca.crt": c3["ca.crt"]})
        ns.secret("cache-tls", {"tls.crt": c3["tls.crt"], "tls.key": c3["tls.key"], "ca.crt": c3["ca.crt"]})
        mc.sync()
        wait_until("a new pod after the CA rotation", lambda: any(
            p["metadata"]["uid"] != uid for p in mc.ready_pods()) and len(mc.pods()) == 1, timeout=120)
        t.time("new CA: Secret update to a new Ready pod", time.monotonic() - start)
        wait_until("the client pod sees the new CA", lambda: ns.sh("cat /secrets/client-tls/ca.crt")[1].strip()
                   == c3["ca.crt"].strip(), timeout=90, interval=2)
        serial = wait_until("the new CA's certificate served", lambda: (lambda v: v == "0D" and v)(
            served_serial(ns, host)), timeout=60, interval=2)
        t.check("new CA: the pod rolled (new UID) and serves the certificate of the new CA", serial == "0D")
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
        # The Service name follows the new pod once the EndpointSlice and CoreDNS have it.
        try:
            out = wait_until("the new pod answers through the Service name", lambda: (lambda o: "VERSION" in o and o)(
                ns.memcached(host, [*auth("th1rdpw"), "version"], tls=CLIENT_ARGS)[1]), timeout=30, interval=1)
        except Failed as e:
            out = str(e)
        t.check("RollingRestart: the pod rolled and takes the new password", "VERSION" in out, out)
    finally:
        ns.close()


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
    "discovery": scenario_discovery,
    "drain": scenario_drain,
    "secure": scenario_secure,
    "rotation": scenario_rotation,
    "limits": scenario_limits,
    "warm-restart": scenario_warm_restart,
    "in-cluster-api": scenario_in_cluster_api,
    "reload-report": scenario_reload_report,
    "zones": scenario_zones,
    "extstore": scenario_extstore,
    "migrate": scenario_migrate,
    "proxy": scenario_proxy,
    "upgrade": scenario_upgrade,
}


def main(argv):
    names = argv or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenario(s): {' '.join(unknown)}; known: {' '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    t = Test()
    hook = None
    # Installed with the hook (deploy/hook/): what the reload agents' RoleBindings grant.
    kubectl("apply", "-f", os.path.join(ROOT, "deploy", "hook", "reload-agent-clusterrole.yaml"))
    if METACONTROLLER:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the hook
        t.scenario = "metacontroller"
        try:
            hook = serve_hook()
        except Exception as e:  # no scenario can run without the hook and the CompositeController
            t.check("memcached-hook serve on 127.0.0.1 and the CompositeController applied", False,
                    f"{type(e).__name__}: {e}")
            names = []
    try:
        for n in names:
            t.scenario = f"metacontroller/{n}" if METACONTROLLER else n
            start = time.monotonic()
            print(f"--- scenario {t.scenario}", flush=True)
            try:
                SCENARIOS[n](t)
            except Exception as e:  # a scenario stops at its first broken precondition
                t.check("ran to the end", False, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
            t.time("scenario", time.monotonic() - start)
    finally:
        if hook:
            hook.stop()
    if t.failures:
        print("failures:")
        for f in t.failures:
            print(f"  {f}")
    print(f"scenarios: {t.passed} passed, {t.failed} failed")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
