#!/usr/bin/env python3
"""Extstore with a real memcached, on loopback: the arguments the hook renders for `spec.extstore`
start memcached, values written beyond its memory go to the extstore file and read back intact; and
what validation refuses really fails (or does nothing) in memcached alone: `ext_path` without a size,
`-I` larger than the write buffer, a page size the write buffer does not divide or that is not a
multiple of 2 MiB, 65535 pages, UDP, a file below four pages (memcached starts, but keeps next to nothing
on it), extstore beside warm restart (memcached starts, but restores nothing).

  extstore.py --hook BIN --memcached BIN --workdir DIR

Runs memcached as the `memcache` user when started as root. Every memcached is bounded in time and
stopped by its PID. Last line: "extstore: N passed, M failed".
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import loopback_memcached  # noqa: E402

VALUE = 64 * 1024        # bytes per value: well above ext_item_size (512)
PACE = 0.002             # seconds between sets: the LRU maintainer moves cold items to the file meanwhile


class Run:
    def __init__(self, a):
        self.hook, self.memcached, self.dir = a.hook, a.memcached, a.workdir
        self.passed = self.failed = 0
        self.user = ["-u", "memcache"] if os.getuid() == 0 else []

    def check(self, what, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   extstore: {what}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL extstore: {what}\n       {str(detail)[:400]}", flush=True)

    def rendered_args(self, extstore, memcached=None):
        """memcached's arguments as the hook renders them for a Memcached with `spec.extstore`."""
        cr = {"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached", "metadata": {"name": "flash"},
              "spec": {"extstore": extstore, "memcached": memcached or {}}}
        path = os.path.join(self.dir, "cr.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cr, f)
        out = subprocess.run([self.hook, "render", path], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"render: {out.stderr[-300:]}")
        for doc in yaml.safe_load_all(out.stdout):
            if doc and doc.get("kind") == "Deployment":
                c = doc["spec"]["template"]["spec"]["containers"][0]
                return [a.replace("/data/", self.dir + "/") for a in c["args"]]
        raise RuntimeError("no Deployment rendered")

    def start(self, args, bounded=True):
        """memcached on a free loopback port: (process, port), or (process, None) if it exited. Bounded
        by timeout(1) unless it must receive a signal other than SIGTERM (then the caller stops it)."""
        for name in os.listdir(self.dir):
            if name.startswith("extstore") or name.startswith("memory"):
                os.unlink(os.path.join(self.dir, name))
        return loopback_memcached.start(self.memcached, args, user=self.user, bound=120 if bounded else None)

    @staticmethod
    def stop(p):
        return loopback_memcached.stop(p)

    def refused_alone(self, what, args, message):
        """memcached alone with `args` exits with `message`."""
        p, port = self.start(args)
        out = self.stop(p)
        self.check(f"memcached alone refuses {what}: exit {p.returncode}",
                   port is None and p.returncode != 0 and message in out, out[-300:])

    @staticmethod
    def value(i):
        return (b"%08d" % i) * (VALUE // 8)

    def fill_and_read(self, port, n):
        """Sets n values (paced), then gets them back: (hits, stats)."""
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            f = s.makefile("rb")
            for i in range(n):
                v = self.value(i)
                s.sendall(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(v), v))
                if f.readline() != b"STORED\r\n":
                    raise RuntimeError(f"set k{i} not stored")
                time.sleep(PACE)
            time.sleep(1)
            hits = 0
            for i in range(n):
                s.sendall(b"get k%d\r\n" % i)
                line = f.readline()
                if line.startswith(b"VALUE"):
                    data = f.read(int(line.split()[3]) + 2)[:-2]
                    f.readline()
                    hits += data == self.value(i)
            s.sendall(b"stats\r\n")
            stats = {}
            while True:
                line = f.readline()
                if not line or line.startswith(b"END"):
                    break
                parts = line.split()
                stats[parts[1].decode()] = parts[2].decode()
            return hits, stats

    def served(self, args, n):
        p, port = self.start(args)
        if port is None:
            out = self.stop(p)
            raise RuntimeError(f"memcached did not start with {args}: {out[-300:]}")
        try:
            return self.fill_and_read(port, n)
        finally:
            self.stop(p)

    def rendered_start_and_hold(self):
        args = self.rendered_args({"enabled": True, "size": "512Mi"})
        self.check(f"rendered: {' '.join(args[-2:])}",
                   args[-2:] == ["-o", f"ext_path={self.dir}/extstore:512m"], args)
        n = 4000  # 250 MiB of values with -m 64
        hits, st = self.served(args, n)
        written = int(st.get("extstore_objects_written", 0))
        self.check(f"rendered args, 64 MiB memory, 512 MiB file: {hits} of {n} values read back intact, "
                   f"{written} written to the file, {st.get('get_extstore')} reads from it",
                   # every one on an idle machine; memcached's flush threads starved by a busy
                   # one let some go from memory before they reach the file (3899 at load 13)
                   hits >= n * 95 // 100 and written > n // 2 and int(st.get("get_extstore", 0)) > 0, st)
        ram_hits, _ = self.served(args[:-2], n)
        self.check(f"... without extstore the same memory serves {ram_hits} of {n}", ram_hits < n // 2)
        return ram_hits

    def tuned(self):
        args = self.rendered_args({"enabled": True, "size": "1Gi", "pageSizeMB": 32, "writeBufferSizeMB": 8,
                                   "threads": 2, "itemSizeBytes": 1024, "maxFrag": 0.5},
                                  {"maxItemSize": "8m"})
        hits, st = self.served(args, 2000)
        self.check(f"tuning fields and -I 8m with an 8 MiB write buffer: {hits} of 2000 read back, "
                   f"{st.get('extstore_objects_written')} written to the file",
                   # the tuning must start memcached and move values to the file; on a machine
                   # busy enough to starve memcached's flush threads a few values are evicted
                   # from memory before they reach the file (1948 of 2000 at load 9)
                   hits >= 1900 and int(st.get("extstore_objects_written", 0)) > 0, args[-1])

    def minimum(self, ram_hits):
        n = 4000
        results = {}
        for size in ("128m", "192m", "256m"):
            hits, st = self.served(["-m", "64", "-o", f"ext_path={self.dir}/extstore:{size}"], n)
            results[size] = (hits, st.get("extstore_objects_used"))
        small = max(results["128m"][0], results["192m"][0])
        self.check(f"below four pages the file holds next to nothing: hits {results} vs {ram_hits} "
                   f"without extstore", small - ram_hits < n // 20 and results["256m"][0] - ram_hits > n // 10,
                   results)

    def with_warm_restart(self):
        file = os.path.join(self.dir, "memory")
        args = ["-m", "64", "-e", file, "-o", f"ext_path={self.dir}/extstore:256m"]
        p, port = self.start(args, bounded=False)  # SIGUSR1 must reach memcached itself
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(b"".join(b"set k%d 0 0 1 noreply\r\nx\r\n" % i for i in range(100)) + b"mn\r\n")
                s.makefile("rb").readline()
            p.send_signal(signal.SIGUSR1)
            p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        saved = os.path.exists(file + ".meta")
        p2 = subprocess.Popen(["timeout", "60", self.memcached, *self.user, "-p", str(port), "-U", "0",
                               "-l", "127.0.0.1", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(1)
        found = None
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"get k1\r\n")
                found = s.makefile("rb").readline()
        except OSError as e:
            found = str(e)
        out = self.stop(p2)
        self.check(f"with -e beside ext_path memcached starts, saves on SIGUSR1 ({saved}) but restores "
                   f"nothing ({found!r})", found == b"END\r\n" and ("starting with a clean cache" in out
                                          or "memory restart with extstore not presently supported" in out),
                   out[-300:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hook", required=True)
    ap.add_argument("--memcached", required=True)
    ap.add_argument("--workdir", required=True)
    r = Run(ap.parse_args())
    os.makedirs(r.dir, exist_ok=True)
    if r.user:
        os.chmod(r.dir, 0o777)
    started = time.monotonic()
    steps = [
        lambda: r.refused_alone("ext_path without a size", ["-o", f"ext_path={r.dir}/extstore"],
                                "must supply size to ext_path"),
        lambda: r.refused_alone("-I 32m with the default 4 MiB write buffer",
                                ["-I", "32m", "-o", f"ext_path={r.dir}/extstore:1024m"],
                                "cannot be larger than ext_wbuf_size"),
        lambda: r.refused_alone("a page size the write buffer does not divide",
                                ["-o", f"ext_page_size=6,ext_path={r.dir}/extstore:1024m"],
                                "page_size must be divisible by wbuf_size"),
        lambda: r.refused_alone("a page size not a multiple of 2 MiB",
                                ["-o", f"ext_page_size=3,ext_wbuf_size=1,ext_path={r.dir}/extstore:1024m"],
                                "page_size and wbuf_size must be divisible by 1024*1024*2"),
        lambda: r.refused_alone("UDP beside extstore", ["-U", "11299", "-o", f"ext_path={r.dir}/extstore:1024m"],
                                "Cannot use UDP with extstore enabled"),
        lambda: r.refused_alone("65536 pages",
                                ["-o", f"ext_page_size=2,ext_wbuf_size=2,ext_path={r.dir}/extstore:131072m"],
                                "page_count must total to < 65536"),
    ]
    try:
        for step in steps:
            step()
        ram_hits = r.rendered_start_and_hold()
        r.tuned()
        r.minimum(ram_hits)
        r.with_warm_restart()
    except Exception as e:  # a broken precondition ends the run with one failure
        r.check("ran to the end", False, f"{type(e).__name__}: {e}")
    print(f"extstore: {r.passed} passed, {r.failed} failed ({time.monotonic() - started:.0f} s)")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
