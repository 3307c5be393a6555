#!/usr/bin/env python3
"""Warm restart with a real memcached and the hook's guard (`memcached-hook warm-guard`), on
loopback: memcached with `-e` is stopped with SIGUSR1 (what the pods' preStop hook sends), the
guard keeps the metadata and memcached restores every key; a corrupt and an empty `.meta` make
memcached itself abort, and after the guard the same files give a clean cold start.

  warm_restart.py --hook BIN --memcached BIN --workdir DIR

Runs memcached as the `memcache` user when started as root. Last line:
"warm-restart: N passed, M failed".
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import loopback_memcached  # noqa: E402

KEYS = 5000
ARGS = ["-m", "64", "-c", "1024", "-t", "4", "-I", "1m"]


class Run:
    def __init__(self, a):
        self.hook, self.memcached, self.dir = a.hook, a.memcached, a.workdir
        self.file = os.path.join(self.dir, "memory")
        self.passed = self.failed = 0
        self.user = ["-u", "memcache"] if os.getuid() == 0 else []

    def check(self, what, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   warm-restart: {what}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL warm-restart: {what}\n       {str(detail)[:400]}", flush=True)

    def start(self):
        """memcached on a free loopback port: (process, port), or (process, None) if it exited."""
        return loopback_memcached.start(self.memcached, [*ARGS, "-e", self.file], user=self.user)

    @staticmethod
    def talk(port, payload, end):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(payload)
            out = b""
            while not out.endswith(end):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                out += chunk
            return out

    def fill(self, port):
        sets = b"".join(b"set k%06d 0 0 7 noreply\r\nk%06d\r\n" % (i, i) for i in range(KEYS))
        self.talk(port, sets + b"mn\r\n", b"MN\r\n")

    def count(self, port):
        found = 0
        for first in range(0, KEYS, 100):
            keys = b" ".join(b"k%06d" % i for i in range(first, min(KEYS, first + 100)))
            out = self.talk(port, b"get " + keys + b"\r\n", b"END\r\n")
            lines = out.split(b"\r\n")
            found += sum(1 for i, line in enumerate(lines[:-1])
                         if line.startswith(b"VALUE ") and lines[i + 1] == line.split()[1])
        return found

    def graceful_stop(self, p):
        p.send_signal(signal.SIGUSR1)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        return os.path.exists(self.file + ".meta")

    def guard(self):
        result = os.path.join(self.dir, "result")
        p = subprocess.run([self.hook, "warm-guard", "--file", self.file, "--max-stale-seconds", "300",
                            "--result-file", result, "--", *ARGS], capture_output=True, text=True, timeout=30)
        with open(result) as f:
            return p.returncode, f.read().strip()

    def saved_cache(self):
        """A filled memcached stopped with SIGUSR1: whether it saved its metadata."""
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        p, port = self.start()
        self.fill(port)
        return self.graceful_stop(p)

    def restore(self):
        self.check("SIGUSR1: memcached exits and writes memory.meta", self.saved_cache())
        code, line = self.guard()
        self.check("the guard keeps fresh metadata (exit 0, 'restore: ...')",
                   code == 0 and line.startswith("restore: "), line)
        p, port = self.start()
        n = self.count(port) if port else 0
        p.terminate()
        p.wait()
        self.check(f"restart with the same -e and layout: {n} of {KEYS} keys restored", n == KEYS, n)

    def stop_beside_a_pid_1(self):
        """`memcached-hook warm-stop` (the preStop hook) in a PID namespace whose PID 1 is a shell, as
        the sandbox is with shareProcessNamespace: it finds memcached, which then saves its items."""
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        go = os.path.join(self.dir, "go")
        mc = " ".join([self.memcached, *self.user, "-p", str(port), "-U", "0", "-l", "127.0.0.1", *ARGS,
                       "-e", self.file])
        script = (f"{mc} & pid=$!; while [ ! -e {go} ]; do sleep 0.05; done; "
                  f"{self.hook} warm-stop --file {self.file}; echo warm-stop exit $?; wait $pid")
        p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        self.fill(port)
        open(go, "w").close()
        out, _ = p.communicate(timeout=30)
        self.check("warm-stop beside another PID 1 (shareProcessNamespace): memcached (pid 2) saved its metadata",
                   "warm-stop exit 0" in out and "memcached (pid 2) stopped" in out
                   and "metadata saved: true" in out, out[-400:])
        os.unlink(go)
        code, line = self.guard()
        p, port = self.start()
        n = self.count(port) if port else 0
        p.terminate()
        p.wait()
        self.check(f"... and the next start restores {n} of {KEYS} keys ({line})", n == KEYS, n)

    def bad_meta(self, label, text, reason):
        self.saved_cache()
        with open(self.file + ".meta", "w") as f:
            f.write(text)
        p, port = self.start()
        if port:
            p.terminate()
        p.wait()
        self.check(f"{label} .meta: memcached alone aborts (SIGABRT; a crash loop in a pod)",
                   port is None and p.returncode == -signal.SIGABRT, p.returncode)
        with open(self.file + ".meta", "w") as f:
            f.write(text)
        code, line = self.guard()
        self.check(f"{label} .meta: the guard exits 0 and says why it starts cold",
                   code == 0 and line == f"cold: metadata invalid: {reason}", line)
        self.check(f"{label} .meta: the guard removed it", not os.path.exists(self.file + ".meta"))
        p, port = self.start()
        n = self.count(port) if port else None
        alive = p.poll() is None
        p.terminate()
        p.wait()
        self.check(f"{label} .meta: after the guard memcached starts clean and stays up (keys {n})",
                   port is not None and n == 0 and alive, n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hook", required=True)
    ap.add_argument("--memcached", required=True)
    ap.add_argument("--workdir", required=True)
    r = Run(ap.parse_args())
    os.makedirs(r.dir, exist_ok=True)
    if r.user:
        os.chmod(r.dir, 0o777)
    try:
        r.restore()
        if os.getuid() == 0:
            r.stop_beside_a_pid_1()
        else:
            print("warm-restart: the preStop check in a PID namespace skipped: needs root (unshare --pid)")
        r.bad_meta("corrupt", "Kmaxbytes 67108864\nTmain\n", "the first line is not a tag")
        r.bad_meta("empty", "", "empty")
    except Exception as e:  # a broken precondition ends the run with one failure
        r.check("ran to the end", False, f"{type(e).__name__}: {e}")
    print(f"warm-restart: {r.passed} passed, {r.failed} failed")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
