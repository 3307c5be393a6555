#!/usr/bin/env bash
# Proof against a real memcached: render every Memcached CR in tests/peers/cases with the hook, start
# Debian's memcached with exactly the rendered arguments and drive it with real plaintext/TLS/mTLS/auth clients.
#
#   bash tests/peers/run.sh                 # everything; last line: "peers: N passed, M failed"
#   PEERS_BREAK=flag bash tests/peers/run.sh   # deliberately broken arguments: must fail (flag|verify|listeners|threads|hardening)
#   PEERS_ONLY="tls mtls" bash tests/peers/run.sh
#   PEERS_SECURE=0 bash tests/peers/run.sh  # without the TLS-only / Secret rotation suite (secure_rotation.py)
#
#   (then tests/peers/warm_restart.py: warm restart with memcached -e and the hook's guard; "warm-restart: N passed, M failed")
#   (then tests/peers/extstore.py: spec.extstore with a real memcached; "extstore: N passed, M failed")
#
# Environment: MEMCACHED_HOOK_BIN (use this binary instead of building), CARGO_TARGET_DIR (default
# $HOME/.cache/memcached-hook/target), PEERS_REQUIRE_HOOK=1 (fail instead of falling back to the hand-written
# arguments when the hook cannot be built; the default under CI=true), PEERS_NO_HOOK=1 (do not build or run the
# hook: check the hand-written arguments of cases/expected-args.json only).
# Installs what it needs (apt: memcached, openssl; PyYAML into a venv only when python3 lacks it).
# Only loopback traffic: memcached runs in a private network namespace (unshare -n) when the machine allows,
# otherwise on 127.0.0.1 with free ports. Every process is bounded by timeout(1) and stopped by its PID.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${MEMCACHED_HOOK_CACHE:-$HOME/.cache/memcached-hook}
REQUIRE_HOOK=${PEERS_REQUIRE_HOOK:-$([ "${CI:-}" = true ] && echo 1 || echo 0)}

die() {
    echo "peers: setup failed: $*" >&2
    echo "peers: 0 passed, 1 failed"
    exit 1
}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

# ---- 1. system packages ------------------------------------------------------------------------------------
# shellcheck source=tests/lib/apt.sh
source "$ROOT/tests/lib/apt.sh"
apt_need memcached=memcached openssl=openssl setpriv=util-linux ip=iproute2 || die "Debian packages"
MEMCACHED=$(command -v memcached) || die "memcached not installed"

# ---- 2. python with PyYAML ---------------------------------------------------------------------------------
PY=python3
if ! python3 -c 'import yaml' 2>/dev/null; then
    VENV=$CACHE/venv-peers
    if ! "$VENV/bin/python" -c 'import yaml' 2>/dev/null; then
        echo "peers: creating $VENV with PyYAML"
        python3 -m venv "$VENV" || die "python3 -m venv"
        timeout 300 "$VENV/bin/pip" install -q pyyaml || die "pip install pyyaml"
    fi
    PY=$VENV/bin/python
fi

# ---- 3. the hook binary and its rendering ------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/memcached-peers.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
BIN=
# shellcheck source=tests/lib/hook-bin.sh
source "$ROOT/tests/lib/hook-bin.sh"
if [ -n "${MEMCACHED_HOOK_BIN:-}" ] || { [ "${PEERS_NO_HOOK:-0}" != 1 ] && command -v cargo >/dev/null 2>&1; }; then
    BIN=$(hook_bin "$WORK/cargo.log") || echo "peers: no hook binary" >&2
