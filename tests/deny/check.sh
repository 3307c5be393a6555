#!/usr/bin/env bash
# Dependency policy with cargo-deny (deny.toml): bash tests/deny/check.sh
#
# licenses, bans, sources  always checked; any finding fails the run.
# advisories               checked against the RustSec advisory database when `cargo deny fetch`
#                          can clone it; vulnerabilities, unmaintained/unsound notices and yanked
#                          versions fail the run. Where the database cannot be fetched (a machine
#                          without access to its git host) the step says NOT CHECKED and why, and
#                          passes, unless REQUIRE_ADVISORIES=1, which turns that into a failure.
# cargo-deny is installed from crates.io into $HOME/.cache/memcached-hook/tools, keyed by version.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
DENY_VERSION=0.20.2
TOOLS="$HOME/.cache/memcached-hook/tools/cargo-deny-$DENY_VERSION"
DENY="$TOOLS/bin/cargo-deny"

if [ ! -x "$DENY" ]; then
    echo "installing cargo-deny $DENY_VERSION (once per machine, ~5 min)"
    # Its own throwaway target dir, not the project's.
    if ! env -u CARGO_TARGET_DIR timeout 1800 cargo install --locked --quiet \
        --root "$TOOLS" cargo-deny --version "$DENY_VERSION"; then
        echo "deny: installing cargo-deny failed" >&2
        exit 1
    fi
fi
cd "$ROOT"

status=0
# --locked semantics: cargo-deny reads Cargo.lock as committed.
if timeout 300 "$DENY" --log-level error check licenses bans sources; then
    echo "deny: licenses ok, bans ok, sources ok"
else
    echo "deny: licenses/bans/sources FAILED (see above; the policy is deny.toml)"
    status=1
fi

fetch_log=$(mktemp)
trap 'rm -f "$fetch_log"' EXIT
if timeout 300 "$DENY" fetch db >"$fetch_log" 2>&1; then
    if timeout 300 "$DENY" --log-level error check --disable-fetch advisories; then
        echo "deny: advisories ok"
    else
        echo "deny: advisories FAILED (see above)"
        status=1
    fi
else
    reason=$({ grep -m1 '^fatal:' "$fetch_log" || grep -m1 -iE 'error' "$fetch_log"; } | cut -c1-200)
    echo "deny: advisories NOT CHECKED: the RustSec database could not be fetched (${reason:-no reason given})"
    if [ "${REQUIRE_ADVISORIES:-0}" = 1 ]; then
        status=1
    fi
fi
exit $status
