"""The reload-report scenario of the pods phase (pods.py runs it as `reload-report`).

With the hook's --relate-pods and Secrets reloaded in place, each pod runs as the Memcached's
ServiceAccount `<name>-reload-agent`, and its reload agent writes the condition
`memcached.c5c3.io/SecretReload` on its own Pod through the API server, with only the token the
agent container mounts. A certificate that does not match its key is refused by every agent:
their pods say so, stay Ready and keep serving the previous certificate, and the Memcached's
`SecretReload` goes False/ReloadFailed naming them (under Metacontroller, through its watch of the
related pods, without any spec change). A good certificate then returns both to True.
"""
import time

from harness import (MEMCACHED_IMAGE, Memcached, Namespace, Test, certs, get, served_serial,
                     wait_until)

CONDITION = "memcached.c5c3.io/SecretReload"
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def agent_condition(pod):
    """The reload agent's condition on the pod (live), or None."""
    live = get("pod", pod["metadata"]["name"], ns=pod["metadata"]["namespace"], check=False) or {}
    return next((c for c in live.get("status", {}).get("conditions", []) if c["type"] == CONDITION), None)


def all_report(mc, status, timeout=90):
    """Waits until every pod of mc carries the agent's condition with `status`; returns them."""
    def reported():
        pods = mc.ready_pods()
        conds = [agent_condition(p) for p in pods]
        ok = pods and all(c and c["status"] == status for c in conds)
        return ok and list(zip(pods, conds))
    return wait_until(f"every pod's {CONDITION} {status}", reported, timeout=timeout, interval=2)


def memcached_condition(status, type_):
    return next((c for c in status.get("conditions", []) if c["type"] == type_), None)


def scenario_reload_report(t: Test):
    ns = Namespace("pods-reload-report")
    try:
        c1 = certs(ns.name, "cache", 21)
        ns.secret("cache-tls", {"tls.crt": c1["tls.crt"], "tls.key": c1["tls.key"]})
        ns.secret("client-tls", {"tls.crt": c1["client.crt"], "tls.key": c1["client.key"], "ca.crt": c1["ca.crt"]})
        spec = {"replicas": 2, "image": MEMCACHED_IMAGE, "security": {
            "tls": {"enabled": True, "certificateSecretRef": {"name": "cache-tls"}, "allowPlaintext": False},
            "secretRotation": "Reload"}}
        mc = Memcached(ns, "cache", spec)
        start = time.monotonic()
        mc.create()
        ns.client(volumes=("client-tls",))
        pods = mc.wait_ready(2)
        mc.sync()
        account = {p["spec"].get("serviceAccountName") for p in pods}
        t.check("the pods run as the ServiceAccount cache-reload-agent", account == {"cache-reload-agent"}, account)
        binding = get("rolebinding", "cache-reload-agent", ns=ns.name, check=False) or {}
        t.check("its RoleBinding grants the ClusterRole memcached-hook-reload-agent",
                binding.get("roleRef", {}).get("name") == "memcached-hook-reload-agent", binding.get("roleRef"))
        reports = all_report(mc, "True")
        t.time("apply to every agent's condition True", time.monotonic() - start)
        t.check("each agent wrote True/Reloaded on its own pod",
                all(c["reason"] == "Reloaded" for _, c in reports), [c for _, c in reports])
        kubelet_kept = all(any(c["type"] == "Ready" and c["status"] == "True"
                               for c in get("pod", p["metadata"]["name"], ns=ns.name)["status"]["conditions"])
                           for p, _ in reports)
        t.check("the kubelet's own conditions are kept (Ready True)", kubelet_kept)
        name = pods[0]["metadata"]["name"]
        code, out = ns.container_sh(name, "memcached", f"busybox ls {TOKEN_DIR} 2>&1; echo rc=$?")
        t.check("memcached has no API token mounted", "rc=0" not in out and "token" not in out, out[:200])
        host = f"cache.{ns.name}"
        t.check("the first certificate is served (serial 15)", served_serial(ns, host) == "15", served_serial(ns, host))

        # A certificate that does not match its key: every agent refuses it, memcached keeps serving.
        c2 = certs(ns.name, "cache", 22, ca=c1)
        start = time.monotonic()
        ns.secret("cache-tls", {"tls.crt": c2["tls.crt"], "tls.key": c1["tls.key"]})
        reports = all_report(mc, "False", timeout=120)
        t.time("Secret update to every agent's condition False", time.monotonic() - start)
        t.check("each agent wrote False/ReloadFailed with a tls reason",
                all(c["reason"] == "ReloadFailed" and c.get("message", "").startswith("tls") for _, c in reports),
                [c for _, c in reports])
        status = mc.sync_until("SecretReload False in the Memcached's status", lambda st: (
            (memcached_condition(st, "SecretReload") or {}).get("status") == "False"), timeout=90)
        t.time("Secret update to SecretReload False in the status", time.monotonic() - start)
        c = memcached_condition(status, "SecretReload")
        names = sorted(p["metadata"]["name"] for p, _ in reports)
        t.check("SecretReload False/ReloadFailed names both pods",
                c["reason"] == "ReloadFailed" and "in 2 of 2 pods" in c["message"]
                and all(n in c["message"] for n in names), c)
        t.check("the pods stay Ready and serve the previous certificate (serial 15)",
                len(mc.ready_pods()) == 2 and served_serial(ns, host) == "15", served_serial(ns, host))

        # A good certificate: the agents apply it and the condition returns.
        c3 = certs(ns.name, "cache", 23, ca=c1)
        start = time.monotonic()
        ns.secret("cache-tls", {"tls.crt": c3["tls.crt"], "tls.key": c3["tls.key"]})
        all_report(mc, "True", timeout=120)
        status = mc.sync_until("SecretReload True again", lambda st: (
            (memcached_condition(st, "SecretReload") or {}).get("reason") == "InPlace"), timeout=90)
        t.time("good Secret to SecretReload InPlace", time.monotonic() - start)
        t.check("a good certificate: SecretReload back to True/InPlace, serial 17 served",
                memcached_condition(status, "SecretReload")["status"] == "True" and served_serial(ns, host) == "17",
                served_serial(ns, host))
        t.check("no pod restarted", all(p["metadata"]["uid"] in {q["metadata"]["uid"] for q in pods}
                                        for p in mc.pods()))
    finally:
        ns.close()

