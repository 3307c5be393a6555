"""memcached's proxy running exactly the route configuration the hook renders, in front of real
memcached backends on loopback.

    python3 tests/proxy/proxy.py --hook BIN --memcached BIN [--deadline SECONDS]

The hook renders a zoned Memcached (3 zones x 2 StatefulSet pods, spec.proxy on); the ConfigMap
`<name>-proxy` it answers holds the configuration. Each backend the configuration names
(`<pod>.<name>.<namespace>.svc:11211`) is mapped to a memcached of its own on a free 127.0.0.1
port, nothing else of the text changes, and the proxy is started with it as memcached's proxy
(`-o proxy_config=routelib,proxy_arg=FILE`), its zone in the environment as a proxy pod's. Checks:
a write reaches one pod of every zone, a read is served by the local zone, a miss there is served
by another zone, reads keep hitting with the local zone's pods stopped, and a new replica count
rendered again reaches the same proxy process: the file is mounted the way kubelet mounts a
ConfigMap (`routes.lua -> ..data/routes.lua`, `..data` a symlink to a versioned directory), the
new version is published by swapping `..data`, and the rendered reload agent
(`memcached-hook reload-agent` with the rendered proxy-mode arguments) sends the SIGHUP and
confirms the load.
Last line: "proxy: N passed, M failed".
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from loopback_memcached import start, stop  # noqa: E402

NAME, NAMESPACE = "cache", "shop"
ZONES = ["zone-a", "zone-b", "zone-c"]
LOCAL = "zone-a"
# A read that fails over waits at most the rendered read timeout (1 s) per try; the proxy marks
# a backend down after 3 failures. Reads must hit again well within this.
FAILOVER_BOUND_SECONDS = 10.0
# A read whose local backend hangs: the rendered backend_read_timeout (1 s) and some slack.
READ_TIMEOUT_BOUND = 1.5
# A single request through the proxy, whatever happens behind it.
REQUEST_TIMEOUT = 5.0
KEYS = [f"key-{i}" for i in range(60)]

passed, failed = 0, 0


def result(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}{' (' + detail + ')' if detail else ''}", flush=True)
    else:
        failed += 1
        print(f"FAIL {name}: {detail}", flush=True)


def cr(replicas):
    return f"""apiVersion: memcached.c5c3.io/v1beta1
kind: Memcached
metadata:
  name: {NAME}
  namespace: {NAMESPACE}
spec:
  workload: StatefulSet
  replicas: {replicas}
  zones:
    names: [{", ".join(ZONES)}]
  proxy:
    enabled: true
"""


def render(hook, work, replicas):
    """The children the hook renders for `replicas` per zone."""
    path = os.path.join(work, f"cache-{replicas}.yaml")
    with open(path, "w") as f:
        f.write(cr(replicas))
    out = subprocess.run([hook, "render", path], capture_output=True, text=True, timeout=60, check=True).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def child(children, kind, name):
    for doc in children:
        if doc.get("kind") == kind and doc["metadata"]["name"] == name:
            return doc
    raise RuntimeError(f"no {kind} {name} in the rendered children")


def render_routes(hook, work, replicas):
    """The routes.lua of the ConfigMap <name>-proxy the hook renders for `replicas` per zone."""
    return child(render(hook, work, replicas), "ConfigMap", f"{NAME}-proxy")["data"]["routes.lua"]


def proxy_command(hook, work):
    """The rendered proxy pod of the local zone: the proxy's arguments and environment, and the
    reload agent's arguments."""
    deployment = child(render(hook, work, 2), "Deployment", f"{NAME}-proxy-{LOCAL}")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    agent = pod["initContainers"][0]
    return container["args"], env, agent["args"]


