#!/usr/bin/env python3
"""API requests between two scrapes of kube-apiserver's /metrics, per verb and resource.

usage: api_requests.py BEFORE.txt AFTER.txt N

Reads `apiserver_request_total` from both scrapes (`kubectl get --raw /metrics`), sums the
difference per (verb, resource, subresource) over codes and scopes, and prints each row with its
count per parent (N parents created between the scrapes), writes first. The API server counts
every client alike: rows such as `deployments/status` (the Deployment controller) or
`replicasets` are kube-controller-manager's work for the same parents, not Metacontroller's.
"""

import re
import sys
from collections import Counter

LINE = re.compile(r'^apiserver_request_total\{(?P<labels>[^}]*)\}\s+(?P<value>[0-9.e+]+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
WRITES = {"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}


def counts(path, succeeded_only=False):
    """(verb, resource[/subresource]) -> requests; with succeeded_only, those answered 2xx/3xx."""
    out = Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            labels = dict(LABEL.findall(m.group("labels")))
            if succeeded_only and labels.get("code", "0")[:1] in "45":
                continue
            resource = labels.get("resource", "")
            if labels.get("subresource"):
                resource += "/" + labels["subresource"]
            out[(labels.get("verb", ""), resource)] += float(m.group("value"))
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip())
    before, after, n = counts(sys.argv[1]), counts(sys.argv[2]), int(sys.argv[3])
    rows = [(verb, res, after[(verb, res)] - before.get((verb, res), 0)) for verb, res in after]
    rows = [r for r in rows if r[2] > 0]
    rows.sort(key=lambda r: (r[0] not in WRITES, r[1], r[0]))
    writes = sum(c for v, _, c in rows if v in WRITES)
    print(f"{'verb':<10} {'resource':<34} {'requests':>9} {'per parent':>11}")
    for verb, res, c in rows:
        print(f"{verb:<10} {res:<34} {int(c):>9} {c / n:>11.2f}")
    print(f"{'writes':<45} {int(writes):>9} {writes / n:>11.2f}")


if __name__ == "__main__":
    main()
