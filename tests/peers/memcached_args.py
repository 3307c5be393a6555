#!/usr/bin/env python3
"""Run a real memcached with exactly the arguments the hook renders, and drive it with a real client.

For every case (a Memcached CR in tests/peers/cases/NAME.yaml) the driver takes the Deployment the hook
rendered for it (--rendered-dir DIR/NAME.yaml, the output of `memcached-hook render`), or, when no rendering
is given, a Deployment assembled from the hand-written arguments in cases/expected-args.json.

From the Deployment it takes containers[0].args, its ports, its volume mounts and the Secret volumes behind
them. The Secret volumes are materialised in a temp dir (generated CA, server and client certificates, a
password file) and only the mount paths in the arguments are rewritten to that dir. With --netns the driver
runs inside a private network namespace that contains nothing but `lo`, so the listener addresses stay exactly
as rendered (a wildcard there reaches loopback only); without it the listener addresses are rewritten to
127.0.0.1 and free ports. memcached is started with those arguments, bounded by `timeout`, stopped by its PID.

What is checked comes from the CR (what the user asked for), not from the arguments, so a flag that the hook
drops or gets wrong shows up as a failed check. Prints one line per check and `peers: N passed, M failed`.
Only the standard library plus PyYAML.
"""

import argparse
import fcntl
import json
import os
import pwd
import re
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import warnings

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import procs  # noqa: E402
import test_pki  # noqa: E402

MIB = 1024 * 1024
LOOPBACK_PLAIN = 11213    # memcached's plaintext listener on 127.0.0.1 when TLS is on without allowPlaintext
DEFAULTS = {"maxMemoryMB": 64, "maxConnections": 1024, "threads": 4, "maxItemSize": "1m"}
SASL_USER = "peeruser"
SASL_PASSWORD = "peer-Secret-pw"
OP_TIMEOUT = 4.0          # seconds per socket operation
START_ATTEMPTS = 100      # readiness polls, 0.05 s apart
MEMCACHED_LIFETIME = 120  # hard limit for one memcached process (timeout(1))
# spec.memcached.hardening: command family -> (field, default)
HARDENING = {"flush_all": ("disableFlushAll", False), "dumping": ("disableDumping", True),
             "watch": ("disableWatch", True)}
# extraArgs flags whose value `stats settings` shows: flag -> settings key (`-o key=value` is handled generically)
KNOWN_EXTRA = {"--max-reqs-per-event": "reqs_per_event", "-R": "reqs_per_event"}


# ----------------------------------------------------------------------------------------------- results
class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {name}" + (f"  ({detail})" if detail else ""), flush=True)
        else:
            self.failed += 1
            self.failures.append(name)
            print(f"FAIL  {name}: {detail}", flush=True)
        return ok

    def note(self, text):
        print(f"note  {text}", flush=True)


