#!/usr/bin/env bash
# The whole test suite, as CI runs it: bash tests/run-all.sh
#
# Phases (each timed; the run fails if any phase fails):
#   rust       cargo fmt --check, cargo clippy -D warnings, cargo test --locked (unit, golden, HTTP, CLI);
#              tests/cargo/checkouts.sh (clones sharing the target dir), tests/ci/check.sh (this script's
#              skips, .ci/run's Metacontroller check)
#   deny       tests/deny/check.sh (cargo-deny: licences, bans, sources; advisories when the database
#              can be fetched)
#   manifests  tests/manifests/check.sh (Dockerfile lint, kustomize build, schema validation, consistency)
#   image      tests/image/build.sh (buildah image from the static binary, inspected, run with podman)
#   schema     tests/schema/check.sh (kubernetes-validate --strict on every rendered child, checkov)
#   peers      tests/peers/run.sh (the rendered memcached command lines run by a real memcached; then
#              secure_rotation.py: TLS-only pods and Secret rotation with the reload agent, in network
#              namespaces it creates)
#   proxy      tests/proxy/run.sh (memcached's proxy, built from ../shared/memcached, running the
#              route configuration the hook renders in front of real backends on loopback: writes to
#              every zone, reads from the local zone, failover, reload on SIGHUP); without
#              ../shared/memcached, skipped
#   e2e        tests/e2e/run.sh (CRD, CEL rules and children on a real kube-apiserver built from Go modules)
#   pods       tests/pods/run.sh (root: the hook's children as real pods on a node of the e2e cluster:
#              containerd, CNI bridge, CoreDNS, kube-scheduler, kubelet, images built here; plain,
#              StatefulSet, drain, SASL/TLS/mTLS, Secret rotation, memory limits; host restored; with
#              METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR again under Metacontroller, else a SKIPPED line)
#   helm       tests/helm/check.sh (helm from its Go module: lint, template matrix, validate, same objects
#              as kustomize, install on the e2e kube-apiserver)
#   monitoring tests/monitoring/check.sh (promtool from its Go module: rules, unit tests, KSM config
#              structure, dashboard series; kube-state-metrics when KUBE_STATE_METRICS_BIN is set)
#   metacontroller  tests/e2e/metacontroller.sh (the hook under a real Metacontroller, both apply
#              strategies, faults, 200 Memcacheds); only when a Metacontroller is supplied
#              (METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR: .ci/run unpacks the one in
#              ../shared/metacontroller; or KUBECONFIG + E2E_HOOK_HOST), else skipped
#   fleet      tests/fleet/smoke.sh (bench/scale.sh: 100 Memcacheds on KWOK nodes under
#              Metacontroller; bounds on syncs per parent and steady-state writes) and
#              tests/fleet/zones.sh (25 zoned Memcacheds: a zone-by-zone rollout, a drain of
#              zone-a with a second drainer in zone-b); only with a Metacontroller, else skipped
#   load       tests/load/run.sh (sustained load, SIGTERM mid-load, slow clients; loopback only)
#   fuzz       tests/fuzz/smoke.sh (cargo-fuzz on stable, decode + sync, 200k executions or 60 s)
#   release    release/build.sh into a temporary directory (static amd64 binary of the manifests
#              phase, arm64 cross-compiled and run under qemu-user, one OCI archive holding the
#              amd64/arm64 image index, resolved per architecture, the packaged chart, install.yaml
#              without the CRD, crd.yaml, PROJECT_URL in place of the placeholder everywhere,
#              SHA256SUMS checked with sha256sum -c)
# Select phases with PHASES="rust peers". Heavy caches live outside the clone, under
# $HOME/.cache/memcached-hook (cargo's target dir, venvs, Go-built binaries), keyed by version;
# the target dir is shared by every clone, and .cargo/config.toml + build.rs make a clone rebuild
# rather than run another clone's binaries (tests/cargo/checkouts.sh proves it).
#
# A phase that exits 77 did not run: the table says `skipped` with its SKIPPED line, and the closing
# line counts it apart. Each phase's three slowest checks (result lines, timed from the one before)
# follow its time.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
PHASES=${PHASES:-rust deny manifests image schema peers proxy e2e pods release helm monitoring metacontroller fleet load fuzz}
HOOK_BIN="$CARGO_TARGET_DIR/debug/memcached-hook"

