#!/usr/bin/env python3
"""Run a PETSc program twice -- with one of PETSc's own KSPs, and with heptane's plugin loaded
at run time (-dll_append, or through PETSC_OPTIONS) -- and compare the numbers it prints.

    plugin_compare.py --plugin libheptane_petsc.so [--tol 1e-6]
        [--ref "-ksp_type bcgs"] [--heptane "-ksp_type hbcgs"] [--via-env]
        [--expect REGEX]... [--reject REGEX]... [--expect-error REGEX] [--mpiexec "mpiexec -n 2"]
        [--ref-mpiexec "mpiexec -n 1"] [--no-values] -- PROGRAM ARGS...

Compared: every "name = number" the program prints, keyed by the line's first word and the
name ("pressure:|p|_2", "host:norm", "coupled|F|" in order of appearance), as relative
differences <= tol. --expect/--reject: regular expressions the heptane run's output must /
must not contain. --expect-error: the heptane run must exit non-zero with a message matching
it (no reference run). --mpiexec launches both runs; --ref-mpiexec launches the reference run
instead (empty: no launcher), e.g. to compare 2 ranks with 1. --no-values: both runs are made
and checked (exit status, --expect), the values not compared (solves that fail on purpose, where
PETSc leaves inf in x and heptane the initial guess). Exit status 0 when everything holds.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
PAIR = re.compile(r"(\S+) = (" + NUM + r")(?![\w.])")


def run(cmd, env_extra=None):
    env = dict(os.environ)
    if env_extra:
        env.update(env_extra)
    print("$ " + " ".join(shlex.quote(c) for c in cmd)
          + (" (with " + " ".join(f"{k}='{v}'" for k, v in env_extra.items()) + ")" if env_extra else ""),
          flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, timeout=900)
    return p.returncode, p.stdout


def values(out):
    vals = {}
    for line in out.splitlines():
        words = line.split()
        if not words:
            continue
        for name, num in PAIR.findall(line):
            vals.setdefault(words[0] + name, []).append(float(num))
    return vals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--ref", default=None, help="options of the reference (PETSc) run")
    ap.add_argument("--heptane", default="-ksp_type hbcgs", help="options of the heptane run")
    ap.add_argument("--via-env", action="store_true", help="give the heptane options through PETSC_OPTIONS")
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--reject", action="append", default=[])
    ap.add_argument("--expect-error", default=None)
    ap.add_argument("--mpiexec", default="")
    ap.add_argument("--ref-mpiexec", default=None, help="launcher of the reference run (default: --mpiexec)")
    ap.add_argument("--no-values", action="store_true", help="do not compare the printed values")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program and a.program[0] == "--" else a.program
    if not prog:
        ap.error("no program given")
    launcher = shlex.split(a.mpiexec)
    hep_opts = ["-dll_append", a.plugin] + shlex.split(a.heptane)
    failures = []

    if a.via_env:
        rc, hep = run(launcher + prog, {"PETSC_OPTIONS": " ".join(shlex.quote(o) for o in hep_opts)})
    else:
        rc, hep = run(launcher + prog + hep_opts)
    print(hep)

    if a.expect_error:
        if rc == 0:
            failures.append("the heptane run exited 0, an error was expected")
        if not re.search(a.expect_error, hep):
            failures.append(f"no message matching /{a.expect_error}/")
    elif rc != 0:
        failures.append(f"the heptane run exited {rc}")
    for rx in a.expect:
        if not re.search(rx, hep, re.S):
            failures.append(f"heptane output lacks /{rx}/")
    for rx in a.reject:
        if re.search(rx, hep):
            failures.append(f"heptane output contains /{rx}/")

    if a.ref is not None and not a.expect_error:
        ref_launcher = launcher if a.ref_mpiexec is None else shlex.split(a.ref_mpiexec)
        rc_ref, ref = run(ref_launcher + prog + shlex.split(a.ref))
        print(ref)
        if rc_ref != 0:
            failures.append(f"the reference run exited {rc_ref}")
        rv, hv = ({}, {}) if a.no_values else (values(ref), values(hep))
        common = [k for k in rv if k in hv]
        if not common and not a.no_values:
            failures.append("no 'name = number' values common to both runs")
        print(f"{'value':<24} {'reference':>22} {'heptane':>22} {'rel. diff':>10}")
        for k in common:
            if len(rv[k]) != len(hv[k]):
                failures.append(f"{k}: {len(rv[k])} values in the reference run, {len(hv[k])} with heptane")
            for x, y in zip(rv[k], hv[k]):
                d = abs(x - y) / max(abs(x), abs(y), 1e-300)
                flag = "" if d <= a.tol else "  <-- above tol"
                print(f"{k:<24} {x:>22.13e} {y:>22.13e} {d:>10.2e}{flag}")
                if d > a.tol:
                    failures.append(f"{k}: {x:.13e} vs {y:.13e} (rel. diff {d:.2e} > {a.tol:.1e})")

    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "FAILED")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
