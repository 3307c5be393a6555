#!/usr/bin/env python3
"""TLS that cannot be bypassed, and Secret rotation without a cold cache, against a real memcached.

The driver builds a two-namespace network of its own with `ip netns add` and a veth pair: a "pod" namespace
(10.215.0.2, plus its loopback) and a "client" namespace (10.215.0.1). Nothing is attached to the machine's
own network. In the pod namespace it starts, inside a fresh PID namespace (as `shareProcessNamespace: true`
gives a pod), memcached with the arguments of the case and, where the case has one, the hook's reload agent
(`memcached-hook reload-agent ...`), both as the `memcache` user like the containers of the pod. The Secret
volumes are directories laid out the way kubelet writes them (`..data` -> timestamped dir, one symlink per
key), and rotated the way kubelet does it (a new timestamped dir, then one rename of `..data`).

Cases come from the Deployment `memcached-hook render` prints for tests/peers/secure/NAME.yaml
(--rendered-dir): the memcached container's args and the reload agent sidecar's args (mount paths rewritten to
the volumes the driver lays out). They must equal the command lines written by hand in HAND_WRITTEN below
(from the decisions in docs/behaviour.md); without --rendered-dir those are run directly.

Checks (one line each, then `secure: N passed, M failed`):
- from the client namespace (outside the pod's loopback): plaintext set/get fails on every port unless the
  case allows plaintext; TLS set/get works on each TLS port, mTLS needs a client certificate from the CA;
- from the pod's loopback: the exporter's plaintext `stats` works; with SASL, `stats` without a login is
  refused, and the metrics sidecar the hook renders instead (`memcached-hook stats-exporter`, logged in with
  memcached's copy of the auth file) serves memcached_up 1, memcached_max_connections and memcached_commands_total under the
  exporter's names, never the password, and still after the password rotates;
- SASL: the Secret's password file has no last newline (then a CRLF one): the pod's `auth-file` init step writes
  memcached's copy with one newline (mode 0444), the whole password logs in and the password less its last byte
  (what memcached 1.6.18 loads from the raw file) is refused, before and after a rotation;
- rotation (Reload): keys stored before are still there, new TLS connections present the new certificate
  (a new CA, then a new serial from the same CA), the old password is refused and the new one accepted, the
  agent's counter says so; a certificate with a foreign key is refused by the agent and memcached keeps serving
  the previous one;
- RollingRestart (no agent): the rotated files change nothing in the running memcached; a restarted one
  (the rolled pod) serves the new material with an empty cache.
Every wait is bounded; every process is stopped by its PID; the namespaces are deleted at the end.
"""

import argparse
import ctypes
import os
import pwd
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from memcached_args import Client, McError  # noqa: E402  (the suite's own minimal client)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import test_pki  # noqa: E402

POD_IP, CLIENT_IP = "10.215.0.2", "10.215.0.1"
CLONE_NEWNET = 0x40000000
LIFETIME = 180            # hard limit for one pod (timeout(1) around the PID namespace)
WAIT_STEPS = 120          # bounded polls, 0.25 s apart
USERS = {"v1": ("app", "first-Secret-pw"), "v2": ("app", "second-Secret-pw")}
# The Secret's password file as `stringData` gives it: no last newline (memcached < 1.6.32 drops the last byte
# of such a file, so the pod's memcached reads a normalised copy); the rotated one with a CRLF line end.
PASSWORD_FILES = {"v1": b"app:first-Secret-pw", "v2": b"app:second-Secret-pw\r\n"}

# The hand-written command lines (phase A); with --rendered-dir they are what the hook must render.
TLS_ARGS = ["-Z", "-o", "ssl_chain_cert=/etc/memcached/tls/tls.crt", "-o", "ssl_key=/etc/memcached/tls/tls.key",
            "-o", "ssl_min_version=2"]
