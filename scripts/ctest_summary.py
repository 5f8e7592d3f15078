#!/usr/bin/env python3
"""The test summary CI prints after ctest (issue #20): how many tests passed, failed and were
skipped, the skipped ones by name (ctest alone counts a skip as a pass in its "tests passed"
line), and a failure when a test group expected on this machine was not registered.

    ctest_summary.py JUNIT.xml [--expect NAME=COUNT ...]

JUNIT.xml: ctest's --output-junit file. --expect NAME=COUNT: a group (a ctest label or name
pattern, counted by the caller with `ctest -N`) that must have at least one registered test
because what it needs is installed here (PETSc, MPI, SciPy); COUNT = the tests registered.
Exit status: 1 when a test failed or an expected group has no test, else 0.
"""
import sys
import xml.etree.ElementTree as ET


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    root = ET.parse(argv[1]).getroot()
    cases = root.iter("testcase")
    passed, failed, skipped = [], [], []
    for c in cases:
        name = c.get("name", "?")
        if c.find("failure") is not None or c.get("status") == "fail":
            failed.append(name)
        elif c.find("skipped") is not None or c.get("status") in ("notrun", "disabled"):
            skipped.append(name)
        else:
            passed.append(name)
    total = len(passed) + len(failed) + len(skipped)
    print(f"test summary: {total} tests: {len(passed)} passed, {len(failed)} failed, "
          f"{len(skipped)} skipped (not counted as passed)")
    if skipped:
        print("  skipped: " + ", ".join(sorted(skipped)))
    if failed:
        print("  FAILED: " + ", ".join(sorted(failed)))
    status = 1 if failed else 0
    args = argv[2:]
    i = 0
    while i < len(args):
        if args[i] != "--expect" or i + 1 >= len(args) or "=" not in args[i + 1]:
            print(f"ctest_summary: bad argument {args[i]!r} (--expect NAME=COUNT)", file=sys.stderr)
            return 2
        name, count = args[i + 1].split("=", 1)
        if not count.isdigit() or int(count) == 0:
            print(f"  MISSING: no test of group '{name}' is registered although what it needs is "
                  f"installed here (was it found at configure time?)")
            status = 1
        else:
            print(f"  group '{name}': {count} tests registered")
        i += 2
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