# ----------------------------------------------------------------------------------------------- helpers
def run(cmd, timeout=60, **kw):
    return subprocess.run(cmd, timeout=timeout, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def bring_up_loopback():
    """`ip link set lo up` without iproute2 (SIOCGIFFLAGS / SIOCSIFFLAGS)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, siocgifflags, req)[:18])[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH", b"lo", flags | iff_up))


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def size_bytes(text):
    unit = {"k": 1024, "m": MIB}[text[-1]]
    return int(text[:-1]) * unit


def dig(obj, *path, default=None):
    for key in path:
        if isinstance(obj, dict) and key in obj and obj[key] is not None:
            obj = obj[key]
        elif isinstance(obj, list) and isinstance(key, int) and 0 <= key < len(obj):
            obj = obj[key]
        else:
            return default
    return obj


# ----------------------------------------------------------------------------------------------- intent
def intent_of(cr):
    """What the CR asks for, with the defaults of spec a.3 / 1.4a (0 and "" mean default)."""
    spec = cr.get("spec") or {}
    mc = spec.get("memcached") or {}
    sec = spec.get("security") or {}
    want = {}
    for key, default in DEFAULTS.items():
        value = mc.get(key)
        want[key] = value if value not in (None, 0, "") else default
    want["verbosity"] = mc.get("verbosity") if mc.get("verbosity") in (1, 2) else 0
    want["extraArgs"] = list(mc.get("extraArgs") or [])
    want["sasl"] = bool(dig(sec, "sasl", "enabled"))
    want["tls"] = bool(dig(sec, "tls", "enabled"))
    want["mtls"] = want["tls"] and bool(dig(sec, "tls", "enableClientCert"))
    # Without allowPlaintext, 11211 speaks TLS and plaintext is only on 127.0.0.1:11213
    want["tls_only"] = want["tls"] and not dig(sec, "tls", "allowPlaintext")
    want["monitoring"] = bool(dig(spec, "monitoring", "enabled"))
    want["sasl_secret"] = dig(sec, "sasl", "credentialsSecretRef", "name", default="")
    want["tls_secret"] = dig(sec, "tls", "certificateSecretRef", "name", default="")
    # spec.memcached.hardening: the commands memcached must refuse (defaults: docs/behaviour.md)
    hard = mc.get("hardening") or {}
    want["refuse"] = {cmd: bool(hard.get(field, default)) for cmd, (field, default) in HARDENING.items()}
    want["tls_min"] = dig(sec, "tls", "minVersion", default="TLSv1.2")
    return want


# ----------------------------------------------------------------------------------------------- PKI
def make_pki(d):
    """CA, server cert (localhost, 127.0.0.1, ::1), client cert from the CA, client cert from another CA."""
    test_pki.issue(d, cas={"ca": "peers-ca", "rogue-ca": "peers-rogue-ca"},
                   certs=[("server", "ca", "server", "localhost"), ("client", "ca", "client", "peers-client"),
                          ("rogue", "rogue-ca", "client", "peers-rogue")],
                   server_sans="DNS:localhost,IP:127.0.0.1,IP:::1")

    def read(name):
        with open(os.path.join(d, name), "rb") as f:
            return f.read()

    # every fake Secret carries every key the hook may project; the password file as `stringData` gives it,
    # without a last newline (memcached < 1.6.32 drops the last byte of such a file; the pod reads a copy)
    return {
        "password-file": f"{SASL_USER}:{SASL_PASSWORD}".encode(),
        "tls.crt": read("server.crt"),
        "tls.key": read("server.key"),
        "ca.crt": read("ca.crt"),
    }


# ----------------------------------------------------------------------------------------------- deployment
def synthetic_deployment(cr, args, want):
    """Only for development without the hook binary: a Deployment per spec b.3/b.8/b.9 around given args."""
    c0 = {"name": "memcached", "image": "memcached:1.6", "args": list(args),
          "ports": [{"name": "memcached", "containerPort": 11211, "protocol": "TCP"}],
          "readinessProbe": {"tcpSocket": {"port": "memcached"}}, "livenessProbe": {"tcpSocket": {"port": "memcached"}}}
    volumes, mounts, inits = [], [], []
    if want["sasl"]:
        volumes.append({"name": "sasl-credentials", "secret": {"secretName": want["sasl_secret"],
                        "items": [{"key": "password-file", "path": "password-file"}]}})
        volumes.append({"name": "sasl-auth-file", "emptyDir": {"medium": "Memory", "sizeLimit": "64Ki"}})
        mounts.append({"name": "sasl-auth-file", "mountPath": "/run/memcached/sasl", "readOnly": True})
        inits.append({"name": "auth-file", "command": ["/memcached-hook"],
                      "args": ["auth-file", "--from", "/etc/memcached/sasl/password-file",
                               "--to", "/run/memcached/sasl/password-file"],
                      "volumeMounts": [{"name": "sasl-credentials", "mountPath": "/etc/memcached/sasl"},
                                       {"name": "sasl-auth-file", "mountPath": "/run/memcached/sasl"}]})
    if want["tls"]:
        c0["ports"].append({"name": "memcached-tls", "containerPort": 11212, "protocol": "TCP"})
        items = [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]
        if want["mtls"]:
            items.append({"key": "ca.crt", "path": "ca.crt"})
        volumes.append({"name": "tls-certificates", "secret": {"secretName": want["tls_secret"], "items": items}})
        mounts.append({"name": "tls-certificates", "mountPath": "/etc/memcached/tls", "readOnly": True})
    if mounts:
        c0["volumeMounts"] = mounts
    containers = [c0]
    if want["monitoring"]:
        exporter = {"name": "exporter", "image": "prom/memcached-exporter:v0.15.4",
                    "ports": [{"name": "metrics", "containerPort": 9150, "protocol": "TCP"}]}
        if want["sasl"]:
            exporter.update(command=["/memcached-hook"], args=stats_exporter_args(want))
        containers.append(exporter)
    pod = {"containers": containers}
    if inits:
        pod["initContainers"] = inits
    if volumes:
        pod["volumes"] = volumes
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": cr["metadata"]["name"]},
            "spec": {"template": {"spec": pod}}}


def materialise_mounts(deploy, workdir, secret_data, hook=None):
    """Write each Secret volume mounted into containers[0] or a plain init container to workdir/mounts/<volume>,
    give each writable volume (a StatefulSet's claim template, an emptyDir, an ephemeral claim) an empty
    directory memcached's user may write to, then run the init containers (the hook's `auth-file`, which
    writes memcached's copy of the auth file) with `hook`; return mountPath -> dir."""
    pod = dig(deploy, "spec", "template", "spec", default={})
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    claims = {dig(c, "metadata", "name") for c in dig(deploy, "spec", "volumeClaimTemplates", default=[]) or []}
    c0 = dig(pod, "containers", 0, default={})
    inits = [c for c in pod.get("initContainers") or [] if c.get("restartPolicy") != "Always"]
    mapping, problems = {}, []
    for m in [m for c in [c0] + inits for m in c.get("volumeMounts") or []]:
        vol = volumes.get(m.get("name"))
        if (vol is None and m.get("name") in claims) or (vol is not None and ("emptyDir" in vol or "ephemeral" in vol)):
            target = os.path.join(workdir, "mounts", m["name"])
            os.makedirs(target, exist_ok=True)
            os.chmod(target, 0o777)  # kubelet's mode for an emptyDir
            mapping[m["mountPath"].rstrip("/")] = target
            continue
        if vol is None or "secret" not in vol:
            problems.append(f"mount {m.get('name')} has no Secret volume")
            continue
        target = os.path.join(workdir, "mounts", m["name"])
        os.makedirs(target, exist_ok=True)
        os.chmod(target, 0o755)
        items = vol["secret"].get("items") or [{"key": k, "path": k} for k in secret_data]
        for item in items:
            if item["key"] not in secret_data:
                problems.append(f"volume {m['name']} projects unknown key {item['key']}")
                continue
            path = os.path.join(target, item["path"])
            with open(path, "wb") as f:
                f.write(secret_data[item["key"]])
            os.chmod(path, 0o644)
        mapping[m["mountPath"].rstrip("/")] = target
    for c in inits:
        if c.get("command") != ["/memcached-hook"] or not hook:
            problems.append(f"init container {c.get('name')}: needs the hook binary, command {c.get('command')}")
            continue
        out = subprocess.run([hook] + rewrite_mount_paths(c.get("args") or [], mapping), timeout=30,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if out.returncode != 0:
            problems.append(f"init container {c.get('name')} exited {out.returncode}: {out.stdout.decode()[-300:]}")
    return mapping, problems


def rewrite_mount_paths(args, mapping):
    out = []
    for arg in args:
        for mount in sorted(mapping, key=len, reverse=True):
            if mount + "/" in arg:
                arg = arg.replace(mount + "/", mapping[mount] + "/")
                break
        out.append(arg)
    return out


def listener_values(args):
    """Indexes and values of -l/--listen arguments."""
    found = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-l", "--listen") and i + 1 < len(args):
            found.append((i + 1, args[i + 1]))
            i += 2
            continue
        if a.startswith("--listen="):
            found.append((i, a))
        elif a.startswith("-l") and len(a) > 2:
            found.append((i, a))
        i += 1
    return found


def rewrite_listeners(args, portmap):
    """Fallback without a private network namespace: every listener goes to 127.0.0.1, ports remapped."""
    args = list(args)
    found = listener_values(args)
    for idx, raw in found:
        prefix, value = "", raw
        if idx == 0 or args[idx - 1] not in ("-l", "--listen"):  # joined forms: --listen=X, -lX
            if raw.startswith("--listen="):
                prefix, value = "--listen=", raw[len("--listen="):]
            elif raw.startswith("-l"):
                prefix, value = "-l", raw[2:]
        entries = []
        for entry in value.split(","):
            tls_prefix = ""
            if entry.startswith("notls:"):
                tls_prefix, entry = "notls:", entry[len("notls:"):]
            port = 11211
            if entry.startswith("["):
                rest = entry[entry.index("]") + 1:]
                if rest.startswith(":"):
                    port = int(rest[1:])
            elif ":" in entry:
                port = int(entry.rsplit(":", 1)[1])
            entries.append(f"{tls_prefix}127.0.0.1:{portmap.setdefault(port, free_port())}")
        args[idx] = prefix + ",".join(entries)
    if not found:
        args += ["-p", str(portmap.setdefault(11211, free_port())), "-l", "127.0.0.1"]
    return args


def apply_break(args, mode):
    """Deliberately broken arguments, to show that the checks catch a wrong hook (see FINDINGS.md)."""
    args = list(args)
    if mode == "flag" and "-m" in args:
        args[args.index("-m")] = "--max-memory-mb"           # not a memcached flag
    elif mode == "verify" and "ssl_verify_mode=2" in args:
        i = args.index("ssl_verify_mode=2")
        del args[i - 1:i + 1]                                  # C5C3's mTLS: ca cert but no verification
    elif mode == "listeners":
        for idx, _ in reversed(listener_values(args)):
            del args[idx - 1:idx + 1]                          # C5C3's TLS: no listeners
    elif mode == "threads" and "-t" in args:
        args[args.index("-t") + 1] = "3"                       # a wrong value
    elif mode == "hardening":
        args = [a for a in args if a not in ("-F", "-X", "-W")]  # a hook that forgets the refusals
        if "ssl_min_version=3" in args:
            args[args.index("ssl_min_version=3")] = "ssl_min_version=2"
    return args


# ----------------------------------------------------------------------------------------------- client
class McError(Exception):
    pass


class Client:
    """A minimal memcached ASCII-protocol client over plain TCP or TLS."""

    def __init__(self, host, port, tls=None):
        self.sock = socket.create_connection((host, port), timeout=OP_TIMEOUT)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname="localhost")
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _line(self):
        for _ in range(10000):
            if b"\r\n" in self.buf:
                line, self.buf = self.buf.split(b"\r\n", 1)
                return line.decode(errors="replace")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise McError("connection closed by server")
            self.buf += chunk
        raise McError("response too long")

    def _exact(self, n):
        for _ in range(10000):
            if len(self.buf) >= n + 2:
                data, self.buf = self.buf[:n], self.buf[n + 2:]
                return data
            chunk = self.sock.recv(65536)
            if not chunk:
                raise McError("connection closed by server")
            self.buf += chunk
        raise McError("value too long")

    def set(self, key, value):
        self.sock.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(value), value))
        return self._line()

    def auth(self, user, password):
        token = f"{user} {password}".encode()
        return self.set("auth", token)

    def get(self, key):
        self.sock.sendall(b"get %s\r\n" % key.encode())
        line = self._line()
        if line.startswith("VALUE "):
            value = self._exact(int(line.split()[3]))
            end = self._line()
            if end != "END":
                raise McError(f"expected END, got {end!r}")
            return value
        if line == "END":
            return None
        raise McError(line)

    def stats(self, sub=""):
        self.sock.sendall(("stats %s\r\n" % sub).strip().encode() + b"\r\n")
        out = {}
        for _ in range(2000):
            line = self._line()
            if line == "END":
                return out
            parts = line.split(" ", 2)
            if parts[0] != "STAT" or len(parts) < 3:
                raise McError(line)
            out[parts[1]] = parts[2]
        raise McError("stats too long")