MTLS_ARGS = ["-o", "ssl_ca_cert=/etc/memcached/tls/ca.crt", "-o", "ssl_verify_mode=2"]
REFUSED = ["-X", "-W"]    # spec.memcached.hardening's defaults
LOCKED = ["-l", "*:11211", "-l", "*:11212", "-l", "notls:127.0.0.1:11213"] + REFUSED
OPEN = ["-l", "notls:*:11211", "-l", "*:11212"] + REFUSED
BASE = ["-m", "64", "-c", "1024", "-t", "4", "-I", "1m"]
SASL_ARGS = ["-Y", "/run/memcached/sasl/password-file"]
STATS_EXPORTER = ["stats-exporter", "--auth-file", "/run/memcached/sasl/password-file", "--memcached-addr",
                  "127.0.0.1:11213"]
# The init step that writes memcached's copy of the Secret's auth file (both rotation modes).
AUTH_FILE = ["auth-file", "--from", "/etc/memcached/sasl/password-file", "--to", "/run/memcached/sasl/password-file"]
HAND_WRITTEN = {
    "tls": {"memcached": BASE + TLS_ARGS + LOCKED, "agent": None, "plaintext": False, "mtls": False},
    "mtls": {"memcached": BASE + TLS_ARGS + MTLS_ARGS + LOCKED, "agent": None, "plaintext": False, "mtls": True},
    "allow-plaintext": {"memcached": BASE + TLS_ARGS + OPEN, "agent": None, "plaintext": True, "mtls": False},
    "reload": {
        "memcached": BASE + SASL_ARGS + TLS_ARGS + MTLS_ARGS + LOCKED,
        "agent": ["reload-agent", "--tls-cert", "/etc/memcached/tls/tls.crt", "--tls-key",
                  "/etc/memcached/tls/tls.key", "--tls-ca", "/etc/memcached/tls/ca.crt", "--auth-file",
                  "/etc/memcached/sasl/password-file", "--auth-copy", "/run/memcached/sasl/password-file",
                  "--admin-addr", "127.0.0.1:11213"],
        "plaintext": False, "mtls": True, "sasl": True, "exporter": STATS_EXPORTER, "init": AUTH_FILE},
    "rolling-restart": {"memcached": BASE + SASL_ARGS + TLS_ARGS + LOCKED, "agent": None, "plaintext": False,
                        "mtls": False, "sasl": True, "exporter": STATS_EXPORTER, "init": AUTH_FILE},
}


# ----------------------------------------------------------------------------------------------- results
class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, case, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'ok  ' if ok else 'FAIL'} {case}: {name}{': ' + str(detail) if detail else ''}", flush=True)
        return ok


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, timeout=60, **kw)


