"""The upgrade scenario: the hook upgraded under running caches restarts none of them
(docs/install.md, "Upgrading"; docs/behaviour.md, "Pod templates across hook releases").

The hook serves with its own image at tag A as the reload agent's image and the node's memcached
image as its default one. Five caches run on it, none naming an image: a Deployment, a
StatefulSet with warm restart, a TLS cache with the reload agent, a SASL cache, and a zoned cache
(its zone-a pod on the real node, zone-b and zone-c on KWOK nodes). 100 keys go into every real
pod. Then the hook is "upgraded": both images are tagged anew in the node's containerd (tag B)
and the hook restarts on the same port with them, as a release with a new own image and a new
default memcached would. With the CompositeController resyncing every RESYNC seconds, after three
periods (each cache synced by the new hook at least three times) every pod has its UID and
restart counts, every key is there, no workload's generation or pod template moved, and each
Memcached's `UpToDate` is False (`NewRendering`) naming the image changes. Last, a rollout of the
TLS cache is requested with the restart-trigger annotation: its pod rolls onto tag B and its
`UpToDate` turns True, while the other caches keep their pods.

Only under Metacontroller (without it one SKIPPED line): the resyncs and the written status are
Metacontroller's.
"""
import json
import os
import shutil
import time
import urllib.request

from harness import (
    CA_ARGS,
    HOOK_IMAGE,
    MEMCACHED_IMAGE,
    METACONTROLLER,
    PARENT,
    WORK,
    Failed,
    Memcached,
    Namespace,
    Test,
    auth,
    certs,
    ctr,
    get,
    hook_args,
    kubectl,
    restart_hook,
    tls_secrets,
    wait_until,
)
from zones import KWOK_TAINT, ZONE_LABEL

KEYS = 100
RESYNC = 10  # resyncPeriodSeconds of the CompositeController while the scenario runs
CONTROLLER = "compositecontrollers.metacontroller.k8s.io/memcached-controller"
TRIGGER = "memcached.c5c3.io/restart-trigger"
CLASS = "pods-upgrade"
PASSWORD = "s3cret"
ZONES = ["zone-a", "zone-b", "zone-c"]


def tag_b(image):
    """The image's tag B: its tag with `-next` appended."""
    return f"{image}-next"


def retag(image):
    """Tags `image` anew in the node's containerd (tag B, as a new release's image would be
    present); returns the new name."""
    names = ctr("images", "ls", "-q").stdout.split()
    source = next((n for n in names if n in (image, f"docker.io/{image}")), None)
    if source is None:
        raise Failed(f"{image} is not in the node's containerd ({len(names)} images)")
    ctr("images", "tag", "--force", source, source.replace(image, tag_b(image)))
    return tag_b(image)


def syncs(hook):
    """The /sync calls the hook answered (200 or 304) since it started."""
    with urllib.request.urlopen(f"http://127.0.0.1:{hook.port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("memcached_hook_http_requests_total{") and 'route="/sync"' in line
               and ('code="200"' in line or 'code="304"' in line))


def pod_state(mcs):
    """Pod name -> (UID, the restart count of each container), of every cache."""
    out = {}
    for mc in mcs:
        for p in mc.pods():
            statuses = p["status"].get("initContainerStatuses", []) + p["status"].get("containerStatuses", [])
            out[p["metadata"]["name"]] = (p["metadata"]["uid"], {c["name"]: c["restartCount"] for c in statuses})
    return out


def workloads(ns):
    """Kind/name -> every Deployment and StatefulSet."""
    items = get("deployments.apps,statefulsets.apps", ns=ns.name)["items"]
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in items}


