"""The migrate scenario: a Memcached run by the reference operator handed to Metacontroller and the
hook, as docs/install.md ("Migrating from the reference operator") describes it.

The reference operator is not part of the repository: it runs only when REFERENCE_OPERATOR_BIN (its
manager, built by hand) and REFERENCE_OPERATOR_CRD (its CRD file) are set, and under Metacontroller;
otherwise the scenario prints one SKIPPED line. Steps: the CompositeController is taken away and
the reference's CRD applied; the reference creates a Memcached of 2 pods and 200 keys are written
through its Service; the reference is stopped, our CRD applied and the CompositeController
applied again. Metacontroller releases the reference's children (they lack its controller-uid
label) and cannot create its own under the same names, so the Memcached does not become Ready;
once the children carry `controller-uid=<the Memcached's UID>` Metacontroller adopts them. The
hook answers the adopted Deployment's pod template as it runs (it carries no mark of the hook:
docs/behaviour.md, "Pod templates across hook releases"), so the pods serve on, unchanged, and
the Memcached is Ready. What the cache keeps is measured: the same pods (UIDs) and every key.
The owner's first change of the spec then rolls the pods onto the hook's rendering.
"""
import json
import os
import signal
import subprocess
import time

from harness import (
    MEMCACHED_IMAGE,
    METACONTROLLER,
    PARENT,
    ROOT,
    WORK,
    Namespace,
    Test,
    get,
    kubectl,
    pod_ready,
    wait_until,
)

