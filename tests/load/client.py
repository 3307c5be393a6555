#!/usr/bin/env python3
"""Load and fault client for tests/load/run.sh: loopback only, standard library only.

Each phase talks raw HTTP/1.1 to a running memcached-hook on 127.0.0.1, is bounded in time and
in count, prints what it measured and one line `phase NAME: ok|FAILED (reason)`, and exits
non-zero on failure.

  sustained  keep-alive clients POST the sync fixtures (a quarter with If-None-Match) for a
             fixed time; every answer must carry the code the fixture earned on warm-up (200,
             304 or 422); VmRSS is sampled from /proc/PID/status and must stay flat.
  sigterm    load plus requests whose body is half sent; SIGTERM to PID; the half-sent bodies
             are finished afterwards. Every request the server had accepted must be answered
             in full, nothing may be cut mid-answer, and the process must exit (run.sh checks 0).
  slowloris  connections that send their headers one byte at a time, that never finish a
             body, and that send nothing at all, while a well-behaved client measures latency.
             The server must keep answering the good client promptly and shed every slow
             connection within its timeouts.
  timeout    a body that trickles in: the per-request timeout must answer (408) before
             Metacontroller's 10 s hook timeout.
"""

import argparse
import asyncio
import glob
import json
import os
import signal
import statistics
import sys
import time

HOST = "127.0.0.1"


def log(*args):
    print(*args, flush=True)


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def fixtures(directory):
    out = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path, "rb") as f:
            out.append((os.path.basename(path), f.read()))
    if not out:
        raise SystemExit("no fixtures in %s" % directory)
    return out


def request_bytes(body, path="/sync", etag=None, extra_headers=()):
    head = ["POST %s HTTP/1.1" % path, "Host: %s" % HOST, "Content-Type: application/json",
            "Content-Length: %d" % len(body)]
    if etag:
        head.append("If-None-Match: %s" % etag)
    head.extend(extra_headers)
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class Truncated(Exception):
    """The server closed the connection in the middle of an answer."""


