"""Does the chart install what kustomize installs?

  python3 compare.py --name default HELM.yaml KUSTOMIZE.yaml [KUSTOMIZE.yaml ...]

Both sides are multi-document YAML: `helm template --include-crds` output on the left, one or
more `kustomize build` outputs on the right. Objects are matched by (apiVersion, kind,
namespace, name) and must be equal after removing what is Helm's by design:

  - the labels Helm adds (app.kubernetes.io/instance, app.kubernetes.io/managed-by,
    app.kubernetes.io/version, helm.sh/chart), on the object and on its pod template
  - the objects of `helm test` (annotation helm.sh/hook: test): created only while the test
    runs, they have no kustomize counterpart
  - the Namespace object of deploy/hook/: with Helm the release namespace is created by
    `helm install --create-namespace` (a chart cannot create the namespace its own release
    is stored in); its Pod Security labels are set with `kubectl label` (docs/install.md)

Lists whose items all have a distinct `name` (containers, env, ports, volumes, volumeMounts) are
compared as sets keyed by name: kustomize's strategic merge puts patched-in items first, the
chart appends them, and the order carries no meaning there. Anything else (a missing or extra
object, a different field, any other list in another order) is printed as a difference with its
path, and the exit status is 1.
"""

import argparse
import sys

import yaml

HELM_LABELS = {"app.kubernetes.io/instance", "app.kubernetes.io/managed-by",
               "app.kubernetes.io/version", "helm.sh/chart"}
ONLY_IN_KUSTOMIZE_OK = {("v1", "Namespace")}


def load(paths):
    objs = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if not doc:
                    continue
                md = doc.get("metadata") or {}
                if (md.get("annotations") or {}).get("helm.sh/hook") == "test":
                    continue
                key = (doc.get("apiVersion"), doc.get("kind"), md.get("namespace", ""), md.get("name"))
                if key in objs:
                    raise SystemExit(f"{path}: {key} appears twice")
                objs[key] = doc
    return objs


def strip_helm(obj):
    def clean(md):
        labels = md.get("labels")
        if labels:
            for k in HELM_LABELS:
                labels.pop(k, None)
            if not labels:
                md.pop("labels")
    clean(obj.setdefault("metadata", {}))
    template = (obj.get("spec") or {}).get("template")
    if isinstance(template, dict):
        clean(template.setdefault("metadata", {}))
    return obj


def named(items):
    names = [i.get("name") for i in items if isinstance(i, dict)]
    return bool(items) and len(names) == len(items) and all(isinstance(n, str) for n in names) \
        and len(set(names)) == len(names)


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append(f"{path}.{k}: only in kustomize: {b[k]!r}")
            elif k not in b:
                out.append(f"{path}.{k}: only in helm: {a[k]!r}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if named(a) and named(b):
            diff({i["name"]: i for i in a}, {i["name"]: i for i in b}, path, out)
            return
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items in helm, {len(b)} in kustomize")
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: helm {a!r} != kustomize {b!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("helm")
    ap.add_argument("kustomize", nargs="+")
    args = ap.parse_args()
    helm = {k: strip_helm(v) for k, v in load([args.helm]).items()}
    kust = {k: strip_helm(v) for k, v in load(args.kustomize).items()}
    problems = []
    for key in sorted(set(helm) | set(kust), key=str):
        label = f"{key[1]} {key[2] + '/' if key[2] else ''}{key[3]}"
        if key not in helm:
            if (key[0], key[1]) in ONLY_IN_KUSTOMIZE_OK:
                print(f"  {label}: kustomize only (helm install --create-namespace)")
                continue
            problems.append(f"{label}: missing from the chart")
            continue
        if key not in kust:
            problems.append(f"{label}: only in the chart")
            continue
        out = []
        diff(helm[key], kust[key], "", out)
        if out:
            problems.extend(f"{label}: {line}" for line in out)
        else:
            print(f"  {label}: same")
    for p in problems:
        print(f"DIFF {args.name}: {p}")
    print(f"{args.name}: {len(helm)} chart objects, {len(kust)} kustomize objects, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
