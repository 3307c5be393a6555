"""What particular values files must render to, beyond being valid:

  python3 expect.py RENDERED_DIR

RENDERED_DIR holds `helm template` output per values file (<name>.yaml, as tests/helm/check.sh
writes it). Each check prints one line; the exit status is 1 if any fails.
"""

import sys

import yaml

HOOK_TEST = "test"


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kinds(objs):
    return sorted(o["kind"] for o in objs)


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''}"
    return found[0]


def is_test(obj):
    return (obj["metadata"].get("annotations") or {}).get("helm.sh/hook") == HOOK_TEST


def default(objs):
    assert "PodDisruptionBudget" in kinds(objs)
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == 65532, pod["securityContext"]
    assert pod["serviceAccountName"] == "memcached-hook"
    test = one(objs, "Pod", "memcached-hook-test-readyz")
    assert is_test(test), test["metadata"]
    container = test["spec"]["containers"][0]
    hook = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == hook["image"], (container["image"], hook["image"])
    assert container["command"] == ["/memcached-hook"], container["command"]
    args = container["args"]
    assert args[0] == "probe" and args[-1] == "http://memcached-hook.memcached-system.svc:8080/readyz", args
    # The test pod is no hook pod: the Service does not route to it.
    assert test["metadata"]["labels"]["app.kubernetes.io/component"] != "sync-hook"
    policy = one(objs, "NetworkPolicy", "memcached-hook-test")
    assert is_test(policy)
    peer = policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
    assert all(test["metadata"]["labels"].get(k) == v for k, v in peer.items()), peer
    rbac = [o for o in objs if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert not rbac, "RBAC is off by default"
    env = {e["name"]: e.get("value") for e in hook["env"]}
    images = (env.get("MEMCACHED_HOOK_DEFAULT_IMAGE"), env.get("MEMCACHED_HOOK_DEFAULT_EXPORTER_IMAGE"))
    assert images == ("memcached:1.6.45", "prom/memcached-exporter:v0.15.4"), images
    return ("PDB, user 65532, own ServiceAccount, helm test pod calls /readyz through the Service, "
            "the hook's default images")


def single_replica(objs):
    assert "PodDisruptionBudget" not in kinds(objs), kinds(objs)
    return "replicaCount 1: no PodDisruptionBudget"


def openshift(objs):
    ctx = one(objs, "Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert "runAsUser" not in ctx and "runAsGroup" not in ctx and ctx["runAsNonRoot"], ctx
    test = one(objs, "Pod")["spec"]["securityContext"]
    assert "runAsUser" not in test, test
    return f"pod securityContext without a user: {ctx}"


def names(objs):
    mine = [o for o in objs if o["kind"] not in ("CustomResourceDefinition",)]
    for o in mine:
        labels = o["metadata"].get("labels") or {}
        assert labels.get("example.com/team") == "platform", (o["kind"], labels)
        assert labels.get("app.kubernetes.io/name") in ("cache-hook", None), (o["kind"], labels)
    deployment = one(objs, "Deployment", "platform-cache-hook")
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["labels"]["example.com/cost-center"] == "1234"
    assert pod["spec"]["serviceAccountName"] == "platform-hook"
    assert deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "cache-hook"
    assert "ServiceAccount" not in kinds(objs)
    webhook = one(objs, "CompositeController")["spec"]["hooks"]["sync"]["webhook"]
    ref = (webhook["service"], webhook["path"])
    assert ref == ({"name": "platform-cache-hook", "namespace": "memcached-system", "port": 8080,
                    "protocol": "http"}, "/sync"), ref
    return "fullnameOverride, nameOverride, commonLabels on every object, existing ServiceAccount"


def release_name(objs):
    deployment = one(objs, "Deployment")
    assert deployment["metadata"]["name"] == "cache-memcached-hook", deployment["metadata"]["name"]
    return "release cache: objects named cache-memcached-hook"


def tls_auth(objs):
    test = one(objs, "Pod")["spec"]
    args = test["containers"][0]["args"]
    assert "--ca-file=/etc/memcached-hook/tls/ca.crt" in args, args
    assert args[-1] == "https://memcached-hook.memcached-system.svc:8080/readyz", args
    volume = test["volumes"][0]["secret"]
    assert volume["secretName"] == "memcached-hook-tls" and volume["items"] == [{"key": "ca.crt", "path": "ca.crt"}]
    return "helm test over HTTPS, the certificate checked against the Secret's ca.crt"


def runbooks(objs):
    rule = one(objs, "PrometheusRule")
    assert rule["metadata"]["labels"].get("release") == "prometheus", rule["metadata"]["labels"]
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    urls = [r["annotations"]["runbook_url"] for r in alerts]
    want = [f"https://docs.example.org/memcached/runbooks#{r['alert'].lower()}" for r in alerts]
    assert alerts and urls == want, [u for u, w in zip(urls, want) if u != w][:3]
    return f"PrometheusRule: {len(alerts)} alerts, each runbook_url under runbookBaseURL"


def mirror(objs):
    hook = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in hook["env"]}
    want = {
        "image": "mirror.example:5000/hub/memcached-hook:",
        "MEMCACHED_HOOK_RELOAD_AGENT_IMAGE": "mirror.example:5000/hub/memcached-hook:",
        "MEMCACHED_HOOK_DEFAULT_IMAGE": "mirror.example:5000/hub/cache/memcached:1.6.45",
        "MEMCACHED_HOOK_DEFAULT_EXPORTER_IMAGE": "mirror.example:5000/hub/prom/memcached-exporter:v0.15.4",
    }
    got = {"image": hook["image"], **{k: env.get(k) for k in want if k != "image"}}
    for key, prefix in want.items():
        assert (got[key] or "").startswith(prefix), (key, got[key], prefix)
    test = one(objs, "Pod", "memcached-hook-test-readyz")["spec"]["containers"][0]
    assert test["image"] == hook["image"], (test["image"], hook["image"])
    return "global.imageRegistry reaches the hook, its reload agent, the test pod and both default images"


CHECKS = {"default": default, "tls-auth": tls_auth, "single-replica": single_replica, "openshift": openshift,
          "names": names, "release-cache": release_name, "everything": runbooks,
          "mirror": mirror}


def main():
    directory = sys.argv[1]
    failed = 0
    for name, check in CHECKS.items():
        try:
            print(f"{name}: {check(load(f'{directory}/{name}.yaml'))}")
        except (AssertionError, KeyError, TypeError, OSError) as e:
            print(f"{name}: FAILED: {e!r}")
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