async def read_response(reader):
    """Reads one response. Returns (code, headers, body); raises EOFError when the connection
    closed before any byte of an answer, Truncated when it closed in the middle of one."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = await reader.read(65536)
        if not chunk:
            if head:
                raise Truncated("closed inside the headers: %r" % head[:80])
            raise EOFError
        head += chunk
        if len(head) > 1 << 20:
            raise Truncated("headers over 1 MiB")
    head, rest = head.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    code = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if code in (204, 304) or "content-length" not in headers and "transfer-encoding" not in headers:
        return code, headers, rest
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        buf = rest
        while True:
            while b"\r\n" not in buf:
                more = await reader.read(65536)
                if not more:
                    raise Truncated("closed inside a chunk size")
                buf += more
            size_line, buf = buf.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            while len(buf) < size + 2:
                more = await reader.read(65536)
                if not more:
                    raise Truncated("closed inside a chunk")
                buf += more
            body += buf[:size]
            buf = buf[size + 2:]
            if size == 0:
                return code, headers, body
    length = int(headers["content-length"])
    body = rest
    while len(body) < length:
        more = await reader.read(length - len(body))
        if not more:
            raise Truncated("closed after %d of %d body bytes" % (len(body), length))
        body += more
    return code, headers, body


async def one_shot(port, data, timeout=10.0):
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(read_response(reader), timeout)
    finally:
        writer.close()


async def warm_up(port, bodies):
    """The code and ETag each fixture earns; the code again with its ETag."""
    plan = []
    for name, body in bodies:
        code, headers, _ = await one_shot(port, request_bytes(body))
        etag = headers.get("etag")
        if code == 200 and not etag:
            raise SystemExit("%s: 200 without ETag" % name)
        plan.append((name, body, code, etag))
    return plan


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.codes = {}
        self.latencies = []
        self.errors = []
        self.not_accepted = 0

    def ok(self, code, latency):
        self.passed += 1
        self.codes[code] = self.codes.get(code, 0) + 1
        if len(self.latencies) < 2_000_000:
            self.latencies.append(latency)

    def fail(self, what):
        self.failed += 1
        if len(self.errors) < 20:
            self.errors.append(what)

    def percentile(self, p):
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


async def keep_alive_client(port, plan, offset, deadline, max_requests, tally, stop=None, signaled=None):
    """Sends plan entries on one keep-alive connection until the deadline, the count, or
    `stop` is set; reconnects when the server closes the connection between answers. Once
    `signaled` is set (shutdown began), a refused connection or a connection closed before any
    byte of an answer means the request was never accepted; the client then stops."""
    shutting_down = lambda: signaled is not None and signaled.is_set()  # noqa: E731
    sent = 0
    reader = writer = None
    try:
        while sent < max_requests and time.monotonic() < deadline and not (stop and stop.is_set()):
            if writer is None:
                try:
                    reader, writer = await asyncio.open_connection(HOST, port)
                except OSError as e:
                    if shutting_down():
                        return
                    tally.fail("connect: %s" % e)
                    await asyncio.sleep(0.05)
                    continue
            name, body, code, etag = plan[(offset + sent) % len(plan)]
            use_etag = etag is not None and (offset + sent) % 4 == 3
            started = time.monotonic()
            sent += 1
            try:
                writer.write(request_bytes(body, etag=etag if use_etag else None))
                await writer.drain()
                got, headers, answer = await asyncio.wait_for(read_response(reader), 10)
            except (EOFError, ConnectionError) as e:
                # Closed before any byte of an answer: the request was never accepted. Only
                # acceptable once shutdown began (keep-alive connections are closed then).
                writer.close()
                reader = writer = None
                if shutting_down():
                    tally.not_accepted += 1
                    return
                tally.fail("%s: connection closed before an answer: %r" % (name, e))
                continue
            except Truncated as e:
                tally.fail("%s: answer cut: %s" % (name, e))
                writer.close()
                reader = writer = None
                continue
            except asyncio.TimeoutError:
                tally.fail("%s: no answer within 10 s" % name)
                writer.close()
                reader = writer = None
                continue
            want = 304 if use_etag else code
            if got != want:
                tally.fail("%s: got %d, want %d: %r" % (name, got, want, answer[:200]))
            elif got == 200 and not json.loads(answer).get("children"):
                tally.fail("%s: 200 with no children" % name)
            else:
                tally.ok(got, time.monotonic() - started)
            if headers.get("connection", "").lower() == "close":
                writer.close()
                reader = writer = None
    finally:
        if writer is not None:
            writer.close()


def flat(samples, slack_kib, slack_ratio):
    """Whether the memory of the last third is within the slack of the middle third's (the first
    third is warm-up: allocator arenas, caches)."""
    if len(samples) < 6:
        return True, "too few samples"
    third = len(samples) // 3
    middle = statistics.median(samples[third:2 * third])
    last = statistics.median(samples[2 * third:])
    peak = max(samples[third:])
    allowed = max(slack_kib, middle * slack_ratio)
    return last - middle <= allowed and peak - middle <= 2 * allowed, \
        "median middle %d KiB, median last %d KiB, peak %d KiB (allowed growth %d KiB)" % (
            middle, last, peak, allowed)


async def sustained(args):
    plan = await warm_up(args.port, fixtures(args.fixtures))
    log("warm-up codes:", {name: code for name, _, code, _ in plan})
    tally = Tally()
    samples = []
    deadline = time.monotonic() + args.duration
    per_client = max(1, args.max_requests // args.connections)

    async def sampler():
        while time.monotonic() < deadline:
            value = rss_kib(args.pid)
            if value is not None:
                samples.append(value)
            await asyncio.sleep(0.25)

    started = time.monotonic()
    await asyncio.gather(sampler(), *[
        keep_alive_client(args.port, plan, i * 7, deadline, per_client, tally)
        for i in range(args.connections)])
    took = time.monotonic() - started
    is_flat, memory = flat(samples, args.rss_slack_kib, args.rss_slack_ratio)
    log("sustained: %d requests in %.1f s (%.0f/s) over %d connections, codes %s" % (
        tally.passed + tally.failed, took, (tally.passed + tally.failed) / took, args.connections,
        dict(sorted(tally.codes.items()))))
    log("latency ms: p50 %.2f p99 %.2f p99.9 %.2f max %.2f" % (
        tally.percentile(0.5), tally.percentile(0.99), tally.percentile(0.999),
        max(tally.latencies, default=0) * 1000))
    log("VmRSS: %s; %d samples from %d to %d KiB" % (memory, len(samples), samples[0] if samples else 0,
                                                     samples[-1] if samples else 0))
    for e in tally.errors:
        log("  error:", e)
    problems = []
    if tally.failed:
        problems.append("%d failed requests" % tally.failed)
    if tally.passed < args.min_requests:
        problems.append("only %d requests answered (want >= %d)" % (tally.passed, args.min_requests))
    if not is_flat:
        problems.append("RSS grew: " + memory)
    return problems


async def wait_gone(pid, limit):
    """Seconds until `pid` has exited (a zombie or gone), polling; None after `limit`."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        if state in ("Z", "X", "gone"):
            return time.monotonic() - started
        await asyncio.sleep(0.02)
    return None


