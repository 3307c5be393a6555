#!/usr/bin/env python3
"""How much memory a memcached filled to its `-m` limit really uses.

For each item memory size (`-m`) and item-size mix it starts memcached with the arguments the
hook gives it by default (`-m SIZE -c 1024 -t 4 -I 1m`) on 127.0.0.1, fills it with pipelined
`set ... noreply` until the slab allocator has taken the whole limit and evictions have begun,
then opens CONNECTIONS client connections (memcached refuses connections a few below `-c`),
first idle (each has done one request), then busy: each sends a read buffer's worth (16 KB) of
pipelined commands, the last one without its end of line, so that memcached has used and keeps
each connection's read buffer. It reads VmRSS/VmHWM from /proc/PID/status at each step and memcached's own
`stats` (total_malloced, hash_bytes, curr_items, evictions, curr_connections).

Usage: python3 bench/memory_overhead.py [--sizes 64,1024,4096] [--mixes small,large]
                                       [--connections 1000] [--memcached PATH] [--json FILE]
Every loop is bounded in count and time; only the memcached this script starts is signalled,
by its PID. Traffic goes to 127.0.0.1 only.
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

# Value sizes (bytes) of each mix, cycled in a fixed order; keys are `k<counter>` (2-9 bytes).
MIXES = {
    # very small values: the most items per MiB, so the largest hash table (the worst case)
    "tiny": [16, 24, 32, 40, 48, 64, 80, 96, 112, 128],
    # typical web-cache values: session blobs, rendered fragments, query results
    "small": [100, 150, 200, 300, 400, 600, 800, 1000, 1500, 2000, 3000, 4000],
    # large values up to just under the 1 MiB item limit
    "large": [16 << 10, 32 << 10, 64 << 10, 100 << 10, 200 << 10, 400 << 10, 700 << 10, 1000 << 10],
}
BUSY = b"get k1\r\n" * 2000 + b"get k1 k2"
FILL_TIME_LIMIT = 600.0  # seconds per fill
FILL_FACTOR_LIMIT = 4.0  # at most 4x the limit in value bytes is written


def status(pid):
    """VmRSS and VmHWM of `pid` in KiB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            m = re.match(r"(VmRSS|VmHWM):\s+(\d+) kB", line)
            if m:
                out[m.group(1)] = int(m.group(2))
    return out


def stats(sock, command=b"stats"):
    sock.sendall(command + b"\r\n")
    buf = b""
    deadline = time.monotonic() + 30
    while not buf.endswith(b"END\r\n"):
        if time.monotonic() > deadline:
            raise TimeoutError("stats")
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("stats: connection closed")
        buf += chunk
    out = {}
    for line in buf.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    if command == b"stats":  # the allocator's total is in `stats slabs`
        out["total_malloced"] = stats(sock, b"stats slabs")["total_malloced"]
    return out


