# shellcheck shell=bash
# The image's recipe, written once for tests/image/build.sh and release/build.sh: buildah puts a
# static binary on an empty base with the Dockerfile's USER, ENTRYPOINT, ENV, EXPOSE and LABELs
# (read through tests/image/image.py), plus the commit as revision and creation time. Source it
# once ROOT, WORK, VERSION and STORE (buildah's storage flags) are set; IMAGE_BUILD_ARGS (an array
# of KEY=VALUE, as `docker build --build-arg` takes them) sets the Dockerfile's ARGs of the labels.
#
#   image_commit ARCH BINARY IMAGE   commits IMAGE for linux/ARCH with BINARY as /memcached-hook
#                                    (root-owned, 0755); prints the image id

image_commit() {
    local arch=$1 binary=$2 image=$3 labels=() envs=() line user entry ctr revision created epoch
    local py="$ROOT/tests/image/image.py" build_args=() a
    for a in "${IMAGE_BUILD_ARGS[@]}"; do build_args+=(--build-arg "$a"); done
    while IFS= read -r line; do labels+=(--label "$line"); done \
        < <(python3 "$py" labels --dockerfile "$ROOT/Dockerfile" --version "$VERSION" "${build_args[@]}")
    while IFS= read -r line; do envs+=(--env "$line"); done \
        < <(python3 "$py" env --dockerfile "$ROOT/Dockerfile")
    { read -r user; read -r entry; } < <(python3 "$py" user-entrypoint --dockerfile "$ROOT/Dockerfile")
    # Reproducible: the commit's time stamps the image and its files.
    revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
    epoch=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)
    created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
    mkdir -p "$WORK/ctx-$arch"
    install -m 0755 "$binary" "$WORK/ctx-$arch/memcached-hook"
    ctr=$(buildah "${STORE[@]}" from --quiet --arch "$arch" scratch) || return 1
    buildah "${STORE[@]}" copy --quiet --chown 0:0 --chmod 0755 "$ctr" "$WORK/ctx-$arch/memcached-hook" \
        /memcached-hook >/dev/null &&
        buildah "${STORE[@]}" config --user "$user" --entrypoint "$entry" --cmd '' --port 8080/tcp \
            --os linux --arch "$arch" "${envs[@]}" "${labels[@]}" \
            --label "org.opencontainers.image.revision=$revision" \
            --label "org.opencontainers.image.created=$created" "$ctr" &&
        buildah "${STORE[@]}" commit --quiet --format oci --timestamp "$epoch" --rm "$ctr" "$image"
}
