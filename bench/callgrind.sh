#!/usr/bin/env bash
# Instructions per sync versus the serde floor, under valgrind --tool=callgrind.
#
#   bash bench/callgrind.sh            # realistic + large request, ratios, linearity check
#   PROFILE=1 bash bench/callgrind.sh  # also writes callgrind profiles and prints the top
#                                      # functions of one sync for both sizes
#
# For each request and each piece of work it runs the bench-only example `perf` (see
# examples/perf.rs) twice under callgrind, with N and with 0 iterations, and divides the
# difference of the instruction counts by N: start-up, reading the file and the set-up cancel.
# Deterministic: the same binary and request give the same counts.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/memcached-hook/target}"
OUT="${BENCH_OUT:-$CARGO_TARGET_DIR/bench}"
mkdir -p "$OUT"
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install -y valgrind)" >&2; exit 1; }

[[ "${SKIP_BUILD:-0}" == 1 ]] || cargo build --release --example perf >&2
PERF="$CARGO_TARGET_DIR/release/examples/perf"

REAL=tests/fixtures/sync/steady-state.json
# The realistic request padded to several sizes (bench/gen-large.py), for the linearity check.
SIZES=(50000 100000 200000 400000)
FILES=("$REAL")
for size in "${SIZES[@]}"; do
    python3 bench/gen-large.py --size "$size" "$REAL" "$OUT/padded-$size.json"
    FILES+=("$OUT/padded-$size.json")
done

# instructions FILE MODE N: total instructions of one `perf MODE FILE N` run.
instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$PERF" "$2" "$1" "$3" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

# per_call FILE MODE BASE: instructions of one call of MODE on FILE.
per_call() {
    local n total
    n=$(( $(stat -c %s "$1") > 100000 ? 5 : 20 ))
    total=$(instructions "$1" "$2" "$n")
    echo $(( (total - $3) / n ))
}

# (No `etag` here: valgrind hides the CPU's SHA extensions, so SHA-256 would run the portable
# code and count ~5x the instructions it takes natively; bench/load.sh measures the 304.)
MODES=(hook floor decode sync encode floor-decode floor-encode)
printf '%-22s %8s' request bytes
printf ' %13s' "${MODES[@]}"
printf ' %10s %10s\n' hook/floor hook/byte
declare -A HOOK
for file in "${FILES[@]}"; do
    base=$(instructions "$file" hook 0)
    bytes=$(stat -c %s "$file")
    declare -A ir=()
    for mode in "${MODES[@]}"; do
        ir[$mode]=$(per_call "$file" "$mode" "$base")
    done
    HOOK[$bytes]=${ir[hook]}
    printf '%-22s %8d' "$(basename "$file" .json)" "$bytes"
    for mode in "${MODES[@]}"; do printf ' %13d' "${ir[$mode]}"; done
    awk -v h="${ir[hook]}" -v f="${ir[floor]}" -v b="$bytes" \
        'BEGIN { printf " %10.2f %10.1f\n", h / f, h / b }'
done

# Linearity: least-squares line through (bytes, instructions) of the hook, and how far each
# point is from it.
echo
echo "linearity of the hook's instructions in the request size:"
for bytes in "${!HOOK[@]}"; do echo "$bytes ${HOOK[$bytes]}"; done | sort -n | awk '
    { x[NR] = $1; y[NR] = $2; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
    END {
        n = NR; slope = (n * sxy - sx * sy) / (n * sxx - sx * sx); icpt = (sy - slope * sx) / n
        printf "  fit: %.0f instructions + %.1f per byte\n", icpt, slope
        worst = 0
        for (i = 1; i <= n; i++) {
            fit = icpt + slope * x[i]; dev = (y[i] - fit) / fit * 100
            printf "  %8d bytes: %12d measured, %12.0f fitted, %+6.2f%%\n", x[i], y[i], fit, dev
            if (dev < 0) dev = -dev; if (dev > worst) worst = dev
        }
        printf "  largest deviation from the line: %.2f%% (%s)\n", worst, worst < 5 ? "linear" : "NOT linear"
    }'

if [[ "${PROFILE:-0}" == 1 ]]; then
    for file in "$REAL" "$OUT/padded-200000.json"; do
        name=$(basename "$file" .json)
        valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.$name.out" \
            "$PERF" hook "$file" 20 >/dev/null 2>&1
        echo
        echo "== where one sync's instructions go ($name, 20 calls + set-up; inclusive) =="
        callgrind_annotate --inclusive=yes --auto=no "$OUT/callgrind.$name.out" 2>/dev/null \
            | grep -E '^ *[0-9,]+ \(' \
            | grep -Ev 'PROGRAM TOTALS|ld-linux|below main|libc_start|rust_begin_short_backtrace|perf::main|:main ' \
            | sed 's/ \[[^]]*\]$//; s/???://' | cut -c1-140 | head -30
    done
fi
