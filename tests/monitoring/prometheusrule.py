#!/usr/bin/env python3
"""deploy/monitoring/prometheusrule.yaml is alerts.yaml's groups in a PrometheusRule; this
keeps the two equal and checks what the monitoring kustomizations build.

  prometheusrule.py --write            regenerate deploy/monitoring/prometheusrule.yaml
  prometheusrule.py --check            fail if it differs from what --write would write
  prometheusrule.py --built DIR        also check DIR/monitoring.yaml (kustomize build
                                       deploy/monitoring) and DIR/monitoring-runbooks.yaml
                                       (deploy/overlays/monitoring-runbooks)
"""
import argparse
import json
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
PLACEHOLDER = "https://git.example.com/memcached-hook/docs/runbooks.md"
HEADER = """\
# Generated from alerts.yaml by tests/monitoring/prometheusrule.py --write (the manifests phase
# fails when the two differ): the same rule groups as a Prometheus Operator PrometheusRule, for
# `kubectl apply -k deploy/monitoring/`. Edit alerts.yaml, then regenerate. The runbook_url
# annotations point at a placeholder; deploy/overlays/monitoring-runbooks/ shows how to point them
# at your copy of docs/runbooks.md with a kustomize replacement.
"""


class Dumper(yaml.SafeDumper):
    """Multi-line strings (PromQL expressions, descriptions) as literal blocks, as alerts.yaml has them."""


Dumper.add_representer(str, lambda d, v: d.represent_scalar(
    "tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))


def groups():
    return yaml.safe_load((MONITORING / "alerts.yaml").read_text())["groups"]


def rendered():
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "memcached-hook",
                     "labels": {"app.kubernetes.io/name": "memcached-hook",
                                "app.kubernetes.io/component": "monitoring"}},
        "spec": {"groups": groups()},
    }
    return HEADER + yaml.dump(rule, Dumper=Dumper, sort_keys=False, width=120)


def runbook_urls(rule_groups):
    return [r["annotations"]["runbook_url"] for g in rule_groups for r in g["rules"]
            if "runbook_url" in r.get("annotations", {})]


def check_built(built, failures):
    objs = [o for o in yaml.safe_load_all((built / "monitoring.yaml").read_text()) if o]
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
    rules = by_kind.get("PrometheusRule", [])
    if len(rules) != 1 or rules[0]["spec"]["groups"] != groups():
        failures.append("deploy/monitoring: one PrometheusRule holding alerts.yaml's groups")
    maps = {m["metadata"]["name"]: m for m in by_kind.get("ConfigMap", [])}
    dash = maps.get("memcached-hook-dashboard")
    want = json.loads((MONITORING / "dashboard.json").read_text())
    if (not dash or dash["metadata"].get("labels", {}).get("grafana_dashboard") != "1"
            or json.loads(dash["data"].get("memcached-hook.json", "null")) != want):
        failures.append("deploy/monitoring: ConfigMap memcached-hook-dashboard with dashboard.json, "
                        "labelled grafana_dashboard=1")
    ksm = maps.get("memcached-hook-kube-state-metrics")
    if not ksm or ksm["data"].get("config.yaml") != (MONITORING / "kube-state-metrics-config.yaml").read_text():
        failures.append("deploy/monitoring: ConfigMap memcached-hook-kube-state-metrics with "
                        "kube-state-metrics-config.yaml")
    over = [o for o in yaml.safe_load_all((built / "monitoring-runbooks.yaml").read_text()) if o]
    local = yaml.safe_load((ROOT / "deploy/overlays/monitoring-runbooks/runbooks.yaml").read_text())
    base = local["data"]["url"]
    rule = next((o for o in over if o["kind"] == "PrometheusRule"), None)
    got = runbook_urls(rule["spec"]["groups"]) if rule else []
    placeheld = runbook_urls(groups())
    want_urls = [base + u[len(PLACEHOLDER):] for u in placeheld]
    if not got or got != want_urls:
        failures.append(f"monitoring-runbooks: every runbook_url is {base}#<alert> "
                        f"(got {got[:2]}..., want {want_urls[:2]}...)")
    if any(o["kind"] == "ConfigMap" and o["metadata"]["name"] == local["metadata"]["name"] for o in over):
        failures.append("monitoring-runbooks: the local runbooks ConfigMap is not in the output")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true")
    p.add_argument("--check", action="store_true")
    p.add_argument("--built", type=pathlib.Path)
    a = p.parse_args()
    target = MONITORING / "prometheusrule.yaml"
    if a.write:
        target.write_text(rendered())
        print(f"wrote {target.relative_to(ROOT)}")
        return 0
    failures = []
    if target.read_text() != rendered():
        failures.append("deploy/monitoring/prometheusrule.yaml differs from alerts.yaml: run "
                        "tests/monitoring/prometheusrule.py --write")
    if a.built:
        check_built(a.built, failures)
    for f in failures:
        print(f"FAIL {f}")
    print(f"monitoring kustomization: {'ok' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
