#!/usr/bin/env python3
"""Helpers for tests/e2e/run.sh (and tests/schema/check.sh).

  e2e_lib.py children SRC OUTDIR PREFIX [--json]
      Split the children in SRC (multi-document YAML from `memcached-hook render` /
      `replay --output yaml`, or with --json the JSON response of `replay --output json`)
      into OUTDIR/PREFIX~~<n>~~<Kind>~~<name>.json, one object per file, without
      metadata.namespace (the tests create them in a namespace of their own).
      Prints the paths, one per line.

  e2e_lib.py same-children YAML JSON
      Exit 0 when the YAML documents of `replay --output yaml` are the `children` of the
      JSON response of `replay --output json` (same objects, same order); else print the
      first difference and exit 1.

  e2e_lib.py subset RENDERED LIVE
      Exit 0 when every field of RENDERED (a child as the hook wrote it) appears in LIVE
      (the object the API server returned) with the same value, lists element by element;
      else print each difference (path, rendered, live) and exit 1. The API server may add
      defaults; it must not change or drop anything the hook wrote, or an apply-based
      controller would see a diff on every sync.

  e2e_lib.py replay-expectation FIXTURE
      What the golden snapshot of tests/it (tests/it/snapshots/
      it__golden__golden_sync_responses@<fixture>.snap) says a replay of FIXTURE answers:
      `rejected FIELD` (the hook refuses it on purpose, naming FIELD), `children`, or
      `unknown` when there is no snapshot.

  e2e_lib.py crd-workaround IN OUT
      Write IN (deploy/crd/crd.yaml) to OUT with the memory-limit CEL rule of every version
      replaced by WORKAROUND_MEMORY_RULE below, and print what was replaced. Used only
      when the API server rejects deploy/crd/crd.yaml (see run.sh).

  e2e_lib.py servicemonitor-schema CRD OUT
      Turn the openAPIV3Schema of the ServiceMonitor CRD into a strict JSON schema
      (objects with properties and no preserve-unknown-fields get additionalProperties:
      false; x-kubernetes-int-or-string becomes integer-or-string).

  e2e_lib.py validate-jsonschema SCHEMA FILE...
      Validate each JSON FILE against SCHEMA (jsonschema package); exit 1 on any error.

  e2e_lib.py quantity-crs OUT
      Write to OUT one multi-document YAML of Memcacheds whose children carry computed or
      user-written quantities over a range of sizes: item memory around every power-of-two
      number of GiB (the default memory request crosses 1Gi, 2Gi, ...), extstore files of many
      sizes on both volume kinds, and user resources written in many forms (1000m, 0.5Gi, 1e9).

  e2e_lib.py quantity-list RENDERED OUT
      Write the workloads (Deployment, StatefulSet) among the children in RENDERED as one
      v1 List to OUT, for one `kubectl create --dry-run=server -f OUT -o json`; print how many.

  e2e_lib.py quantity-compare LIST LIVE
      Exit 0 when every item of LIST appears in the List LIVE (the API server's answer, matched
      by kind and name) with every field unchanged; else print each difference and exit 1.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time


def _yaml():
    """PyYAML, imported where YAML is read or written: tests/pods imports this module for the
    hook process and diff_subset without it."""
    import yaml

    return yaml

# The memory-limit rule as the API server (v1.35) accepts it. deploy/crd/crd.yaml's rule selects
# the map entry as `self.resources.limits.memory`, which the cost estimator cannot size
# (field selection on a map has no schema path), and builds the bound with
# `quantity(string(int) + 'Mi')`, whose argument it cannot size either; each makes the
# estimated cost unbounded. Indexing the map (`limits['memory']`) and adding bytes to a
# quantity (`quantity('0').add(n)`) keep it bounded; the meaning is unchanged.
WORKAROUND_MEMORY_RULE = (
    "!has(self.resources) || !has(self.resources.limits) || !('memory' in self.resources.limits)"
    " || !isQuantity(string(self.resources.limits['memory']))"
    " || quantity(string(self.resources.limits['memory'])).compareTo(quantity('0').add("
    "((has(self.memcached) && has(self.memcached.maxMemoryMB) && self.memcached.maxMemoryMB > 0"
    " ? self.memcached.maxMemoryMB : 64) + 32) * 1048576)) >= 0"
)


def load_children(path, as_json):
    with open(path, encoding="utf-8") as f:
        if as_json:
            return list(json.load(f).get("children") or [])
        return [d for d in _yaml().safe_load_all(f) if d is not None]


def cmd_children(src, outdir, prefix, as_json=False):
    out = []
    for n, child in enumerate(load_children(src, as_json), 1):
        if not isinstance(child, dict):
            print(f"{src}: document {n} is not an object: {child!r:.200}", file=sys.stderr)
            return 1
        meta = child.setdefault("metadata", {})
        meta.pop("namespace", None)
        kind = child.get("kind", "NoKind")
        name = meta.get("name", "noname")
        path = f"{outdir}/{prefix}~~{n:02d}~~{kind}~~{name}.json"
        with open(path, "w", encoding="utf-8") as f:
            json.dump(child, f, indent=1, sort_keys=True)
        out.append(path)
    print("\n".join(out))
    return 0


def cmd_same_children(yaml_path, json_path):
    a = load_children(yaml_path, False)
    b = load_children(json_path, True)
    if a == b:
        return 0
    if len(a) != len(b):
        print(f"{len(a)} YAML documents, {len(b)} JSON children")
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            print(f"child {i}: YAML {json.dumps(x, sort_keys=True)[:300]}")
            print(f"child {i}: JSON {json.dumps(y, sort_keys=True)[:300]}")
            break
    return 1


def diff_subset(want, got, path, out):
    if isinstance(want, dict):
        if not isinstance(got, dict):
            out.append((path, want, got))
            return
        for k, v in want.items():
            if k not in got:
                out.append((f"{path}.{k}", v, "<absent>"))
            else:
                diff_subset(v, got[k], f"{path}.{k}", out)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            out.append((path, want, got))
            return
        for i, (x, y) in enumerate(zip(want, got)):
            diff_subset(x, y, f"{path}[{i}]", out)
    elif want != got or type(want) is not type(got):
        out.append((path, want, got))


def cmd_subset(rendered, live):
    with open(rendered, encoding="utf-8") as f:
        want = json.load(f)
    with open(live, encoding="utf-8") as f:
        got = json.load(f)
    out = []
    diff_subset(want, got, "", out)
    for p, w, g in out:
        print(f"{p or '.'}: rendered {json.dumps(w)[:200]} -> API server {json.dumps(g)[:200]}")
    return 1 if out else 0


def cmd_replay_expectation(fixture):
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    snap = os.path.join(root, "tests", "it", "snapshots",
                        f"it__golden__golden_sync_responses@{os.path.basename(fixture)}.snap")
    if not os.path.exists(snap):
        print("unknown")
        return 0
    with open(snap, encoding="utf-8") as f:
        text = f.read()
    # insta: a YAML front matter between two '---' lines, then the snapshot itself.
    parts = text.split("\n---\n", 1)
    body = _yaml().safe_load(parts[1] if len(parts) == 2 else text) or {}
    if isinstance(body, dict) and "rejected" in body:
        print(f"rejected {(body['rejected'] or {}).get('field', '')}".rstrip())
    else:
        print("children")
    return 0


def cmd_crd_workaround(src, dst):
    with open(src, encoding="utf-8") as f:
        crd = _yaml().safe_load(f)
    replaced = 0
    for v in crd["spec"]["versions"]:
        rules = v["schema"]["openAPIV3Schema"]["properties"]["spec"].get("x-kubernetes-validations", [])
        for r in rules:
            if r.get("fieldPath") == ".resources.limits" and "32Mi" in r.get("message", ""):
                print(f"version {v['name']}: memory-limit rule\n  was: {r['rule']}\n  now: {WORKAROUND_MEMORY_RULE}")
                r["rule"] = WORKAROUND_MEMORY_RULE
                replaced += 1
    if replaced == 0:
        print("no memory-limit rule found to replace", file=sys.stderr)
        return 1
    with open(dst, "w", encoding="utf-8") as f:
        _yaml().safe_dump(crd, f, sort_keys=False)
    return 0


def strict_schema(s):
    if not isinstance(s, dict):
        return s
    s = dict(s)
    if s.pop("x-kubernetes-int-or-string", False):
        rest = {k: v for k, v in s.items() if k not in ("type", "anyOf", "description")}
        s = {"anyOf": [{"type": "integer"}, {"type": "string"}], **rest}
    for key in ("properties", "patternProperties"):
        if key in s:
            s[key] = {k: strict_schema(v) for k, v in s[key].items()}
    for key in ("items", "additionalProperties", "not"):
        if isinstance(s.get(key), dict):
            s[key] = strict_schema(s[key])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in s:
            s[key] = [strict_schema(x) for x in s[key]]
    if (s.get("type") == "object" and "properties" in s and "additionalProperties" not in s
            and not s.get("x-kubernetes-preserve-unknown-fields")):
        s["additionalProperties"] = False
    return {k: v for k, v in s.items() if not k.startswith("x-kubernetes-")}


def cmd_servicemonitor_schema(crd_path, out):
    with open(crd_path, encoding="utf-8") as f:
        docs = [d for d in _yaml().safe_load_all(f) if d]
    crd = next(d for d in docs if d.get("kind") == "CustomResourceDefinition")
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    schema = strict_schema(version["schema"]["openAPIV3Schema"])
    # metadata is validated by the API server's ObjectMeta, not by the CRD schema.
    schema.setdefault("properties", {})["metadata"] = {"type": "object"}
    schema["properties"]["apiVersion"] = {"const": f"{crd['spec']['group']}/{version['name']}"}
    schema["properties"]["kind"] = {"const": crd["spec"]["names"]["kind"]}
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "spec"})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(schema, f)
    return 0


def cmd_validate_jsonschema(schema_path, files):
    import jsonschema  # only tests/schema's venv has it

    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    bad = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
        errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
        for e in errors:
            loc = ".".join(str(p) for p in e.absolute_path) or "."
            print(f"{path}: {loc}: {e.message[:300]}")
        bad += bool(errors)
    return 1 if bad else 0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Hook:
    """One real memcached-hook server process on 127.0.0.1."""

    def __init__(self, binary, name, work, args=()):
        self.binary, self.name, self.work, self.args = binary, name, work, list(args)
        self.port = free_port()
        self.proc = None

    def start(self):
        logf = open(os.path.join(self.work, f"hook-{self.name}.log"), "ab")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--addr", f"127.0.0.1:{self.port}", "--log-format", "text", *self.args],
            stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"hook {self.name} exited with {self.proc.returncode}")
            time.sleep(0.1)
        raise RuntimeError(f"hook {self.name} not ready on {self.port} within 20s")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def pid(self):
        return self.proc.pid if self.proc else None


# Item memory around each power-of-two number of GiB: the default memory request
# (maxMemoryMB plus its overheads) lands on and beside every multiple of 1024 Mi there.
QUANTITY_GIB = (1, 2, 4, 16, 64)
QUANTITY_WIDTH = 100
MAX_MEMORY_MB = 65536  # the CRD's bound of maxMemoryMB
# Extstore file sizes, written as a user might: the volume adds its own overheads.
EXTSTORE_SIZES = ("256Mi", "960Mi", "1000Mi", "1023Mi", "1Gi", "1025Mi", "1500M", "2G", "1e9",
                  "10Gi", "100Gi", "1T", "1Ti")
# User resources in many spellings, (cpu, memory), each as request and limit.
USER_RESOURCES = (("1000m", "1024Mi"), ("0.5", "0.5Gi"), ("1.5", "1536Mi"), ("100m", "1e9"),
                  ("2000m", "1G"), ("1", "1000M"), ("0.1", "134217728"), ("250m", "123456789"),
                  ("1e3", "1.5Gi"), ("1500m", "262144Ki"), ("3", "1000000Ki"), ("0.25", "0.25Gi"))


def quantity_crs():
    docs = []

    def cr(name, spec):
        docs.append({"apiVersion": "memcached.c5c3.io/v1beta1", "kind": "Memcached",
                     "metadata": {"name": name}, "spec": spec})

    for gib in QUANTITY_GIB:
        top = 1024 * gib
        for mb in range(top - QUANTITY_WIDTH, min(top + 2, MAX_MEMORY_MB + 1)):
            cr(f"q-mem-{mb}", {"replicas": 1, "memcached": {"maxMemoryMB": mb}})
    for n, size in enumerate(EXTSTORE_SIZES):
        for volume in ("Ephemeral", "EmptyDir"):
            cr(f"q-ext-{volume.lower()}-{n}",
               {"replicas": 1, "memcached": {"maxMemoryMB": 962},
                "extstore": {"enabled": True, "size": size, "volume": volume}})
    for n, (cpu, memory) in enumerate(USER_RESOURCES):
        both = {"cpu": cpu, "memory": memory}
        cr(f"q-res-{n}", {"replicas": 1, "resources": {"requests": both, "limits": both}})
    return docs


def cmd_quantity_crs(out):
    docs = quantity_crs()
    # JSON documents: a YAML writer leaves `1e9` unquoted, which a YAML 1.2 reader takes as a number.
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n---\n".join(json.dumps(d) for d in docs) + "\n")
    print(len(docs))
    return 0


def cmd_quantity_list(rendered, out):
    items = []
    for child in load_children(rendered, False):
        if child.get("kind") in ("Deployment", "StatefulSet"):
            child.get("metadata", {}).pop("namespace", None)
            items.append(child)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    print(len(items))
    return 0 if items else 1


def cmd_quantity_compare(listed, live):
    with open(listed, encoding="utf-8") as f:
        want = json.load(f)["items"]
    # kubectl prints one object, a List, or (for the items of a List file) the objects one
    # after the other.
    with open(live, encoding="utf-8") as f:
        text = f.read()
    got, at, decoder = [], 0, json.JSONDecoder()
    while text[at:].strip():
        obj, end = decoder.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
        got.extend(obj["items"] if obj.get("kind") == "List" else [obj])
        at = end
    by_key = {(o.get("kind"), o["metadata"]["name"]): o for o in got}
    bad = 0
    for w in want:
        key = (w.get("kind"), w["metadata"]["name"])
        if key not in by_key:
            print(f"{key[0]}/{key[1]}: not in the API server's answer")
            bad += 1
            continue
        out = []
        diff_subset(w, by_key[key], "", out)
        for path, a, b in out:
            print(f"{key[0]}/{key[1]}{path}: rendered {a!r}, stored {b!r}")
        bad += bool(out)
    print(f"{len(want) - bad} of {len(want)} workloads come back unchanged")
    return 1 if bad else 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "children" and len(args) in (3, 4):
        return cmd_children(args[0], args[1], args[2], as_json=args[3:] == ["--json"])
    if cmd == "same-children" and len(args) == 2:
        return cmd_same_children(*args)
    if cmd == "subset" and len(args) == 2:
        return cmd_subset(*args)
    if cmd == "replay-expectation" and len(args) == 1:
        return cmd_replay_expectation(args[0])
    if cmd == "crd-workaround" and len(args) == 2:
        return cmd_crd_workaround(*args)
    if cmd == "servicemonitor-schema" and len(args) == 2:
        return cmd_servicemonitor_schema(*args)
    if cmd == "quantity-crs" and len(args) == 1:
        return cmd_quantity_crs(args[0])
    if cmd == "quantity-list" and len(args) == 2:
        return cmd_quantity_list(*args)
    if cmd == "quantity-compare" and len(args) == 2:
        return cmd_quantity_compare(*args)
    if cmd == "validate-jsonschema" and len(args) >= 2:
        return cmd_validate_jsonschema(args[0], args[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
