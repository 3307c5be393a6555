#!/usr/bin/env python3
"""memcached's proxy on loopback: how warm it keeps a zoned cache through a rollout, and what a get
through it costs against a get straight to a pod.

    python3 bench/proxy_bench.py warmth --hook BIN --memcached BIN
    python3 bench/proxy_bench.py cost --hook BIN --memcached BIN --client BIN

Both start what tests/proxy/proxy.py starts: the hook renders a Memcached with 3 zones x 2
StatefulSet pods and spec.proxy on; each pod the route configuration names is a real memcached on
its own 127.0.0.1 port; the proxy runs the rendered command line and configuration as the
proxy of zone-a.

warmth: a key set is written through the proxy (a copy in every zone) and another one straight
to the pods by a client hashing keys over all six pods (one copy, as without the proxy). While
the pods are restarted one at a time zone by zone, each kept away DOWN seconds and started
empty (no warm restart), the next one stopped GAP seconds after the previous one answers, four
clients read their keys in turn: through the proxy and straight to the pods, each either
read-only or read-through (a miss is written back, through the proxy to every zone). Then the
keys are written again and zone-a's two pods go away at once (a zone drain) and come back empty.
Prints the hit ratio of each client in each phase, and how many zones still hold each key
after each zone's rollout.

cost: every pod holds the same KEYS keys; the C client (bench/proxy_get.c) sends GETS gets over
CONNECTIONS connections, first straight to one pod, then through the proxy for each proxy
setting (worker threads -t, routelib's backend connections and io thread), then straight again.
Prints gets/s, p50/p99 latency, and CPU per get: the proxy's (or, straight, the pod's) user +
system time from /proc/PID/stat over the run divided by the gets.

Only processes this script starts are signalled, by PID; everything listens on 127.0.0.1; every
loop is bounded in count and time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "tests", "proxy"))
import proxy as px  # noqa: E402  (the proxy phase's rendering, backends and client)
from loopback_memcached import free_port, start, stop  # noqa: E402

MOUNT = "/etc/memcached/proxy/routes.lua"
BACKEND_ARGS = ["-m", "16", "-t", "1"]
BOUND = 900  # seconds any process this script starts may live


class Proxy:
    """The rendered proxy of `zone`, with `config` as its routes, on a free loopback port."""

    def __init__(self, memcached, user, rendered_args, config, zone, threads=None, log=None):
        self.port = free_port()
        args = [a.replace(MOUNT, config) for a in rendered_args]
        args[args.index("-p") + 1] = str(self.port)
        if threads:
            args += ["-t", str(threads)]
        self.args = args
        self.log = open(log or os.devnull, "wb")
        self.p = subprocess.Popen(["timeout", str(BOUND), memcached, *user, "-l", "127.0.0.1", *args],
                                  env=dict(os.environ, MEMCACHED_PROXY_ZONE=zone),
                                  stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                px.once(self.port, px.Conn.stats)
                break
            except OSError:
                if self.p.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"the proxy did not listen ({' '.join(args)})")
                time.sleep(0.05)
        self.pid = px.child_pid(self.p)

    def close(self):
        if self.p.poll() is None:
            self.p.terminate()
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.close()


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_seconds(pid):
    """utime + stime of `pid` from /proc/PID/stat, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def setup(args, work):
    """The six pods on loopback, the rendered routes and the rendered proxy arguments:
    (fleet, routes text, proxy args, memcached's user option)."""
    text = px.render_routes(args.hook, work, 2)
    hosts = px.backend_names(text)
    user = ["-u", "root"] if os.getuid() == 0 else []
    fleet = px.Fleet(args.memcached, user)
    fleet.ensure(hosts)
    rendered_args, _ = px.proxy_command(args.hook, work)
    return fleet, text, rendered_args, user


def write_config(work, text, fleet, settings="", name="routes.lua"):
    """The routes with each pod's name mapped to its loopback port and `settings` added to the
    rendered settings block; the file's path."""
    body = px.mapped(text, fleet.ports)
    if settings:
        assert "settings{\n" in body, "the rendered routes have no settings block"
        body = body.replace("settings{\n", "settings{\n" + settings, 1)
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(body)
    return path