async def half_sent(port, body, started_event, finish_event):
    """A request whose headers and half its body are sent; the rest follows `finish_event`."""
    reader, writer = await asyncio.open_connection(HOST, port)
    data = request_bytes(body)
    cut = len(data) - len(body) // 2
    try:
        writer.write(data[:cut])
        await writer.drain()
        started_event.set()
        await finish_event.wait()
        writer.write(data[cut:])
        await writer.drain()
        return await asyncio.wait_for(read_response(reader), 15)
    finally:
        writer.close()


async def sigterm(args):
    bodies = fixtures(args.fixtures)
    plan = await warm_up(args.port, bodies)
    plan = [p for p in plan if p[2] == 200]
    tally = Tally()
    signaled = asyncio.Event()
    finish = asyncio.Event()
    deadline = time.monotonic() + args.duration + 20
    clients = [asyncio.ensure_future(
        keep_alive_client(args.port, plan, i * 5, deadline, 10 ** 7, tally, signaled=signaled))
        for i in range(args.connections)]
    await asyncio.sleep(args.duration)
    # Requests the server has accepted and is reading: headers and half the body sent. They
    # are finished after SIGTERM, well within the request timeout.
    slow_started = [asyncio.Event() for _ in range(args.in_flight)]
    slow = [asyncio.ensure_future(half_sent(args.port, plan[i % len(plan)][1], slow_started[i], finish))
            for i in range(args.in_flight)]
    await asyncio.wait_for(asyncio.gather(*[e.wait() for e in slow_started]), 10)
    # Idle connections must not hold the shutdown up.
    idle = [asyncio.ensure_future(hold(args.port, kind, 20)) for kind in ("silent", "h2-preface") * 5]
    await asyncio.sleep(0.3)
    before = tally.passed
    log("sigterm: %d answers before SIGTERM; sending SIGTERM to %d with %d requests half sent" % (
        before, args.pid, args.in_flight))
    signaled.set()
    os.kill(args.pid, signal.SIGTERM)
    gone = asyncio.ensure_future(wait_gone(args.pid, 20))
    await asyncio.sleep(args.finish_after)
    finish.set()
    problems = []
    results = await asyncio.gather(*slow, return_exceptions=True)
    answered = 0
    for r in results:
        if isinstance(r, Exception):
            problems.append("an in-flight request got no answer: %r" % (r,))
        elif r[0] != 200 or not json.loads(r[2]).get("children"):
            problems.append("an in-flight request got %d: %r" % (r[0], r[2][:200]))
        else:
            answered += 1
    await asyncio.wait_for(asyncio.gather(*clients), 30)
    exit_after = await gone
    if exit_after is None:
        exit_after = "not within 20 s"
        problems.append("the process did not exit within 20 s of SIGTERM")
    else:
        exit_after = "%.2f s" % exit_after
    for f in idle:
        f.cancel()
    # After shutdown began, new connections must be refused (the listener is closed).
    refused = False
    for _ in range(50):
        try:
            _, w = await asyncio.open_connection(HOST, args.port)
            w.close()
            await asyncio.sleep(0.1)
        except OSError:
            refused = True
            break
    log("sigterm: %d load answers (%d after SIGTERM), %d/%d half-sent requests answered 200 "
        "(body finished %.1f s after SIGTERM), %d load requests not accepted (connection closed "
        "unread or refused), new connections %s, process gone %s after SIGTERM" % (
            tally.passed, tally.passed - before, answered, args.in_flight, args.finish_after,
            tally.not_accepted, "refused" if refused else "STILL ACCEPTED", exit_after))
    # For run.sh: /sync requests the client saw answered, to compare with the server's log.
    log("answered-sync-requests: %d" % (len(bodies) + tally.passed + answered))
    for e in tally.errors:
        log("  error:", e)
    if tally.failed:
        problems.append("%d requests failed or were cut" % tally.failed)
    if not refused:
        problems.append("new connections still accepted after SIGTERM")
    return problems


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


