#!/usr/bin/env bash
# Prints install.yaml: the hook (deploy/) and the CompositeController (metacontroller/), each as
# `kustomize build` renders it, in that order, separated by `---`. The CRD is not in it: it ships
# apart as crd.yaml (deploy/crd/), so that `kubectl delete -f install.yaml` removes the hook and
# keeps every Memcached. Metacontroller itself is not in it either.
#
#   bash release/install-yaml.sh KUSTOMIZE-COMMAND...    e.g. kustomize build | kubectl kustomize
#
# release/build.sh runs it with the pinned kustomize; tests/e2e/run.sh with `kubectl kustomize`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
(($#)) || { echo "usage: $0 KUSTOMIZE-COMMAND..." >&2; exit 2; }
sep=""
for d in deploy metacontroller; do
    out=$("$@" "$ROOT/$d") || { echo "$* $d failed" >&2; exit 1; }
    printf '%s%s\n' "$sep" "$out"
    sep=$'---\n'
done
