#!/usr/bin/env bash
# Builds the release artifacts of memcached-hook into one directory and checks them:
#
#   PROJECT_URL=https://... bash release/build.sh     # into dist/ of the clone (gitignored)
#   PROJECT_URL=https://... RELEASE_OUT=/some/dir bash release/build.sh
#   bash release/build.sh --arm64-binary      # only the tools and the arm64 binary, into its cache
#                                             # (tests/lib/prebuild.sh, in the background)
#
# PROJECT_URL, required: the project's home, where its source is and where its files are served as
# pages (PROJECT_URL/docs/install.md opens the install guide; for a repository on a forge, the
# address of its default branch's tree). The committed chart and Dockerfile hold the placeholder
# PLACEHOLDER_URL below; the release puts PROJECT_URL in its place in the chart (sources, links,
# the alerts' runbook URLs), the image labels (org.opencontainers.image.source, .documentation)
# and the manifests, and fails if the placeholder is left in any artifact.
#
# Artifacts (VERSION is Cargo.toml's):
#   memcached-hook-VERSION-linux-amd64        static binary (glibc, crt-static), the image's own:
#                                             tests/manifests/static-build.sh, the Dockerfile's
#                                             cargo command (a no-op after the manifests phase)
#   memcached-hook-VERSION-linux-arm64        static binary, cross-compiled with the same release
#                                             profile (aarch64-unknown-linux-gnu, crt-static,
#                                             linker aarch64-linux-gnu-gcc)
#   memcached-hook-VERSION.oci.tar            the image as an OCI archive holding one image index
#                                             (tag VERSION) of two images, linux/amd64 and
#                                             linux/arm64 (buildah, with the Dockerfile's USER,
#                                             ENTRYPOINT, ENV, EXPOSE and LABELs read through
#                                             tests/image/image.py)
#   memcached-hook-VERSION.tgz                `helm package charts/memcached-hook`
#   install.yaml                              release/install-yaml.sh: kustomize build of deploy/
#                                             and metacontroller/: the hook and the
#                                             CompositeController, without the CRD (Metacontroller
#                                             itself is not in it either)
#   crd.yaml                                  deploy/crd/crd.yaml, the CRD alone
#   SHA256SUMS                                sha256sum of all of the above, checked with sha256sum -c
#
# Checks: both binaries are static executables of their architecture; the arm64 binary runs
# under qemu-user (`--version`, and `render` of config/samples/production.yaml, whose output must
# be byte-identical to the amd64 binary's); the archive's index holds one image per platform, each
# with its architecture's config and binary (ELF machine), and resolves per architecture through
# skopeo; install.yaml holds no CRD and crd.yaml only the CRD; PROJECT_URL is in the chart and the
# image labels and PLACEHOLDER_URL in no artifact.
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
PLACEHOLDER_URL=https://git.example.com/memcached-hook
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
    skopeo=skopeo
    file=file
)

