"""Static checks of deploy/monitoring/ for tests/monitoring/check.sh.

  ksm         the custom-resource-state config against kube-state-metrics' documented schema
              (docs/metrics/extend/customresourcestate-metrics.md and the Go types behind it,
              v2.x): known keys only, one sub-config matching each metric's type, paths as lists
              of strings, Prometheus-valid metric and label names, no duplicate metric names; and
              every path names a field the Memcached CRD has (a renamed field would otherwise
              just stop producing series)
  coverage    every alert of alerts.yaml has a promtool unit test that expects it to fire, and
              one that expects it not to
  alerts      every alert has a severity label and a runbook_url annotation whose anchor is a
              section of docs/runbooks.md; the cache alerts read only series that both the
              Prometheus memcached exporter and the hook's stats exporter (src/pod/exporter/stats.rs,
              used under SASL) serve, the proxy alerts only the proxy's series of the stats exporter
  dashboard   every query of dashboard.json (panels and template variables) names only series
              that the config produces, the rules record, ALERTS, or series the rules themselves
              already read (Metacontroller's); the queries are written out (Grafana variables
              replaced) as a rule file, so that promtool parses each of them
  chart       the chart's copies of the monitoring files are byte-identical to deploy/monitoring/

Prints one line per finding; exits 1 if there is any.
"""

import argparse
import json
import pathlib
import re
import sys

import yaml

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

# The documented schema, key by key (None: a scalar or free-form map; "path": list of strings).
KSM_RESOURCE_KEYS = {"groupVersionKind", "labelsFromPath", "commonLabels", "metricNamePrefix",
                     "resourcePlural", "metrics", "errorLogV"}
KSM_GVK_KEYS = {"group", "version", "kind"}
KSM_METRIC_KEYS = {"name", "help", "each", "labelsFromPath", "commonLabels", "errorLogV"}
KSM_EACH_KEYS = {"type", "gauge", "stateSet", "info"}
KSM_TYPES = {"gauge": "gauge", "stateset": "stateSet", "info": "info"}
KSM_SUB_KEYS = {
    "gauge": {"path", "valueFrom", "labelsFromPath", "labelFromKey", "nilIsZero"},
    "info": {"path", "labelsFromPath", "labelFromKey"},
    "stateSet": {"path", "valueFrom", "labelsFromPath", "list", "labelName"},
}
# Fields the config reads that the CRD may not have yet, with the reason. spec.workload comes with
# the StatefulSet mode; until the CRD has it the API server prunes it and the label is absent,
# which the recording rule memcached:instance:info reads as the default, Deployment.
KSM_PATHS_NOT_IN_CRD = {("spec", "workload"): "StatefulSet mode (absent means Deployment)"}

# Series of the pods' metrics sidecar the rules may read: served under these names by the
# Prometheus memcached exporter and by `memcached-hook stats-exporter` (src/pod/exporter/stats.rs, whose
# unit test checks the names).
EXPORTER_SERIES = {
    "memcached_up", "memcached_current_connections", "memcached_max_connections",
    "memcached_items_evicted_total", "memcached_item_no_memory_total", "memcached_commands_total",
    "memcached_current_bytes", "memcached_limit_bytes", "memcached_current_items",
    "memcached_connections_total", "memcached_connections_rejected_total",
    "memcached_connections_listener_disabled_total",
    "memcached_extstore_bytes_used", "memcached_extstore_bytes_limit",
    "memcached_extstore_bytes_written_total", "memcached_extstore_bytes_read_total",
    "memcached_extstore_objects_used", "memcached_extstore_objects_written_total",
    "memcached_extstore_objects_evicted_total",
}
# Series of the proxy pods' metrics sidecar (spec.proxy): always the hook's stats exporter, which
# serves memcached's proxy counters under these names (src/pod/exporter/stats.rs).
PROXY_SERIES = {
    "memcached_proxy_conn_requests_total", "memcached_proxy_conn_errors_total",
    "memcached_proxy_conn_oom_total", "memcached_proxy_req_active",
    "memcached_proxy_config_reloads_total", "memcached_proxy_config_reload_fails_total",
    "memcached_proxy_backend_total", "memcached_proxy_backend_marked_bad_total",
    "memcached_proxy_backend_failed", "memcached_proxy_request_failed_depth_total",
}
RUNBOOK_PREFIX = "https://git.example.com/memcached-hook/docs/runbooks.md#"
SEVERITIES = {"critical", "warning", "info"}

PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                   "group_right", "offset", "bool", "inf", "nan", "atan2", "start", "end"}


class Findings:
    def __init__(self):
        self.items = []

    def add(self, where, message):
        self.items.append(f"{where}: {message}")


def is_path(value):
    return isinstance(value, list) and all(isinstance(p, str) for p in value)


def crd_schema(crd_path, version):
    crd = yaml.safe_load(crd_path.read_text(encoding="utf-8"))
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return v["schema"]["openAPIV3Schema"]
    return None


def schema_has(schema, path):
    """True when PATH (metadata.* always allowed) names a field of the CRD schema. Segments below
    an array step into its items; "[key=value]" selectors and numeric indexes select items."""
    if path and path[0] == "metadata":
        return True
    node = schema
    for seg in path:
        if node.get("type") == "array":
            node = node.get("items", {})
            if seg.isdigit() or (seg.startswith("[") and seg.endswith("]")):
                continue
        props = node.get("properties")
        if props is None:
            return node.get("x-kubernetes-preserve-unknown-fields", False)
        if seg not in props:
            return False
        node = props[seg]
    return True


def check_labels(f, where, labels, schema, base):
    if labels is None:
        return
    if not isinstance(labels, dict):
        f.add(where, "labelsFromPath must be a map of label name to path")
        return
    for name, path in labels.items():
        if not LABEL_NAME.match(name.rstrip("*")) and not name.endswith("*"):
            f.add(where, f"label name {name!r} is not a valid Prometheus label name")
        if not is_path(path):
            f.add(where, f"labelsFromPath.{name} must be a list of strings")
            continue
        full = tuple(base + path)
        if schema is not None and not schema_has(schema, list(full)) and full not in KSM_PATHS_NOT_IN_CRD:
            f.add(where, f"labelsFromPath.{name}: {'.'.join(full)} is not a field of the CRD")


def check_ksm(f, config_path, crd_path):
    """Returns the full names of the series the config produces."""
    where = config_path.name
    doc = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    produced = set()
    if set(doc) - {"kind", "spec"}:
        f.add(where, f"unknown top-level keys {sorted(set(doc) - {'kind', 'spec'})}")
    if doc.get("kind") != "CustomResourceStateMetrics":
        f.add(where, "kind must be CustomResourceStateMetrics")
    resources = (doc.get("spec") or {}).get("resources")
    if set(doc.get("spec") or {}) - {"resources"}:
        f.add(where, "spec has keys other than resources")
    if not isinstance(resources, list) or not resources:
        f.add(where, "spec.resources must be a non-empty list")
        return produced
    for i, res in enumerate(resources):
        rw = f"{where}: spec.resources[{i}]"
        for key in set(res) - KSM_RESOURCE_KEYS:
            f.add(rw, f"unknown key {key!r}")
        gvk = res.get("groupVersionKind") or {}
        if set(gvk) != KSM_GVK_KEYS or not all(isinstance(v, str) and v for v in gvk.values()):
            f.add(rw, "groupVersionKind needs group, version and kind (strings)")
        schema = None
        if gvk.get("group") == "memcached.c5c3.io" and gvk.get("kind") == "Memcached":
            schema = crd_schema(crd_path, gvk.get("version"))
            if schema is None:
                f.add(rw, f"the CRD has no version {gvk.get('version')!r}")
        prefix = res.get("metricNamePrefix")
        if prefix is None:
            prefix = "kube_" + "_".join(
                re.sub(r"[^a-zA-Z0-9_]", "_", gvk.get(k, "")).lower() for k in ("group", "version", "kind"))
        if prefix and not METRIC_NAME.match(prefix):
            f.add(rw, f"metricNamePrefix {prefix!r} is not a valid metric name")
        check_labels(f, rw, res.get("labelsFromPath"), schema, [])
        for name in res.get("commonLabels") or {}:
            if not LABEL_NAME.match(name):
                f.add(rw, f"commonLabels: {name!r} is not a valid label name")
        metrics = res.get("metrics")
        if not isinstance(metrics, list) or not metrics:
            f.add(rw, "metrics must be a non-empty list")
            continue
        names = set()
        for j, m in enumerate(metrics):
            mw = f"{rw}.metrics[{j}] ({m.get('name')})"
            for key in set(m) - KSM_METRIC_KEYS:
                f.add(mw, f"unknown key {key!r}")
            name = m.get("name")
            full = f"{prefix}_{name}" if prefix else str(name)
            if not isinstance(name, str) or not METRIC_NAME.match(full):
                f.add(mw, f"{full!r} is not a valid metric name")
            if name in names:
                f.add(mw, f"duplicate metric name {name!r}")
            names.add(name)
            if not m.get("help"):
                f.add(mw, "no help text")
            check_labels(f, mw, m.get("labelsFromPath"), schema, [])
            each = m.get("each") or {}
            for key in set(each) - KSM_EACH_KEYS:
                f.add(mw, f"each: unknown key {key!r}")
            sub_key = KSM_TYPES.get(str(each.get("type", "")).lower())
            if sub_key is None:
                f.add(mw, f"each.type {each.get('type')!r} is not Gauge, StateSet or Info")
                continue
            others = {KSM_TYPES[t] for t in KSM_TYPES} - {sub_key}
            if any(k in each for k in others):
                f.add(mw, f"each has a sub-config for another type than {each.get('type')}")
            sub = each.get(sub_key)
            if sub_key != "info" and not isinstance(sub, dict):
                f.add(mw, f"each.{sub_key} is missing")
                continue
            sub = sub or {}
            for key in set(sub) - KSM_SUB_KEYS[sub_key]:
                f.add(mw, f"each.{sub_key}: unknown key {key!r}")
            base = sub.get("path", [])
            if not is_path(base):
                f.add(mw, f"each.{sub_key}.path must be a list of strings")
                continue
            if base and schema is not None and not schema_has(schema, base):
                f.add(mw, f"path {'.'.join(base)} is not a field of the CRD")
            for key in ("valueFrom",):
                if key in sub:
                    if not is_path(sub[key]):
                        f.add(mw, f"{key} must be a list of strings")
                    elif schema is not None and not schema_has(schema, base + sub[key]):
                        f.add(mw, f"{key} {'.'.join(base + sub[key])} is not a field of the CRD")
            check_labels(f, mw, sub.get("labelsFromPath"), schema, base)
            if sub_key == "stateSet" and (not sub.get("list") or not sub.get("labelName")):
                f.add(mw, "stateSet needs list and labelName")
            if "nilIsZero" in sub and not isinstance(sub["nilIsZero"], bool):
                f.add(mw, "nilIsZero must be a boolean")
            produced.add(full)
    return produced


