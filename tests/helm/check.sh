#!/usr/bin/env bash
# Checks the Helm chart charts/memcached-hook/:
#
#   bash tests/helm/check.sh
#
# Steps (each timed; later steps run when one fails):
#   tools     helm built from its Go module (tests/tools/build-go-tool.sh, pinned in
#             tests/tools/versions.sh, cached outside the clone), the kubernetes-validate venv and
#             kustomize of tests/manifests (same pins, same cache)
#   lint      helm lint --strict, with the defaults and with every values file in values/
#   template  helm template --include-crds for every values file in values/ (and the defaults
#             under another release name); expect.py checks what particular files render to
#             (no budget at one replica, OpenShift's security context, names and labels,
#             the helm test pod); values the schema or the chart must refuse, and accept
#   readme    charts/memcached-hook/README.md's values table names every value of values.yaml,
#             with its default
#   validate  every rendered object against the Kubernetes API schemas (kubernetes-validate
#             --strict, tests/manifests/validate.py), custom resources against their CRDs
#             (Memcached; CompositeController, ServiceMonitor and PrometheusRule when their CRDs
#             are at hand)
#   compare   the chart and kustomize describe the same objects (compare.py): defaults vs deploy/
#             + metacontroller/, tls-auth vs the TLS overlays, servicemonitor vs the ServiceMonitor
#             overlays, rbac vs metacontroller/rbac/
#   install   helm package, then helm install (from the .tgz) / upgrade / uninstall on the e2e
#             kube-apiserver (tests/e2e/cluster.sh),
#             when the e2e binaries are built; skipped in one line otherwise
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/helm"
CHART="$ROOT/charts/memcached-hook"
CACHE="${MEMCACHED_HOOK_CACHE:-$HOME/.cache/memcached-hook}"
export PATH="/usr/local/go/bin:$PATH"
# shellcheck source=../tools/versions.sh
source "$ROOT/tests/tools/versions.sh"
# The pins of tests/manifests/check.sh, read from it so that both suites use one tool set.
KUSTOMIZE_VERSION=$(sed -n 's/^KUSTOMIZE_VERSION="\(.*\)"$/\1/p' "$ROOT/tests/manifests/check.sh")
K8S_VALIDATE_VERSION=$(sed -n 's/^K8S_VERSION="\(.*\)"$/\1/p' "$ROOT/tests/manifests/check.sh")
KUSTOMIZE="$CACHE/bin/kustomize-$KUSTOMIZE_VERSION/kustomize"
RELEASE_NS=memcached-system

# WORK, suite_cluster_up, manifests_venv
# shellcheck source=tests/lib/suite-cluster.sh
source "$ROOT/tests/lib/suite-cluster.sh"
VENV=$(manifests_venv)

# step, elapsed, passed/failed/failures, t_all
# shellcheck source=tests/lib/steps.sh
source "$ROOT/tests/lib/steps.sh"

# ---- tools -------------------------------------------------------------------------------------
tools() {
    local t0=$EPOCHREALTIME
    HELM=$(bash "$ROOT/tests/tools/build-go-tool.sh" helm) || return 1
    echo "helm: $("$HELM" version --short) ($(elapsed "$t0") s)"
    if [[ ! -f "$VENV/.complete" ]]; then
        rm -rf "$VENV"
        mkdir -p "$CACHE/venv"
        python3 -m venv "$VENV" &&
            timeout 600 "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
                --timeout 30 --retries 3 -r "$ROOT/tests/manifests/requirements.txt" &&
            touch "$VENV/.complete" || return 1
    fi
    echo "kubernetes-validate: $("$VENV/bin/kubernetes-validate" --version) (Kubernetes $K8S_VALIDATE_VERSION)"
    if ! [[ -x "$KUSTOMIZE" && "$("$KUSTOMIZE" version 2>/dev/null)" == "$KUSTOMIZE_VERSION" ]]; then
        mkdir -p "$(dirname "$KUSTOMIZE")"
        GOBIN="$(dirname "$KUSTOMIZE")" GOTOOLCHAIN=local GOFLAGS='' timeout 900 \
            go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" || return 1
    fi
    echo "kustomize: $("$KUSTOMIZE" version)"
}