def set_get(host, port, tls=None, auth=False, key="peer-key"):
    """set + get round trip; returns (ok, detail)."""
    value = os.urandom(8).hex().encode()
    try:
        with Client(host, port, tls) as c:
            if auth:
                r = c.auth(SASL_USER, SASL_PASSWORD)
                if r != "STORED":
                    return False, f"auth answered {r!r}"
            r = c.set(key, value)
            if r != "STORED":
                return False, f"set answered {r!r}"
            got = c.get(key)
            if got != value:
                return False, f"get returned {got!r}, expected {value!r}"
            version = c.sock.version() if isinstance(c.sock, ssl.SSLSocket) else "plaintext"
            return True, version
    except (OSError, McError, ssl.SSLError) as e:
        return False, f"{type(e).__name__}: {e}"


def rejected(host, port, tls=None, auth=False):
    """True when the server refuses a session: handshake error, alert or EOF on the first command."""
    try:
        with Client(host, port, tls) as c:
            if auth:
                c.auth(SASL_USER, SASL_PASSWORD)
            r = c.set("peer-rejected", b"x")
            return r != "STORED", f"server answered {r!r}"
    except (OSError, McError, ssl.SSLError) as e:
        return True, f"{type(e).__name__}: {str(e)[:90]}"


def tls_context(pki_dir, client_cert=None, max_tls12=False):
    ctx = ssl.create_default_context(cafile=os.path.join(pki_dir, "ca.crt"))  # verifies the server cert
    if client_cert:
        ctx.load_cert_chain(os.path.join(pki_dir, f"{client_cert}.crt"), os.path.join(pki_dir, f"{client_cert}.key"))
    if max_tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    return ctx


