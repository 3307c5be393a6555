"""memcached started by a test on a free 127.0.0.1 port: the one way the peers drivers start it.

    from loopback_memcached import start
    p, port = start(memcached, ["-m", "64"], user=["-u", "memcache"], bound=120)

`port` is None when memcached exited before listening (the caller reads why from its output).
"""
import socket
import subprocess
import time

LISTEN_SECONDS = 10


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(memcached, args, user=(), bound=None, port=None):
    """memcached on 127.0.0.1 (TCP only): (process, port), or (process, None) if it exited first.

    `bound`: seconds after which timeout(1) ends it (None: no bound, for a caller that must send
    it a signal other than SIGTERM and stops it itself). `port`: the port to listen on (a
    restarted server keeping its address); default a free one."""
    port = port or free_port()
    prefix = ["timeout", str(bound)] if bound else []
    p = subprocess.Popen([*prefix, memcached, *user, "-p", str(port), "-U", "0", "-l", "127.0.0.1", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + LISTEN_SECONDS
    while time.monotonic() < deadline:
        if p.poll() is not None:
            return p, None
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    p.kill()
    p.wait()
    raise RuntimeError(f"memcached did not listen within {LISTEN_SECONDS} s")


def stop(p, seconds=15):
    """SIGTERM, then SIGKILL after `seconds`; its output as text."""
    if p.poll() is None:
        p.terminate()
    try:
        out, _ = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    return out.decode(errors="replace")