class Volume:
    """A directory laid out as kubelet mounts a ConfigMap: `<key> -> ..data/<key>`, `..data` a
    symlink to a versioned directory, a new version published by one rename of `..data`."""

    def __init__(self, dir, key):
        self.dir, self.key, self.version = dir, key, 0
        os.makedirs(dir)

    def path(self):
        return os.path.join(self.dir, self.key)

    def publish(self, text):
        self.version += 1
        name = f"..2026_12_02_00_00_00.{self.version}"
        os.mkdir(os.path.join(self.dir, name))
        with open(os.path.join(self.dir, name, self.key), "w") as f:
            f.write(text)
        tmp = os.path.join(self.dir, "..data_tmp")
        os.symlink(name, tmp)
        os.replace(tmp, os.path.join(self.dir, "..data"))
        if not os.path.islink(self.path()):
            os.symlink(os.path.join("..data", self.key), self.path())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def agent_metrics(port):
    """The reload agent's `routes` counters: (success, failure)."""
    text = ""
    with socket.create_connection(("127.0.0.1", port), timeout=REQUEST_TIMEOUT) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            text += chunk.decode()
    counts = {}
    for outcome in ("success", "failure"):
        m = re.search(r'memcached_reload_agent_reloads_total\{what="routes",outcome="%s"\} (\d+)' % outcome, text)
        counts[outcome] = int(m.group(1)) if m else -1
    return counts["success"], counts["failure"]


BACKEND = re.compile(r'"([a-z0-9.-]+\.svc):11211"')


def backend_names(text):
    return BACKEND.findall(text)