async def hold(port, kind, limit):
    """Opens one slow connection of `kind` and reads until the server closes it. Returns (seconds
    until the close, or None if still open after `limit`; first line the server sent)."""
    reader, writer = await asyncio.open_connection(HOST, port)
    started = time.monotonic()

    async def send():
        try:
            if kind == "slow-headers":
                # Headers one byte every 0.5 s; they would take ~60 s, and the body never comes.
                data = request_bytes(b"{}" * 100)[:-200]
                for i in range(len(data)):
                    writer.write(data[i:i + 1])
                    await writer.drain()
                    await asyncio.sleep(0.5)
            elif kind == "stalled-body":
                # Headers of a 100000-byte body, then 10 bytes of it, then nothing.
                writer.write(request_bytes(b"x" * 100000)[:-99990])
            elif kind == "idle-keep-alive":
                # One complete request, then an idle keep-alive connection.
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            elif kind == "h2-preface":
                # HTTP/2 with prior knowledge: the preface, then no SETTINGS, nothing.
                writer.write(H2_PREFACE)
            # "silent": connect and send nothing.
            await writer.drain()
            await asyncio.sleep(limit + 1)
        except (ConnectionError, OSError):
            pass

    sender = asyncio.ensure_future(send())
    first = None
    try:
        while True:
            left = limit - (time.monotonic() - started)
            if left <= 0:
                return None, first or "nothing"
            try:
                chunk = await asyncio.wait_for(reader.read(65536), left)
            except asyncio.TimeoutError:
                return None, first or "nothing"
            except ConnectionError:
                return time.monotonic() - started, first or "reset"
            if not chunk:
                return time.monotonic() - started, first or "closed"
            if first is None:
                line = chunk.split(b"\r\n")[0]
                first = line.decode("latin-1") if line.startswith(b"HTTP/") else "%d bytes (HTTP/2 frames)" % len(chunk)
    finally:
        sender.cancel()
        writer.close()


def summarize(name, results, within, problems):
    times = [t for t, _ in results if t is not None]
    open_ = sum(1 for t, _ in results if t is None)
    outcomes = {}
    for _, what in results:
        outcomes[what] = outcomes.get(what, 0) + 1
    log("slowloris: %-15s %d connections, closed by the server after %s s, first answers %s" % (
        name, len(results),
        "%.1f-%.1f" % (min(times), max(times)) if times else "-", outcomes))
    if open_:
        problems.append("%d %s connections still open after %.0f s" % (open_, name, within))
    elif times and max(times) > within:
        problems.append("%s connections held for up to %.1f s (want <= %.0f s)" % (name, max(times), within))