# ----------------------------------------------------------------------------------------------- memcached
class Memcached:
    def __init__(self, binary, args, workdir, name):
        self.log_path = os.path.join(workdir, f"{name}.memcached.log")
        prefix = ["timeout", "--kill-after=5", str(MEMCACHED_LIFETIME)]
        if os.geteuid() == 0:  # memcached refuses root without -u; run as an unprivileged user, argv unchanged
            user = "memcache" if _user_exists("memcache") else "nobody"
            pw = pwd.getpwnam(user)
            prefix += ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"]
        self.cmd = prefix + [binary] + list(args)
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_ready(self, host, port):
        for _ in range(START_ATTEMPTS):
            if self.proc.poll() is not None:
                return False, f"memcached exited with {self.proc.returncode}: {self.log_tail()}"
            try:
                socket.create_connection((host, port), timeout=0.5).close()
                return True, f"pid {self.proc.pid}"
            except OSError:
                time.sleep(0.05)
        return False, f"nothing listens on {host}:{port} after {START_ATTEMPTS * 0.05:.0f}s: {self.log_tail()}"

    def stop(self):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM to timeout(1), which passes it on to memcached
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.log.close()
        return self.proc.returncode

    def log_tail(self):
        try:
            self.log.flush()
            with open(self.log_path, "rb") as f:
                return f.read()[-300:].decode(errors="replace").strip().replace("\n", " | ")
        except OSError:
            return ""


def _user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


# ----------------------------------------------------------------------------------------------- exporter
def scrape_like_exporter(port, hosts):
    """What memcached_exporter does with its default address localhost:<port>: plain TCP, no SASL, `stats`.
    A pod's /etc/hosts maps localhost to 127.0.0.1 and ::1, so every loopback address is tried."""
    results = []
    resolved = [a[4][0] for a in socket.getaddrinfo("localhost", port, type=socket.SOCK_STREAM)]
    for host in dict.fromkeys(resolved + hosts):
        try:
            with Client(host, port) as c:
                st = c.stats()
                results.append((host, "pid" in st and "uptime" in st, f"{len(st)} stats"))
        except (OSError, McError, ssl.SSLError) as e:
            results.append((host, False, f"{type(e).__name__}: {e}"))
    return results


