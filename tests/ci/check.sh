#!/usr/bin/env bash
# The CI entry's own logic: the shared Metacontroller build is checked before use, and a phase that
# did not run is reported as skipped.
#
#   bash tests/ci/check.sh
#
# - shared_metacontroller (tests/lib/shared-metacontroller.sh) on folders made here: a matching
#   sha256 exports METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR; a mismatched one fails with a line
#   naming both hashes; a missing folder exports nothing and succeeds; a METACONTROLLER_BIN already
#   set wins over the folder.
# - shared_memcached (tests/lib/shared-memcached.sh): a tarball whose sha256 is not its README's
#   fails naming both; a missing folder builds nothing, exports no binary and succeeds.
# - tests/run-all.sh with the Metacontroller phases and no Metacontroller, and the proxy phase
#   without the memcached source: each `skipped` with the reason, and the closing line counts them
#   apart.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-ci-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
check() { # check NAME COMMAND...: COMMAND must succeed
    local name=$1
    shift
    if "$@" >"$WORK/out" 2>&1; then
        passed=$((passed + 1))
        echo "ok   $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
        sed 's/^/     /' "$WORK/out" | tail -n 20
    fi
}

# A folder shaped as ../shared/metacontroller, holding a small program instead of Metacontroller.
shared=$WORK/shared
mkdir -p "$shared/crds"
printf '#!/bin/sh\necho fake\n' >"$WORK/prog"
xz -c "$WORK/prog" >"$shared/metacontroller-v0.0.0-linux-amd64.xz"
echo 'kind: CustomResourceDefinition' >"$shared/crds/crd.yaml"
sum=$(sha256sum "$WORK/prog" | cut -d' ' -f1)
# shellcheck disable=SC2016 # backquotes, literally
readme() { printf '# a build\n\nsha256 of the unpacked binary: `%s`\n' "$1" >"$shared/README.md"; }

use() { # use DIR [METACONTROLLER_BIN]: runs shared_metacontroller in a clean environment, prints the result
    # shellcheck disable=SC2016 # expanded by the inner shell
    env -i PATH="$PATH" HOME="$HOME" TMPDIR="$WORK" METACONTROLLER_BIN="${2:-}" bash -c '
        [[ -n "$METACONTROLLER_BIN" ]] || unset METACONTROLLER_BIN
        source "$0/tests/lib/shared-metacontroller.sh"
        shared_metacontroller "$1" || exit $?
        echo "BIN=${METACONTROLLER_BIN:-} CRDS=${METACONTROLLER_CRDS_DIR:-}"
        [[ -z "${METACONTROLLER_BIN:-}" || ! -x "$METACONTROLLER_BIN" ]] || "$METACONTROLLER_BIN"' "$ROOT" "$1"
}
matching() {
    readme "$sum"
    out=$(use "$shared") || return 1
    grep -q "CRDS=$shared/crds" <<<"$out" && grep -q '^fake$' <<<"$out"
}
mismatched() {
    readme "$(printf '0%.0s' {1..64})"
    if out=$(use "$shared" 2>&1); then echo "accepted: $out"; return 1; fi
    grep -q "FAIL Metacontroller: sha256 of .* unpacked is $sum, .*README.md says 0000" <<<"$out" || { echo "$out"; return 1; }
}
absent() {
    out=$(use "$WORK/nowhere") || return 1
    grep -q '^BIN= CRDS=$' <<<"$out" && grep -q 'will be skipped' <<<"$out"
}
given() {
    readme "$(printf '0%.0s' {1..64})"
    out=$(use "$shared" /usr/bin/true) || return 1
    grep -q '^BIN=/usr/bin/true ' <<<"$out"
}
check "shared Metacontroller: a matching sha256 is unpacked and exported" matching
check "shared Metacontroller: a mismatched sha256 fails, naming both" mismatched
check "shared Metacontroller: no folder, nothing exported, phases skip" absent
check "shared Metacontroller: the user's METACONTROLLER_BIN wins" given

skipped_phases() {
    out=$(cd "$ROOT" && env -u METACONTROLLER_BIN -u METACONTROLLER_CRDS_DIR -u KUBECONFIG -u E2E_HOOK_HOST \
        PHASES="metacontroller fleet" bash tests/run-all.sh 2>&1) || { echo "$out"; return 1; }
    echo "$out" | tail -n 6
    grep -Eq '^metacontroller +skipped +[0-9]+s +SKIPPED Metacontroller scenarios: no Metacontroller' <<<"$out" &&
        grep -Eq '^fleet +skipped +[0-9]+s +SKIPPED fleet: no Metacontroller' <<<"$out" &&
        grep -q '^phases: 0 passed, 0 failed, 2 skipped$' <<<"$out"
}
check "run-all: phases without a Metacontroller are skipped with the reason, counted apart" skipped_phases

# A folder shaped as ../shared/memcached whose tarball is not the one its README names.
mc=$WORK/shared-memcached
mkdir -p "$mc"
printf 'not a release\n' | gzip -c >"$mc/memcached-0.0.0.tar.gz"
mc_sum=$(sha256sum "$mc/memcached-0.0.0.tar.gz" | cut -d' ' -f1)
# shellcheck disable=SC2016 # backquotes, literally
printf '# source\n\nsha256 of the tarball: `%s`\n' "$(printf '0%.0s' {1..64})" >"$mc/README.md"
memcached_use() { # memcached_use DIR: runs shared_memcached in a clean environment
    # shellcheck disable=SC2016 # expanded by the inner shell
    env -i PATH="$PATH" HOME="$WORK/home" TMPDIR="$WORK" bash -c '
        source "$0/tests/lib/apt.sh"; source "$0/tests/lib/shared-memcached.sh"
        shared_memcached "$1" || exit $?
        echo "BIN=${SHARED_MEMCACHED_BIN:-}"' "$ROOT" "$1"
}
memcached_mismatched() {
    if out=$(memcached_use "$mc" 2>&1); then echo "accepted: $out"; return 1; fi
    grep -q "FAIL memcached: sha256 of .* is $mc_sum, .*README.md says 0000" <<<"$out" || { echo "$out"; return 1; }
    [[ ! -e "$WORK/home/.cache" ]] || { echo "built or cached something"; return 1; }
}
memcached_absent() {
    out=$(memcached_use "$WORK/nowhere") || return 1
    grep -q '^BIN=$' <<<"$out" && grep -q 'will be skipped' <<<"$out"
}
check "shared memcached: a mismatched sha256 fails, naming both" memcached_mismatched
check "shared memcached: no folder, nothing built, the checks skip" memcached_absent
proxy_skipped() {
    out=$(cd "$ROOT" && SHARED_MEMCACHED_DIR="$WORK/nowhere" PHASES=proxy bash tests/run-all.sh 2>&1) || { echo "$out"; return 1; }
    echo "$out" | tail -n 4
    grep -Eq '^proxy +skipped +[0-9]+s +SKIPPED proxy: no ' <<<"$out" &&
        grep -q '^phases: 0 passed, 0 failed, 1 skipped$' <<<"$out"
}
check "run-all: the proxy phase without the memcached source is skipped with the reason" proxy_skipped

echo "ci-check: $passed passed, $failed failed"
((failed == 0))
