#!/usr/bin/env bash
# Two checkouts, one cargo target directory: each runs its own sources and reads its own files.
#
#   bash tests/cargo/checkouts.sh
#
# The suite keeps cargo's target directory outside the clone ($HOME/.cache/memcached-hook/target),
# shared by every clone. Cargo judges a path crate fresh by modification times, so a clone whose
# files are older than the last build (made from another clone) would run that other clone's
# test binaries, with that clone's paths compiled in. .cargo/config.toml names the checkout and
# build.rs reruns when it changes; this proves it: a copy of this checkout, its files dated in the
# past and one fixture broken, runs `golden::responses_are_byte_stable` in the shared target
# directory right after this checkout built it; the copy's run must fail on its own broken
# fixture, and this checkout's run must pass again afterwards.
#
# Environment: CARGO_TARGET_DIR (default $HOME/.cache/memcached-hook/target).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-checkouts.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
TEST=(test --locked --quiet --test it golden::responses_are_byte_stable)
FIXTURE=tests/fixtures/sync/first-sync.json

run_in() { # run_in DIR LOG: the one test in DIR, bounded
    (cd "$1" && timeout 1800 cargo "${TEST[@]}") >"$2" 2>&1
}

# This checkout builds first, so the copy's files are older than everything in the target dir.
if ! run_in "$ROOT" "$WORK/first.log"; then
    tail -n 20 "$WORK/first.log"
    echo "FAIL checkouts: the test does not pass in $ROOT to begin with"
    exit 1
fi

copy="$WORK/copy"
mkdir -p "$copy"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$copy") 2>/dev/null
printf '{"broken": ' >"$copy/$FIXTURE"
find "$copy" -exec touch -h -d '2001-01-01 00:00:00' {} +

failed=0
if run_in "$copy" "$WORK/copy.log"; then
    echo "FAIL checkouts: the copy with a broken $FIXTURE passed: it ran binaries built from $ROOT"
    failed=1
elif ! grep -q 'decodes' "$WORK/copy.log"; then
    tail -n 20 "$WORK/copy.log"
    echo "FAIL checkouts: the copy failed, but not on its broken fixture"
    failed=1
else
    echo "ok   a copy dated before the last build runs its own sources and fixtures (rebuilt, failed on its broken $FIXTURE)"
fi

if run_in "$ROOT" "$WORK/again.log"; then
    echo "ok   $ROOT runs its own build again afterwards"
else
    tail -n 20 "$WORK/again.log"
    echo "FAIL checkouts: $ROOT fails after the copy's build: it ran the copy's binaries"
    failed=1
fi
exit "$failed"