phase_rust() {
    cargo fmt --all -- --check && echo "ok   cargo fmt" &&
        cargo clippy --locked --all-targets -- -D warnings && echo "ok   cargo clippy" &&
        cargo test --locked && echo "ok   cargo test" &&
        bash tests/cargo/checkouts.sh &&
        bash tests/ci/check.sh
}
phase_deny() { bash tests/deny/check.sh; }
# The later phases use the debug binary the rust phase built (they build it themselves if needed).
# --static-build: the binary the Dockerfile copies, built with the Dockerfile's own command.
phase_manifests() { MEMCACHED_HOOK_BIN="$HOOK_BIN" bash tests/manifests/check.sh --static-build; }
phase_schema() { MEMCACHED_HOOK_BIN="$HOOK_BIN" bash tests/schema/check.sh; }
phase_peers() { MEMCACHED_HOOK_BIN="$HOOK_BIN" bash tests/peers/run.sh; }
phase_proxy() { MEMCACHED_HOOK_BIN="$HOOK_BIN" bash tests/proxy/run.sh; }
phase_e2e() { MEMCACHED_HOOK_BIN="$HOOK_BIN" bash tests/e2e/run.sh; }
phase_pods() { MEMCACHED_HOOK_BIN="$HOOK_BIN" bash tests/pods/run.sh; }
phase_image() { bash tests/image/build.sh; }
phase_helm() { bash tests/helm/check.sh; }
phase_monitoring() { bash tests/monitoring/check.sh; }
phase_metacontroller() { MEMCACHED_HOOK_BIN="$HOOK_BIN" bash tests/e2e/metacontroller.sh; }
# The optimised binary, as a fleet runs it (the manifests phase built it).
phase_fleet() {
    metacontroller_supplied || {
        echo "SKIPPED fleet: no Metacontroller (METACONTROLLER_BIN + METACONTROLLER_CRDS_DIR)"
        return 77
    }
    bash tests/manifests/static-build.sh >/dev/null || return 1
    local rc=0
    MEMCACHED_HOOK_BIN="$STATIC_BIN" bash tests/fleet/smoke.sh || rc=1
    MEMCACHED_HOOK_BIN="$STATIC_BIN" bash tests/fleet/zones.sh || rc=1
    return "$rc"
}
# The load phase drives the optimised binary: the image's static release build (a no-op of
# cargo after the manifests phase) instead of a second LTO build.
STATIC_BIN="$HOME/.cache/memcached-hook/target-static/x86_64-unknown-linux-gnu/release/memcached-hook"
phase_load() {
    bash tests/manifests/static-build.sh >/dev/null || return 1
    env -u PHASES MEMCACHED_HOOK_BIN="$STATIC_BIN" bash tests/load/run.sh
}

# The artifacts go to a directory of their own, removed after the phase (the release directory of a
# real release is RELEASE_OUT, or dist/). The project's home is PROJECT_URL when set, else an
# address under the reserved .test domain: enough to check that it reaches every artifact.
phase_release() {
    local out rc=0
    out=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-release.XXXXXX")
    RELEASE_OUT="$out" PROJECT_URL="${PROJECT_URL:-https://memcached-hook.test/source}" bash release/build.sh || rc=1
    rm -rf "$out"
    return "$rc"
}

phase_fuzz() { RUNS=200000 FUZZ_SECONDS=60 bash tests/fuzz/smoke.sh; }

# shellcheck source=tests/e2e/versions.sh
source tests/e2e/versions.sh
export PYTHONUNBUFFERED=1
CLOCK=$(mktemp -d "${TMPDIR:-/tmp}/memcached-hook-phases.XXXXXX")
trap 'rm -rf "$CLOCK"' EXIT

# The tools of the helm, monitoring and fuzz phases are built in the background, at the lowest
# priority, from the start of the e2e phase (tests/lib/prebuild.sh); those phases wait for it.
prebuild_pid=""
prebuild_log="$CLOCK/prebuild.log"
prebuild_wait() {
    [[ -n "$prebuild_pid" ]] || return 0
    local t0=$SECONDS
    wait "$prebuild_pid"
    echo "prebuild (tools built in the background since the e2e phase; waited $((SECONDS - t0))s here):"
    sed 's/^/  /' "$prebuild_log"
    prebuild_pid=""
}

passed=0
failed=0
skipped=0
failed_names=()
summary=()
for phase in $PHASES; do
    case " $PHASES " in *" helm "* | *" monitoring "* | *" fuzz "* | *" release "*) wants_tools=1 ;; *) wants_tools="" ;; esac
    if [[ $phase == e2e && -n "$wants_tools" && -z "$prebuild_pid" ]]; then
        bash tests/lib/prebuild.sh >"$prebuild_log" 2>&1 &
        prebuild_pid=$!
    fi
    echo "=== phase $phase ==="
    start=$(date +%s)
    if [[ $phase == helm || $phase == monitoring || $phase == fuzz || $phase == release ]]; then prebuild_wait; fi
    "phase_$phase" 2>&1 | python3 tests/lib/phase-clock.py "$CLOCK/$phase"
    rc=${PIPESTATUS[0]}
    took=$(($(date +%s) - start))
    note=""
    if ((rc == 0)); then
        passed=$((passed + 1))
        result=ok
        parts=$(grep -c '^skipped' "$CLOCK/$phase" 2>/dev/null)
        ((parts > 0)) && note="($parts part(s) skipped: $(grep -m1 '^skipped' "$CLOCK/$phase" | cut -f2 | cut -c1-120))"
    elif ((rc == 77)); then
        skipped=$((skipped + 1))
        result=skipped
        note=$(grep -m1 '^skipped' "$CLOCK/$phase" 2>/dev/null | cut -f2 | cut -c1-160)
    else
        failed=$((failed + 1))
        failed_names+=("$phase")
        result=FAILED
    fi
    summary+=("$(printf '%-14s %-7s %5ds  %s' "$phase" "$result" "$took" "$note")")
    while IFS=$'\t' read -r secs line; do
        [[ "$secs" =~ ^[0-9]+$ ]] && summary+=("$(printf '%34s%5ds  %s' "" "$secs" "$line")")
    done <"$CLOCK/$phase"
    echo "=== phase $phase: $result in ${took}s ==="
done

echo
echo "phase          result   time  (then its slowest checks)"
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] || echo "failed phases: ${failed_names[*]}"
echo "phases: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
