#!/usr/bin/env python3
"""test-digest.py BUILD_DIR LABEL - a short account of the failed tests of
the last ctest run in BUILD_DIR, for the end of deploy/test.sh's output.

A failing test's whole output is printed where ctest ran it, often
thousands of lines before the end of a run that lasts half an hour. This
prints, per failed test, only the lines that say what failed (a TAP
"not ok" and the error under it, a Python assertion and its traceback's
last lines, a sanitizer report's first lines, an "e2e: FAIL"), capped, so
the end of the output names the cause. Reads ctest's own
Testing/Temporary/LastTest.log; prints nothing when every test passed.
"""
import os
import re
import sys

MAX_LINES = 40  # per failed test
BLOCK = re.compile(r"^\d+/\d+ Testing: (\S+)$")
# A line that starts an account of a failure, with how many lines before
# it (a traceback's last frame) and after it belong to that account.
STARTS = [
    (re.compile(r"^\s*not ok \d+ - "), 0, 14),
    (re.compile(r"^(FAIL|ERROR): test"), 0, 0),
    (re.compile(r"^\w*(Error|Exception): "), 2, 6),
    (re.compile(r"ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:"), 0, 8),
    (re.compile(r"^e2e: FAIL|^FAILED|Assertion .* failed|^\s*error:"), 0, 3),
]


def blocks(path):
    """(test name, output lines) of each test in a LastTest.log."""
    name, out, inside = None, [], False
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            m = BLOCK.match(line)
            if m:
                name, out, inside = m.group(1), [], False
            elif line == "Output:":
                inside = True
            elif line == "<end of output>":
                inside = False
                if name:
                    yield name, out
            elif inside and not line.startswith("-" * 20):
                out.append(line)


def digest(lines):
    """The lines of one test's output that say what failed."""
    keep, left, kept_to = [], 0, -1
    for i, line in enumerate(lines):
        started = next(((b, n) for rx, b, n in STARTS if rx.search(line)), None)
        if started is not None:
            keep.extend(lines[max(kept_to + 1, i - started[0]):i])
            keep.append(line)
            kept_to = i
            left = max(left, started[1])
        elif left > 0:
            keep.append(line)
            kept_to = i
            left -= 1
        if len(keep) >= MAX_LINES:
            keep.append("    ... (cut: the whole output is above)")
            break
    return keep or lines[-12:]


def main():
    if len(sys.argv) != 3:
        print("usage: test-digest.py BUILD_DIR LABEL", file=sys.stderr)
        return 2
    tmp = os.path.join(sys.argv[1], "Testing", "Temporary")
    failed_path = os.path.join(tmp, "LastTestsFailed.log")
    if not os.path.exists(failed_path):
        return 0
    with open(failed_path, encoding="utf-8", errors="replace") as f:
        failed = {ln.strip().split(":", 1)[1] for ln in f if ":" in ln}
    if not failed:
        return 0
    print(f"== what failed ({sys.argv[2]}): {', '.join(sorted(failed))}")
    log = os.path.join(tmp, "LastTest.log")
    if not os.path.exists(log):
        return 0
    for name, out in blocks(log):
        if name in failed:
            print(f"-- {name}")
            for line in digest(out):
                print(f"   {line[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