def differ(b, a, path, out):
    """The paths at which a differs from b, with both values, into out."""
    if isinstance(b, dict) and isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            differ(b.get(k), a.get(k), f"{path}.{k}", out)
    elif isinstance(b, list) and isinstance(a, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(b, a)):
            differ(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {json.dumps(b)[:150]} -> {json.dumps(a)[:150]}")


def moved(before, after):
    """What moved of each workload of `before` in `after`: generation, pod template, the rest of
    the spec, annotations (by key); {} when nothing did."""
    out = {}
    for key, b in before.items():
        a = after.get(key)
        if a is None:
            out[key] = "gone"
            continue
        changes = []
        if a["metadata"]["generation"] != b["metadata"]["generation"]:
            changes.append(f"generation {b['metadata']['generation']} -> {a['metadata']['generation']}")
        if a["spec"]["template"] != b["spec"]["template"]:
            changes.append("pod template")
        rest = lambda o: {k: v for k, v in o["spec"].items() if k != "template"}  # noqa: E731
        changes += [f"spec.{k}" for k in sorted(set(rest(a)) | set(rest(b))) if rest(a).get(k) != rest(b).get(k)]
        ann = lambda o: o["metadata"].get("annotations", {})  # noqa: E731
        for k in sorted(set(ann(a)) | set(ann(b))):
            if ann(a).get(k) == ann(b).get(k):
                continue
            try:  # Metacontroller's last-applied: which of its fields moved
                paths = []
                differ(json.loads(ann(b).get(k) or "{}"), json.loads(ann(a).get(k) or "{}"), k, paths)
                changes += paths
            except ValueError:
                changes.append(f"annotation {k}: {ann(b).get(k)} -> {ann(a).get(k)}")
        if changes:
            out[key] = changes
    return out


def up_to_date(ns, name):
    live = get(PARENT, name, ns=ns.name)
    return next((c for c in live.get("status", {}).get("conditions", []) if c["type"] == "UpToDate"), {})


def keys_script(prefix, body):
    """A shell pipeline's input: the prefix lines, then `body` for key up0 .. up<KEYS-1>, quit."""
    first = "".join(f"{line}\\r\\n" for line in prefix)
    return (f"{{ printf '{first}'; i=0; while [ $i -lt {KEYS} ]; do printf '{body}' $i; i=$((i+1)); done; "
            "printf 'quit\\r\\n'; }")


def through(ns, target, script, pattern):
    """Runs script's input against target (pod IP, or ("tls", host)); counts answer lines matching pattern."""
    if isinstance(target, tuple):
        conn = f"timeout 30 openssl s_client -quiet -ign_eof -connect {target[1]}:11211 -verify_return_error {CA_ARGS}"
    else:
        conn = f"nc -w 5 {target} 11211"
    _, out = ns.sh(f"{script} | {conn} 2>/dev/null | grep -c '{pattern}'", timeout=60)
    first = out.strip().splitlines()[:1]
    return int(first[0]) if first and first[0].isdigit() else -1


def write(ns, target, prefix=()):
    stored = through(ns, target, keys_script(prefix, "set up%d 0 0 5\\r\\nhello\\r\\n"), "^STORED")
    return stored - (1 if prefix else 0)  # the login's own `set auth` answers STORED


def read(ns, target, prefix=()):
    return through(ns, target, keys_script(prefix, "get up%d\\r\\n"), "^VALUE up")


def targets(ns, mcs):
    """Where the keys go: (label, target, login lines) for each real pod (the TLS cache through its
    Service name, which its certificate names)."""
    out = []
    for mc in mcs:
        if mc.name == "tls":
            out.append(("tls", ("tls", f"tls.{ns.name}"), ()))
            continue
        login = tuple(auth(PASSWORD)) if mc.name == "sasl" else ()
        pods = mc.ready_pods()
        if mc.name == "zoned":  # the KWOK pods of zone-b and zone-c serve nothing
            pods = [p for p in pods if p["metadata"]["labels"].get(ZONE_LABEL) == "zone-a"]
        for p in sorted(pods, key=lambda p: p["metadata"]["name"]):
            out.append((p["metadata"]["name"], p["status"]["podIP"], login))
    return out


def volume(ns):
    """A hostPath PersistentVolume of the class CLASS for the warm-restart pod; returns its directory."""
    root = os.path.join(WORK, "upgrade-volume")
    os.makedirs(root)
    os.chown(root, 11211, 11211)  # memcached's user; hostPath volumes ignore fsGroup
    os.chmod(root, 0o700)
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": CLASS},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                   "persistentVolumeReclaimPolicy": "Retain", "storageClassName": CLASS,
                   "hostPath": {"path": root, "type": "Directory"}}}
    kubectl("apply", "-f", "-", stdin=json.dumps(pv))
    return root