def roundtrip(sock, request=b"version\r\n", expect=b"VERSION"):
    sock.sendall(request)
    buf = b""
    deadline = time.monotonic() + 120
    while b"\r\n" not in buf:
        if time.monotonic() > deadline:
            raise TimeoutError(request)
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    if not buf.startswith(expect):
        raise RuntimeError("unexpected answer %r" % buf[:80])


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fill(port, control, limit_bytes, sizes):
    """Pipelined noreply sets until the allocator holds the limit and items are evicted."""
    values = {n: b"v" * n + b"\r\n" for n in sizes}
    cycle = [(n, values[n]) for n in sizes]
    period = len(cycle)
    loader = connect(port)
    written = 0
    key = 0
    t0 = time.monotonic()
    next_check = limit_bytes // 2
    batch_items = max(64, (4 << 20) // (sum(sizes) // period + 40))
    st = {}
    while True:
        parts = []
        for i in range(key, key + batch_items):
            n, value = cycle[i % period]
            parts.append(b"set k%d 0 0 %d noreply\r\n" % (i, n))
            parts.append(value)
            written += n
        key += batch_items
        loader.sendall(b"".join(parts))
        if written >= next_check:
            roundtrip(loader)  # every set so far is processed
            st = stats(control)
            next_check = written + max(limit_bytes // 16, 8 << 20)
            full = int(st["total_malloced"]) >= 0.97 * int(st["limit_maxbytes"])
            if full and int(st["evictions"]) > 0:
                break
        if written > FILL_FACTOR_LIMIT * limit_bytes:
            raise RuntimeError("not full after %d bytes: %s" % (written, st))
        if time.monotonic() - t0 > FILL_TIME_LIMIT:
            raise TimeoutError("fill took over %d s" % FILL_TIME_LIMIT)
    roundtrip(loader)
    loader.close()
    return {"sets": key, "value_bytes": written, "seconds": round(time.monotonic() - t0, 1)}


def measure(memcached, size, mix, connections, uid_args):
    port = free_port()
    args = [memcached, "-m", str(size), "-c", "1024", "-t", "4", "-I", "1m",
            "-l", "127.0.0.1", "-p", str(port)] + uid_args
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    steps = {}
    socks = []
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                control = connect(port)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("memcached did not start: %s" % proc.stderr.read().decode())
                time.sleep(0.05)
        roundtrip(control)
        steps["started"] = dict(status(proc.pid), **pick(stats(control)))
        load = fill(port, control, size << 20, MIXES[mix])
        steps["full"] = dict(status(proc.pid), **pick(stats(control)))
        for _ in range(connections):  # bounded by `connections`
            s = connect(port)
            try:
                roundtrip(s)
            except RuntimeError:  # "ERROR Too many open connections": -c is reached
                s.close()
                break
            socks.append(s)
        steps["full+idle-conns"] = dict(status(proc.pid), **pick(stats(control)))
        for s in socks:
            # ~16 KB of pipelined commands (one full read buffer), the last without its end of
            # line: memcached has used the whole buffer and keeps it for the rest of the line.
            s.sendall(BUSY)
        time.sleep(1.0)
        roundtrip(control)
        steps["full+busy-conns"] = dict(status(proc.pid), **pick(stats(control)))
        return {"size_mb": size, "mix": mix, "args": args, "load": load, "steps": steps}
    finally:
        for s in socks:
            s.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def pick(st):
    keys = ("limit_maxbytes", "total_malloced", "hash_power_level", "hash_bytes", "curr_items",
            "evictions", "curr_connections", "threads", "version")
    return {k: (st[k] if k == "version" else int(st[k])) for k in keys if k in st}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="64,1024,4096")
    p.add_argument("--mixes", default="small,large")
    p.add_argument("--connections", type=int, default=1024,
                   help="client connections to open (stops earlier when memcached refuses one)")
    p.add_argument("--memcached", default="memcached")
    p.add_argument("--json")
    a = p.parse_args()
    uid_args = ["-u", "nobody"] if os.geteuid() == 0 else []
    results = []
    print("%-6s %-6s %10s %8s %8s %9s %9s %9s %9s %8s %9s" % (
        "-m", "mix", "sets", "fill_s", "items", "hash_MiB", "start_MiB", "full_MiB", "idle_MiB",
        "busy_MiB", "hwm_MiB"))
    for size in [int(s) for s in a.sizes.split(",")]:
        for mix in a.mixes.split(","):
            r = measure(a.memcached, size, mix, a.connections, uid_args)
            results.append(r)
            s = r["steps"]
            mib = lambda kb: "%.1f" % (kb / 1024)  # noqa: E731
            print("%-6d %-6s %10d %8.1f %8d %9.1f %9s %9s %9s %8s %9s" % (
                size, mix, r["load"]["sets"], r["load"]["seconds"], s["full"]["curr_items"],
                s["full"]["hash_bytes"] / 1048576, mib(s["started"]["VmRSS"]), mib(s["full"]["VmRSS"]),
                mib(s["full+idle-conns"]["VmRSS"]), mib(s["full+busy-conns"]["VmRSS"]),
                mib(s["full+busy-conns"]["VmHWM"])), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
