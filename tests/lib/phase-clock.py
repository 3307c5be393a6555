"""Passes a phase's output through, line by line, and reports its slowest checks.

    some-phase 2>&1 | python3 tests/lib/phase-clock.py REPORT

A check is a result line: one that starts with ok, FAIL, PASS, skip or SKIPPED (the suites'
own lines), or cargo test's `test NAME ... ok`. A check's time is the time from the previous result
line (or the phase's start) to its own: what the phase spent to reach it. At the end of the input
REPORT gets the three slowest, one a line, as `SECONDS<TAB>LINE`, and the lines
that say a part was skipped (SKIPPED, skip) as `skipped<TAB>LINE`.
"""

import re
import sys
import time

RESULT = re.compile(r"^\s*(ok\b|FAIL|PASS\b|skip\b|SKIPPED\b|not ok\b|test .* \.\.\. (ok|FAILED|ignored)$)")
SLOWEST = 3


def main(report):
    last = start = time.monotonic()
    checks, skipped = [], []
    for raw in sys.stdin.buffer:
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if not RESULT.match(line):
            continue
        now = time.monotonic()
        checks.append((now - last, line.strip()[:160]))
        last = now
        if re.match(r"\s*(SKIPPED|skip)\b", line):
            skipped.append(line.strip()[:300])
    checks.sort(key=lambda c: -c[0])
    with open(report, "w", encoding="utf-8") as out:
        for took, line in checks[:SLOWEST]:
            out.write(f"{took:.0f}\t{line}\n")
        for line in skipped:
            out.write(f"skipped\t{line}\n")
        out.write(f"total\t{time.monotonic() - start:.0f}\n")


if __name__ == "__main__":
    main(sys.argv[1])
