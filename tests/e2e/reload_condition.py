#!/usr/bin/env python3
"""The reload agent's Pod condition against a real kube-apiserver and a real memcached.

Run by tests/e2e/run.sh with the e2e cluster up (kube-apiserver on loopback, no kubelet). In a
namespace of its own it creates the ServiceAccount, the RoleBinding to deploy/hook's ClusterRole
memcached-hook-reload-agent and a Pod that never runs (its status can be patched all the same),
gives the Pod a kubelet-style PodScheduled condition, and starts on 127.0.0.1 memcached with TLS
and `memcached-hook reload-agent --pod-condition` for that Pod, with the in-cluster settings
(KUBERNETES_SERVICE_HOST/PORT, a token of that ServiceAccount from the TokenRequest API, the API
server's CA). The Secret volume is a directory laid out and rotated the way kubelet does it.

Checks (one line each, `ok   ...` / `FAIL ...`, then `reload-condition: N passed, M failed`):
- a token the API server refuses: the agent counts failed writes (the API's 401 in its log) and
  memcached still gets the certificate; once the token file holds a valid token (read again for
  every request) the condition becomes True/Reloaded;
- PodScheduled is kept; steady state writes nothing (resourceVersion and the write counter stay);
- a certificate published with a key that is not its own: False/ReloadFailed `tls: ...` within
  a bounded time, memcached keeps serving the previous certificate;
- a good certificate after it: True/Reloaded again, served by memcached; one condition of the type,
  PodScheduled still there.
Every wait is bounded; the two processes are stopped by their PIDs; the namespace is deleted.
"""

import argparse
import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import procs  # noqa: E402
from secure_rotation import Volume  # noqa: E402  (kubelet's atomic Secret volume layout)

NS = "reload-condition"
POD = "cache-0"
SA = "cache-reload-agent"
TYPE = "memcached.c5c3.io/SecretReload"
WAIT = 30  # seconds, each wait for the condition


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        self.passed += bool(ok)
        self.failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + str(detail)[:300] if detail and not ok else ''}",
              flush=True)
        return ok


class Kube:
    def __init__(self, kubectl, kubeconfig):
        self.base = [kubectl, f"--kubeconfig={kubeconfig}", "--request-timeout=30s"]

    def __call__(self, *args, stdin=None):
        out = subprocess.run(self.base + list(args), input=stdin, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args[:3])}: {out.stderr.strip()[:400]}")
        return out.stdout

    def pod(self):
        return json.loads(self("get", "pod", POD, "-n", NS, "-o", "json"))


def conditions(pod):
    return {c["type"]: c for c in pod.get("status", {}).get("conditions", [])}


def make_pki(d):
    def ossl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
         "-subj", "/CN=reload-condition-ca")
    for name in ("server-a", "server-b", "server-c"):
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}")
        ossl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", f"{name}.crt", "-days", "2", "-extfile", "server.ext")
    return lambda name: open(os.path.join(d, name), "rb").read()


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def served_cn(port):
    """The CN of the certificate memcached presents to a new TLS connection."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    pem = ssl.DER_cert_to_PEM_cert(der)
    out = subprocess.run(["openssl", "x509", "-noout", "-subject", "-nameopt", "multiline"], input=pem,
                         capture_output=True, text=True, timeout=30)
    return next((l.split("=", 1)[1].strip() for l in out.stdout.splitlines() if "commonName" in l), "")


def writes(metrics_port):
    """(successful, failed) condition writes on the agent's /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    count = {}
    for line in text.splitlines():
        if line.startswith("memcached_reload_agent_condition_writes_total{"):
            count[line.split('result="')[1].split('"')[0]] = int(float(line.split()[-1]))
    return count.get("success", -1), count.get("failure", -1)


def wait_for(what, deadline=WAIT):
    """Polls `what()` (a value or None) until it is not None; returns it and the seconds taken."""
    start = time.monotonic()
    while time.monotonic() - start < deadline:
        try:
            got = what()
        except (OSError, RuntimeError, ValueError):
            got = None
        if got is not None:
            return got, time.monotonic() - start
        time.sleep(0.25)
    return None, deadline