fi
driver=("$PY" "$HERE/memcached_args.py" --cases "$HERE/cases" --workdir "$WORK" --deadline 600)
if [ -n "$BIN" ] && [ -x "$BIN" ]; then
    mkdir -p "$WORK/rendered"
    SAMPLES=$ROOT/config/samples
    for cr in "$HERE"/cases/*.yaml "$SAMPLES"/*.yaml; do
        [ -f "$cr" ] || continue
        name=$(basename "$cr" .yaml)
        [ "$(dirname "$cr")" = "$SAMPLES" ] && name=sample-$name
        if grep -q '^# through: replay' "$cr"; then
            # Values the API server refuses (an object stored before a rule existed): render refuses
            # them as kubectl would, and the driver takes the workload from `replay` (the sync path).
            if timeout 60 "$BIN" render "$cr" >/dev/null 2>"$WORK/rendered/$name.err"; then
                echo "peers: render $name succeeded, but its values are out of the CRD's bounds" >&2
                echo "# render accepted what the CRD refuses" >"$WORK/rendered/$name.refused"
            fi
        elif ! timeout 60 "$BIN" render "$cr" >"$WORK/rendered/$name.yaml" 2>"$WORK/rendered/$name.err"; then
            echo "peers: render $name failed: $(head -c 400 "$WORK/rendered/$name.err")" >&2
            rm -f "$WORK/rendered/$name.yaml"   # the driver reports the case as failed
        fi
    done
    driver+=(--rendered-dir "$WORK/rendered" --hook "$BIN")
    [ -d "$SAMPLES" ] && driver+=(--samples "$SAMPLES")
elif [ "$REQUIRE_HOOK" = 1 ]; then
    die "no hook binary (set MEMCACHED_HOOK_BIN or make the crate build)"
else
    echo "peers: WARNING: no hook binary; running the hand-written expected arguments only" >&2
fi

# ---- 4. the exporter, if a package provides one ------------------------------------------------------------
EXPORTER=$(command -v memcached_exporter || command -v prometheus-memcached-exporter || true)
if [ -z "$EXPORTER" ] && apt-cache show prometheus-memcached-exporter >/dev/null 2>&1; then
    as_root env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends \
        prometheus-memcached-exporter >/dev/null 2>&1 || true
    EXPORTER=$(command -v prometheus-memcached-exporter || true)
fi
if [ -n "$EXPORTER" ]; then
    driver+=(--exporter "$EXPORTER")
else
    echo "peers: no memcached exporter package on this machine; the exporter's scrape is emulated (plain 'stats')"
fi

[ -n "${PEERS_BREAK:-}" ] && driver+=(--break "$PEERS_BREAK")
for only in ${PEERS_ONLY:-}; do driver+=(--only "$only"); done

# ---- 5. run: in a private network namespace when possible (wildcard listeners then reach loopback only) ----
set +e
if as_root unshare -n true 2>/dev/null; then
    as_root timeout --kill-after=10 900 unshare -n "${driver[@]}" --netns
else
    timeout --kill-after=10 900 "${driver[@]}"
fi
rc=$?
set -e
if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
    echo "peers: driver ended abnormally (exit $rc)"
    echo "peers: 0 passed, 1 failed"
fi

# ---- 6. TLS that cannot be bypassed, Secret rotation with the reload agent -------------------------------
# Needs the hook binary (its reload-agent subcommand), ip(8) and root for `ip netns`; the driver builds its own
# two namespaces joined by a veth pair and deletes them at the end. Last line: "secure: N passed, M failed".
secure_rc=0
if [ "${PEERS_SECURE:-1}" = 1 ] && [ -z "${PEERS_BREAK:-}" ]; then
    if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
        echo "secure: 0 passed, 1 failed (no hook binary for the reload agent)"
        secure_rc=1
    elif ! command -v ip >/dev/null 2>&1 || ! as_root ip netns list >/dev/null 2>&1; then
        [ "$REQUIRE_HOOK" = 1 ] && { echo "secure: 0 passed, 1 failed (ip netns unavailable)"; secure_rc=1; } \
            || echo "secure: skipped: needs root and ip(8) for ip netns"
    else
        mkdir -p "$WORK/secure"
        chmod 755 "$WORK/secure"
        # the agent runs as the memcache user, like memcached: give it a copy it can execute
        install -m 0755 "$BIN" "$WORK/secure/memcached-hook"
        mkdir -p "$WORK/secure/rendered"
        for cr in "$HERE"/secure/*.yaml; do
            timeout 60 "$BIN" render "$cr" >"$WORK/secure/rendered/$(basename "$cr")" \
                || rm -f "$WORK/secure/rendered/$(basename "$cr")"   # the driver reports the case as failed
        done
        secure=("$PY" "$HERE/secure_rotation.py" --hook "$WORK/secure/memcached-hook" --workdir "$WORK/secure"
                --rendered-dir "$WORK/secure/rendered")
        set +e
        as_root timeout --kill-after=10 600 "${secure[@]}"
        secure_rc=$?
        set -e
    fi
fi
# hook_driver NAME SECONDS SCRIPT: a driver that needs the hook binary and a memcached of its own on
# 127.0.0.1 (a free port), bounded by SECONDS; its last line is "NAME: N passed, M failed ...".
# Sets driver_rc.
hook_driver() {
    local name=$1 seconds=$2 script=$3
    driver_rc=0
    [ -n "${PEERS_BREAK:-}" ] && return
    if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
        echo "$name: 0 passed, 1 failed (no hook binary)"
        driver_rc=1
        return
    fi
    set +e
    timeout --kill-after=10 "$seconds" "$PY" "$HERE/$script" --hook "$BIN" --memcached "$MEMCACHED" \
        --workdir "$WORK/$name"
    driver_rc=$?
    set -e
}
# ---- 7. Warm restart: SIGUSR1 + -e restores the keys; a bad .meta after the guard is a clean cold start ------
# (the hook's warm-guard subcommand)
hook_driver warm-restart 300 warm_restart.py
warm_rc=$driver_rc
# ---- 8. Extstore: the rendered -o ext_path holds values beyond -m and reads them back; what validation ------
# refuses fails (or keeps nothing) in memcached alone (the hook renders the arguments)
hook_driver extstore 400 extstore.py
ext_rc=$driver_rc
[ $rc -eq 0 ] && rc=$secure_rc
[ $rc -eq 0 ] && rc=$warm_rc
[ $rc -eq 0 ] && rc=$ext_rc
exit $rc