# ---- static checks -----------------------------------------------------------------------------
VALUES=()
for f in "$HERE"/values/*.yaml; do VALUES+=("$(basename "$f" .yaml)"); done

lint() {
    local ok=0 v
    "$HELM" lint --strict --kube-version "$K8S_VALIDATE_VERSION" "$CHART" >"$WORK/lint.log" 2>&1 || { cat "$WORK/lint.log"; ok=1; }
    for v in "${VALUES[@]}"; do
        if "$HELM" lint --strict --kube-version "$K8S_VALIDATE_VERSION" "$CHART" -f "$HERE/values/$v.yaml" >"$WORK/lint-$v.log" 2>&1; then
            echo "lint $v: $(tail -n 1 "$WORK/lint-$v.log")"
        else
            cat "$WORK/lint-$v.log"
            ok=1
        fi
    done
    return $ok
}

template() {
    local ok=0 v
    mkdir -p "$WORK/rendered" "$WORK/expected"
    for v in "${VALUES[@]}"; do
        if "$HELM" template memcached-hook "$CHART" --namespace "$RELEASE_NS" --include-crds \
            --kube-version "$K8S_VALIDATE_VERSION" \
            -f "$HERE/values/$v.yaml" >"$WORK/rendered/$v.yaml" 2>"$WORK/template-$v.log"; then
            echo "template $v: $(grep -c '^kind:' "$WORK/rendered/$v.yaml") objects"
            cp "$WORK/rendered/$v.yaml" "$WORK/expected/"
        else
            cat "$WORK/template-$v.log"
            ok=1
        fi
    done
    "$HELM" template cache "$CHART" --namespace "$RELEASE_NS" --kube-version "$K8S_VALIDATE_VERSION" \
        >"$WORK/expected/release-cache.yaml" 2>"$WORK/template-release.log" || { cat "$WORK/template-release.log"; ok=1; }
    "$VENV/bin/python" "$HERE/expect.py" "$WORK/expected" || ok=1
    # A parent chart's other global values are allowed (subcharts).
    if "$HELM" template memcached-hook "$CHART" --kube-version "$K8S_VALIDATE_VERSION" --set global.storageClass=r \
        >/dev/null 2>"$WORK/global.log"; then
        echo "--set global.storageClass=r accepted"
    else
        cat "$WORK/global.log"
        ok=1
    fi
    # values.schema.json: a misspelled or mistyped value is an error, not silently ignored; a
    # budget that keeps every replica up is refused by the chart.
    local bad
    for bad in replicaCont=3 tls.enabeld=true image.pullPolicy=Sometimes compositeController.webhookTimeout=10 \
        podDisruptionBudget.minAvailable=half serviceAccount.create=maybe commonLabels.team=1 \
        podSecurityContext=strict replicaCount=2,podDisruptionBudget.minAvailable=2 \
        'global.imageRegistry=https://mirror' defaultImages.memcached= defaultImages.redis=r; do
        if "$HELM" template memcached-hook "$CHART" --kube-version "$K8S_VALIDATE_VERSION" --set "$bad" \
            >/dev/null 2>"$WORK/bad.log"; then
            echo "--set $bad was accepted"
            ok=1
        else
            echo "--set $bad refused: $(grep -m1 -e '- at' -e 'must be below' "$WORK/bad.log")"
        fi
    done
    return $ok
}

# Every value of values.yaml is in the chart README's table: as `key`, as `.key` after a sibling
# in the same row, or under an object named whole (`resources`, `etag.*`); the defaults the table
# states as literals (and the resources) are those of values.yaml.
readme() {
    "$VENV/bin/python" - "$CHART/values.yaml" "$CHART/README.md" <<'PY'
import re, sys, yaml
values = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
rows = [l for l in open(sys.argv[2], encoding="utf-8") if l.startswith("| `")]
named = set()
for row in rows:
    cell = row.split("|")[1]
    parent = ""
    for key in re.findall(r"`([^`]+)`", cell):
        if key.startswith(".") and parent:
            key = parent + key
        named.add(key)
        parent = key.rsplit(".", 1)[0] if "." in key else key
def leaves(node, prefix):
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from leaves(v, f"{prefix}.{k}" if prefix else k)
    else:
        yield prefix
named = {n.removesuffix(".*") for n in named}
missing = [k for k in leaves(values, "") if not any(k == n or k.startswith(n + ".") for n in named)]
print(f"{len(named)} values in the README table" + (f"; missing: {', '.join(missing)}" if missing else ""))
# The default column agrees with values.yaml: a row naming one scalar value whose default starts
# with a literal, and the resources row.
def value(key):
    node = values
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
def literal(v):
    return "true" if v is True else "false" if v is False else '""' if v == "" else str(v)
wrong = []
for row in rows:
    cells = [c.strip() for c in row.split("|")[1:-1]]
    keys = re.findall(r"`([^`]+)`", cells[0])
    if len(keys) == 1 and cells[0] == f"`{keys[0]}`":
        v = value(keys[0])
        said = re.match(r"`([^`]*)`", cells[1])
        if said and v is not None and not isinstance(v, (dict, list)) and said.group(1) != literal(v):
            wrong.append(f"{keys[0]}: README {said.group(1)}, values.yaml {literal(v)}")
    if cells[0] == "`resources`":
        r = values["resources"]
        want = (f"requests {r['requests']['cpu']}/{r['requests']['memory']}, "
                f"limits {r['limits']['cpu']} CPU/{r['limits']['memory']}")
        if cells[1] != want:
            wrong.append(f"resources: README {cells[1]!r}, values.yaml {want!r}")
print(f"defaults in the README table: " + ("; ".join(wrong) if wrong else "as in values.yaml"))
sys.exit(1 if missing or wrong else 0)
PY
}

# Prometheus Operator CRDs (ServiceMonitor, PrometheusRule) from the module tests/e2e fetches.
prometheus_operator_crds() {
    local sm dir
    sm=$(bash "$ROOT/tests/e2e/fetch-servicemonitor-crd.sh" 2>"$WORK/smcrd.log") || return 1
    mkdir -p "$WORK/po-crds"
    cp "$sm" "$WORK/po-crds/"
    dir=$(cd "$WORK" && GOFLAGS='' timeout 300 go mod download -json \
        "github.com/prometheus-operator/prometheus-operator@${PROMETHEUS_OPERATOR_VERSION}" 2>/dev/null |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -n "$dir" ]] && cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml" "$WORK/po-crds/"
    echo "$WORK/po-crds"
}

validate() {
    local crds=(--crd "$ROOT/deploy/crd/crd.yaml") mc po
    # shellcheck source=/dev/null
    mc=$(source "$ROOT/tests/e2e/versions.sh" && echo "$METACONTROLLER_CRDS_DIR")
    if [[ -n "$mc" ]] && grep -qs 'compositecontrollers.metacontroller.k8s.io' "$mc"/*.yaml; then
        crds+=(--crd "$mc")
        echo "Metacontroller CRDs: $mc"
    else
        echo "Metacontroller CRDs not at hand: CompositeControllers are checked by compare only"
    fi
    if po=$(prometheus_operator_crds); then
        crds+=(--crd "$po")
        echo "Prometheus Operator CRDs: $(cd "$po" && echo *.yaml)"
    else
        echo "Prometheus Operator CRDs not at hand: $(tail -n 1 "$WORK/smcrd.log")"
    fi
    timeout 300 "$VENV/bin/python" "$ROOT/tests/manifests/validate.py" \
        --kubernetes-version "$K8S_VALIDATE_VERSION" "${crds[@]}" "$WORK"/rendered/*.yaml >"$WORK/validate.log"
    local rc=$?
    grep -v '^ok ' "$WORK/validate.log"
    echo "$(grep -c '^ok ' "$WORK/validate.log") objects valid"
    return $rc
}

# name:values:kustomize dirs (comma-separated)
COMPARISONS=(
    "default:default:deploy/crd,deploy,metacontroller"
    "tls-auth:tls-auth:deploy/crd,deploy/overlays/tls-auth,metacontroller/overlays/tls"
    "servicemonitor:servicemonitor:deploy/crd,deploy/overlays/servicemonitor,metacontroller/overlays/servicemonitor"
    "rbac:rbac:deploy/crd,deploy,metacontroller,metacontroller/rbac"
)

compare() {
    local ok=0 entry name values dirs d files out
    mkdir -p "$WORK/kustomize"
    for entry in "${COMPARISONS[@]}"; do
        IFS=: read -r name values dirs <<<"$entry"
        files=()
        IFS=, read -r -a dirs <<<"$dirs"
        for d in "${dirs[@]}"; do
            out="$WORK/kustomize/${d//\//_}.yaml"
            if ! (cd "$ROOT" && "$KUSTOMIZE" build "$d" >"$out"); then
                echo "kustomize build $d failed"
                ok=1
                continue
            fi
            files+=("$out")
        done
        "$VENV/bin/python" "$HERE/compare.py" --name "$name" "$WORK/rendered/$values.yaml" "${files[@]}" || ok=1
    done
    # The chart's CRD is deploy/crd/crd.yaml, byte for byte.
    if cmp -s "$ROOT/deploy/crd/crd.yaml" "$CHART/crds/memcacheds.memcached.c5c3.io.yaml"; then
        echo "crds/: identical to deploy/crd/crd.yaml"
    else
        echo "charts/memcached-hook/crds/memcacheds.memcached.c5c3.io.yaml differs from deploy/crd/crd.yaml (copy it over)"
        ok=1
    fi
    return $ok
}

# ---- install on a real API server ----------------------------------------------------------------
kc() { "$E2E_KUBECTL" "$@"; }

install() {
    local preload="" mc_crds po values=() ok=0
    # shellcheck source=/dev/null
    source "$ROOT/tests/e2e/versions.sh"
    mc_crds=$METACONTROLLER_CRDS_DIR
    local -a with_cc=(--set compositeController.create=false)
    if [[ -n "$mc_crds" ]] && grep -qs 'compositecontrollers.metacontroller.k8s.io' "$mc_crds"/*.yaml; then
        preload=$mc_crds
        with_cc=()
    else
        echo "no Metacontroller CRDs (METACONTROLLER_CRDS_DIR=${mc_crds:-<unset>}): installing without the CompositeController"
    fi
    if [[ -d "$WORK/po-crds" ]]; then
        preload="${preload:+$preload:}$WORK/po-crds"
        values=(-f "$HERE/values/servicemonitor.yaml" -f "$HERE/values/monitoring.yaml")
        echo "with the Prometheus Operator CRDs: ServiceMonitors and the PrometheusRule are installed too"
    fi
    # The chart installs the Memcached CRD itself (crds/); Metacontroller is not needed.
    suite_cluster_up "$preload" || return 1
    # shellcheck source=/dev/null
    source "$WORK/env.sh"
    # Installed as released: from the archive `helm package` writes (release/build.sh does the same).
    local t0=$EPOCHREALTIME tgz
    "$HELM" package "$CHART" --destination "$WORK/package" >/dev/null || return 1
    tgz=$(ls "$WORK"/package/memcached-hook-*.tgz) || return 1
    echo "helm package: $(basename "$tgz")"
    "$HELM" install memcached-hook "$tgz" --namespace "$RELEASE_NS" --create-namespace \
        "${values[@]}" "${with_cc[@]}" --wait=false || return 1
    echo "helm install (from the .tgz): $(elapsed "$t0") s"
    kc wait --for condition=Established --timeout=60s crd/memcacheds.memcached.c5c3.io || ok=1
    local obj
    for obj in deployment/memcached-hook service/memcached-hook serviceaccount/memcached-hook \
        poddisruptionbudget/memcached-hook networkpolicy/memcached-hook; do
        kc -n "$RELEASE_NS" get "$obj" -o name || ok=1
    done
    if ((${#with_cc[@]} == 0)); then
        kc get compositecontroller memcached-controller -o jsonpath='{.spec.hooks.sync.webhook.url}{"\n"}' || ok=1
    fi
    if ((${#values[@]})); then
        kc -n "$RELEASE_NS" get servicemonitor/memcached-hook prometheusrule/memcached-hook \
            configmap/memcached-hook-dashboard configmap/memcached-hook-kube-state-metrics -o name || ok=1
    fi
    # What the API server stores is what `helm template` renders (no field dropped on the way).
    "$HELM" get manifest memcached-hook -n "$RELEASE_NS" >"$WORK/installed.yaml"
    "$HELM" template memcached-hook "$CHART" --namespace "$RELEASE_NS" "${values[@]}" "${with_cc[@]}" \
        --kube-version "$(kc version -o json | python3 -c 'import json, sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')" \
        >"$WORK/expected.yaml"
    if "$VENV/bin/python" "$HERE/compare.py" --name installed "$WORK/installed.yaml" "$WORK/expected.yaml" >/dev/null; then
        echo "helm get manifest: the rendered objects"
    else
        echo "helm get manifest differs from helm template"
        ok=1
    fi
    # A Memcached is accepted by the CRD the chart installed.
    kc create namespace demo >/dev/null && kc -n demo apply -f "$ROOT/config/samples/minimal.yaml" || ok=1
    # Upgrade to HTTPS + token: the Deployment reads the certificate and the token.
    "$HELM" upgrade memcached-hook "$CHART" --namespace "$RELEASE_NS" "${values[@]}" "${with_cc[@]}" \
        -f "$HERE/values/tls-auth.yaml" --wait=false >/dev/null || ok=1
    local env
    env=$(kc -n "$RELEASE_NS" get deployment memcached-hook -o jsonpath='{.spec.template.spec.containers[0].env[*].name}')
    if [[ $env == *MEMCACHED_HOOK_TLS_CERT_FILE* && $env == *MEMCACHED_HOOK_AUTH_TOKEN_FILE* ]]; then
        echo "helm upgrade (tls-auth): hook env $env"
    else
        echo "helm upgrade (tls-auth): the Deployment's env is $env"
        ok=1
    fi
    if ((${#with_cc[@]} == 0)); then
        local url
        url=$(kc get compositecontroller memcached-controller -o jsonpath='{.spec.hooks.sync.webhook.service.protocol}://{.spec.hooks.sync.webhook.service.name}.{.spec.hooks.sync.webhook.service.namespace}:{.spec.hooks.sync.webhook.service.port}{.spec.hooks.sync.webhook.path} {.spec.hooks.sync.webhook.authorization.secretRef.name}')
        [[ $url == "https://memcached-hook.memcached-system:8080/sync memcached-hook-auth" ]] || {
            echo "CompositeController after the upgrade: $url"
            ok=1
        }
    fi
    # Uninstall removes the hook but keeps the CRD and so every Memcached (Helm never deletes crds/).
    "$HELM" uninstall memcached-hook --namespace "$RELEASE_NS" --wait >/dev/null || ok=1
    if kc -n "$RELEASE_NS" get deployment memcached-hook >/dev/null 2>&1; then
        echo "the Deployment survived helm uninstall"
        ok=1
    fi
    if kc -n demo get memcached cache-minimal -o name; then
        echo "helm uninstall: the CRD and the Memcached are kept"
    else
        ok=1
    fi
    return $ok
}

step tools tools
if [[ $failed -gt 0 ]]; then
    echo "helm: tools missing; nothing else can run"
    echo "helm: $passed passed, $failed failed"
    exit 1
fi
step lint lint
step template template
step readme readme
step validate validate
step compare compare
# shellcheck source=/dev/null
if (source "$ROOT/tests/e2e/versions.sh" && [[ -x $KUBE_APISERVER_BIN && -x $ETCD_BIN && -x $KUBECTL_BIN && -x $KUBE_CONTROLLER_MANAGER_BIN ]]); then
    step install install
else
    echo "skip install: the e2e binaries are not built (bash tests/e2e/build-bins.sh kube etcd)"
fi
echo "total: $(elapsed "$t_all") s"
[[ $failed -eq 0 ]] || echo "failed steps: ${failures[*]}"
echo "helm: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
