"""Validate Kubernetes objects for tests/manifests/check.sh.

Every object in FILES is validated with kubernetes-validate in strict mode (unknown fields are
errors) against the OpenAPI schemas of the given Kubernetes version. Kinds that have no built-in
schema are listed in SKIPPED_KINDS with the reason and reported as skipped; any other kind
without a schema is an error, so a typo in apiVersion or kind cannot slip through as a warning.

Custom resources whose CRD is given with --crd (a file or a directory of YAML files; may be
repeated) are validated against the openAPIV3Schema of their version in that CRD instead, with
unknown fields turned into errors (the API server would prune them silently). That covers the
sample Memcacheds (--samples, against deploy/crd/crd.yaml) and, when Metacontroller's own CRDs are at
hand, the CompositeController. CEL rules (x-kubernetes-validations) are not evaluated here;
consistency.py checks the samples against those rules.
"""

import argparse
import copy
import pathlib
import sys

import jsonschema
import yaml
from kubernetes_validate import utils as kv

# (group, kind) -> why it is skipped when no --crd covers it (kubernetes-validate has no schema)
SKIPPED_KINDS = {
    ("metacontroller.k8s.io", "CompositeController"):
        "Metacontroller CRD not at hand (consistency.py checks its field names)",
    ("monitoring.coreos.com", "ServiceMonitor"):
        "Prometheus Operator CRD, no schema at hand",
    ("monitoring.coreos.com", "PrometheusRule"):
        "Prometheus Operator CRD, no schema at hand",
    ("memcached.c5c3.io", "Memcached"):
        "no --crd given for it",
}


def group_of(api_version):
    return api_version.split("/")[0] if "/" in api_version else ""


def load_objects(path):
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def name_of(obj):
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


def validate_objects(path, objects, version, crd_schemas):
    errors = 0
    if not objects:
        print(f"ERROR {path}: no objects")
        return 1
    for obj in objects:
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        if (api_version, kind) in crd_schemas:
            errors += validate_custom(path, obj, crd_schemas[(api_version, kind)])
            continue
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


def validate_custom(path, obj, crd_schema):
    source, schema = crd_schema
    validator = jsonschema.Draft7Validator(schema)
    found = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.path])
    for e in found:
        where = ".".join(str(p) for p in e.path) or "(root)"
        print(f"ERROR {path.name}: {name_of(obj)}: {where}: {e.message}")
    if not found:
        print(f"ok    {path.name}: {name_of(obj)} ({obj['apiVersion']}) against {source}")
    return len(found)


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
    # metadata is ObjectMeta whatever the schema declares of it (a CRD may only restrict its name).
    props["metadata"] = {"type": "object"}
    return schema


def load_crds(paths):
    """(apiVersion, kind) -> (source file name, closed schema) for every CRD version."""
    schemas = {}
    for path in paths:
        files = sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
        for file in files:
            for doc in load_objects(file):
                if doc.get("kind") != "CustomResourceDefinition":
                    continue
                spec = doc["spec"]
                for version in spec.get("versions", []):
                    schema = (version.get("schema") or {}).get("openAPIV3Schema")
                    if schema:
                        key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                        schemas[key] = (file.name, closed(schema))
    return schemas


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubernetes-version", required=True)
    parser.add_argument("--crd", type=pathlib.Path, action="append", default=[],
                        help="a CRD file or a directory of them (repeatable)")
    parser.add_argument("--samples", type=pathlib.Path,
                        help="a directory of custom resources that must all validate against a --crd")
    parser.add_argument("files", nargs="*", type=pathlib.Path)
    args = parser.parse_args()

    errors = 0
    for crd in args.crd:
        if not crd.exists():
            print(f"ERROR CRD {crd} not found")
            errors += 1
    crd_schemas = load_crds([c for c in args.crd if c.exists()])
    for path in args.files:
        errors += validate_objects(path, load_objects(path), args.kubernetes_version, crd_schemas)
    if args.samples:
        samples = sorted(args.samples.glob("*.yaml"))
        if not samples:
            print(f"ERROR {args.samples}: no samples")
            errors += 1
        for path in samples:
            for obj in load_objects(path):
                if (obj.get("apiVersion"), obj.get("kind")) not in crd_schemas:
                    print(f"ERROR {path.name}: {name_of(obj)} ({obj.get('apiVersion')}) is not covered "
                          f"by any --crd")
                    errors += 1
                else:
                    errors += validate_custom(path, obj, crd_schemas[(obj["apiVersion"], obj["kind"])])
    print(f"validate: {errors} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