# ---------------------------------------------------------------------------------------------
# warmth


class Direct:
    """A client with the six pods as its server list, hashing each key to one of them (CRC32
    modulo the list's length); a pod that is away is a miss (counted as an error too)."""

    def __init__(self, fleet, hosts):
        self.fleet, self.hosts, self.conns = fleet, hosts, {}

    def conn(self, key):
        host = self.hosts[zlib.crc32(key.encode()) % len(self.hosts)]
        c = self.conns.get(host)
        if c is None:
            c = self.conns[host] = px.Conn(self.fleet.ports[host])
        return host, c

    def call(self, key, f):
        host = None
        try:
            host, c = self.conn(key)
            return f(c)
        except (OSError, RuntimeError):
            c = self.conns.pop(host, None) if host else None
            if c is not None:
                c.close()
            raise

    def get(self, key):
        return self.call(key, lambda c: c.get(key))

    def set(self, key, value):
        return self.call(key, lambda c: c.set(key, value))

    def close(self):
        for c in self.conns.values():
            c.close()


class Through:
    """A client of the proxy; reconnects after a broken connection."""

    def __init__(self, port):
        self.port, self.c = port, None

    def call(self, f):
        try:
            if self.c is None:
                self.c = px.Conn(self.port)
            return f(self.c)
        except OSError:
            if self.c is not None:
                self.c.close()
            self.c = None
            raise

    def get(self, key):
        return self.call(lambda c: c.get(key))

    def set(self, key, value):
        return self.call(lambda c: c.set(key, value))

    def close(self):
        if self.c is not None:
            self.c.close()


CLIENTS = [
    # name, key prefix, through the proxy, read-through
    ("proxy, read-only", "p-", True, False),
    ("proxy, read-through", "q-", True, True),
    ("direct, read-only", "d-", False, False),
    ("direct, read-through", "e-", False, True),
]


class Readers:
    """The four clients reading their keys in turn; hits, reads and errors per phase."""

    def __init__(self, pport, fleet, hosts, keys):
        self.through, self.direct = Through(pport), Direct(fleet, hosts)
        self.keys = keys
        self.phase = "steady"
        self.counts = {}  # (phase, client) -> [reads, hits, errors]
        self.next = 0

    def client(self, via_proxy):
        return self.through if via_proxy else self.direct

    def fill(self):
        for _, prefix, via_proxy, _ in CLIENTS:
            c = self.client(via_proxy)
            for i in range(self.keys):
                got = c.set(f"{prefix}{i}", f"v{i}")
                if got != "STORED":
                    raise RuntimeError(f"set {prefix}{i}: {got}")

    def round(self):
        i = self.next % self.keys
        self.next += 1
        phase = self.phase
        for name, prefix, via_proxy, read_through in CLIENTS:
            c = self.client(via_proxy)
            key = f"{prefix}{i}"
            row = self.counts.setdefault((phase, name), [0, 0, 0])
            row[0] += 1
            try:
                hit = c.get(key) == f"v{i}"
            except (OSError, RuntimeError):
                hit = False
                row[2] += 1
            row[1] += hit
            if not hit and read_through:
                try:
                    # A read-through client writes a missed key back: through the proxy to every
                    # zone, straight to the one pod its list hashes the key to.
                    c.set(key, f"v{i}")
                except (OSError, RuntimeError):
                    pass

    def close(self):
        self.through.close()
        self.direct.close()


def copies(fleet, prefix, keys):
    """How many keys of `prefix` are held in 0, 1, 2, 3 zones."""
    held = {}
    for host, port in fleet.ports.items():
        c = px.Conn(port)
        try:
            for i in range(keys):
                if c.get(f"{prefix}{i}") is not None:
                    held[i] = held.get(i, set()) | {px.zone_of(host)}
        finally:
            c.close()
    out = [0, 0, 0, 0]
    for i in range(keys):
        out[len(held.get(i, ()))] += 1
    return out


def restart(fleet, hosts, memcached, user, down):
    """Stops `hosts` at once, keeps them away `down` seconds, starts them empty on their ports."""
    for host in hosts:
        stop(fleet.procs.pop(host))
    time.sleep(down)
    for host in hosts:
        p, port = start(memcached, BACKEND_ARGS, user=user, bound=BOUND, port=fleet.ports[host])
        if port is None:
            raise RuntimeError(f"{host} did not start again: {stop(p)}")
        fleet.procs[host] = p