def run_exporter(binary, memcached_port, netns, workdir, name):
    """Run the real exporter (with the rendered exporter args, i.e. none, in a private netns) and scrape it."""
    import urllib.request
    listen_port = 9150 if netns else free_port()
    cmd = ["timeout", "--kill-after=5", "60", binary]
    if not netns:
        cmd += [f"--memcached.address=127.0.0.1:{memcached_port}", f"--web.listen-address=127.0.0.1:{listen_port}"]
    log_path = os.path.join(workdir, f"{name}.exporter.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            body, err = "", ""
            for _ in range(50):
                if proc.poll() is not None:
                    err = f"exporter exited with {proc.returncode}"
                    break
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{listen_port}/metrics", timeout=5) as r:
                        body = r.read().decode()
                    break
                except OSError as e:
                    err = str(e)
                    time.sleep(0.1)
            up = [l for l in body.splitlines() if l.startswith("memcached_up")]
            return up == ["memcached_up 1"], (up[0] if up else err)
        finally:
            procs.stop(proc, 5)


# ----------------------------------------------------------------------------------------------- replay
CHILD_RESOURCES = [("apps/v1", "deployments", "Deployment"), ("apps/v1", "statefulsets", "StatefulSet"),
                   ("v1", "services", "Service"),
                   ("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget"),
                   ("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy"),
                   ("monitoring.coreos.com/v1", "servicemonitors", "ServiceMonitor"),
                   ("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")]


def replay_deployment(hook, cr, workdir, name):
    """The workload (Deployment or StatefulSet) of `memcached-hook replay` for a first-sync request
    (no observed children) of the CR."""
    parent = json.loads(json.dumps(cr, default=str))
    meta = parent.setdefault("metadata", {})
    meta.setdefault("namespace", "peers")
    meta.setdefault("uid", "00000000-0000-4000-8000-0000000000aa")
    meta.setdefault("generation", 1)
    request = {
        "controller": {
            "apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
            "metadata": {"name": "memcached-controller"},
            "spec": {"parentResource": {"apiVersion": "memcached.c5c3.io/v1beta1", "resource": "memcacheds"},
                     "childResources": [{"apiVersion": a, "resource": r, "updateStrategy": {"method": "InPlace"}}
                                        for a, r, _ in CHILD_RESOURCES],
                     "hooks": {"sync": {"version": "v1", "webhook": {"url": "http://hook/sync"}}}}},
        "parent": parent,
        "children": {f"{k}.{a}": {} for a, _, k in CHILD_RESOURCES},
        "related": {},
        "finalizing": False,
    }
    path = os.path.join(workdir, f"{name}.sync-request.json")
    with open(path, "w") as f:
        json.dump(request, f)
    out = subprocess.run([hook, "replay", path, "--now", "2026-01-01T00:00:00Z"], timeout=60,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if out.returncode != 0:
        raise RuntimeError(f"replay exited {out.returncode}: {out.stderr.decode()[:300]}")
    children = json.loads(out.stdout).get("children") or []
    return next((c for c in children if c.get("kind") in ("Deployment", "StatefulSet")), None)


def diff_paths(a, b, path="", out=None, limit=8):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            diff_paths(a.get(k), b.get(k), f"{path}.{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff_paths(x, y, f"{path}[{i}]", out, limit)
    elif a != b:
        out.append(f"{path or '.'}: {json.dumps(a)[:80]} vs {json.dumps(b)[:80]}")
    return out


# ----------------------------------------------------------------------------------------------- one case
def run_case(R, name, cr, children, expected, opts, pki_dir, secret_data):
    want = intent_of(cr)
    ck = lambda check, ok, detail="": R.check(f"{name}/{check}", ok, detail)

    if children is not None:
        # The workload (a Deployment, or a StatefulSet under spec.workload) carries the pod
        # template whose memcached command line is run below.
        workloads = ("Deployment", "StatefulSet")
        deploys = [d for d in children if isinstance(d, dict) and d.get("kind") in workloads]
        ck("render-workload-first", bool(children) and children[0].get("kind") in workloads,
           f"kinds: {[d.get('kind') for d in children if isinstance(d, dict)]}")
        if not deploys:
            return
        deploy = deploys[0]
    else:
        deploy = synthetic_deployment(cr, expected, want)

    pod = dig(deploy, "spec", "template", "spec", default={})
    c0 = dig(pod, "containers", 0, default={})
    args = c0.get("args") or []
    if not ck("container-0-is-memcached", c0.get("name") == "memcached" and isinstance(args, list)
              and all(isinstance(a, str) for a in args), f"name={c0.get('name')!r}"):
        return
    if expected is not None and children is not None:
        ck("args-match-spec", args == expected,
           "" if args == expected else f"\n        rendered {json.dumps(args)}\n        expected {json.dumps(expected)}")

    if opts.hook and children is not None:
        try:
            replayed = replay_deployment(opts.hook, cr, opts.workdir, name)
            rendered = json.loads(json.dumps(deploy, default=str))
            for d in (replayed or {}), rendered:
                d.get("metadata", {}).pop("namespace", None)
            diffs = diff_paths(rendered, replayed)
            ck("replay-deployment-equals-render", replayed is not None and not diffs, "; ".join(diffs))
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            ck("replay-deployment-equals-render", False, str(e))

    ports = {p.get("name"): p.get("containerPort") for p in c0.get("ports") or []}
    plain_port, tls_port = ports.get("memcached"), ports.get("memcached-tls")
    ck("ports-declared", plain_port == 11211 and (tls_port == 11212 if want["tls"] else tls_port is None),
       f"{ports}")
    probe = {dig(c0, "readinessProbe", "tcpSocket", "port"), dig(c0, "livenessProbe", "tcpSocket", "port")}
    ck("probes-use-port-11211", probe <= {"memcached", plain_port}, f"probe ports {probe}")
    if plain_port is None:
        return
    main_tls = None
    if want["tls_only"]:
        # 11211 is a TLS port like 11212; plaintext is the loopback listener, not a container port
        main_tls, plain_port = plain_port, LOOPBACK_PLAIN

    workdir = tempfile.mkdtemp(prefix=f"{name}-", dir=opts.workdir)
    os.chmod(workdir, 0o755)
    mapping, problems = materialise_mounts(deploy, workdir, secret_data, opts.hook)
    ck("secret-volumes-mountable", not problems, "; ".join(problems) or f"{sorted(mapping)}")
    run_args = rewrite_mount_paths(args, mapping)
    leftover = [a for a in run_args if "/etc/memcached/" in a or "/run/memcached/" in a]
    ck("args-reference-only-mounted-paths", not leftover, f"unmounted paths: {leftover}")

    hosts = ["127.0.0.1"]
    if opts.netns:
        plain, tlsp, main_tlsp = plain_port, tls_port, main_tls
        if ipv6_loopback() and not want["tls_only"]:  # the loopback listener is 127.0.0.1 only
            hosts.append("::1")
    else:
        portmap = {}
        run_args = rewrite_listeners(run_args, portmap)
        plain = portmap.get(plain_port) or portmap.setdefault(plain_port, free_port())
        tlsp = portmap.get(tls_port) if tls_port else None
        main_tlsp = portmap.get(main_tls) if main_tls else None
    if opts.break_mode:
        run_args = apply_break(run_args, opts.break_mode)
    print(f"      memcached {' '.join(run_args)}", flush=True)

    mc = Memcached(opts.memcached, run_args, workdir, name)
    mc.start()
    try:
        ok, detail = mc.wait_ready("127.0.0.1", plain)
        if not ck("starts-and-listens", ok, detail):
            return
        auth = want["sasl"]
        for h in hosts:
            ck(f"plaintext-set-get[{h}]", *set_get(h, plain, auth=auth))
        if want["tls"]:
            client = "client" if want["mtls"] else None
            for h in hosts:
                if tlsp is None:
                    ck(f"tls-set-get[{h}]", False, "no TLS listener in the arguments")
                    continue
                ck(f"tls-set-get[{h}]", *set_get(h, tlsp, tls_context(pki_dir, client), auth=auth))
            if tlsp is not None:
                ck("tls-port-refuses-plaintext", *rejected("127.0.0.1", tlsp, auth=auth))
            ck("plaintext-port-is-not-tls", *rejected("127.0.0.1", plain, tls_context(pki_dir, client)))
            if want["tls_only"]:
                ck("port-11211-serves-tls", main_tlsp is not None
                   and set_get("127.0.0.1", main_tlsp, tls_context(pki_dir, client), auth=auth)[0], f"{main_tlsp}")
                if main_tlsp is not None:
                    ck("port-11211-refuses-plaintext", *rejected("127.0.0.1", main_tlsp, auth=auth))
            if tlsp is not None and want["mtls"]:
                ck("mtls-rejects-no-client-cert", *rejected("127.0.0.1", tlsp, tls_context(pki_dir), auth=auth))
                ck("mtls-rejects-no-client-cert-tls1.2",
                   *rejected("127.0.0.1", tlsp, tls_context(pki_dir, max_tls12=True), auth=auth))
                ck("mtls-rejects-cert-from-other-ca",
                   *rejected("127.0.0.1", tlsp, tls_context(pki_dir, "rogue"), auth=auth))
            elif tlsp is not None:
                ck("tls-without-client-cert-accepted", *set_get("127.0.0.1", tlsp, tls_context(pki_dir), auth=auth))
        elif opts.netns:
            ok, detail = rejected("127.0.0.1", 11212)
            ck("no-tls-listener", ok and "Refused" in detail, detail)
        if want["sasl"]:
            ck("auth-required-for-get", *_unauthenticated("127.0.0.1", plain, None))
            ck("auth-wrong-password-rejected", *_wrong_password("127.0.0.1", plain, None))
            # the Secret's file has no last newline: the copy memcached reads keeps the password whole
            ck("auth-password-less-its-last-byte-rejected",
               *_wrong_password("127.0.0.1", plain, None, SASL_PASSWORD[:-1]))
            if want["tls"] and tlsp is not None:
                client = "client" if want["mtls"] else None
                ck("auth-required-over-tls", *_unauthenticated("127.0.0.1", tlsp, tls_context(pki_dir, client)))
        check_settings(ck, want, plain, mapping)
        check_hardening(ck, want, plain, auth)
        if want["tls"] and tlsp is not None:
            check_tls_minimum(ck, want, tlsp, pki_dir, "client" if want["mtls"] else None, auth)
        if want["monitoring"]:
            check_exporter(ck, R, want, deploy, plain_port, plain, opts, workdir, name, hosts)
    finally:
        rc = mc.stop()
    ck("stops-on-sigterm", rc is not None and rc in (0, 124, -15, 143), f"exit {rc}")


def _unauthenticated(host, port, tls):
    try:
        with Client(host, port, tls) as c:
            try:
                got = c.get("peer-key")
                return False, f"get without auth returned {got!r}"
            except McError as e:
                return "unauthenticated" in str(e), str(e)
    except (OSError, ssl.SSLError) as e:
        return False, f"{type(e).__name__}: {e}"


def _wrong_password(host, port, tls, password="not-the-password"):
    try:
        with Client(host, port, tls) as c:
            r = c.auth(SASL_USER, password)
            try:
                got = c.get("peer-key")
                after = f"get then returned {got!r}"
                ok_after = False
            except McError as e:
                after, ok_after = str(e), "unauthenticated" in str(e)
            return r.startswith("CLIENT_ERROR") and ok_after, f"auth: {r!r}; {after}"
    except (OSError, ssl.SSLError) as e:
        return False, f"{type(e).__name__}: {e}"


def check_settings(ck, want, port, mapping):
    try:
        with Client("127.0.0.1", port) as c:
            if want["sasl"]:
                c.auth(SASL_USER, SASL_PASSWORD)
            st = c.stats("settings")
    except (OSError, McError, ssl.SSLError) as e:
        ck("stats-settings", False, f"{type(e).__name__}: {e}")
        return
    expect = {
        "maxbytes": str(want["maxMemoryMB"] * MIB),
        "maxconns": str(want["maxConnections"]),
        "num_threads": str(want["threads"]),
        "item_size_max": str(size_bytes(want["maxItemSize"])),
        "verbosity": str(want["verbosity"]),
        "ssl_enabled": "yes" if want["tls"] else "no",
    }
    if want["mtls"]:
        # memcached shows OpenSSL's flags: 2 (Require) = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT = 3
        expect["ssl_verify_mode"] = "3"
        expect["ssl_ca_cert"] = os.path.join(mapping.get("/etc/memcached/tls", "?"), "ca.crt")
    if want["sasl"]:
        expect["auth_enabled_ascii"] = os.path.join(mapping.get("/run/memcached/sasl", "?"), "password-file")
    else:
        expect["auth_enabled_ascii"] = "no"
    extra = want["extraArgs"]
    for i, a in enumerate(extra[:-1]):
        if a in KNOWN_EXTRA:
            expect[KNOWN_EXTRA[a]] = extra[i + 1]
        if a == "-o" and "=" in extra[i + 1]:
            k, v = extra[i + 1].split("=", 1)
            if k in st:
                expect[k] = v
    for key, value in expect.items():
        ck(f"settings[{key}]", st.get(key) == value, f"{st.get(key)}" if st.get(key) == value
           else f"stats settings says {st.get(key)!r}, the CR means {value!r}")


def stats_exporter_args(want):
    """Under SASL the metrics sidecar is the hook's own stats exporter, logged in with the mounted auth file."""
    port = LOOPBACK_PLAIN if want["tls_only"] else 11211
    return ["stats-exporter", "--auth-file", "/run/memcached/sasl/password-file", "--memcached-addr",
            f"127.0.0.1:{port}"]


def _first_line(c, command):
    """Sends one command on an open session and returns memcached's first answer line."""
    c.sock.sendall(command.encode() + b"\r\n")
    return c._line()


def check_hardening(ck, want, port, auth):
    """Each command of spec.memcached.hardening: refused when asked, answered otherwise; a refused
    flush_all leaves the data in place."""
    commands = {"flush_all": ["flush_all"], "dumping": ["stats cachedump 1 1", "lru_crawler metadump all"],
                "watch": ["watch"]}
    for family, lines in commands.items():
        refuse = want["refuse"][family]
        for command in lines:
            try:
                with Client("127.0.0.1", port) as c:
                    if auth:
                        c.auth(SASL_USER, SASL_PASSWORD)
                    c.set("peer-hardening", b"kept")
                    first = _first_line(c, command)
                    if family == "flush_all":
                        kept = c.get("peer-hardening") == b"kept"
                        first += f" (key {'kept' if kept else 'gone'})"
            except (OSError, McError, ssl.SSLError) as e:
                ck(f"hardening[{command}]", False, f"{type(e).__name__}: {e}")
                continue
            refused = "not allowed" in first
            if family == "flush_all":
                ok = ("kept" in first) if refuse else first.startswith("OK")
            else:
                ok = refused == refuse
            ck(f"hardening[{command}] {'refused' if refuse else 'answered'}", ok and refused == refuse, first)


def check_tls_minimum(ck, want, port, pki_dir, client, auth):
    """A client that offers only versions below spec.security.tls.minVersion gets no session."""
    if want["tls_min"] == "TLSv1.3":
        ok, detail = rejected("127.0.0.1", port, tls_context(pki_dir, client, max_tls12=True), auth=auth)
        ck("tls-min-version-refuses-tls1.2-client", ok, detail)
    else:
        ok, detail = set_get("127.0.0.1", port, tls_context(pki_dir, client, max_tls12=True), auth=auth)
        ck("tls-min-version-accepts-tls1.2-client", ok, detail)
        # OpenSSL's own policy on this machine may refuse TLS 1.1 too; @SECLEVEL=0 lets the client offer it
        old = tls_context(pki_dir, client, max_tls12=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # offering TLS 1.1 is the point
            old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1_1
        try:
            old.set_ciphers("DEFAULT:@SECLEVEL=0")
        except ssl.SSLError:
            pass
        ck("tls-min-version-refuses-tls1.1-client", *rejected("127.0.0.1", port, old, auth=auth))


def check_exporter(ck, R, want, deploy, plain_port, plain, opts, workdir, name, hosts):
    containers = dig(deploy, "spec", "template", "spec", "containers", default=[])
    exp = containers[1] if len(containers) > 1 else {}
    if want["sasl"]:
        want_args, want_command = stats_exporter_args(want), ["/memcached-hook"]
    else:
        want_args = [f"--memcached.address=127.0.0.1:{LOOPBACK_PLAIN}"] if want["tls_only"] else None
        want_command = None
    ck("exporter-sidecar", exp.get("name") == "exporter" and exp.get("args") == want_args
       and exp.get("command") == want_command,
       f"containers: {[c.get('name') for c in containers]}, exporter command {exp.get('command')} args {exp.get('args')}")
    # without TLS-only the sidecar has no arguments, so it scrapes its default localhost:11211 in plaintext
    # without SASL; with it, 127.0.0.1:11213 (the loopback listener)
    if want["tls_only"]:
        scrapes = [("127.0.0.1", *_stats_ok("127.0.0.1", plain))]
    elif opts.netns:
        scrapes = scrape_like_exporter(plain_port, hosts)
    else:
        scrapes = [(h, *r) for h, r in (("127.0.0.1", _stats_ok("127.0.0.1", plain)),)]
    for host, ok, detail in scrapes:
        if want["sasl"]:
            ck(f"exporter-style-scrape-refused-under-sasl[{host}]", not ok, detail)
        else:
            ck(f"exporter-style-scrape[{host}]", ok, detail)
    if want["sasl"]:
        R.note(f"{name}: with SASL on, stats without a login is refused; the hook's stats exporter logs in "
               "(scraped in the secure suite)")
    if opts.exporter and not want["sasl"]:
        ck("real-exporter-memcached_up", *run_exporter(opts.exporter, plain, opts.netns, workdir, name))


def _stats_ok(host, port):
    try:
        with Client(host, port) as c:
            st = c.stats()
            return "pid" in st, f"{len(st)} stats"
    except (OSError, McError, ssl.SSLError) as e:
        return False, f"{type(e).__name__}: {e}"


def check_raw_auth_file(R, opts, version):
    """Control: memcached reading the Secret's file itself (no last newline). Before 1.6.32 it loads a one-entry
    file's password less its last byte (the reason the pod reads a normalised copy), while with an entry before
    it that entry's newline leaves room and the password is whole; from 1.6.32 on always whole."""
    fixed = tuple(int(x) for x in re.findall(r"\d+", version)[:3]) >= (1, 6, 32)
    entry = f"{SASL_USER}:{SASL_PASSWORD}"
    for n, (name, content, truncated) in enumerate((("one-entry", entry, not fixed),
                                                     ("two-entries", f"other:x\n{entry}", False))):
        workdir = tempfile.mkdtemp(prefix=f"raw-auth-{name}-", dir=opts.workdir)
        os.chmod(workdir, 0o755)
        path = os.path.join(workdir, "password-file")
        with open(path, "wb") as f:
            f.write(content.encode())
        os.chmod(path, 0o644)
        port = 21299 + n if opts.netns else free_port()
        mc = Memcached(opts.memcached, ["-l", f"127.0.0.1:{port}", "-Y", path], workdir, f"raw-auth-{name}")
        mc.start()
        try:
            ok, detail = mc.wait_ready("127.0.0.1", port)
            if not R.check(f"raw-auth-file/{name}/starts", ok, detail):
                continue
            logins = {}
            for label, password in (("whole", SASL_PASSWORD), ("less-last-byte", SASL_PASSWORD[:-1])):
                with Client("127.0.0.1", port, None) as c:
                    logins[label] = c.auth(SASL_USER, password)
            accepted = "less-last-byte" if truncated else "whole"
            R.check(f"raw-auth-file/{name}/without-last-newline-memcached-loads-the-{accepted}-password",
                    logins[accepted] == "STORED" and all(r != "STORED" for k, r in logins.items() if k != accepted),
                    f"{version}: logins {logins}")
        finally:
            mc.stop()


# ----------------------------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="directory with NAME.yaml Memcached CRs and expected-args.json")
    ap.add_argument("--rendered-dir", help="directory with NAME.yaml = `memcached-hook render cases/NAME.yaml`")
    ap.add_argument("--samples", help="directory of more Memcached CRs (config/samples), run as sample-NAME; "
                    "their renderings are sample-NAME.yaml in --rendered-dir; no expected arguments")
    ap.add_argument("--hook", help="memcached-hook binary: also compare `replay` of a sync request with `render`")
    ap.add_argument("--only", action="append", help="run only these cases")
    ap.add_argument("--netns", action="store_true", help="running in a private network namespace (unshare -n)")
    ap.add_argument("--memcached", default=shutil.which("memcached") or "/usr/bin/memcached")
    ap.add_argument("--exporter", help="memcached_exporter binary, if one is installed")
    ap.add_argument("--break", dest="break_mode", choices=["flag", "verify", "listeners", "threads", "hardening"],
                    help="deliberately break the arguments after rendering (shows that the checks fail)")
    ap.add_argument("--workdir", help="temp dir (default: a new one, removed afterwards)")
    ap.add_argument("--deadline", type=float, default=600, help="seconds for all cases")
    opts = ap.parse_args()

    started = time.monotonic()
    own_workdir = opts.workdir is None
    opts.workdir = opts.workdir or tempfile.mkdtemp(prefix="memcached-peers-")
    os.chmod(opts.workdir, 0o755)
    R = Results()
    try:
        if opts.netns:
            bring_up_loopback()
            R.note(f"private network namespace: listeners kept as rendered; IPv6 loopback: {ipv6_loopback()}")
        else:
            R.note("no private network namespace: listener addresses rewritten to 127.0.0.1 and free ports")
        version = run([opts.memcached, "-V"]).stdout.decode().strip()
        R.note(f"{version} ({opts.memcached}); mode: "
               + ("rendered by the hook" if opts.rendered_dir else "hand-written expected args (no hook binary)"))
        check_raw_auth_file(R, opts, version)
        pki_dir = os.path.join(opts.workdir, "pki")
        os.makedirs(pki_dir)
        secret_data = make_pki(pki_dir)
        with open(os.path.join(opts.cases, "expected-args.json")) as f:
            expected_all = json.load(f)
        sources = {n[:-5]: os.path.join(opts.cases, n) for n in os.listdir(opts.cases) if n.endswith(".yaml")}
        if opts.samples and os.path.isdir(opts.samples):
            if not opts.rendered_dir:
                R.note("samples need --rendered-dir (the hook's rendering); skipped")
            else:
                sources.update({f"sample-{n[:-5]}": os.path.join(opts.samples, n)
                                for n in os.listdir(opts.samples) if n.endswith(".yaml")})
        names = sorted(sources)
        if opts.only:
            names = [n for n in names if n in opts.only]
        R.check("cases-found", bool(names), f"{len(names)} cases")
        for name in names:
            if time.monotonic() - started > opts.deadline:
                R.check(f"{name}/deadline", False, f"over {opts.deadline}s, case not run")
                continue
            print(f"--- {name}", flush=True)
            with open(sources[name]) as f:
                cr = yaml.safe_load(f)
            expected = expected_all.get(name)
            children = None
            with open(sources[name]) as f:
                through_replay = f.readline().startswith("# through: replay")
            if opts.rendered_dir and through_replay:
                # Out of the CRD's bounds: render refuses it (run.sh checks), the sync path reads it.
                if not R.check(f"{name}/render-refuses",
                               not os.path.exists(os.path.join(opts.rendered_dir, f"{name}.refused")),
                               "render refuses it as the API server does; the workload comes from replay"):
                    continue
                workload = replay_deployment(opts.hook, cr, opts.workdir, name) if opts.hook else None
                if not R.check(f"{name}/replayed", workload is not None, "replay of a first sync request"):
                    continue
                children = [workload]
            elif opts.rendered_dir:
                path = os.path.join(opts.rendered_dir, f"{name}.yaml")
                if not R.check(f"{name}/rendered", os.path.exists(path), path):
                    continue
                with open(path) as f:
                    children = [d for d in yaml.safe_load_all(f) if d is not None]
            elif expected is None:
                R.check(f"{name}/expected-args", False, "no entry in expected-args.json and no rendering")
                continue
            try:
                run_case(R, name, cr, children, expected, opts, pki_dir, secret_data)
            except Exception as e:  # a bug in the driver must fail the run, not pass silently
                R.check(f"{name}/driver", False, f"{type(e).__name__}: {e}")
    finally:
        if own_workdir:
            shutil.rmtree(opts.workdir, ignore_errors=True)
    R.note(f"took {time.monotonic() - started:.0f}s" + (f"; failed: {' '.join(R.failures)}" if R.failures else ""))
    print(f"peers: {R.passed} passed, {R.failed} failed")
    return 0 if R.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