async def slowloris(args):
    plan = await warm_up(args.port, fixtures(args.fixtures))
    plan = [p for p in plan if p[2] == 200]
    limit = args.shed_within + 5
    kinds = ("slow-headers", "stalled-body", "silent", "idle-keep-alive", "h2-preface")
    attackers = []
    for i in range(args.connections):
        kind = kinds[i % len(kinds)]
        attackers.append((kind, asyncio.ensure_future(hold(args.port, kind, limit))))
        if i % 50 == 49:
            await asyncio.sleep(0.01)
    await asyncio.sleep(1)
    rss_attacked = rss_kib(args.pid)
    # A well-behaved client meanwhile: every request answered, promptly.
    tally = Tally()
    deadline = time.monotonic() + args.duration
    await asyncio.gather(*[keep_alive_client(args.port, plan, i, deadline, 10 ** 6, tally) for i in range(4)])
    log("slowloris: good client %d answers (%d failed) during the attack, p50 %.2f ms p99 %.2f ms max %.2f ms; "
        "VmRSS %s KiB under %d slow connections" % (
            tally.passed, tally.failed, tally.percentile(0.5), tally.percentile(0.99),
            max(tally.latencies, default=0) * 1000, rss_attacked, len(attackers)))
    problems = []
    for e in tally.errors:
        log("  error:", e)
    if tally.failed or tally.passed == 0:
        problems.append("the good client had %d failures, %d answers" % (tally.failed, tally.passed))
    if tally.percentile(0.99) > args.max_p99_ms:
        problems.append("good client p99 %.1f ms > %d ms" % (tally.percentile(0.99), args.max_p99_ms))
    by_kind = {}
    for kind, future in attackers:
        by_kind.setdefault(kind, []).append(await future)
    for kind in kinds:
        summarize(kind, by_kind[kind], args.shed_within, problems)
    code, _, _ = await one_shot(args.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    if code != 200:
        problems.append("healthz answered %d after the attack" % code)
    return problems


async def timeout(args):
    """A body that trickles in one byte a second: the request timeout must answer first."""
    body = b"{" + b" " * 60 + b"}"
    reader, writer = await asyncio.open_connection(HOST, args.port)
    data = request_bytes(body)
    head = len(data) - len(body)
    started = time.monotonic()
    writer.write(data[:head])
    await writer.drain()
    problems = []
    code = None
    try:
        for i in range(len(body)):
            try:
                writer.write(body[i:i + 1])
                await writer.drain()
            except ConnectionError:
                break
            try:
                code, _, answer = await asyncio.wait_for(read_response(reader), 1.0)
                break
            except asyncio.TimeoutError:
                if time.monotonic() - started > 12:
                    break
            except (EOFError, Truncated) as e:
                problems.append("connection closed without an answer: %r" % e)
                break
    finally:
        writer.close()
    took = time.monotonic() - started
    log("timeout: trickled body answered %s after %.2f s" % (code, took))
    if code != 408:
        problems.append("expected 408 from the request timeout, got %s" % code)
    if took >= 10:
        problems.append("answered after %.2f s, not below Metacontroller's 10 s" % took)
    # Bodies over the limit are refused at once: the 413 answers the announced Content-Length
    # before any byte of the body is sent (the server then closes, so a client that went on
    # writing the body would get a broken pipe instead of reading the answer).
    big = b" " * (args.body_limit + 1)
    data = request_bytes(big)
    started = time.monotonic()
    reader, writer = await asyncio.open_connection(HOST, args.port)
    try:
        writer.write(data[:len(data) - len(big)])
        await writer.drain()
        code, _, _ = await asyncio.wait_for(read_response(reader), 5.0)
    except (ConnectionError, EOFError, Truncated, asyncio.TimeoutError) as e:
        code = repr(e)
    finally:
        writer.close()
    log("timeout: body of %d bytes answered %s after %.2f s" % (len(big), code, time.monotonic() - started))
    if code != 413:
        problems.append("a body over the limit got %s, want 413" % code)
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["sustained", "sigterm", "slowloris", "timeout"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--fixtures", default=os.path.join(os.path.dirname(__file__), "..", "fixtures", "sync"))
    p.add_argument("--duration", type=float, default=30)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--max-requests", type=int, default=2_000_000)
    p.add_argument("--min-requests", type=int, default=1000)
    p.add_argument("--rss-slack-kib", type=int, default=8192)
    p.add_argument("--rss-slack-ratio", type=float, default=0.10)
    p.add_argument("--in-flight", type=int, default=8)
    p.add_argument("--finish-after", type=float, default=1.0)
    p.add_argument("--shed-within", type=float, default=8)
    p.add_argument("--max-p99-ms", type=int, default=250)
    p.add_argument("--body-limit", type=int, default=16 * 1024 * 1024)
    args = p.parse_args()
    phase = {"sustained": sustained, "sigterm": sigterm, "slowloris": slowloris, "timeout": timeout}[args.phase]
    problems = asyncio.run(phase(args))
    if problems:
        log("phase %s: FAILED (%s)" % (args.phase, "; ".join(problems)))
        sys.exit(1)
    log("phase %s: ok" % args.phase)


if __name__ == "__main__":
    main()
