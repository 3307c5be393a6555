#!/usr/bin/env bash
# Builds the release artifacts of memcached-hook into one directory and checks them:
#
#   bash release/build.sh                     # into dist/ of the clone (gitignored)
#   RELEASE_OUT=/some/dir bash release/build.sh
#   bash release/build.sh --arm64-binary      # only the tools and the arm64 binary, into its cache
#                                             # (tests/lib/prebuild.sh, in the background)
#
# Artifacts (VERSION is Cargo.toml's):
#   memcached-hook-VERSION-linux-amd64        static binary (glibc, crt-static), the image's own:
#                                             tests/manifests/static-build.sh, the Dockerfile's
#                                             cargo command (a no-op after the manifests phase)
#   memcached-hook-VERSION-linux-arm64        static binary, cross-compiled with the same release
#                                             profile (aarch64-unknown-linux-gnu, crt-static,
#                                             linker aarch64-linux-gnu-gcc)
#   memcached-hook-VERSION-linux-amd64.oci.tar  the image per architecture as an OCI archive
#   memcached-hook-VERSION-linux-arm64.oci.tar  (buildah, with the Dockerfile's USER, ENTRYPOINT,
#                                             ENV, EXPOSE and LABELs read through tests/image/image.py)
#   memcached-hook-VERSION.tgz                `helm package charts/memcached-hook`
#   install.yaml                              release/install-yaml.sh: kustomize build of deploy/crd/,
#                                             deploy/ and metacontroller/: the CRD, the hook and the
#                                             CompositeController (Metacontroller itself is not in it)
#   crd.yaml                                  deploy/crd/crd.yaml
#   SHA256SUMS                                sha256sum of all of the above, checked with sha256sum -c
#
# Checks: both binaries are static executables of their architecture; the arm64 binary runs
# under qemu-user (`--version`, and `render` of config/samples/production.yaml, whose output must
# be byte-identical to the amd64 binary's); each archive holds one image of its architecture.
#
# Caches outside the clone: $HOME/.cache/memcached-hook/target-static (amd64) and target-arm64.
# Tools: Debian's gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user-static, buildah and
# file (RELEASE_PACKAGES: installed when missing, probed again after), the rustup target
# aarch64-unknown-linux-gnu, helm and kustomize built from their Go modules at the pins of
# tests/tools/versions.sh and tests/manifests/check.sh. Each tool still missing after its install
# step fails the tools step with one line naming it.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="${MEMCACHED_HOOK_CACHE:-$HOME/.cache/memcached-hook}"
OUT="${RELEASE_OUT:-$ROOT/dist}"
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)
AMD64_BIN="$CACHE/target-static/x86_64-unknown-linux-gnu/release/memcached-hook"
ARM64_TARGET_DIR="$CACHE/target-arm64"
ARM64_BIN="$ARM64_TARGET_DIR/aarch64-unknown-linux-gnu/release/memcached-hook"
KUSTOMIZE_VERSION=$(sed -n 's/^KUSTOMIZE_VERSION="\(.*\)"$/\1/p' "$ROOT/tests/manifests/check.sh")
KUSTOMIZE="$CACHE/bin/kustomize-$KUSTOMIZE_VERSION/kustomize"
SAMPLE="$ROOT/config/samples/production.yaml"
NAME="memcached-hook-$VERSION"
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
WORK=$(mktemp -d)
STORE=(--root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
cleanup() {
    buildah "${STORE[@]}" rm --all >/dev/null 2>&1 || true
    rm -rf "$WORK" 2>/dev/null || true
}
trap cleanup EXIT

# step, elapsed, passed/failed/failures, t_all
# shellcheck source=tests/lib/steps.sh
source "$ROOT/tests/lib/steps.sh"
# image_commit
# shellcheck source=tests/lib/image-recipe.sh
source "$ROOT/tests/lib/image-recipe.sh"
# apt_need
# shellcheck source=tests/lib/apt.sh
source "$ROOT/tests/lib/apt.sh"

# What the arm64 build, the emulated run and the images need, each named by what is probed after
# the install step: the cross compiler, the cross C library's headers and static libc (only
# recommended by the compiler's package, so not installed with it), qemu-user and buildah.
RELEASE_PACKAGES=(
    aarch64-linux-gnu-gcc=gcc-aarch64-linux-gnu
    /usr/aarch64-linux-gnu/include/bits/libc-header-start.h=libc6-dev-arm64-cross
    /usr/aarch64-linux-gnu/lib/libc.a=libc6-dev-arm64-cross
    qemu-aarch64-static=qemu-user-static
    buildah=buildah
    file=file
)

tools() {
    apt_need "${RELEASE_PACKAGES[@]}" || return 1
    if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
        timeout 600 rustup target add aarch64-unknown-linux-gnu
        rustup target list --installed | grep -qx aarch64-unknown-linux-gnu ||
            { echo "missing after rustup target add: aarch64-unknown-linux-gnu (rust-std)" >&2; return 1; }
    fi
    QEMU=$(command -v qemu-aarch64-static)
    HELM=$(bash "$ROOT/tests/tools/build-go-tool.sh" helm) && [[ -x "$HELM" ]] ||
        { echo "missing after its build: helm (tests/tools/build-go-tool.sh helm)" >&2; return 1; }
    if ! [[ -x "$KUSTOMIZE" && "$("$KUSTOMIZE" version 2>/dev/null)" == "$KUSTOMIZE_VERSION" ]]; then
        mkdir -p "$(dirname "$KUSTOMIZE")"
        GOBIN="$(dirname "$KUSTOMIZE")" GOTOOLCHAIN=local GOFLAGS='' timeout 900 \
            go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
        [[ "$("$KUSTOMIZE" version 2>/dev/null)" == "$KUSTOMIZE_VERSION" ]] ||
            { echo "missing after go install: kustomize $KUSTOMIZE_VERSION ($KUSTOMIZE)" >&2; return 1; }
    fi
    echo "$(aarch64-linux-gnu-gcc --version | head -n 1); $("$QEMU" --version | head -n 1)"
    echo "$(buildah --version); helm $("$HELM" version --short); kustomize $("$KUSTOMIZE" version)"
}

# is_static BINARY MACHINE: `file` names the machine and a static link.
is_static() {
    local out
    out=$(file -b "$1")
    echo "file: $out"
    [[ $out == *"$2"* ]] || { echo "not a $2 executable"; return 1; }
    [[ $out == *"statically linked"* || $out == *"static-pie linked"* ]] || { echo "not static"; return 1; }
}

amd64() {
    bash "$ROOT/tests/manifests/static-build.sh" >"$WORK/static-build.log" 2>&1 || {
        tail -n 30 "$WORK/static-build.log"
        return 1
    }
    grep -E '^(built|static build)' "$WORK/static-build.log"
    is_static "$AMD64_BIN" x86-64 || return 1
    install -m 0755 "$AMD64_BIN" "$OUT/$NAME-linux-amd64"
}

# The Dockerfile's flags for the other target: the release profile of Cargo.toml (fat LTO, one
# codegen unit), crt-static for the binary only (--target is explicit), the committed Cargo.lock.
arm64() {
    local t0=$EPOCHREALTIME
    (cd "$ROOT" && CARGO_TARGET_DIR="$ARM64_TARGET_DIR" \
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
        RUSTFLAGS="-C target-feature=+crt-static" CARGO_NET_RETRY=3 CARGO_HTTP_TIMEOUT=60 \
        timeout 2400 cargo build --release --locked --target aarch64-unknown-linux-gnu) || return 1
    echo "built $ARM64_BIN ($(du -h "$ARM64_BIN" | cut -f1)) in $(elapsed "$t0") s"
    is_static "$ARM64_BIN" aarch64 || return 1
    install -m 0755 "$ARM64_BIN" "$OUT/$NAME-linux-arm64"
}

# The arm64 binary under qemu-user: its version, and a render identical to the amd64 binary's.
emulated() {
    local v_amd v_arm
    v_amd=$(timeout 60 "$OUT/$NAME-linux-amd64" --version) || return 1
    v_arm=$(timeout 120 "$QEMU" "$OUT/$NAME-linux-arm64" --version) || return 1
    echo "amd64 --version: $v_amd"
    echo "arm64 --version (qemu-user): $v_arm"
    [[ $v_arm == "$v_amd" && $v_arm == *"$VERSION"* ]] || { echo "versions differ or lack $VERSION"; return 1; }
    timeout 60 "$OUT/$NAME-linux-amd64" render "$SAMPLE" >"$WORK/render-amd64.yaml" || return 1
    timeout 120 "$QEMU" "$OUT/$NAME-linux-arm64" render "$SAMPLE" >"$WORK/render-arm64.yaml" || return 1
    if cmp -s "$WORK/render-amd64.yaml" "$WORK/render-arm64.yaml"; then
        echo "render ${SAMPLE#"$ROOT/"}: identical bytes ($(wc -c <"$WORK/render-arm64.yaml") bytes, $(grep -c '^kind:' "$WORK/render-arm64.yaml") objects)"
    else
        echo "render ${SAMPLE#"$ROOT/"}: the arm64 output differs from the amd64 output"
        diff "$WORK/render-amd64.yaml" "$WORK/render-arm64.yaml" | head -n 20
        return 1
    fi
}

# oci ARCH BINARY: the image of tests/image/build.sh for ARCH, as an OCI archive.
oci() {
    local arch=$1 binary=$2 image
    image="localhost/memcached-hook:$VERSION-$arch"
    image_commit "$arch" "$binary" "$image" >/dev/null &&
        rm -f "$OUT/$NAME-linux-$arch.oci.tar" &&
        buildah "${STORE[@]}" push --quiet "$image" "oci-archive:$OUT/$NAME-linux-$arch.oci.tar:memcached-hook:$VERSION" ||
        return 1
    # What the archive says: its config's architecture and the binary in its one layer.
    mkdir -p "$WORK/unpack-$arch"
    tar -xf "$OUT/$NAME-linux-$arch.oci.tar" -C "$WORK/unpack-$arch" || return 1
    python3 - "$WORK/unpack-$arch" "$arch" "$binary" <<'EOF' || return 1
import hashlib, io, json, sys, tarfile
root, arch, binary = sys.argv[1:]
def blob(d):
    return open(f"{root}/blobs/{d.replace(':', '/')}", "rb").read()
index = json.load(open(f"{root}/index.json"))
assert len(index["manifests"]) == 1, index
manifest = json.loads(blob(index["manifests"][0]["digest"]))
config = json.loads(blob(manifest["config"]["digest"]))
assert (config["os"], config["architecture"]) == ("linux", arch), (config["os"], config["architecture"])
assert len(manifest["layers"]) == 1, manifest["layers"]
layer = tarfile.open(fileobj=io.BytesIO(blob(manifest["layers"][0]["digest"])))
files = [m for m in layer.getmembers() if m.isfile()]
assert [m.name.lstrip("./") for m in files] == ["memcached-hook"], [m.name for m in files]
inside = hashlib.sha256(layer.extractfile(files[0]).read()).hexdigest()
assert inside == hashlib.sha256(open(binary, "rb").read()).hexdigest(), "layer binary differs"
print(f"linux/{arch}: one layer holding the {arch} binary (sha256 {inside[:12]}), "
      f"user {config['config']['User']}, entrypoint {config['config']['Entrypoint']}")
EOF
    echo "$NAME-linux-$arch.oci.tar: $(du -h "$OUT/$NAME-linux-$arch.oci.tar" | cut -f1)"
}

chart() {
    rm -f "$OUT/$NAME.tgz"
    "$HELM" package "$ROOT/charts/memcached-hook" --destination "$OUT" >"$WORK/package.log" 2>&1 || {
        cat "$WORK/package.log"
        return 1
    }
    [[ -f "$OUT/$NAME.tgz" ]] || { echo "helm package wrote no $NAME.tgz (chart version != $VERSION?)"; ls "$OUT"; return 1; }
    echo "$NAME.tgz: $(tar -tzf "$OUT/$NAME.tgz" | wc -l) files"
}

manifests() {
    bash "$ROOT/release/install-yaml.sh" "$KUSTOMIZE" build >"$WORK/install.yaml" || return 1
    install -m 0644 "$WORK/install.yaml" "$OUT/install.yaml"
    install -m 0644 "$ROOT/deploy/crd/crd.yaml" "$OUT/crd.yaml"
    echo "install.yaml: $(grep -E '^kind: ' "$OUT/install.yaml" | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $3; sep = ", " }')"
}

sums() {
    local files=("$NAME-linux-amd64" "$NAME-linux-arm64" "$NAME-linux-amd64.oci.tar"
        "$NAME-linux-arm64.oci.tar" "$NAME.tgz" install.yaml crd.yaml)
    (cd "$OUT" && sha256sum "${files[@]}" >SHA256SUMS && sha256sum -c --strict SHA256SUMS) || return 1
}

if [[ "${1:-}" == --arm64-binary ]]; then
    OUT="$WORK/out"
    mkdir -p "$OUT"
    step tools tools
    [[ $failed -eq 0 ]] && step arm64 arm64
    echo "release (the arm64 binary only): $passed passed, $failed failed"
    [[ $failed -eq 0 ]]
    exit
fi
mkdir -p "$OUT"
echo "release $VERSION into $OUT"
step tools tools
[[ $failed -eq 0 ]] && step amd64 amd64
[[ $failed -eq 0 ]] && step arm64 arm64
if [[ $failed -eq 0 ]]; then
    step emulated emulated
    step oci-amd64 oci amd64 "$OUT/$NAME-linux-amd64"
    step oci-arm64 oci arm64 "$OUT/$NAME-linux-arm64"
    step chart chart
    step manifests manifests
    [[ $failed -eq 0 ]] && step sums sums
fi
echo "total: $(elapsed "$t_all") s"
[[ $failed -eq 0 ]] || echo "failed steps: ${failures[*]}"
echo "release: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
