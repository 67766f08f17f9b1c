#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints what plain `go test` prints: each package's
ok/FAIL/no-test-files line, the whole output of every failed test and failed package (build
errors, panics, timeouts), and any line that is not a test event. It also counts the tests
(top-level tests and subtests, as `go test -v` lists them) by outcome, so that a CI run says
how many tests passed and skipped, and how many of the skips are the heavy cases that run
only under `make test-full` (internal/base/testmode).

  go test -json ./... | scripts/gotest-filter.py [--counts FILE] [--group NAME]

--counts appends one line "NAME<TAB>pass<TAB>skip<TAB>heavy<TAB>fail" to FILE (ci-phase.sh
sums them); --times appends one line "SECONDS<TAB>NAME<TAB>PACKAGE<TAB>TEST" per top-level
test that took a second or more (ci-phase.sh lists the slowest); the exit status is 1 when any test or package failed, else 0.
"""

import json
import sys

HEAVY = "heavy case: runs under `make test-full`"


def main(argv):
    counts_file, times_file, group = None, None, "tests"
    i = 0
    while i < len(argv):
        if argv[i] == "--counts" and i + 1 < len(argv):
            counts_file, i = argv[i + 1], i + 2
        elif argv[i] == "--times" and i + 1 < len(argv):
            times_file, i = argv[i + 1], i + 2
        elif argv[i] == "--group" and i + 1 < len(argv):
            group, i = argv[i + 1], i + 2
        else:
            sys.stderr.write("usage: gotest-filter.py [--counts FILE] [--times FILE] [--group NAME]\n")
            return 2
    out = sys.stdout
    buf = {}  # (package, test) -> output lines; test "" is the package's own output
    done = set()  # (package, test) that passed, failed or skipped
    build = {}  # import path -> build output lines
    n = {"pass": 0, "skip": 0, "heavy": 0, "fail": 0}
    slow = []  # (seconds, package, test) of top-level tests of a second or more
    failed = False
    for line in sys.stdin:
        try:
            ev = json.loads(line)
            if not isinstance(ev, dict) or "Action" not in ev:
                raise ValueError
        except ValueError:
            out.write(line)
            continue
        act = ev["Action"]
        pkg = ev.get("Package", "")
        test = ev.get("Test", "")
        key = (pkg, test)
        if act == "build-output":
            build.setdefault(ev.get("ImportPath", ""), []).append(ev.get("Output", ""))
        elif act == "build-fail":
            out.write("".join(build.pop(ev.get("ImportPath", ""), [])))
            failed = True
        elif act == "output":
            buf.setdefault(key, []).append(ev.get("Output", ""))
        elif act in ("pass", "fail", "skip") and test:
            done.add(key)
            if "/" not in test and ev.get("Elapsed", 0.0) >= 1.0:
                slow.append((ev["Elapsed"], pkg, test))
            lines = buf.pop(key, [])
            if act == "fail":
                n["fail"] += 1
                failed = True
                out.write("".join(lines))
            elif act == "skip":
                n["skip"] += 1
                if any(HEAVY in x for x in lines):
                    n["heavy"] += 1
            else:
                n["pass"] += 1
        elif act in ("pass", "fail", "skip"):
            elapsed = ev.get("Elapsed", 0.0)
            own = buf.pop(key, [])
            if act == "fail":
                failed = True
                # The package's own output (a panic, a timeout) and that of tests that never
                # ended, in the order they were read.
                for k in [k for k in list(buf) if k[0] == pkg]:
                    if k not in done:
                        out.write("".join(buf[k]))
                    del buf[k]
                out.write("".join(x for x in own if not x.startswith(("FAIL\n", "FAIL\t"))))
                out.write("FAIL\t%s\t%.3fs\n" % (pkg, elapsed))
            elif act == "skip":
                out.write("?   \t%s\t[no test files]\n" % pkg)
            else:
                out.write("ok  \t%s\t%.3fs\n" % (pkg, elapsed))
            for k in [k for k in list(buf) if k[0] == pkg]:
                del buf[k]
            out.flush()
    for lines in build.values():
        out.write("".join(lines))
    summary = "%s: %d tests passed, %d skipped (%d of them heavy: make test-full runs them), %d failed" % (
        group, n["pass"], n["skip"], n["heavy"], n["fail"])
    out.write(summary + "\n")
    if counts_file:
        with open(counts_file, "a") as f:
            f.write("%s\t%d\t%d\t%d\t%d\n" % (group, n["pass"], n["skip"], n["heavy"], n["fail"]))
    if times_file and slow:
        with open(times_file, "a") as f:
            for secs, pkg, test in slow:
                f.write("%.2f\t%s\t%s\t%s\n" % (secs, group, pkg, test))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