def mapped(text, ports):
    """`text` with each backend `host:11211` replaced by its loopback `127.0.0.1:port`."""
    return BACKEND.sub(lambda m: f'"127.0.0.1:{ports[m.group(1)]}"', text)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=REQUEST_TIMEOUT)
        self.buf = b""

    def close(self):
        self.s.close()

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def exact(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def set(self, key, value):
        self.s.sendall(f"set {key} 0 0 {len(value)}\r\n{value}\r\n".encode())
        return self.line()

    def get(self, key):
        """The value, or None on a miss; raises on an error line."""
        self.s.sendall(f"get {key}\r\n".encode())
        first = self.line()
        if first == "END":
            return None
        if not first.startswith("VALUE "):
            raise RuntimeError(first)
        n = int(first.split()[3])
        value = self.exact(n + 2)[:-2].decode()
        end = self.line()
        if end != "END":
            raise RuntimeError(end)
        return value

    def delete(self, key):
        self.s.sendall(f"delete {key}\r\n".encode())
        return self.line()

    def stats(self):
        self.s.sendall(b"stats\r\n")
        out = {}
        while True:
            line = self.line()
            if line == "END":
                return out
            _, k, v = line.split(" ", 2)
            out[k] = v


def once(port, f):
    c = Conn(port)
    try:
        return f(c)
    finally:
        c.close()


def child_pid(p):
    """The PID of the program timeout(1) runs for `p` (signals go to it, not to timeout)."""
    with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
        return int(f.read().split()[0])


def zone_of(host):
    return next(z for z in ZONES if host.startswith(f"{NAME}-{z}-"))


class Fleet:
    """The backends by pod host name, each a memcached on its own loopback port."""

    def __init__(self, memcached, user):
        self.memcached, self.user = memcached, user
        self.procs, self.ports = {}, {}

    def ensure(self, hosts):
        for host in hosts:
            if host in self.procs:
                continue
            p, port = start(self.memcached, ["-m", "16", "-t", "1"], user=self.user, bound=600)
            if port is None:
                raise RuntimeError(f"backend for {host} exited: {stop(p)}")
            self.procs[host], self.ports[host] = p, port

    def signal(self, hosts, sig):
        for host in hosts:
            os.kill(child_pid(self.procs[host]), sig)

    def stop(self, hosts):
        for host in hosts:
            stop(self.procs.pop(host))
            self.ports.pop(host)

    def stop_all(self):
        self.stop(list(self.procs))

    def hits(self):
        return {h: int(once(p, Conn.stats)["get_hits"]) for h, p in self.ports.items()}

    def holders(self, key):
        return [h for h, p in self.ports.items() if once(p, lambda c: c.get(key)) is not None]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hook", required=True)
    ap.add_argument("--memcached", required=True)
    ap.add_argument("--proxy-zone", default=LOCAL,
                    help="the zone the proxy is told it runs in (another one must fail the checks)")
    args = ap.parse_args()
    user = ["-u", "root"] if os.getuid() == 0 else []
    work = tempfile.mkdtemp(prefix="memcached-hook-proxy.")
    fleet = Fleet(args.memcached, user)
    proxy = agent = None
    started = time.monotonic()
    try:
        text = render_routes(args.hook, work, 2)
        hosts = backend_names(text)
        want = [f"{NAME}-{z}-{i}.{NAME}.{NAMESPACE}.svc" for z in ZONES for i in range(2)]
        result(hosts == want, "the rendered routes name each zone's pods by their stable names",
               f"{hosts}" if hosts != want else f"{len(hosts)} backends")
        fleet.ensure(hosts)
        volume = Volume(os.path.join(work, "proxy-routes"), "routes.lua")
        volume.publish(mapped(text, fleet.ports))
        config = volume.path()
        # The proxy container's rendered command line, with the mounted file's path mapped to
        # the local file and its port to a free loopback one.
        rendered_args, rendered_env, agent_args = proxy_command(args.hook, work)
        result(rendered_env == {"MEMCACHED_PROXY_ZONE": LOCAL},
               "the rendered proxy of the local zone is told its zone", f"{rendered_env}")
        pport = free_port()
        mount = "/etc/memcached/proxy/routes.lua"
        proxy_args = [a.replace(mount, config) for a in rendered_args]
        at = proxy_args.index("-p")
        proxy_args[at + 1] = str(pport)
        env = dict(os.environ, MEMCACHED_PROXY_ZONE=args.proxy_zone)
        proxy = subprocess.Popen(["timeout", "600", args.memcached, *user, "-l", "127.0.0.1",
                                  *proxy_args], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                once(pport, Conn.stats)
                break
            except OSError:
                if proxy.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the proxy did not listen: {stop(proxy)}")
                time.sleep(0.05)
        result(True, "memcached 1.6.45 runs the rendered proxy command line with the rendered routes",
               " ".join(proxy_args))
        # The rendered reload agent, its mount and admin address mapped like the proxy's; the
        # backends are memcached processes too: it must signal the one on the admin port.
        want_agent = ["reload-agent", "--proxy-routes", mount, "--admin-addr", "127.0.0.1:11211"]
        result(agent_args == want_agent, "the rendered proxy pod runs the reload agent in proxy mode",
               f"{agent_args}")
        mport = free_port()
        run_args = [a.replace(mount, config).replace("127.0.0.1:11211", f"127.0.0.1:{pport}")
                    for a in agent_args]
        agent = subprocess.Popen(["timeout", "600", args.hook, *run_args, "--interval-seconds", "1",
                                  "--metrics-addr", f"127.0.0.1:{mport}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # Its first delivery: one load of the mounted routes once the proxy answers.
        deadline, counts = time.monotonic() + 15, (-1, -1)
        while time.monotonic() < deadline:
            try:
                counts = agent_metrics(mport)
            except OSError:
                counts = (-1, -1)
            if counts[0] >= 1 or agent.poll() is not None:
                break
            time.sleep(0.2)
        reloads = once(pport, Conn.stats).get("proxy_config_reloads")
        result(counts == (1, 0) and reloads == "2",
               "the reload agent's first delivery loads the mounted routes once the proxy answers",
               f"agent routes success/failure {counts}, proxy_config_reloads {reloads}")
        checks(pport, proxy, fleet, args, work, (volume, agent, mport))
    except Exception as e:  # a setup failure is one failed check, with its reason
        result(False, "proxy scenario", repr(e))
    finally:
        if agent is not None:
            out = stop(agent)
            if failed:
                print("agent output:\n" + out[-3000:])
        if proxy is not None:
            out = stop(proxy)
            if failed:
                print("proxy output:\n" + out[-2000:])
        fleet.stop_all()
    print(f"proxy: {passed} passed, {failed} failed ({time.monotonic() - started:.1f} s)")
    return 1 if failed else 0


def checks(pport, proxy, fleet, args, work, reloading):
    c = Conn(pport)
    # 1. a write reaches one pod of every zone.
    for k in KEYS:
        assert c.set(k, f"v-{k}") == "STORED"
    spread = {k: sorted(zone_of(h) for h in fleet.holders(k)) for k in KEYS}
    bad = {k: z for k, z in spread.items() if z != ZONES}
    result(not bad, "a write through the proxy reaches one pod of every zone",
           f"{len(KEYS)} keys" if not bad else f"{len(bad)} keys not in every zone once: {list(bad.items())[:3]}")
    # 2. a read is served by the local zone.
    before = fleet.hits()
    misses = [k for k in KEYS if c.get(k) != f"v-{k}"]
    after = fleet.hits()
    per_zone = {z: sum(after[h] - before[h] for h in after if zone_of(h) == z) for z in ZONES}
    want = {z: (len(KEYS) if z == LOCAL else 0) for z in ZONES}
    result(not misses and per_zone == want, "reads through the proxy are served by the local zone",
           f"get hits per zone {per_zone}, misses {len(misses)}")
    # 3. a miss in the local zone is served by another zone.
    far = [h for h in fleet.ports if zone_of(h) == "zone-b"]
    for h in far:
        once(fleet.ports[h], lambda d: d.set("only-far", "far"))
    result(c.get("only-far") == "far", "a miss in the local zone is served by another zone")
    # 4. a delete reaches every zone.
    c.delete(KEYS[0])
    left = fleet.holders(KEYS[0])
    result(not left, "a delete through the proxy reaches every zone", f"left in {left}" if left else "")
    # 5. the local zone's pods hang (SIGSTOP: connections are accepted, nothing answers): each
    # read waits at most the read timeout, then another zone answers.
    local = [h for h in list(fleet.ports) if zone_of(h) == LOCAL]
    fleet.signal(local, signal.SIGSTOP)
    slowest, hits = 0.0, 0
    try:
        for k in KEYS[1:11]:
            t = time.monotonic()
            hits += c.get(k) == f"v-{k}"
            slowest = max(slowest, time.monotonic() - t)
    finally:
        fleet.signal(local, signal.SIGCONT)
    result(hits == 10 and slowest < READ_TIMEOUT_BOUND,
           "with the local zone's pods hanging, each read hits from another zone within the read timeout",
           f"{hits} of 10 hit, slowest {slowest:.2f} s (bound {READ_TIMEOUT_BOUND} s)")
    # 6. the local zone's pods stopped: reads still hit, within a bound.
    fleet.stop(local)
    t0 = time.monotonic()
    slowest, errors, hit_all_at = 0.0, 0, None
    while time.monotonic() - t0 < FAILOVER_BOUND_SECONDS and hit_all_at is None:
        round_ok = True
        for k in KEYS[1:]:
            t = time.monotonic()
            try:
                got = c.get(k)
            except (RuntimeError, OSError):
                got, errors = None, errors + 1
                c.close()
                c = Conn(pport)
            slowest = max(slowest, time.monotonic() - t)
            round_ok &= got == f"v-{k}"
        if round_ok:
            hit_all_at = time.monotonic() - t0
    result(hit_all_at is not None and slowest < REQUEST_TIMEOUT,
           "with the local zone's pods stopped, reads hit from another zone within the bound",
           f"every key hit after {hit_all_at if hit_all_at is None else round(hit_all_at, 2)} s "
           f"(bound {FAILOVER_BOUND_SECONDS} s), slowest read {slowest:.3f} s, {errors} errors")
    # A write while a zone is down is stored in the zones that are up; route_allsync answers
    # the down zone's error, so the client learns that one copy is missing.
    answers, stored = {}, 0
    for i in range(20):
        got = c.set(f"during-{i}", "x")
        answers[got] = answers.get(got, 0) + 1
        stored += sorted(zone_of(h) for h in fleet.holders(f"during-{i}")) == ZONES[1:]
    result(stored == 20, "with the local zone's pods stopped, writes are stored in the other zones",
           f"{stored} of 20 in both other zones; the proxy answered {answers}")
    # 7. a new membership, rendered again and published as kubelet updates a ConfigMap volume,
    # is loaded by the same process: the reload agent sends the SIGHUP and confirms the load.
    volume, agent, mport = reloading
    pid = child_pid(proxy)
    reloads = int(once(pport, Conn.stats).get("proxy_config_reloads", "0"))
    text = render_routes(args.hook, work, 3)
    hosts = backend_names(text)
    fleet.ensure(hosts)
    volume.publish(mapped(text, fleet.ports))
    t0 = time.monotonic()
    deadline = t0 + 15
    stats, counts = {}, (-1, -1)
    while time.monotonic() < deadline:
        stats = once(pport, Conn.stats)
        counts = agent_metrics(mport)
        if int(stats.get("proxy_config_reloads", "0")) > reloads and counts[0] >= 2:
            break
        time.sleep(0.1)
    reloaded = int(stats.get("proxy_config_reloads", "0")) > reloads
    result(reloaded and counts == (2, 0) and proxy.poll() is None and child_pid(proxy) == pid
           and agent.poll() is None and stats.get("proxy_config_reload_fails") == "0",
           "a re-published configuration is loaded by the running proxy, signalled by the reload agent",
           f"pid {pid} -> {child_pid(proxy) if proxy.poll() is None else 'gone'}, reloads {reloads} -> "
           f"{stats.get('proxy_config_reloads')}, fails {stats.get('proxy_config_reload_fails')}, "
           f"agent routes success/failure {counts}, after {time.monotonic() - t0:.2f} s, "
           f"{len(hosts)} backends")
    c.close()
    c = Conn(pport)
    # The restarted pods are connected again within the retry wait (1 s) of a backend marked down.
    t0, got = time.monotonic(), None
    while time.monotonic() - t0 < FAILOVER_BOUND_SECONDS:
        got = c.set("probe", "p")
        if got == "STORED":
            break
        time.sleep(0.1)
    result(got == "STORED", "after the reload a write is stored in every zone again within the bound",
           f"after {time.monotonic() - t0:.2f} s (bound {FAILOVER_BOUND_SECONDS} s): {got}")
    new = [f"new-{i}" for i in range(60)]
    for k in new:
        got = c.set(k, k)
        assert got == "STORED", f"set {k} after the reload: {got}"
    spread = {k: fleet.holders(k) for k in new}
    bad = [k for k, hs in spread.items() if sorted(zone_of(h) for h in hs) != ZONES]
    third = {h for hs in spread.values() for h in hs if h.split(".")[0].endswith("-2")}
    result(not bad and len(third) == 3,
           "after the reload writes reach every zone, the new pods included",
           f"keys not in every zone once: {len(bad)}; third pods holding keys: {sorted(third)}")
    before = fleet.hits()
    ok = all(c.get(k) == k for k in new)
    after = fleet.hits()
    local_hits = sum(after[h] - before[h] for h in after if zone_of(h) == LOCAL)
    result(ok and local_hits == len(new), "the restarted local zone serves the reads again",
           f"{local_hits} of {len(new)} reads from {LOCAL}")
    c.close()


if __name__ == "__main__":
    sys.exit(main())