def zones_ready(mc):
    return mc.sync().get("zonesReady") == "3/3"


def scenario_upgrade(t: Test):
    """A hook upgrade under running caches on real pods (see the module's docstring)."""
    if not METACONTROLLER:
        print("SKIPPED upgrade: needs Metacontroller's resyncs and written status (run under it)", flush=True)
        return
    if not HOOK_IMAGE:
        raise Failed("PODS_HOOK_IMAGE is not set: the reload agent's image at tag A")
    resync_before = get(*CONTROLLER.split("/"))["spec"].get("resyncPeriodSeconds")
    ns = root = None
    try:
        kubectl("patch", CONTROLLER, "--type=merge", "-p", json.dumps({"spec": {"resyncPeriodSeconds": RESYNC}}))
        restart_hook([*hook_args(), "--default-image", MEMCACHED_IMAGE])
        ns = Namespace("pods-upgrade")
        start = time.monotonic()
        root = volume(ns)
        c = certs(ns.name, "tls", 1)
        tls_secrets(ns, "tls-cert", c)
        ns.secret("sasl", {"password-file": f"app:{PASSWORD}\n"})
        mem = {"memcached": {"maxMemoryMB": 64}}
        mcs = [
            Memcached(ns, "plain", {"replicas": 2, **mem}),
            Memcached(ns, "warm", {"workload": "StatefulSet", "replicas": 1, **mem,
                                   "warmRestart": {"enabled": True, "storageClassName": CLASS}}),
            Memcached(ns, "tls", {"replicas": 1, **mem, "security": {
                "tls": {"enabled": True, "certificateSecretRef": {"name": "tls-cert"}, "allowPlaintext": False},
                "secretRotation": "Reload"}}),
            Memcached(ns, "sasl", {"replicas": 1, **mem, "security": {
                "sasl": {"enabled": True, "credentialsSecretRef": {"name": "sasl"}}, "secretRotation": "Reload"}}),
            Memcached(ns, "zoned", {"replicas": 1, **mem, "zones": {"names": ZONES}, "tolerations": [KWOK_TAINT]}),
        ]
        for mc in mcs:
            mc.create()
        ns.client(volumes=("client-tls",))
        for mc in mcs:
            if mc.name == "zoned":
                wait_until("zoned: every zone Ready", lambda: zones_ready(mc), timeout=120, interval=1)
            else:
                mc.wait_ready(mc.obj["spec"]["replicas"], timeout=150)
            mc.sync_until(f"{mc.name}: UpToDate True", lambda s: any(
                c["type"] == "UpToDate" and c["status"] == "True" for c in s.get("conditions", [])), timeout=90)
        t.time("apply to every cache Ready (5 caches)", time.monotonic() - start)

        where = targets(ns, mcs)
        written = {label: write(ns, target, login) for label, target, login in where}
        total = KEYS * len(where)
        t.check(f"{KEYS} keys written into each of the {len(where)} serving pods",
                all(n == KEYS for n in written.values()), written)
        pods_before, loads_before = pod_state(mcs), workloads(ns)
        zoned_kwok = [n for n in pods_before if n.startswith("zoned-zone-b") or n.startswith("zoned-zone-c")]
        t.check("the zoned cache has a pod on each KWOK zone besides its real zone-a pod", len(zoned_kwok) == 2,
                sorted(pods_before))

        # The upgrade: both images at tag B, the hook restarted on the same port with them.
        upgraded = time.monotonic()
        hook_b, memcached_b = retag(HOOK_IMAGE), retag(MEMCACHED_IMAGE)
        hook = restart_hook(["--relate-pods", "--reload-agent-image", hook_b, "--default-image", memcached_b])
        time.sleep(3 * RESYNC)
        try:  # a resync tick may fall just after the third period
            answered = wait_until("3 syncs of each cache by the new hook", lambda: (
                lambda n: n >= 3 * len(mcs) and n)(syncs(hook)), timeout=2 * RESYNC, interval=1)
        except Failed:
            answered = syncs(hook)
        t.time("hook restarted to 3 syncs of each cache", time.monotonic() - upgraded)
        t.check(f"three resync periods ({3 * RESYNC} s): the new hook answered at least 3 syncs of each of the "
                f"{len(mcs)} caches ({answered:.0f})", answered >= 3 * len(mcs), answered)
        pods_after, loads_after = pod_state(mcs), workloads(ns)
        kept = sum(1 for n, s in pods_before.items() if pods_after.get(n) == s)
        t.check(f"every pod kept its UID and restart counts ({kept} of {len(pods_before)})",
                pods_after == pods_before, {"before": pods_before, "after": pods_after})
        changed = moved(loads_before, loads_after)
        t.check(f"no workload written: generation, pod template, spec and annotations as before "
                f"({len(loads_before)} workloads)",
                not changed, json.dumps(changed, indent=1))
        found = {label: read(ns, target, login) for label, target, login in where}
        t.time("upgrade to every check done", time.monotonic() - upgraded)
        print(f"     upgrade: pods {len(pods_before)}, UIDs kept {kept}, keys kept {sum(found.values())} of "
              f"{total}", flush=True)
        t.check(f"every key is still there ({sum(found.values())} of {total})",
                all(n == KEYS for n in found.values()), found)
        tag = lambda image: image.rsplit(":", 1)[1]  # noqa: E731
        memcached_change = f"memcached image {tag(MEMCACHED_IMAGE)} -> {tag(memcached_b)}"
        agent_change = f"image {tag(HOOK_IMAGE)} -> {tag(hook_b)}"
        for mc in mcs:
            up = up_to_date(ns, mc.name)
            message = up.get("message", "")
            runs_agent = mc.name in ("warm", "tls", "sasl")
            t.check(f"{mc.name}: UpToDate False/NewRendering naming the memcached image change"
                    + (" and the hook's own image" if runs_agent else ""),
                    up.get("status") == "False" and up.get("reason") == "NewRendering"
                    and message.startswith("the pods run an older rendering of this hook")
                    and memcached_change in message and (not runs_agent or agent_change in message), up)

        # A requested rollout of the TLS cache: onto tag B, UpToDate True; the others keep their pods.
        tls = next(mc for mc in mcs if mc.name == "tls")
        old = {n for n in pods_before if n.startswith("tls-")}
        start = time.monotonic()
        kubectl("annotate", PARENT, "tls", "-n", ns.name, f"{TRIGGER}=2026-12-02T12:00:00Z", "--overwrite")

        def rolled():
            pods = tls.settled(1)
            return pods if pods and pods[0]["metadata"]["name"] not in old else None
        pod = wait_until("tls: one new Ready pod after the requested rollout", rolled, timeout=120)[0]
        images = sorted({c["image"] for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", [])})
        t.check(f"tls: the requested rollout rolled its pod onto tag B ({images})",
                hook_b in images and memcached_b in images and HOOK_IMAGE not in images
                and MEMCACHED_IMAGE not in images, images)
        up = wait_until("tls: UpToDate True", lambda: (lambda c: c.get("status") == "True" and c)(
            up_to_date(ns, "tls")), timeout=60, interval=1)
        t.time("restart-trigger to the TLS cache rolled and UpToDate True", time.monotonic() - start)
        t.check("tls: UpToDate True/CurrentRendering after the rollout", up.get("reason") == "CurrentRendering", up)
        others = {n: s for n, s in pods_before.items() if n not in old}
        now = pod_state([mc for mc in mcs if mc.name != "tls"])
        t.check(f"the other caches keep their pods ({len(others)})", now == others, {"before": others, "now": now})
        t.check("the other caches stay UpToDate False", all(
            up_to_date(ns, mc.name).get("status") == "False" for mc in mcs if mc.name != "tls"))
    finally:
        try:
            restart_hook(hook_args())
        finally:
            patch = {"spec": {"resyncPeriodSeconds": resync_before}}
            kubectl("patch", CONTROLLER, "--type=merge", "-p", json.dumps(patch), check=False)
            if ns:
                kubectl("delete", "namespace", ns.name, "--wait=true", "--timeout=120s", check=False)
            kubectl("delete", "pv", CLASS, "--ignore-not-found", "--wait=false", check=False)
            if root:
                shutil.rmtree(root, ignore_errors=True)
