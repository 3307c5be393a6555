"""The extstore scenario: a Memcached with 64 MB of memory and a 512 MiB flash file on an emptyDir
holds about four times its memory. Values of 64 KiB are written through the headless Service from
the client pod, paced, then every key is read back: the hit ratio, what memcached's `stats` says
went to and came back from flash, the container's anonymous memory against the request the hook
derived, and no restart.
"""
import time

from harness import (
    MEMCACHED_IMAGE,
    Memcached,
    Namespace,
    Test,
    cgroup_value,
    memory_cgroup,
    restarts,
)

MEMORY_MB = 64
FLASH = "512Mi"
VALUE = 65536
KEYS = 4000
# 50 values (3.2 MB) then 0.1 s: about 30 MB/s, so the flash writer keeps up on a slow disk.
WRITE = (f"v=$(head -c {VALUE} /dev/zero | tr '\\0' x); i=0; while [ $i -lt {KEYS} ]; do "
         f"printf 'set k%d 0 0 {VALUE}\\r\\n%s\\r\\n' $i \"$v\"; i=$((i+1)); "
         "[ $((i % 50)) -eq 0 ] && { usleep 100000 2>/dev/null || sleep 0.1; }; done; printf 'quit\\r\\n'")
READ = (f"i=0; while [ $i -lt {KEYS} ]; do printf 'get k%d\\r\\n' $i; i=$((i+1)); done; "
        "printf 'quit\\r\\n'")


def stats(ns, host):
    _, out = ns.memcached(host, ["stats"])
    return {ln.split()[1]: ln.split()[2] for ln in out.replace("\r", "").splitlines()
            if ln.startswith("STAT ") and len(ln.split()) >= 3}


def anon_bytes(cg):
    """Anonymous memory of the container's cgroup: `anon` (v2) or `rss` (v1) of memory.stat."""
    with open(f"{cg}/memory.stat") as f:
        fields = dict(line.split() for line in f if len(line.split()) == 2)
    return int(fields.get("anon", fields.get("rss", 0)))


def mib(n):
    return f"{n / 1048576:.1f} MiB"


def scenario_extstore(t: Test):
    """A pod holding about four times its memory on flash, read back through its Service (see the
    module's docstring)."""
    ns = Namespace("pods-extstore")
    try:
        mc = Memcached(ns, "cache", {
            "replicas": 1, "image": MEMCACHED_IMAGE,
            "memcached": {"maxMemoryMB": MEMORY_MB},
            "extstore": {"enabled": True, "size": FLASH, "volume": "EmptyDir"},
            # This node's kubelet runs without local storage capacity isolation, so it reports
            # no ephemeral-storage and would place no pod requesting the file's size: the user's
            # request of 0, as docs/behaviour.md says for such nodes.
            "resources": {"requests": {"ephemeral-storage": "0"}},
        })
        start = time.monotonic()
        rendered = mc.create()
        ns.client()
        pod = mc.wait_ready(1)[0]
        t.time("apply to Ready", time.monotonic() - start)
        workload = next(o for o in rendered if o["kind"] == "Deployment")
        request = workload["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"]
        t.check(f"the memory request is a whole number of MiB ({request})", request.endswith("Mi"), request)
        request_bytes = int(request[:-2]) << 20
        host = f"cache.{ns.name}.svc"

        start = time.monotonic()
        _, out = ns.sh(f"({WRITE}) | nc -w 10 {host} 11211 | grep -c STORED", timeout=300)
        written = time.monotonic() - start
        t.time(f"{KEYS} values of {VALUE // 1024} KiB written through the Service", written)
        t.check(f"{KEYS} values stored ({KEYS * VALUE >> 20} MiB, {KEYS * VALUE / (MEMORY_MB << 20):.1f} times "
                f"maxMemoryMB)", out.strip() == str(KEYS), out[-300:])

        start = time.monotonic()
        _, out = ns.sh(f"({READ}) | nc -w 10 {host} 11211 | grep -c '^VALUE'", timeout=300)
        t.time("every key read back through the Service", time.monotonic() - start)
        hits = int(out.strip()) if out.strip().isdigit() else 0
        ratio = hits / KEYS
        held = hits * VALUE
        print(f"     extstore: {hits}/{KEYS} read back (hit ratio {ratio:.3f}), {mib(held)} held with "
              f"{MEMORY_MB} MB of memory", flush=True)
        t.check(f"hit ratio at least 0.95 ({hits}/{KEYS})", ratio >= 0.95, out[-300:])
        t.check(f"the pod held more than three times maxMemoryMB ({mib(held)})",
                held > 3 * (MEMORY_MB << 20), held)

        s = stats(ns, pod["status"]["podIP"])
        written_flash = int(s.get("extstore_objects_written", 0))
        read_flash = int(s.get("extstore_objects_read", 0))
        print(f"     extstore: objects written {written_flash}, read {read_flash}, on flash "
              f"{s.get('extstore_objects_used')}, bytes used {mib(int(s.get('extstore_bytes_used', 0)))} of "
              f"{mib(int(s.get('extstore_limit_maxbytes', 0)))}, evicted from flash "
              f"{s.get('extstore_objects_evicted')}, evicted from memory {s.get('evictions')}", flush=True)
        t.check("values went to flash and came back from it (stats extstore_objects_written, _read)",
                written_flash > KEYS // 2 and read_flash > KEYS // 2, s)
        t.check(f"memcached runs with -m {MEMORY_MB} and a flash file of at most {FLASH}",
                int(s.get("limit_maxbytes", 0)) == MEMORY_MB << 20
                and 0 < int(s.get("extstore_limit_maxbytes", 0)) <= 512 << 20, s)

        cg = memory_cgroup(pod)
        anon = anon_bytes(cg)
        peak = cgroup_value(cg, "memory.max_usage_in_bytes", "memory.peak")
        print(f"     extstore: anonymous memory {mib(anon)}, cgroup peak {mib(peak or 0)} (page cache of "
              f"the file included), request {request}", flush=True)
        t.check(f"anonymous memory {mib(anon)} within the request {request}", 0 < anon <= request_bytes, anon)
        after = mc.pods()[0]
        t.check("no restart", restarts(after) == 0, restarts(after))
    finally:
        ns.close()