def warmth(args):
    work = tempfile.mkdtemp(prefix="memcached-hook-proxy-bench.")
    fleet, text, rendered_args, user = setup(args, work)
    hosts = list(fleet.ports)
    config = write_config(work, text, fleet)
    proxy = Proxy(args.memcached, user, rendered_args, config, "zone-a", log=os.path.join(work, "proxy.log"))
    readers = Readers(proxy.port, fleet, hosts, args.keys)
    left = {}  # after phase -> copies per prefix
    errors = []
    try:
        readers.fill()
        left["filled"] = {p: copies(fleet, p, args.keys) for _, p, _, _ in CLIENTS}

        def roll(steps):
            try:
                for phase, group in steps:
                    readers.phase = phase
                    if group is None:  # a settle period: reads only
                        time.sleep(args.settle)
                        continue
                    for members in group:
                        restart(fleet, members, args.memcached, user, args.down)
                        time.sleep(args.gap)
                    left[phase] = {p: copies(fleet, p, args.keys) for _, p, _, _ in CLIENTS}
            except Exception as e:  # reported with the table
                errors.append(repr(e))
            finally:
                readers.phase = None

        def run(steps):
            readers.phase = "starting"
            t = threading.Thread(target=roll, args=(steps,), daemon=True)
            t.start()
            deadline = time.monotonic() + args.deadline
            while readers.phase is not None and time.monotonic() < deadline:
                readers.round()
            t.join(timeout=60)
            if t.is_alive():
                raise RuntimeError("the rollout did not end in time")

        zone = {z: [h for h in hosts if px.zone_of(h) == z] for z in px.ZONES}
        run([("steady", None)] + [(f"{z} rollout", [[h] for h in zone[z]]) for z in px.ZONES]
            + [("after the rollout", None)])
        readers.fill()
        left["filled again"] = {p: copies(fleet, p, args.keys) for _, p, _, _ in CLIENTS}
        run([("steady again", None), ("zone-a drained, back empty", [zone["zone-a"]]),
             ("after the drain", None)])
    finally:
        readers.close()
        proxy.close()
        fleet.stop_all()
    phases = []
    for phase, _ in readers.counts:
        if phase not in phases and phase not in ("starting",):
            phases.append(phase)
    names = [c[0] for c in CLIENTS]
    print(f"\nhit ratio per phase (reads in the phase; errors: the read failed, counted as a miss); "
          f"{args.keys} keys per client, pods away {args.down} s, next pod {args.gap} s after")
    print("| phase | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    result = {"phases": {}, "copies": left, "errors": errors}
    rollout = [f"{z} rollout" for z in px.ZONES]
    for phase in phases[:phases.index(rollout[-1]) + 1] + ["all three zones' rollouts"] \
            + phases[phases.index(rollout[-1]) + 1:]:
        cells = []
        for name in names:
            parts = rollout if phase == "all three zones' rollouts" else [phase]
            reads, hits, errs = (sum(readers.counts.get((p, name), [0, 0, 0])[j] for p in parts)
                                 for j in range(3))
            ratio = hits / reads if reads else float("nan")
            cells.append(f"{100 * ratio:.2f} % ({reads} reads{f', {errs} errors' if errs else ''})")
            result["phases"].setdefault(phase, {})[name] = {"reads": reads, "hits": hits, "errors": errs}
        print(f"| {phase} | " + " | ".join(cells) + " |")
    print("\nkeys by the number of zones holding them (0, 1, 2, 3 zones) after each step")
    print("| after | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for phase, per in left.items():
        print(f"| {phase} | " + " | ".join(str(per[c[1]]) for c in CLIENTS) + " |")
    if errors:
        print("rollout errors:", errors)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if errors else 0


# ---------------------------------------------------------------------------------------------
# cost

# The proxy settings measured: a name, worker threads (-t; None: the rendered command line's
# default), and lines added to the rendered settings block of the routes.
SETTINGS = [
    ("-t 1", 1, ""),
    ("-t 2", 2, ""),
    ("-t 4 (rendered)", None, ""),
    ("-t 2, 2 backend connections", 2, "    backend_options = { connections = 2 },\n"),
    ("-t 4, 2 backend connections", None, "    backend_options = { connections = 2 },\n"),
    ("-t 2, io thread", 2, "    pool_options = { iothread = true },\n"),
    ("-t 4, io thread", None, "    pool_options = { iothread = true },\n"),
]


def load(client, port, connections, gets, keys):
    out = subprocess.run([client, str(port), str(connections), str(gets), str(keys), "k-"],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0 and not out.stdout:
        raise RuntimeError(f"client: {out.stderr.strip()}")
    return json.loads(out.stdout)


def cost(args):
    work = tempfile.mkdtemp(prefix="memcached-hook-proxy-bench.")
    fleet, text, rendered_args, user = setup(args, work)
    value = "x" * args.value
    rows = []
    try:
        for host, port in fleet.ports.items():
            c = px.Conn(port)
            try:
                for i in range(args.keys):
                    assert c.set(f"k-{i}", value) == "STORED"
            finally:
                c.close()
        pod = "cache-zone-a-0.cache.shop.svc"
        pod_pid = px.child_pid(fleet.procs[pod])

        def measure(name, port, pid, threads=""):
            load(args.client, port, args.connections, min(2000, args.gets), args.keys)  # warm-up
            before = cpu_seconds(pid)
            r = load(args.client, port, args.connections, args.gets, args.keys)
            r["cpu_us_per_get"] = 1e6 * (cpu_seconds(pid) - before) / max(1, r["gets"])
            r["name"], r["threads"] = name, threads
            rows.append(r)
            print(json.dumps(r), flush=True)

        # The settings take turns, so that a change of the machine's load over the run reaches
        # each of them alike.
        for _ in range(args.repeat):
            measure("direct to one pod (memcached -t 1)", fleet.ports[pod], pod_pid)
            for i, (name, threads, settings) in enumerate(SETTINGS):
                config = write_config(work, text, fleet, settings, name=f"routes-{i}.lua")
                proxy = Proxy(args.memcached, user, rendered_args, config, "zone-a", threads=threads,
                              log=os.path.join(work, f"proxy-{i}.log"))
                try:
                    measure(f"proxy {name}", proxy.port, proxy.pid, threads)
                finally:
                    proxy.close()
    finally:
        fleet.stop_all()
    print(f"\n{args.gets} gets of {args.value}-byte values over {args.connections} connections, "
          f"{args.keys} keys, all hits; CPU of the proxy (direct: of the pod) per get; median of "
          f"{args.repeat} runs each; load average {load_average()}")
    print("| target | gets/s | p50 µs | p99 µs | CPU µs/get | hits |")
    print("|---|---|---|---|---|---|")
    names = []
    for r in rows:
        if r["name"] not in names:
            names.append(r["name"])
    for name in names:
        runs = [r for r in rows if r["name"] == name]

        def median(k):
            return statistics.median(r[k] for r in runs)
        print(f"| {name} | {median('rate'):.0f} | {median('p50_us'):.0f} | {median('p99_us'):.0f} | "
              f"{median('cpu_us_per_get'):.1f} | {sum(r['hits'] for r in runs)}/{sum(r['gets'] for r in runs)} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r for r in rows if r["errors"] or r["hits"] != r["gets"]]
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["warmth", "cost"])
    ap.add_argument("--hook", required=True)
    ap.add_argument("--memcached", required=True)
    ap.add_argument("--client", help="bench/proxy_get.c built (cost)")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--down", type=float, default=2.0, help="seconds a restarted pod is away")
    ap.add_argument("--gap", type=float, default=1.0,
                    help="seconds after a pod answers before the next one goes")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds of reads between steps")
    ap.add_argument("--deadline", type=float, default=300.0, help="the longest read loop, seconds")
    ap.add_argument("--gets", type=int, default=50000)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--value", type=int, default=100, help="value size, bytes")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.what == "cost" and not args.client:
        ap.error("cost needs --client")
    return warmth(args) if args.what == "warmth" else cost(args)


if __name__ == "__main__":
    sys.exit(main())