def load_rules(rules_path):
    doc = yaml.safe_load(rules_path.read_text(encoding="utf-8"))
    alerts, records, exprs = [], [], []
    for g in doc["groups"]:
        for r in g["rules"]:
            if "alert" in r:
                alerts.append(r["alert"])
            if "record" in r:
                records.append(r["record"])
            exprs.append(r["expr"])
    return alerts, records, exprs


def series_in(expr):
    """Metric names a PromQL expression selects (a tokenizer, not a parser: promtool parses)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)                 # string literals
    e = re.sub(r"\{[^}]*\}", "", e)                                  # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                                 # ranges, subqueries
    e = re.sub(r"\boffset\s+-?(\d+[a-z]+)+", "", e)                   # offset modifiers
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    e = re.sub(r"\$\{?\w+\}?", "", e)                                # Grafana variables
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        rest = e[m.end():].lstrip()
        word = m.group(0)
        if rest.startswith("(") or word.lower() in PROMQL_KEYWORDS:
            continue
        if re.match(r"^\d", word):
            continue
        names.add(word)
    return names


def dashboard_queries(dash):
    out = []
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            out.append((f"panel {p.get('title')!r} ({t.get('refId')})", t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.match(r"^label_values\((.*),\s*\w+\)$", q)
            out.append((f"variable {v['name']}", m.group(1) if m else q))
    return out


def grafana_to_promql(expr):
    return (expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")
            .replace("${datasource}", "x").replace("$namespace", ".*").replace("$memcached", ".*"))


def check_dashboard(f, dash_path, allowed, out_rules):
    dash = json.loads(dash_path.read_text(encoding="utf-8"))
    queries = dashboard_queries(dash)
    if not queries:
        f.add(dash_path.name, "no queries")
    ids = [p.get("id") for p in dash.get("panels", [])]
    if len(ids) != len(set(ids)):
        f.add(dash_path.name, "duplicate panel ids")
    for where, expr in queries:
        for name in sorted(series_in(expr) - allowed):
            f.add(f"{dash_path.name}: {where}", f"series {name} is produced by neither the config nor the rules")
    rules = {"groups": [{"name": "dashboard-queries", "rules": [
        {"record": f"dashboard:query_{i}", "expr": grafana_to_promql(e)} for i, (_, e) in enumerate(queries)]}]}
    out_rules.write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    return len(queries)


def github_anchor(heading):
    """The anchor GitHub and most Markdown renderers give a heading."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def check_alert_metadata(f, rules_path, runbooks_path):
    doc = yaml.safe_load(rules_path.read_text(encoding="utf-8"))
    text = runbooks_path.read_text(encoding="utf-8") if runbooks_path.is_file() else ""
    anchors = {github_anchor(m.group(1)) for m in re.finditer(r"^#{2,3} (.+)$", text, re.M)}
    for g in doc["groups"]:
        for r in g["rules"]:
            if "alert" not in r:
                continue
            name = r["alert"]
            if r.get("labels", {}).get("severity") not in SEVERITIES:
                f.add("alerts.yaml", f"{name}: severity label missing or not one of {sorted(SEVERITIES)}")
            url = r.get("annotations", {}).get("runbook_url", "")
            if not url.startswith(RUNBOOK_PREFIX):
                f.add("alerts.yaml", f"{name}: runbook_url {url!r} does not start with {RUNBOOK_PREFIX}")
            elif url[len(RUNBOOK_PREFIX):] not in anchors:
                f.add("docs/runbooks.md", f"{name}: no section with anchor #{url[len(RUNBOOK_PREFIX):]}")


