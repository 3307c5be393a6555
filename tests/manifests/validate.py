"""Validate Kubernetes objects for tests/manifests/check.sh.

Every object in FILES is validated with kubernetes-validate in strict mode (unknown fields are
errors) against the OpenAPI schemas of the given Kubernetes version. Kinds that have no built-in
schema are listed in SKIPPED_KINDS with the reason and reported as skipped; any other kind
without a schema is an error, so a typo in apiVersion or kind cannot slip through as a warning.

With --crd and --samples, every sample Memcached is also validated against the openAPIV3Schema
of its version in the CRD, with unknown fields turned into errors (the API server would prune
them silently). CEL rules (x-kubernetes-validations) are not evaluated here; consistency.py
checks the samples against those rules.
"""

import argparse
import copy
import pathlib
import sys

import jsonschema
import yaml
from kubernetes_validate import utils as kv

# (group, kind) -> why kubernetes-validate cannot check it
SKIPPED_KINDS = {
    ("metacontroller.k8s.io", "CompositeController"):
        "Metacontroller CRD, no built-in schema (consistency.py checks its fields)",
    ("monitoring.coreos.com", "ServiceMonitor"):
        "Prometheus Operator CRD, no built-in schema",
    ("memcached.c5c3.io", "Memcached"):
        "our CRD, validated against deploy/crd.yaml instead",
}


def group_of(api_version):
    return api_version.split("/")[0] if "/" in api_version else ""


def load_objects(path):
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def name_of(obj):
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


def validate_builtin(path, objects, version):
    errors = 0
    if not objects:
        print(f"ERROR {path}: no objects")
        return 1
    for obj in objects:
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        skip = SKIPPED_KINDS.get((group_of(api_version), kind))
        if skip:
            print(f"SKIP  {path.name}: {name_of(obj)} ({api_version}): {skip}")
            continue
        try:
            kv.validate(obj, version, strict=True)
            print(f"ok    {path.name}: {name_of(obj)} ({api_version})")
        except kv.ValidationError as e:
            where = ".".join(str(p) for p in e.path) or "(root)"
            print(f"ERROR {path.name}: {name_of(obj)}: {where}: {e.message}")
            errors += 1
        except kv.SchemaNotFoundError:
            print(f"ERROR {path.name}: {name_of(obj)}: no schema for {api_version} {kind} "
                  f"in Kubernetes {version}, and the kind is not in SKIPPED_KINDS")
            errors += 1
    return errors


def closed(schema):
    """Copy of a structural schema in which unknown object fields are errors."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    # The API server always accepts these at the root; generated schemas often leave them out.
    props = schema.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props.setdefault("metadata", {"type": "object"})
    return schema


def validate_samples(crd_path, samples_dir):
    crd = load_objects(crd_path)
    if len(crd) != 1 or crd[0].get("kind") != "CustomResourceDefinition":
        print(f"ERROR {crd_path}: expected exactly one CustomResourceDefinition")
        return 1
    crd = crd[0]
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"]
    schemas = {f"{group}/{v['name']}": closed(v["schema"]["openAPIV3Schema"])
               for v in crd["spec"]["versions"]}
    errors = 0
    samples = sorted(pathlib.Path(samples_dir).glob("*.yaml"))
    if not samples:
        print(f"ERROR {samples_dir}: no samples")
        return 1
    for path in samples:
        for obj in load_objects(path):
            if obj.get("kind") != kind or obj.get("apiVersion") not in schemas:
                print(f"ERROR {path.name}: {name_of(obj)} ({obj.get('apiVersion')}) is not a {kind} "
                      f"of a version in {crd_path.name}")
                errors += 1
                continue
            validator = jsonschema.Draft7Validator(schemas[obj["apiVersion"]])
            found = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.path])
            for e in found:
                where = ".".join(str(p) for p in e.path) or "(root)"
                print(f"ERROR {path.name}: {name_of(obj)}: {where}: {e.message}")
            errors += len(found)
            if not found:
                print(f"ok    {path.name}: {name_of(obj)} ({obj['apiVersion']}) against {crd_path.name}")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubernetes-version", required=True)
    parser.add_argument("--crd", type=pathlib.Path)
    parser.add_argument("--samples", type=pathlib.Path)
    parser.add_argument("files", nargs="*", type=pathlib.Path)
    args = parser.parse_args()

    errors = 0
    for path in args.files:
        errors += validate_builtin(path, load_objects(path), args.kubernetes_version)
    if args.samples:
        if not args.crd or not args.crd.exists():
            print(f"ERROR cannot validate samples: CRD {args.crd} not found")
            errors += 1
        else:
            errors += validate_samples(args.crd, args.samples)
    print(f"validate: {errors} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