# ----------------------------------------------------------------------------------------------- network
class Net:
    """Two namespaces joined by a veth pair; the machine's own namespace is never touched."""

    def __init__(self):
        tag = f"{os.getpid() % 100000}"
        self.pod, self.client = f"mh15pod{tag}", f"mh15cli{tag}"
        self.libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.home = os.open("/proc/self/ns/net", os.O_RDONLY)

    def up(self):
        run(["ip", "netns", "add", self.pod])
        run(["ip", "netns", "add", self.client])
        run(["ip", "-n", self.pod, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", self.client])
        for ns, ip in ((self.pod, POD_IP), (self.client, CLIENT_IP)):
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "up"])

    def down(self):
        for ns in (self.pod, self.client):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    def enter(self, ns):
        """Context manager: sockets created inside belong to namespace `ns`."""
        net = self

        class _In:
            def __enter__(self):
                fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
                try:
                    if net.libc.setns(fd, CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), f"setns {ns}")
                finally:
                    os.close(fd)

            def __exit__(self, *exc):
                if net.libc.setns(net.home, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back")

        return _In()


# ----------------------------------------------------------------------------------------------- material
def make_pki(d):
    # server-a: CA1; server-b: the new CA; server-c: CA1 again, new serial; client certs from CA1 and CA2
    test_pki.issue(d, cas={"ca1": "secure-ca1", "ca2": "secure-ca2"},
                   certs=[("server-a", "ca1", "server", "server-a"), ("server-b", "ca2", "server", "server-b"),
                          ("server-c", "ca1", "server", "server-c"), ("client", "ca1", "client", "client"),
                          ("stranger", "ca2", "client", "stranger")],
                   server_sans=f"DNS:localhost,IP:127.0.0.1,IP:{POD_IP}")

    def read(name):
        with open(os.path.join(d, name), "rb") as f:
            return f.read()

    return read


class Volume:
    """A Secret volume as kubelet's atomic writer lays it out and updates it."""

    def __init__(self, path, files):
        self.path, self.n = path, 0
        os.makedirs(path)
        os.chmod(path, 0o755)
        self.publish(files)
        for name in files:
            os.symlink(f"..data/{name}", os.path.join(path, name))

    def publish(self, files):
        self.n += 1
        version = f"..2026_11_23_21_00_{self.n:02d}.{os.getpid()}"
        d = os.path.join(self.path, version)
        os.makedirs(d)
        os.chmod(d, 0o755)
        for name, content in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(content)
            os.chmod(os.path.join(d, name), 0o644)
        tmp = os.path.join(self.path, "..data_tmp")
        os.symlink(version, tmp)
        os.rename(tmp, os.path.join(self.path, "..data"))


def rewrite(args, mapping):
    out = []
    for a in args:
        for old, new in mapping.items():
            a = a.replace(old, new)
        out.append(a)
    return out


# ----------------------------------------------------------------------------------------------- the pod
class Pod:
    """memcached (+ agent) in the pod's network namespace and a PID namespace of their own."""

    def __init__(self, net, memcached_args, agent_cmd, workdir, name, exporter_cmd=None, init_cmd=None):
        self.log_path = os.path.join(workdir, f"{name}.pod.log")
        pw = pwd.getpwnam("memcache")
        as_user = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"]
        script = "exec 2>&1\n"
        if init_cmd:  # an init container: memcached starts only once it succeeded
            script += " ".join(map(_q, as_user + init_cmd)) + " || exit 3\n"
        script += " ".join(map(_q, as_user + [shutil.which("memcached")] + memcached_args)) + " &\n"
        if agent_cmd:
            script += "sleep 0.3\n" + "RUST_LOG=info " + " ".join(map(_q, as_user + agent_cmd)) + " &\n"
        if exporter_cmd:
            script += "RUST_LOG=info " + " ".join(map(_q, as_user + exporter_cmd)) + " &\n"
        script += "wait\n"
        self.cmd = ["timeout", "--kill-after=5", str(LIFETIME), "ip", "netns", "exec", net.pod, "unshare",
                    "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script]
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc:
            self.log.close()

    def tail(self, n=600):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace").replace("\n", " | ")
        except OSError:
            return ""


def _q(s):
    return "'" + s.replace("'", "'\\''") + "'"


# ----------------------------------------------------------------------------------------------- clients
def tls_ctx(pki, ca="ca1", client=None):
    ctx = ssl.create_default_context(cafile=os.path.join(pki, f"{ca}.crt"))
    ctx.check_hostname = False  # the server is addressed by IP; the chain is still verified
    if client:
        ctx.load_cert_chain(os.path.join(pki, f"{client}.crt"), os.path.join(pki, f"{client}.key"))
    return ctx


def session(net, ns, host, port, tls=None, login=None):
    """A connected client (authenticated when `login` is given) created inside namespace `ns`."""
    with net.enter(ns):
        c = Client(host, port, tls)
    if login:
        r = c.auth(*login)
        if r != "STORED":
            c.close()
            raise McError(f"login answered {r!r}")
    return c


def set_get(net, ns, host, port, tls=None, login=None, key="k"):
    value = os.urandom(6).hex().encode()
    try:
        with session(net, ns, host, port, tls, login) as c:
            r = c.set(key, value)
            if r != "STORED":
                return False, f"set answered {r!r}"
            got = c.get(key)
            return got == value, f"get -> {got!r}"
    except (OSError, McError, ssl.SSLError) as e:
        return False, f"{type(e).__name__}: {str(e)[:100]}"


def refused(net, ns, host, port, tls=None, login=None):
    ok, detail = set_get(net, ns, host, port, tls, login, key="must-not-store")
    return not ok, detail


def login_refused(net, host, port, tls, login):
    """The TLS session works but memcached answers the login with an authentication failure."""
    try:
        with session(net, net.client, host, port, tls) as c:
            r = c.auth(*login)
            return r == "CLIENT_ERROR authentication failure", r
    except (OSError, McError, ssl.SSLError) as e:
        return False, f"{type(e).__name__}: {str(e)[:100]}"


def check_whole_password(R, name, net, host, port, ctx, login, copy_dir):
    """The Secret's file had no last newline (or CRLF): memcached's copy ends each line with one newline, and
    memcached takes the whole password and refuses it less its last byte (what it loads from the raw file)."""
    with open(os.path.join(copy_dir, "password-file"), "rb") as f:
        copy = f.read()
    mode = os.stat(os.path.join(copy_dir, "password-file")).st_mode & 0o777
    R.check(name, "memcached's copy of the auth file is the Secret's with one newline, mode 0444",
            copy == ("%s:%s\n" % login).encode() and mode == 0o444, f"{len(copy)} bytes, mode {mode:o}")
    R.check(name, "the whole password logs in", *set_get(net, net.client, host, port, ctx, login))
    R.check(name, "the password less its last byte is refused",
            *login_refused(net, host, port, ctx, (login[0], login[1][:-1])))


def peer_cn(net, host, port, pki, ca, client=None, login=None):
    """The CN of the certificate a new TLS connection presents, verified against `ca`."""
    try:
        with session(net, net.client, host, port, tls_ctx(pki, ca, client), login) as c:
            c.get("probe")  # TLS 1.3: a rejected client certificate shows on the first read
            subject = dict(x[0] for x in c.sock.getpeercert()["subject"])
            return subject.get("commonName")
    except (OSError, McError, ssl.SSLError) as e:
        return f"{type(e).__name__}: {str(e)[:90]}"


def wait_listening(net, port, pod):
    for _ in range(WAIT_STEPS):
        if pod.proc.poll() is not None:
            return False, f"pod exited {pod.proc.returncode}: {pod.tail()}"
        try:
            with net.enter(net.pod):
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True, ""
        except OSError:
            time.sleep(0.25)
    return False, f"nothing on 127.0.0.1:{port}: {pod.tail()}"


def agent_counts(net):
    """{(what, outcome): n} from the agent's /metrics on the pod's loopback."""
    with net.enter(net.pod):
        text = urllib.request.urlopen("http://127.0.0.1:9151/metrics", timeout=3).read().decode()
    out = {}
    for m in re.finditer(r'memcached_reload_agent_reloads_total\{what="(\w+)",outcome="(\w+)"\} (\d+)', text):
        out[(m.group(1), m.group(2))] = int(m.group(3))
    return out


def wait_counts(net, want):
    last = None
    for _ in range(WAIT_STEPS):
        try:
            last = agent_counts(net)
            if all(last.get(k, 0) >= v for k, v in want.items()):
                return True, last
        except OSError as e:
            last = str(e)
        time.sleep(0.25)
    return False, last


def scrape(net):
    """{series with labels: value} from the metrics sidecar on the pod's loopback (port 9150), and the text."""
    with net.enter(net.pod):
        text = urllib.request.urlopen("http://127.0.0.1:9150/metrics", timeout=5).read().decode()
    series = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            series[name] = float(value)
    return series, text


def wait_up(net, want=1.0):
    """Bounded wait for memcached_up == want on the metrics sidecar."""
    last = None
    for _ in range(WAIT_STEPS):
        try:
            series, _ = scrape(net)
            last = series.get("memcached_up")
            if last == want:
                return True, series
        except OSError as e:
            last = str(e)
        time.sleep(0.25)
    return False, last


def check_stats_exporter(R, name, net, login, pod):
    """The SASL metrics sidecar: up, -c, a get counted, and no password anywhere it writes."""
    ok, series = wait_up(net)
    if not R.check(name, "metrics sidecar: memcached_up 1 under SASL", ok, series if not ok else ""):
        return
    R.check(name, "metrics sidecar: memcached_max_connections is -c (1024)",
            series.get("memcached_max_connections") == 1024.0, series.get("memcached_max_connections"))
    hit = 'memcached_commands_total{command="get",status="hit"}'
    before = series.get(hit, 0.0)
    set_get(net, net.pod, "127.0.0.1", 11213, login=login, key="counted")
    after, text = scrape(net)
    R.check(name, "metrics sidecar: a get hit is counted in memcached_commands_total", after.get(hit, 0.0) > before,
            f"{before} -> {after.get(hit)}")
    for series_name in ("memcached_current_connections", "memcached_items_evicted_total",
                        "memcached_item_no_memory_total", "memcached_limit_bytes"):
        R.check(name, f"metrics sidecar: {series_name} served", series_name in after)
    secrets = [pw for _, pw in USERS.values()]
    leaked = [pw for pw in secrets if pw in text or pw in pod.tail(100000)]
    R.check(name, "metrics sidecar: no password in its metrics or the pod's log", not leaked)


def exporter_stats(net, port):
    """What the exporter does: plaintext `stats` on the pod's loopback, no credentials."""
    try:
        with session(net, net.pod, "127.0.0.1", port) as c:
            stats = c.stats()
            return "pid" in stats, f"pid {stats.get('pid')}"
    except (OSError, McError) as e:
        return False, f"{type(e).__name__}: {e}"


# ----------------------------------------------------------------------------------------------- cases
def ports_of(args):
    """(tls ports, plaintext ports reachable from outside, loopback plaintext port) from the -l arguments."""
    tls, plain, loop = [], [], None
    for i, a in enumerate(args):
        if a != "-l":
            continue
        for spec in args[i + 1].split(","):
            notls = spec.startswith("notls:")
            host, port = spec.removeprefix("notls:").rsplit(":", 1)
            if notls and host in ("127.0.0.1", "localhost", "[::1]"):
                loop = int(port)
            elif notls:
                plain.append(int(port))
            else:
                tls.append(int(port))
    return tls, plain, loop


def run_case(R, net, name, case, pki, read, workdir, hook):
    tls_ports, plain_ports, loop_port = ports_of(case["memcached"])
    sasl, mtls = case.get("sasl", False), case["mtls"]
    root = os.path.join(workdir, name)
    os.makedirs(root)
    os.chmod(root, 0o755)
    tls_files = {"tls.crt": read("server-a.crt"), "tls.key": read("server-a.key"), "ca.crt": read("ca1.crt")}
    tls_vol = Volume(os.path.join(root, "tls"), tls_files)
    sasl_vol = Volume(os.path.join(root, "sasl"), {"password-file": PASSWORD_FILES["v1"]})
    copy_dir = os.path.join(root, "auth-copy")  # the emptyDir
    os.makedirs(copy_dir)
    os.chmod(copy_dir, 0o777)
    mapping = {"/etc/memcached/tls": tls_vol.path, "/etc/memcached/sasl": sasl_vol.path,
               "/run/memcached/sasl": copy_dir}
    mc_args = rewrite(case["memcached"], mapping)
    agent = [hook] + rewrite(case["agent"], mapping) if case["agent"] else None
    exporter = [hook] + rewrite(case["exporter"], mapping) if case.get("exporter") else None
    init = [hook] + rewrite(case["init"], mapping) if case.get("init") else None
    login = USERS["v1"] if sasl else None
    client = "client" if mtls else None
    host = POD_IP

    R.check(name, "outside: some TLS port", bool(tls_ports), f"-l {tls_ports} plain {plain_ports} loop {loop_port}")
    R.check(name, "outside: plaintext allowed as asked", bool(plain_ports) == case["plaintext"], plain_ports)
    pod = Pod(net, mc_args, agent, workdir, name, exporter, init)
    pod.start()
    try:
        ok, detail = wait_listening(net, tls_ports[0] if tls_ports else 11211, pod)
        if not R.check(name, "pod starts", ok, detail):
            return
        if agent:
            # the agent's first delivery (a no-op refresh and login) shows it is up and can reach memcached
            want = {("tls", "success"): 1} | ({("auth", "success"): 1} if sasl else {})
            ok, counts = wait_counts(net, want)
            if not R.check(name, "agent: first delivery once memcached answers", ok, counts):
                return
        # ---- 1. who can talk to it, from where
        for port in (11211, 11212, 11213):
            if port in plain_ports:
                R.check(name, f"outside: plaintext set/get on {port} works", *set_get(net, net.client, host, port,
                                                                                     login=login))
            else:
                R.check(name, f"outside: plaintext set/get on {port} fails", *refused(net, net.client, host, port,
                                                                                     login=login))
        for port in tls_ports:
            R.check(name, f"outside: TLS set/get on {port} works",
                    *set_get(net, net.client, host, port, tls_ctx(pki, "ca1", client), login))
            if mtls:
                R.check(name, f"outside: TLS without a client certificate on {port} fails",
                        *refused(net, net.client, host, port, tls_ctx(pki, "ca1"), login))
                R.check(name, f"outside: client certificate from another CA on {port} fails",
                        *refused(net, net.client, host, port, tls_ctx(pki, "ca1", "stranger"), login))
        if loop_port is not None:
            if sasl:
                R.check(name, "loopback: plaintext set/get with the login works",
                        *set_get(net, net.pod, "127.0.0.1", loop_port, login=login))
                ok, detail = exporter_stats(net, loop_port)
                R.check(name, "loopback: stats without a login is refused (the Prometheus exporter cannot log in)",
                        not ok, detail)
                if exporter:
                    check_stats_exporter(R, name, net, login, pod)
            else:
                R.check(name, "loopback: the exporter's plaintext stats works", *exporter_stats(net, loop_port))
        if sasl:
            check_whole_password(R, name, net, host, tls_ports[0], tls_ctx(pki, "ca1", client), USERS["v1"], copy_dir)
        elif 11211 in plain_ports and not sasl:
            R.check(name, "loopback: the exporter's plaintext stats works", *exporter_stats(net, 11211))

        # ---- 2. rotation
        if name not in ("reload", "rolling-restart"):
            return
        port = tls_ports[0]
        ctx_old, ctx_new = tls_ctx(pki, "ca1", client), tls_ctx(pki, "ca2", client)
        kept = {f"kept-{i}": os.urandom(8).hex().encode() for i in range(20)}
        try:
            with session(net, net.client, host, port, ctx_old, login) as c:
                stored = all(c.set(k, v) == "STORED" for k, v in kept.items())
        except (OSError, McError, ssl.SSLError) as e:
            stored = False
        R.check(name, "20 keys stored before the rotation", stored)
        R.check(name, "before: the certificate is server-a", peer_cn(net, host, port, pki, "ca1", client, login) == "server-a")
        tls_vol.publish({"tls.crt": read("server-b.crt"), "tls.key": read("server-b.key"), "ca.crt": read("ca1.crt")})
        sasl_vol.publish({"password-file": PASSWORD_FILES["v2"]})
        if agent:
            ok, counts = wait_counts(net, {("tls", "success"): 2, ("auth", "success"): 2})
            R.check(name, "agent: reloaded tls and auth", ok, counts)
            new_login = USERS["v2"]
            R.check(name, "new TLS connections present the new certificate (new CA)",
                    peer_cn(net, host, port, pki, "ca2", client, new_login) == "server-b",
                    peer_cn(net, host, port, pki, "ca2", client, new_login))
            R.check(name, "the old password is refused", *login_refused(net, host, port, ctx_new, USERS["v1"]))
            check_whole_password(R, name + " rotated", net, host, port, ctx_new, new_login, copy_dir)
            try:
                with session(net, net.client, host, port, ctx_new, new_login) as c:
                    missing = [k for k, v in kept.items() if c.get(k) != v]
                R.check(name, "the new password is accepted and all 20 keys survived", not missing, missing[:3])
            except (OSError, McError, ssl.SSLError) as e:
                R.check(name, "the new password is accepted and all 20 keys survived", False, e)
            # a new serial from the first CA
            tls_vol.publish({"tls.crt": read("server-c.crt"), "tls.key": read("server-c.key"), "ca.crt": read("ca1.crt")})
            ok, counts = wait_counts(net, {("tls", "success"): 3})
            R.check(name, "agent: reloaded the new serial", ok, counts)
            R.check(name, "new TLS connections present the new serial",
                    peer_cn(net, host, port, pki, "ca1", client, new_login) == "server-c")
            # a certificate with somebody else's key: refused by the agent, memcached keeps server-c
            tls_vol.publish({"tls.crt": read("server-a.crt"), "tls.key": read("server-b.key"), "ca.crt": read("ca1.crt")})
            ok, counts = wait_counts(net, {("tls", "failure"): 1})
            R.check(name, "agent: refused a certificate with a foreign key", ok, counts)
            R.check(name, "memcached still serves the previous certificate",
                    peer_cn(net, host, port, pki, "ca1", client, new_login) == "server-c")
            R.check(name, "memcached process never restarted", pod.proc.poll() is None and "exited" not in pod.tail())
            if exporter:
                ok, series = wait_up(net)
                R.check(name, "metrics sidecar: memcached_up 1 with the rotated password", ok, series if not ok else "")
        else:
            time.sleep(3)  # longer than memcached's 1 s clock and any agent poll: nothing reloads
            R.check(name, "without the agent: new connections still get the old certificate",
                    peer_cn(net, host, port, pki, "ca1", client, USERS["v1"]) == "server-a")
            R.check(name, "without the agent: the old password still works",
                    *set_get(net, net.client, host, port, ctx_old, USERS["v1"]))
            if exporter:
                ok, series = wait_up(net, 1.0)
                R.check(name, "metrics sidecar: memcached_up 1 until the pod rolls (it logs in with memcached's copy)",
                        ok, series if not ok else "")
            pod.stop()  # the rolled pod
            pod = Pod(net, mc_args, None, workdir, name + "-rolled", exporter, init)
            pod.start()
            ok, detail = wait_listening(net, port, pod)
            R.check(name, "rolled pod starts", ok, detail)
            if exporter:
                ok, series = wait_up(net)
                R.check(name, "rolled pod: metrics sidecar memcached_up 1 with the new password", ok,
                        series if not ok else "")
            check_whole_password(R, name + " rolled", net, host, port, ctx_new, USERS["v2"], copy_dir)
            R.check(name, "rolled pod presents the new certificate",
                    peer_cn(net, host, port, pki, "ca2", client, USERS["v2"]) == "server-b")
            try:
                with session(net, net.client, host, port, ctx_new, USERS["v2"]) as c:
                    gone = all(c.get(k) is None for k in kept)
                R.check(name, "rolled pod: the cache is empty (today's behaviour)", gone)
            except (OSError, McError, ssl.SSLError) as e:
                R.check(name, "rolled pod: the cache is empty (today's behaviour)", False, e)
    finally:
        pod.stop()


def from_rendering(R, name, path, hand):
    """The case as the hook rendered tests/peers/secure/NAME.yaml; the hand-written lines are what it must be."""
    import yaml  # only in this mode: the rendering is YAML

    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    deploy = next((d for d in docs if d.get("kind") == "Deployment"), {})
    pod = deploy.get("spec", {}).get("template", {}).get("spec", {})
    mc = next((c for c in pod.get("containers", []) if c.get("name") == "memcached"), {})
    agent = next((c for c in pod.get("initContainers") or [] if c.get("name") == "reload-agent"), None)
    exporter = next((c for c in pod.get("containers", []) if c.get("name") == "exporter"), None)
    init = next((c for c in pod.get("initContainers") or [] if c.get("name") == "auth-file"), None)
    case = dict(hand)
    case["init"] = init.get("args") if init else None
    R.check(name, "rendered auth-file init step is the expected one, first, from the hook's image",
            case["init"] == hand.get("init") and (init is None or (
                pod["initContainers"][0] is init and init.get("command") == ["/memcached-hook"]
                and "restartPolicy" not in init)), f"rendered {init}")
    case["memcached"] = mc.get("args") or []
    case["agent"] = agent.get("args") if agent else None
    case["exporter"] = exporter.get("args") if exporter else None
    if hand.get("exporter"):
        sasl_mount = [m for m in mc.get("volumeMounts", []) if m.get("mountPath") == "/run/memcached/sasl"]
        R.check(name, "rendered metrics sidecar under SASL is the hook's stats exporter",
                exporter is not None and exporter.get("args") == hand["exporter"]
                and exporter.get("command") == ["/memcached-hook"] and exporter.get("volumeMounts") == sasl_mount
                and any(p.get("containerPort") == 9150 and p.get("name") == "metrics" for p in exporter.get("ports", [])),
                f"rendered {exporter}")
    R.check(name, "rendered memcached args are the expected ones", case["memcached"] == hand["memcached"],
            f"rendered {case['memcached']}")
    R.check(name, "rendered reload agent is the expected one", case["agent"] == hand["agent"]
            and (agent is None or (agent.get("restartPolicy") == "Always" and agent.get("command") == ["/memcached-hook"]
                                   and {m["mountPath"] for m in agent.get("volumeMounts", [])}
                                   >= {m["mountPath"] for m in mc.get("volumeMounts", [])})),
            f"rendered {agent}")
    wants_shared = bool(hand["agent"]) and hand.get("sasl", False)
    R.check(name, "shareProcessNamespace only where the agent signals memcached",
            bool(pod.get("shareProcessNamespace")) == wants_shared, pod.get("shareProcessNamespace"))
    return case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hook", required=True, help="the memcached-hook binary (its reload-agent subcommand)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--rendered-dir", help="NAME.yaml = `memcached-hook render tests/peers/secure/NAME.yaml`")
    ap.add_argument("--only", action="append", default=[])
    args = ap.parse_args()
    R = Results()
    net = Net()
    try:
        net.up()
        pki = os.path.join(args.workdir, "pki")
        os.makedirs(pki)
        read = make_pki(pki)
        for name, case in HAND_WRITTEN.items():
            if args.only and name not in args.only:
                continue
            if args.rendered_dir:
                path = os.path.join(args.rendered_dir, f"{name}.yaml")
                if not R.check(name, "rendered by the hook", os.path.exists(path), path):
                    continue
                case = from_rendering(R, name, path, case)
            case_dir = tempfile.mkdtemp(dir=args.workdir)
            os.chmod(case_dir, 0o755)
            run_case(R, net, name, case, pki, read, case_dir, args.hook)
    finally:
        net.down()
    print(f"secure: {R.passed} passed, {R.failed} failed")
    return 0 if R.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
