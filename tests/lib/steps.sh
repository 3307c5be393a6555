# shellcheck shell=bash
# Shared by the check scripts (source it): count, time and name the steps of one script.
#   step NAME COMMAND...   runs COMMAND, prints "==> NAME" and "<== NAME: ok|FAILED (S s)";
#                          later steps run even if it fails.
#   elapsed START          seconds since START ($EPOCHREALTIME), one decimal.
# The caller prints its summary from $passed, $failed and ${failures[@]}; $t_all is its start.
passed=0
failed=0
failures=()
# shellcheck disable=SC2034  # read by the scripts that source this file
t_all=$EPOCHREALTIME
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
step() {
    local name=$1 t0=$EPOCHREALTIME
    shift
    echo "==> $name"
    if "$@"; then
        passed=$((passed + 1))
        echo "<== $name: ok ($(elapsed "$t0") s)"
    else
        failed=$((failed + 1))
        failures+=("$name")
        echo "<== $name: FAILED ($(elapsed "$t0") s)"
    fi
}
