"""Helpers for tests/image/build.sh.

  image.py labels --dockerfile Dockerfile --version V [--build-arg KEY=VALUE]...
      the final stage's LABELs (ARG defaults, or the value of a --build-arg as `docker build`
      takes it, and --version substituted), one key=value a line
  image.py user-entrypoint --dockerfile Dockerfile
      the final stage's USER and ENTRYPOINT (JSON), two lines
  image.py env --dockerfile Dockerfile
      the final stage's ENV variables, one key=value a line
  image.py check --oci-dir DIR --binary BIN --dockerfile Dockerfile --version V --max-mib N
      inspects the built image (an OCI image layout): user, entrypoint, environment, labels,
      exposed port, exactly one layer holding exactly the static binary, byte-identical to BIN,
      and the size
"""

import argparse
import hashlib
import json
import pathlib
import re
import shlex
import sys
import tarfile


def final_stage(dockerfile):
    text = pathlib.Path(dockerfile).read_text(encoding="utf-8")
    text = re.sub(r"\\\n", " ", text)
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    start = max(i for i, l in enumerate(lines) if l.upper().startswith("FROM "))
    return lines[start:]


def labels(dockerfile, version, build_args=()):
    args, out = {}, {}
    given = dict(a.split("=", 1) for a in build_args)
    for line in final_stage(dockerfile):
        word, _, rest = line.partition(" ")
        if word.upper() == "ARG" and "=" in rest:
            k, v = rest.split("=", 1)
            args[k.strip()] = given.get(k.strip(), v.strip())
        if word.upper() == "LABEL":
            for item in shlex.split(rest):
                k, v = item.split("=", 1)
                out[k] = re.sub(r"\$\{?(\w+)\}?", lambda m: version if m.group(1) == "VERSION"
                                else args.get(m.group(1), ""), v)
    return out


def env(dockerfile):
    out = {}
    for line in final_stage(dockerfile):
        word, _, rest = line.partition(" ")
        if word.upper() == "ENV":
            for item in shlex.split(rest):
                k, v = item.split("=", 1)
                out[k] = v
    return out


def user_entrypoint(dockerfile):
    user = entry = None
    for line in final_stage(dockerfile):
        word, _, rest = line.partition(" ")
        if word.upper() == "USER":
            user = rest.strip()
        if word.upper() == "ENTRYPOINT":
            entry = json.loads(rest)
    return user, entry


def check(a):
    problems = []
    lay = pathlib.Path(a.oci_dir)
    index = json.loads((lay / "index.json").read_text())
    blob = lambda d: lay / "blobs" / d.split(":")[0] / d.split(":")[1]
    manifest = json.loads(blob(index["manifests"][0]["digest"]).read_text())
    config = json.loads(blob(manifest["config"]["digest"]).read_text())
    cfg = config.get("config", {})
    user, entry = user_entrypoint(a.dockerfile)
    want_labels = labels(a.dockerfile, a.version)
    print(f"user: {cfg.get('User')}")
    print(f"entrypoint: {json.dumps(cfg.get('Entrypoint'))}  cmd: {json.dumps(cfg.get('Cmd'))}")
    print(f"exposed ports: {sorted(cfg.get('ExposedPorts') or {})}")
    print(f"os/arch: {config.get('os')}/{config.get('architecture')}")
    for k, v in sorted((cfg.get("Labels") or {}).items()):
        print(f"label {k}={v}")
    if cfg.get("User") != user or not re.match(r"^[1-9][0-9]*:[1-9][0-9]*$", cfg.get("User") or ""):
        problems.append(f"user {cfg.get('User')!r}: want the Dockerfile's numeric non-root {user!r}")
    if cfg.get("Entrypoint") != entry or cfg.get("Cmd"):
        problems.append(f"entrypoint {cfg.get('Entrypoint')} / cmd {cfg.get('Cmd')}: want {entry} and no cmd")
    got_env = dict(item.split("=", 1) for item in cfg.get("Env") or [])
    for k, v in env(a.dockerfile).items():
        print(f"env {k}={got_env.get(k)}")
        if got_env.get(k) != v:
            problems.append(f"env {k}: {got_env.get(k)!r}, want {v!r} (Dockerfile)")
    if sorted(cfg.get("ExposedPorts") or {}) != ["8080/tcp"]:
        problems.append("exposed ports: want 8080/tcp")
    if (config.get("os"), config.get("architecture")) != ("linux", "amd64"):
        problems.append("platform: want linux/amd64")
    got_labels = cfg.get("Labels") or {}
    for k, v in want_labels.items():
        if got_labels.get(k) != v:
            problems.append(f"label {k}: {got_labels.get(k)!r}, want {v!r} (Dockerfile)")
    for k in ("org.opencontainers.image.revision", "org.opencontainers.image.created"):
        if not got_labels.get(k):
            problems.append(f"label {k} missing")
    layers = manifest["layers"]
    if len(layers) != 1:
        problems.append(f"{len(layers)} layers: want exactly one")
    want = hashlib.sha256(pathlib.Path(a.binary).read_bytes()).hexdigest()
    total = sum(l["size"] for l in layers) + manifest["config"]["size"]
    for l in layers:
        with tarfile.open(blob(l["digest"])) as t:
            members = [m for m in t.getmembers() if m.name.strip("./")]
            names = [m.name.lstrip("./") for m in members]
            print(f"layer {l['digest'][:19]}... ({l['size'] / 2**20:.1f} MiB, {l['mediaType'].rsplit('.', 1)[-1]}): {names}")
            files = [m for m in members if m.isfile()]
            if [m.name.lstrip("./") for m in files] != ["memcached-hook"]:
                problems.append(f"layer files {names}: want only memcached-hook")
            for m in files:
                got = hashlib.sha256(t.extractfile(m).read()).hexdigest()
                print(f"memcached-hook: mode {m.mode:o}, owner {m.uid}:{m.gid}, sha256 {got[:16]}...")
                if got != want:
                    problems.append("the image's binary differs from the static build")
                if m.uid != 0 or m.mode & 0o022 or not m.mode & 0o001:
                    problems.append(f"binary mode {m.mode:o} owner {m.uid}: want root-owned, not writable by others, executable by all")
    print(f"size (compressed layers + config): {total / 2**20:.1f} MiB; binary sha256 {want[:16]}... (the static build)")
    if total > a.max_mib * 2**20:
        problems.append(f"image is {total / 2**20:.1f} MiB, over {a.max_mib} MiB")
    for p in problems:
        print(f"ERROR {p}")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["labels", "user-entrypoint", "env", "check"])
    ap.add_argument("--dockerfile", required=True)
    ap.add_argument("--version", default="")
    ap.add_argument("--build-arg", action="append", default=[], dest="build_args")
    ap.add_argument("--oci-dir")
    ap.add_argument("--binary")
    ap.add_argument("--max-mib", type=float, default=20)
    a = ap.parse_args()
    if a.what == "labels":
        for k, v in labels(a.dockerfile, a.version, a.build_args).items():
            print(f"{k}={v}")
        return 0
    if a.what == "env":
        for k, v in env(a.dockerfile).items():
            print(f"{k}={v}")
        return 0
    if a.what == "user-entrypoint":
        user, entry = user_entrypoint(a.dockerfile)
        print(user)
        print(json.dumps(entry))
        return 0
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
