# shellcheck shell=bash
# The prebuilt Metacontroller of a folder beside the clone, checked and handed to the suite.
#
#   source tests/lib/shared-metacontroller.sh
#   shared_metacontroller DIR || exit 1
#
# DIR holds metacontroller-*-linux-amd64.xz, crds/*.yaml and a README.md naming the sha256 of
# the unpacked binary ("sha256 of the unpacked binary: `HEX`"). The binary is unpacked into a
# fresh temporary directory outside the clone, its sha256 compared with the README's, and
# METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR exported (SHARED_METACONTROLLER_DIR names the
# temporary directory, for the caller to remove). Returns 0 without doing anything when
# METACONTROLLER_BIN is already set (the user's own build wins) or DIR does not exist (a user's
# clone: the Metacontroller phases then skip in one line); returns 1 with one line on stderr when
# DIR is there but broken (no archive, no hash, a hash that does not match, an unpack that fails).

shared_metacontroller() {
    local dir=$1 archive want got out
    if [[ -n "${METACONTROLLER_BIN:-}" ]]; then
        echo "Metacontroller: METACONTROLLER_BIN=${METACONTROLLER_BIN} (given)"
        return 0
    fi
    if [[ ! -d "$dir" ]]; then
        echo "Metacontroller: no $dir beside the clone; its phases will be skipped"
        return 0
    fi
    dir=$(cd "$dir" && pwd)
    archive=$(compgen -G "$dir/metacontroller-*-linux-amd64.xz" | head -n 1) || true
    if [[ -z "$archive" || ! -f "$dir/README.md" ]] || ! compgen -G "$dir/crds/*.yaml" >/dev/null; then
        echo "FAIL Metacontroller: $dir lacks metacontroller-*-linux-amd64.xz, README.md or crds/*.yaml" >&2
        return 1
    fi
    # shellcheck disable=SC2016 # backquotes, literally
    want=$(sed -n 's/^sha256 of the unpacked binary: `\([0-9a-f]\{64\}\)`.*/\1/p' "$dir/README.md" | head -n 1)
    if [[ -z "$want" ]]; then
        echo "FAIL Metacontroller: $dir/README.md names no 'sha256 of the unpacked binary: \`HEX\`'" >&2
        return 1
    fi
    out=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-metacontroller.XXXXXX")
    if ! xz -dc "$archive" >"$out/metacontroller" 2>"$out/xz.log"; then
        echo "FAIL Metacontroller: unpacking $archive: $(head -c 300 "$out/xz.log")" >&2
        return 1
    fi
    got=$(sha256sum "$out/metacontroller" | cut -d' ' -f1)
    if [[ "$got" != "$want" ]]; then
        echo "FAIL Metacontroller: sha256 of $archive unpacked is $got, $dir/README.md says $want" >&2
        rm -rf "$out"
        return 1
    fi
    chmod +x "$out/metacontroller"
    export METACONTROLLER_BIN="$out/metacontroller" METACONTROLLER_CRDS_DIR="$dir/crds"
    export SHARED_METACONTROLLER_DIR=$out
    echo "Metacontroller: $(basename "$archive") unpacked to $METACONTROLLER_BIN, sha256 $got as $dir/README.md says"
}