# PROJECT_URL: set, an https URL, and not a placeholder.
project() {
    [[ -n "${PROJECT_URL:-}" ]] || {
        echo "PROJECT_URL is not set: the project's home (https://...), written into the chart, the image labels and the manifests"
        return 1
    }
    PROJECT_URL=${PROJECT_URL%/}
    [[ $PROJECT_URL =~ ^https://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~%/+-]*)?$ ]] ||
        { echo "PROJECT_URL=$PROJECT_URL: not an https URL (letters, digits and ._~%/+- in its path)"; return 1; }
    [[ $PROJECT_URL != *example.com* && $PROJECT_URL != *example.org* ]] ||
        { echo "PROJECT_URL=$PROJECT_URL: a placeholder, not the project's home"; return 1; }
    IMAGE_BUILD_ARGS=("SOURCE_URL=$PROJECT_URL" "DOCUMENTATION_URL=$PROJECT_URL/docs/install.md")
    echo "project home: $PROJECT_URL"
}

# stamp FILE...: PLACEHOLDER_URL replaced by PROJECT_URL, in place.
stamp() {
    python3 - "$PLACEHOLDER_URL" "$PROJECT_URL" "$@" <<'EOF'
import pathlib, sys
old, new, *files = sys.argv[1:]
for f in map(pathlib.Path, files):
    f.write_text(f.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
EOF
}

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

# image ARCH BINARY: the image of tests/image/build.sh for linux/ARCH, committed to buildah's
# storage as localhost/memcached-hook:VERSION-ARCH, with PROJECT_URL in its labels.
image() {
    local arch=$1 binary=$2
    image_commit "$arch" "$binary" "localhost/memcached-hook:$VERSION-$arch" >/dev/null || return 1
    echo "linux/$arch: localhost/memcached-hook:$VERSION-$arch"
}

# The two images as one OCI image index (tag VERSION) in one OCI archive, then what it says: the
# layout read directly (an index of two manifests with platform linux/amd64 and linux/arm64, each
# config of its architecture, each one layer holding exactly that binary, of its ELF machine, and
# the labels carrying PROJECT_URL), and the index resolved per architecture by skopeo.
index() {
    local list="localhost/memcached-hook:$VERSION" archive="$OUT/$NAME.oci.tar" arch got
    buildah "${STORE[@]}" manifest create "$list" >/dev/null || return 1
    for arch in amd64 arm64; do
        buildah "${STORE[@]}" manifest add "$list" "containers-storage:localhost/memcached-hook:$VERSION-$arch" \
            >/dev/null || return 1
    done
    rm -f "$archive"
    buildah "${STORE[@]}" manifest push --quiet --all --format oci "$list" "oci-archive:$archive:$VERSION" ||
        return 1
    mkdir -p "$WORK/unpack"
    tar -xf "$archive" -C "$WORK/unpack" || return 1
    python3 - "$WORK/unpack" "$VERSION" "$OUT/$NAME-linux-amd64" "$OUT/$NAME-linux-arm64" "$PROJECT_URL" \
        "$WORK/platforms" <<'EOF' || return 1
import hashlib, io, json, struct, sys, tarfile
root, version, amd64, arm64, home, platforms_out = sys.argv[1:]
binaries = {"amd64": amd64, "arm64": arm64}
machines = {62: "amd64", 183: "arm64"}  # ELF e_machine: EM_X86_64, EM_AARCH64
INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
def blob(d):
    return open(f"{root}/blobs/{d.replace(':', '/')}", "rb").read()
top = json.load(open(f"{root}/index.json"))
assert len(top["manifests"]) == 1, top["manifests"]
entry = top["manifests"][0]
assert entry["mediaType"] == INDEX, entry
assert entry.get("annotations", {}).get("org.opencontainers.image.ref.name") == version, entry
index = json.loads(blob(entry["digest"]))
platforms = sorted((m["platform"]["os"], m["platform"]["architecture"]) for m in index["manifests"])
assert platforms == [("linux", "amd64"), ("linux", "arm64")], platforms
with open(platforms_out, "w") as out:
    out.writelines(f"{m['platform']['architecture']} {json.loads(blob(m['digest']))['config']['digest']}\n"
                   for m in index["manifests"])
for m in index["manifests"]:
    arch = m["platform"]["architecture"]
    assert m["mediaType"] == MANIFEST, m
    manifest = json.loads(blob(m["digest"]))
    config = json.loads(blob(manifest["config"]["digest"]))
    assert (config["os"], config["architecture"]) == ("linux", arch), (arch, config["os"], config["architecture"])
    assert len(manifest["layers"]) == 1, manifest["layers"]
    layer = tarfile.open(fileobj=io.BytesIO(blob(manifest["layers"][0]["digest"])))
    files = [f for f in layer.getmembers() if f.isfile()]
    assert [f.name.lstrip("./") for f in files] == ["memcached-hook"], [f.name for f in files]
    data = layer.extractfile(files[0]).read()
    assert data[:4] == b"\x7fELF", "not an ELF file"
    machine = machines.get(struct.unpack_from("<H", data, 18)[0])
    assert machine == arch, f"linux/{arch} holds a binary for {machine}"
    inside = hashlib.sha256(data).hexdigest()
    assert inside == hashlib.sha256(open(binaries[arch], "rb").read()).hexdigest(), f"{arch}: layer binary differs"
    labels = config["config"]["Labels"]
    assert labels["org.opencontainers.image.source"] == home, labels
    assert labels["org.opencontainers.image.documentation"] == f"{home}/docs/install.md", labels
    print(f"index {entry['digest'][:19]}: linux/{arch} {m['digest'][:19]}, config {arch}, "
          f"one layer holding the {machine} ELF binary (sha256 {inside[:12]}), "
          f"user {config['config']['User']}, entrypoint {config['config']['Entrypoint']}")
EOF
    # skopeo picks the instance of each platform from the index: the config it resolves to is
    # the one of that platform's manifest (its sha256), of that architecture.
    for arch in amd64 arm64; do
        timeout 120 skopeo inspect --override-os linux --override-arch "$arch" --config --raw \
            "oci-archive:$archive:$VERSION" >"$WORK/resolved-$arch.json" || return 1
        got="$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print(c["os"] + "/" + c["architecture"])' \
            "$WORK/resolved-$arch.json") sha256:$(sha256sum "$WORK/resolved-$arch.json" | cut -d' ' -f1)"
        echo "skopeo --override-arch $arch: config $got"
        [[ $got == "linux/$arch $(grep "^$arch " "$WORK/platforms" | cut -d' ' -f2)" ]] ||
            { echo "linux/$arch resolves to another image than the index's linux/$arch"; return 1; }
    done
    echo "$NAME.oci.tar: $(du -h "$archive" | cut -f1)"
}

# The chart, packaged from a copy with PROJECT_URL in place of the placeholder.
chart() {
    local copy="$WORK/chart/memcached-hook" files
    rm -rf "$WORK/chart" "$OUT/$NAME.tgz"
    mkdir -p "$WORK/chart"
    cp -a "$ROOT/charts/memcached-hook" "$copy" || return 1
    mapfile -t files < <(grep -rlF "$PLACEHOLDER_URL" "$copy")
    ((${#files[@]} == 0)) || stamp "${files[@]}" || return 1
    "$HELM" package "$copy" --destination "$OUT" >"$WORK/package.log" 2>&1 || {
        cat "$WORK/package.log"
        return 1
    }
    [[ -f "$OUT/$NAME.tgz" ]] || { echo "helm package wrote no $NAME.tgz (chart version != $VERSION?)"; ls "$OUT"; return 1; }
    echo "$NAME.tgz: $(tar -tzf "$OUT/$NAME.tgz" | wc -l) files, PROJECT_URL written into ${#files[@]}"
}

# install.yaml without the CRD, crd.yaml with nothing but the CRD.
manifests() {
    bash "$ROOT/release/install-yaml.sh" "$KUSTOMIZE" build >"$WORK/install.yaml" || return 1
    stamp "$WORK/install.yaml" || return 1
    install -m 0644 "$WORK/install.yaml" "$OUT/install.yaml"
    install -m 0644 "$ROOT/deploy/crd/crd.yaml" "$OUT/crd.yaml"
    echo "install.yaml: $(grep -E '^kind: ' "$OUT/install.yaml" | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $3; sep = ", " }')"
    echo "crd.yaml: $(grep -E '^kind: ' "$OUT/crd.yaml" | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $3; sep = ", " }')"
    ! grep -q '^kind: CustomResourceDefinition$' "$OUT/install.yaml" ||
        { echo "install.yaml holds a CRD: deleting it would delete every Memcached"; return 1; }
    [[ "$(grep -E '^kind: ' "$OUT/crd.yaml")" == "kind: CustomResourceDefinition" ]] ||
        { echo "crd.yaml holds more than the CRD"; return 1; }
}

# No artifact names the placeholder; the packaged chart names PROJECT_URL as its source.
placeholders() {
    local left host=${PLACEHOLDER_URL#https://}
    host=${host%%/*}
    rm -rf "$WORK/chart-check" && mkdir -p "$WORK/chart-check" &&
        tar -xzf "$OUT/$NAME.tgz" -C "$WORK/chart-check" || return 1
    left=$(grep -rlF "$host" "$OUT/install.yaml" "$OUT/crd.yaml" "$WORK/chart-check" "$WORK/unpack")
    [[ -z "$left" ]] || { echo "the placeholder $host is left in: ${left//$'\n'/ }"; return 1; }
    grep -qxF -- "- $PROJECT_URL" "$WORK/chart-check/memcached-hook/Chart.yaml" ||
        { echo "the chart's sources do not name $PROJECT_URL"; return 1; }
    echo "no $host in install.yaml, crd.yaml, the chart or the image; the chart's sources: $PROJECT_URL"
}

sums() {
    local files=("$NAME-linux-amd64" "$NAME-linux-arm64" "$NAME.oci.tar" "$NAME.tgz" install.yaml crd.yaml)
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
step project project
[[ $failed -eq 0 ]] && step tools tools
[[ $failed -eq 0 ]] && step amd64 amd64
[[ $failed -eq 0 ]] && step arm64 arm64
if [[ $failed -eq 0 ]]; then
    step emulated emulated
    step image-amd64 image amd64 "$OUT/$NAME-linux-amd64"
    step image-arm64 image arm64 "$OUT/$NAME-linux-arm64"
    [[ $failed -eq 0 ]] && step index index
    step chart chart
    step manifests manifests
    [[ $failed -eq 0 ]] && step placeholders placeholders
    [[ $failed -eq 0 ]] && step sums sums
fi
echo "total: $(elapsed "$t_all") s"
[[ $failed -eq 0 ]] || echo "failed steps: ${failures[*]}"
echo "release: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
