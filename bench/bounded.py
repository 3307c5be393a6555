#!/usr/bin/env python3
"""Bounded work per request, measured against the release binary on loopback.

usage: bench/bounded.py HOOK_BIN

Each case runs on a fresh server (127.0.0.1, a free port) so that its peak RSS (VmHWM) is its
own, and prints one line: what was sent, the answers' codes, the time to the last answer, and
the peak RSS above the server's RSS after one warm-up sync.

- keep path: an invalid spec whose one observed Service (no last-applied annotation, server-side
  apply) has 3000 ports, each named by a `k:` key of the controller's field set (360 KB);
  `--request-timeout-ms 1000`, with /healthz asked while it runs;
- one legal 15 MiB body (padding in a parent annotation the hook skips);
- ten legal 15 MiB bodies at once (the default body limit and bytes in flight);
- 3 MB of `{}` in highAvailability.topologySpreadConstraints (first sync: 422);
- ten keep-path requests of 100000 ports (16 MB) at once, the worst case for memory.
A code 0 is a connection closed without an answer.
Standard library only; every loop bounded; only the server it started is signalled.
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UID = "6f1c2b9e-3d4a-4f5b-9c1d-2e3f4a5b6c7d"


def fixture(name):
    with open(os.path.join(ROOT, "tests/fixtures/sync", name + ".json"), "rb") as f:
        return json.load(f)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def post(port, path, body, timeout=30.0):
    """Raw HTTP/1.1; returns (code, seconds)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\nConnection: close\r\n\r\n" % (path, len(body)))
        data = b""
        try:
            s.sendall(head.encode() + body)
        except OSError:
            pass  # answered (408) and closed before the whole body was sent: read the answer
        try:
            while True:
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    code = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return code, time.monotonic() - started


def get(port, path):
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
        data = s.recv(64)
    return int(data.split(b" ", 2)[1]), time.monotonic() - started


def keep_path_request(ports):
    req = fixture("invalid-spec-keeps-children")
    fields, items = {}, []
    for p in range(ports):
        items.append({"name": "p%d" % p, "port": p, "protocol": "TCP", "targetPort": p})
        fields['k:{"port":%d,"protocol":"TCP"}' % p] = {".": {}, "f:name": {}, "f:port": {},
                                                        "f:targetPort": {}}
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "cache", "namespace": "shop",
                     "ownerReferences": [{"apiVersion": "memcached.c5c3.io/v1beta1",
                                          "kind": "Memcached", "name": "cache", "uid": UID,
                                          "controller": True}],
                     "managedFields": [{"manager": "metacontroller", "operation": "Apply",
                                        "apiVersion": "v1", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:metadata": {"f:ownerReferences": {
                                            'k:{"uid":"%s"}' % UID: {}}},
                                            "f:spec": {"f:ports": fields}}}]},
        "spec": {"ports": items},
    }
    req["children"] = {"Service.v1": {"cache": service}}
    return json.dumps(req, separators=(",", ":")).encode()


def padded(size):
    req = fixture("steady-state")
    req["parent"]["metadata"]["annotations"] = {"padding": "x" * size}
    return json.dumps(req).encode()


def spread(size):
    req = fixture("steady-state")
    req["children"] = {}
    req["parent"]["spec"].setdefault("highAvailability", {})
    req["parent"]["spec"]["highAvailability"]["topologySpreadConstraints"] = [{}] * (size // 3)
    return json.dumps(req, separators=(",", ":")).encode()


def run(binary, name, bodies, extra=(), probe=False):
    port = free_port()
    server = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:%d" % port, *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                get(port, "/healthz")
                break
            except OSError:
                time.sleep(0.05)
        post(port, "/sync", json.dumps(fixture("steady-state")).encode())
        base = status(server.pid, "VmRSS")
        results = [None] * len(bodies)

        def one(i):
            results[i] = post(port, "/sync", bodies[i])

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
        started = time.monotonic()
        for t in threads:
            t.start()
        probes = []
        if probe:
            time.sleep(0.05)
            probes.append(get(port, "/healthz"))
        for t in threads:
            t.join(60)
        took = time.monotonic() - started
        peak = status(server.pid, "VmHWM")
        codes = sorted(r[0] for r in results if r)
        line = "%s: %d x %d bytes, codes %s, last answer after %.3f s, peak RSS %d KiB (+%d KiB over %d KiB)" % (
            name, len(bodies), len(bodies[0]), codes, took, peak, peak - base, base)
        if probes:
            line += ", /healthz %d after %.3f s" % probes[0]
        print(line, flush=True)
    finally:
        server.terminate()
        server.wait(15)


def main():
    binary = sys.argv[1]
    run(binary, "keep path, 3000 ports", [keep_path_request(3000)],
        extra=("--request-timeout-ms", "1000"), probe=True)
    run(binary, "one 15 MiB body", [padded(15 << 20)])
    run(binary, "ten 15 MiB bodies at once", [padded(15 << 20)] * 10)
    run(binary, "3 MB of {} in topologySpreadConstraints", [spread(3 << 20)])
    run(binary, "keep path, 100000 ports, ten at once", [keep_path_request(100000)] * 10,
        probe=True)


if __name__ == "__main__":
    main()