REF_BIN = os.environ.get("REFERENCE_OPERATOR_BIN", "")
REF_CRD = os.environ.get("REFERENCE_OPERATOR_CRD", "")
KEYS = 200
CHILDREN = "deployment,service,poddisruptionbudget"
# The reference operator watches ServiceMonitors and exits when their kind is unknown.
SERVICE_MONITOR_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
    "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
             "names": {"kind": "ServiceMonitor", "listKind": "ServiceMonitorList", "plural": "servicemonitors",
                       "singular": "servicemonitor"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def pods(ns):
    """name -> (uid, ready) of the Memcached's pods that are not being deleted."""
    return {p["metadata"]["name"]: (p["metadata"]["uid"], pod_ready(p))
            for p in get("pods", ns=ns.name, selector="app.kubernetes.io/instance=cache")["items"]
            if not p["metadata"].get("deletionTimestamp")}


def count(ns, host, script, pattern):
    _, out = ns.sh(f"({script}) | nc -w 5 {host} 11211 | grep -c '{pattern}'", timeout=60)
    first = out.strip().splitlines()[:1]
    return int(first[0]) if first and first[0].isdigit() else -1


def write(ns, host):
    return count(ns, host, f"i=0; while [ $i -lt {KEYS} ]; do printf 'set k%d 0 0 5\\r\\nhello\\r\\n' $i; "
                           "i=$((i+1)); done; printf 'quit\\r\\n'", "^STORED")


def read(ns, host):
    return count(ns, host, f"i=0; while [ $i -lt {KEYS} ]; do printf 'get k%d\\r\\n' $i; i=$((i+1)); done; "
                           "printf 'quit\\r\\n'", "^VALUE")


def conditions(ns):
    live = get(PARENT, "cache", ns=ns.name)
    return {c["type"]: c["status"] for c in live.get("status", {}).get("conditions", [])}


def owned(ns):
    """Kind/name -> whether the Memcached is its controller, for the Deployment and the Service."""
    out = {}
    for kind in ("deployments.apps", "services"):
        for o in get(kind, ns=ns.name)["items"]:
            refs = o["metadata"].get("ownerReferences", [])
            out[f"{kind}/{o['metadata']['name']}"] = any(r.get("controller") for r in refs)
    return out


def rolled(ns, before):
    """The hook's pods, none of `before`, rolled out and Ready, and the Memcached Ready."""
    if set(before) & set(pods(ns)):
        return False
    return settled(ns)


def settled(ns):
    """The Deployment's 2 pods updated and Ready at its generation, and the Memcached Ready."""
    d = get("deployment", "cache", ns=ns.name)
    st = d.get("status", {})
    return (st.get("observedGeneration") == d["metadata"]["generation"]
            and st.get("updatedReplicas") == st.get("readyReplicas") == st.get("replicas") == 2
            and conditions(ns).get("Ready") == "True" and len(pods(ns)) == 2)


def scenario_migrate(t: Test):
    """A Memcached of the reference operator handed to Metacontroller and the hook (see the
    module's docstring)."""
    if not (METACONTROLLER and REF_BIN and REF_CRD):
        print("SKIPPED migrate: needs Metacontroller and a reference operator built by hand "
              "(REFERENCE_OPERATOR_BIN, REFERENCE_OPERATOR_CRD)", flush=True)
        return
    cc = get("compositecontrollers.metacontroller.k8s.io")["items"][0]
    cc = {"apiVersion": cc["apiVersion"], "kind": cc["kind"], "metadata": {"name": cc["metadata"]["name"]},
          "spec": cc["spec"]}
    kubectl("delete", "compositecontrollers.metacontroller.k8s.io", cc["metadata"]["name"])
    kubectl("apply", "--server-side", "--force-conflicts", "-f", REF_CRD)
    kubectl("apply", "-f", "-", stdin=json.dumps(SERVICE_MONITOR_CRD))
    log = open(os.path.join(WORK, "reference-operator.log"), "w")
    ref = subprocess.Popen([REF_BIN, "--enable-webhooks=false", "--metrics-bind-address=0",
                            "--health-probe-bind-address=127.0.0.1:18081", "--leader-elect=false"],
                           stdout=log, stderr=subprocess.STDOUT)
    ns = Namespace("migrate")
    cc_back = False
    try:
        # The reference's pods set no security context: Pod Security `restricted` refuses them.
        kubectl("label", "namespace", ns.name, "pod-security.kubernetes.io/enforce=privileged", "--overwrite")
        mc = {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
              "metadata": {"name": "cache", "namespace": ns.name},
              "spec": {"replicas": 2, "image": MEMCACHED_IMAGE, "memcached": {"maxMemoryMB": 64}}}
        kubectl("apply", "-f", "-", stdin=json.dumps(mc))
        ns.client()
        wait_until("the reference's 2 pods Ready", lambda: sum(r for _, r in pods(ns).values()) == 2, timeout=120)
        host = f"cache.{ns.name}.svc"
        t.check(f"reference: {KEYS} keys written through its Service", write(ns, host) == KEYS)
        before = pods(ns)

        ref.send_signal(signal.SIGTERM)
        ref.wait(timeout=30)
        kubectl("apply", "--server-side", "--force-conflicts", "-f", os.path.join(ROOT, "deploy", "crd", "crd.yaml"))
        kubectl("apply", "-f", "-", stdin=json.dumps(cc))
        cc_back = True
        wait_until("Metacontroller released the reference's Deployment and Service",
                   lambda: not any(owned(ns).values()), timeout=60)
        time.sleep(20)
        t.check("without the controller-uid label: children released, the Memcached not Ready after 20 s, "
                "the reference's pods untouched",
                conditions(ns).get("Ready") != "True" and pods(ns) == before,
                {"conditions": conditions(ns), "pods": pods(ns)})
        ready = {c["type"]: c for c in get(PARENT, "cache", ns=ns.name).get("status", {}).get("conditions", [])}
        ready = ready.get("Ready", {})
        print(f"     migrate: Ready {ready.get('reason')}: {ready.get('message')}", flush=True)
        t.check("without the label: Ready says why (ChildNameTaken: held by no one)",
                ready.get("reason") == "ChildNameTaken" and "controlled by no one" in ready.get("message", ""), ready)

        uid = get(PARENT, "cache", ns=ns.name)["metadata"]["uid"]
        start = time.monotonic()
        kubectl("label", CHILDREN, "-n", ns.name, "-l", "app.kubernetes.io/instance=cache",
                f"controller-uid={uid}", "--overwrite")
        wait_until("Metacontroller adopted the Deployment and the Service, the Memcached Ready",
                   lambda: all(owned(ns).values()) and settled(ns), timeout=180)
        t.time("label to Ready under the hook", time.monotonic() - start)
        # Time for several more syncs: nothing may roll later either.
        time.sleep(20)
        after = pods(ns)
        kept = read(ns, host)
        print(f"     migrate: pods {sorted(before)} -> {sorted(after)}; keys read back {kept}/{KEYS}", flush=True)
        t.check("adopted: the reference's pods serve on unchanged (same names and UIDs)", after == before,
                {"before": before, "after": after})
        t.check(f"adopted: every key kept ({kept} of {KEYS})", kept == KEYS)
        up = {c["type"]: c for c in get(PARENT, "cache", ns=ns.name).get("status", {}).get("conditions", [])}
        t.check("UpToDate False: the pods run another rendering than the hook's",
                up.get("UpToDate", {}).get("status") == "False", up.get("UpToDate"))

        kubectl("patch", PARENT, "cache", "-n", ns.name, "--type=merge",
                "-p", json.dumps({"spec": {"memcached": {"maxMemoryMB": 96}}}))
        start = time.monotonic()
        wait_until("the owner's first change rolled the pods onto the hook's rendering",
                   lambda: rolled(ns, before), timeout=180)
        t.time("first spec change to Ready, pods rolled", time.monotonic() - start)
        template = get("deployment", "cache", ns=ns.name)["spec"]["template"]
        t.check("rolled: the pods run the hook's rendering (its security context)",
                bool(template["spec"].get("securityContext", {}).get("runAsNonRoot")), template["spec"])
    finally:
        if ref.poll() is None:
            ref.kill()
            ref.wait(timeout=10)
        kubectl("apply", "--server-side", "--force-conflicts", "-f",
                os.path.join(ROOT, "deploy", "crd", "crd.yaml"), check=False)
        if not cc_back:
            kubectl("apply", "-f", "-", stdin=json.dumps(cc), check=False)
        ns.close()