def secret_reload(kube, status, reason):
    c = conditions(kube.pod()).get(TYPE)
    return c if c and c["status"] == status and c["reason"] == reason else None


def objects():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD, "namespace": NS},
           "spec": {"serviceAccountName": SA, "automountServiceAccountToken": False,
                    "containers": [{"name": "memcached", "image": "memcached:1.6"}]}}
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA, "namespace": NS},
          "automountServiceAccountToken": False}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": SA, "namespace": NS},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "memcached-hook-reload-agent"},
               "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}]}
    return {"apiVersion": "v1", "kind": "List", "items": [sa, binding, pod]}


SCHEDULED = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/0 nodes are available", "lastTransitionTime": "2026-11-26T00:00:00Z"}


class Processes:
    """memcached and the agent, each bounded by timeout(1) and stopped by its PID."""

    def __init__(self, work):
        self.work, self.procs = work, []

    def start(self, name, cmd, env=None):
        log = open(os.path.join(self.work, f"{name}.log"), "wb")
        proc = subprocess.Popen(["timeout", "--kill-after=5", "300", *cmd], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)
        self.procs.append((proc, log))

    def log(self, name):
        with open(os.path.join(self.work, f"{name}.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        for proc, log in self.procs:
            procs.stop(proc, 10)
            log.close()


def setup(kube, a, work):
    """The namespace, ServiceAccount, RoleBinding and Pod with PodScheduled; the agent's CA file."""
    kube("apply", "-f", a.clusterrole)
    kube("create", "namespace", NS)
    kube("apply", "-f", "-", stdin=json.dumps(objects()))
    kube("patch", "pod", POD, "-n", NS, "--subresource=status", "--type=strategic",
         "-p", json.dumps({"status": {"conditions": [SCHEDULED]}}))
    ca = os.path.join(work, "apiserver-ca.crt")
    data = kube("config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")
    with open(ca, "wb") as f:
        f.write(base64.b64decode(data))
    return ca


def start(procs, a, work, vol, ca, token, ports):
    tls_port, admin_port, metrics_port = ports
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    procs.start("memcached", [a.memcached, *user, "-Z", "-o", f"ssl_chain_cert={vol.path}/tls.crt",
                              "-o", f"ssl_key={vol.path}/tls.key", "-l", f"127.0.0.1:{tls_port}",
                              "-l", f"notls:127.0.0.1:{admin_port}", "-m", "16", "-t", "1"])
    api = urllib.parse.urlsplit(a.apiserver_url)
    env = dict(os.environ, KUBERNETES_SERVICE_HOST=api.hostname, KUBERNETES_SERVICE_PORT=str(api.port),
               RUST_LOG="info")
    procs.start("agent", [a.hook, "reload-agent", "--tls-cert", f"{vol.path}/tls.crt",
                          "--tls-key", f"{vol.path}/tls.key", "--admin-addr", f"127.0.0.1:{admin_port}",
                          "--metrics-addr", f"127.0.0.1:{metrics_port}", "--interval-seconds", "1",
                          "--pod-condition", "--pod-name", POD, "--pod-namespace", NS,
                          "--api-token-file", token, "--api-ca-file", ca], env=env)


def scenario(R, kube, a, work):
    read = make_pki(tempfile.mkdtemp(dir=work))
    vol = Volume(os.path.join(work, "tls"), {"tls.crt": read("server-a.crt"), "tls.key": read("server-a.key")})
    ca = setup(kube, a, work)
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write("not-a-token-the-api-server-knows\n")
    tls_port, admin_port, metrics_port = ports = free_ports(3)
    procs = Processes(work)
    try:
        start(procs, a, work, vol, ca, token, ports)
        steps(R, kube, procs, vol, read, token, tls_port, metrics_port)
    finally:
        procs.stop()
        print(f"agent log (last lines): {' | '.join(procs.log('agent').splitlines()[-6:])[-1500:]}", flush=True)


def steps(R, kube, procs, vol, read, token, tls_port, metrics_port):
    served, _ = wait_for(lambda: served_cn(tls_port) or None)
    R.check("memcached serves server-a over TLS", served == "server-a", served)
    failed, _ = wait_for(lambda: writes(metrics_port) if writes(metrics_port)[1] >= 1 else None)
    R.check("a refused token: the failed write is counted", failed and failed[1] >= 1, failed)
    R.check("a refused token: the agent logs the API server's 401", "answered 401" in procs.log("agent"),
            procs.log("agent")[-600:])
    R.check("a refused token: no condition on the pod", TYPE not in conditions(kube.pod()))
    with open(token + ".new", "w") as f:
        f.write(kube("create", "token", SA, "-n", NS, "--duration=1h"))
    os.replace(token + ".new", token)
    c, took = wait_for(lambda: secret_reload(kube, "True", "Reloaded"))
    R.check(f"with a valid token the pod condition becomes True/Reloaded ({took:.1f} s)", c, conditions(kube.pod()))
    if not c:
        return
    R.check("message names what memcached took", c["message"] == "memcached took the mounted Secret (tls)",
            c["message"])
    R.check("PodScheduled is kept", conditions(kube.pod()).get("PodScheduled", {}).get("reason") == "Unschedulable")
    before = (kube.pod()["metadata"]["resourceVersion"], writes(metrics_port))
    time.sleep(3.5)
    after = (kube.pod()["metadata"]["resourceVersion"], writes(metrics_port))
    R.check("steady state: no write for 3 polls (resourceVersion and write counter unchanged)",
            before == after, f"{before} -> {after}")

    vol.publish({"tls.crt": read("server-c.crt"), "tls.key": read("server-b.key")})
    bad, took = wait_for(lambda: secret_reload(kube, "False", "ReloadFailed"))
    R.check(f"a certificate with a foreign key: False/ReloadFailed ({took:.1f} s)", bad, conditions(kube.pod()))
    if not bad:
        return
    R.check("the message is the agent's tls error", bad["message"].startswith("tls: ") and len(bad["message"]) <= 1024,
            bad["message"])
    R.check("lastTransitionTime moved with the status", bad["lastTransitionTime"] != c["lastTransitionTime"],
            f"{c['lastTransitionTime']} -> {bad['lastTransitionTime']}")
    R.check("memcached keeps serving server-a", served_cn(tls_port) == "server-a")

    vol.publish({"tls.crt": read("server-c.crt"), "tls.key": read("server-c.key")})
    good, took = wait_for(lambda: secret_reload(kube, "True", "Reloaded"))
    R.check(f"the next good certificate: True/Reloaded again ({took:.1f} s)", good, conditions(kube.pod()))
    R.check("memcached serves server-c", served_cn(tls_port) == "server-c")
    types = [x["type"] for x in kube.pod()["status"]["conditions"]]
    R.check("one SecretReload condition, PodScheduled kept", sorted(types) == ["PodScheduled", TYPE], types)
    R.check("writes: 3 successful", writes(metrics_port)[0] == 3, writes(metrics_port))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hook", required=True)
    ap.add_argument("--memcached", default=shutil.which("memcached"))
    ap.add_argument("--kubectl", required=True)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--apiserver-url", required=True)
    ap.add_argument("--clusterrole", required=True, help="deploy/hook/reload-agent-clusterrole.yaml")
    a = ap.parse_args()
    R = Results()
    kube = Kube(a.kubectl, a.kubeconfig)
    work = tempfile.mkdtemp(prefix="reload-condition.")
    os.chmod(work, 0o755)  # memcached runs as nobody under root and reads the volume
    try:
        scenario(R, kube, a, work)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        R.check("scenario ran to the end", False, f"{type(e).__name__}: {e}")
    finally:
        try:
            kube("delete", "namespace", NS, "--wait=false")
        except RuntimeError as e:
            print(f"cleanup: {e}")
        shutil.rmtree(work, ignore_errors=True)
    print(f"reload-condition: {R.passed} passed, {R.failed} failed")
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
