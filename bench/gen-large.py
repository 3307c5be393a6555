#!/usr/bin/env python3
"""Writes a large sync request by padding a realistic one with fields Kubernetes really sends.

usage: gen-large.py [--size BYTES] [IN.json] OUT.json

From IN (default tests/fixtures/sync/steady-state.json) it adds, until OUT is at least BYTES
long (default 200000):
- a `kubectl.kubernetes.io/last-applied-configuration` annotation on the parent (what
  `kubectl apply` leaves),
- `managedFields` entries on the parent and on every observed child, one per field manager
  (kubectl, controllers, GitOps tools, ...), each with a FieldsV1 tree built from the object's
  own fields, as the API server writes them,
- Deployment status conditions of past rollouts.
None of these is read by the hook, so the answer equals the answer to IN; only the bytes the
hook has to get through grow. OUT is compact, as Metacontroller sends it (bench/compact.py).
Deterministic: the same arguments give the same file.
"""

import argparse
import json
import os

from compact import go_json

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_IN = os.path.join(HERE, "..", "tests", "fixtures", "sync", "steady-state.json")

MANAGERS = [
    "kubectl-client-side-apply", "kubectl", "kube-controller-manager", "metacontroller",
    "argocd-controller", "helm", "flux-kustomize-controller", "kyverno", "istio-sidecar-injector",
    "vpa-recommender", "cluster-autoscaler", "gatekeeper", "external-secrets", "keda-operator",
]


def fields_v1(obj):
    """The FieldsV1 tree of an object: `f:` for map keys, `k:`/`v:` for list items."""
    if isinstance(obj, dict):
        out = {".": {}}
        for key, value in obj.items():
            if key in ("managedFields", "status", "resourceVersion", "uid", "creationTimestamp"):
                continue
            out["f:" + key] = fields_v1(value)
        return out
    if isinstance(obj, list):
        out = {}
        for i, item in enumerate(obj):
            if isinstance(item, dict) and "name" in item:
                key = "k:" + json.dumps({"name": item["name"]}, separators=(",", ":"))
            else:
                key = "v:" + json.dumps(item, separators=(",", ":"), sort_keys=True)[:60] + str(i)
            out[key] = fields_v1(item)
        return out
    return {}


def entry(obj, n):
    manager = MANAGERS[n % len(MANAGERS)]
    e = {
        "apiVersion": obj.get("apiVersion", "v1"),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(obj),
        "manager": f"{manager}" if n < len(MANAGERS) else f"{manager}-{n // len(MANAGERS)}",
        "operation": "Apply" if n % 3 == 0 else "Update",
        "time": f"2026-11-{1 + n % 21:02d}T{n % 24:02d}:{n % 60:02d}:00Z",
    }
    if n % 4 == 3:
        e["subresource"] = "status"
    return e


def objects(req):
    yield req["parent"]
    for group in (req.get("children") or {}).values():
        yield from (group or {}).values()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=200_000)
    ap.add_argument("input", nargs="?", default=DEFAULT_IN)
    ap.add_argument("output")
    args = ap.parse_args()
    with open(args.input) as f:
        req = json.load(f)

    parent = req["parent"]
    applied = {k: parent[k] for k in ("apiVersion", "kind", "spec")}
    applied["metadata"] = {"name": parent["metadata"]["name"],
                           "namespace": parent["metadata"].get("namespace"),
                           "annotations": {}}
    anns = parent["metadata"].setdefault("annotations", {})
    anns["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(applied) + "\n"

    def size():
        return len(go_json(req).encode())

    n = 0
    while size() < args.size:
        for obj in objects(req):
            obj["metadata"].setdefault("managedFields", []).append(entry(obj, n))
            if obj.get("kind") == "Deployment":
                obj.setdefault("status", {}).setdefault("conditions", []).append({
                    "lastTransitionTime": f"2026-10-{1 + n % 28:02d}T00:00:00Z",
                    "lastUpdateTime": f"2026-10-{1 + n % 28:02d}T00:00:00Z",
                    "message": f'ReplicaSet "{obj["metadata"]["name"]}-{n:08x}" has successfully progressed.',
                    "reason": "NewReplicaSetAvailable", "status": "True",
                    "type": f"Rollout{n}"})
            n += 1
            if size() >= args.size:
                break
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(go_json(req))


if __name__ == "__main__":
    main()