def check_coverage(f, alerts, tests_path):
    doc = yaml.safe_load(tests_path.read_text(encoding="utf-8"))
    fires, silent = set(), set()
    for t in doc.get("tests", []):
        for a in t.get("alert_rule_test", []):
            (fires if a.get("exp_alerts") else silent).add(a["alertname"])
    for a in alerts:
        if a not in fires:
            f.add(tests_path.name, f"no unit test expects {a} to fire")
        if a not in silent:
            f.add(tests_path.name, f"no unit test expects {a} to stay silent")
    for a in (fires | silent) - set(alerts):
        f.add(tests_path.name, f"tests an alert that does not exist: {a}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=pathlib.Path, required=True)
    ap.add_argument("--dashboard-rules-out", type=pathlib.Path, required=True)
    args = ap.parse_args()
    mon = args.root / "deploy/monitoring"
    f = Findings()

    produced = check_ksm(f, mon / "kube-state-metrics-config.yaml", args.root / "deploy/crd/crd.yaml")
    print(f"ksm: {len(produced)} series: {', '.join(sorted(produced))}")
    alerts, records, exprs = load_rules(mon / "alerts.yaml")
    read_by_rules = set().union(*(series_in(e) for e in exprs))
    external = read_by_rules - produced - set(records)
    print(f"rules: {len(alerts)} alerts, {len(records)} recording rules; series from elsewhere: "
          f"{', '.join(sorted(external))}")
    for name in sorted(external):
        if not (name.startswith("workqueue_") or name.startswith("metacontroller_") or name in EXPORTER_SERIES
                or name in PROXY_SERIES):
            f.add("alerts.yaml", f"reads {name}, which neither the config, Metacontroller, both exporters nor the "
                  "proxy's exporter produce")
    check_coverage(f, alerts, args.root / "tests/monitoring/alerts.test.yaml")
    check_alert_metadata(f, mon / "alerts.yaml", args.root / "docs/runbooks.md")
    allowed = (produced | set(records) | {"ALERTS", "ALERTS_FOR_STATE"} | external | EXPORTER_SERIES
               | PROXY_SERIES)
    n = check_dashboard(f, mon / "dashboard.json", allowed, args.dashboard_rules_out)
    print(f"dashboard: {n} queries")

    chart_files = args.root / "charts/memcached-hook/files"
    for name in ("kube-state-metrics-config.yaml", "alerts.yaml", "dashboard.json"):
        copy = chart_files / name
        if not copy.is_file() or copy.read_bytes() != (mon / name).read_bytes():
            f.add(f"charts/memcached-hook/files/{name}",
                  f"differs from deploy/monitoring/{name} (cp deploy/monitoring/{name} charts/memcached-hook/files/)")

    for item in f.items:
        print(f"ERROR {item}")
    print(f"monitoring static checks: {len(f.items)} findings")
    return 1 if f.items else 0


if __name__ == "__main__":
    sys.exit(main())
