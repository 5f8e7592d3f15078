#!/usr/bin/env python3
"""plugin_compare.py with checks on every linear solve the program reports.

    plugin_solves.py [--its [SYSTEM=]LO:HI]... [--ref-its [SYSTEM=]LO:HI]...
        [--max-its-ratio R] [--its-diff K] [--reason REGEX] [--max-error E] [--max-relres E]
        [--solves N] [--ref-nan-ok 1] [--nan-ok 1]
        -- PLUGIN_COMPARE_ARGS...

Runs tests/plugin_compare.py with PLUGIN_COMPARE_ARGS (everything after the first "--"; its
checks and its comparison are kept) and then reads the solve lines of each run:

    host: solve 1 N=... its=12 reason=CONVERGED_RTOL rnorm=... true=... rel_error=1.2e-11 ...
    pressure step 1 newton 1: its   12  residual ...  CONVERGED_RTOL  solve ... s  true relres 2.8e-10
    loaded: solve 1 its 12 residual ... CONVERGED_RTOL setup ... s solve ... s time ... s true relres 2.8e-10

(tests/plugin_host.c, examples/reservoir and examples/petsc_solve). For every solve of every run: the converged
reason matches --reason (default CONVERGED_RTOL|CONVERGED_ATOL), the error against the known
solution (host: rel_error) is at most --max-error and the true relative residual (reservoir:
true relres) at most --max-relres. For the heptane run (plugin_compare's first run) the
iterations lie in the band of --its (per system, the line's first word: host, pressure,
coupled, loaded; or for all), for the reference run in --ref-its; --max-its-ratio R: every heptane solve
takes at most R times the iterations of the reference run's solve of the same number (e.g.
AMG against Jacobi); --its-diff K: every heptane solve takes the reference's iterations +-K
(the same method, e.g. hgmres against PETSc's fgmres). --solves N: each run reports exactly N solves (default: at least one).
--ref-nan-ok 1: a NaN error/relres of the reference run passes (PETSc's x after a failed PC);
--nan-ok 1: of both runs (heptane's PCs under PETSc's KSPs leave PETSc's Inf in x too).
Exit status 0 when everything holds.
"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plugin_compare  # noqa: E402

HOST = re.compile(r"^host: solve (\d+) N=\d+ its=(\d+) reason=(\S+) .*rel_error=(\S+)")
LOADED = re.compile(r"^loaded: solve \d+ its (\d+) residual \S+ (\S+) setup .* true relres (\S+)")
RESERVOIR = re.compile(r"^(pressure|coupled)\s+step \d+ newton \d+: its\s+(\d+)\s+residual \S+\s+(\S+)\s+solve \S+ s\s+true relres (\S+)")


def solves(out):
    """[(system, iterations, reason, kind, value)] in the order printed."""
    found = []
    for line in out.splitlines():
        m = HOST.match(line)
        if m:
            found.append(("host", int(m.group(2)), m.group(3), "error", float(m.group(4))))
            continue
        m = RESERVOIR.match(line)
        if m:
            found.append((m.group(1), int(m.group(2)), m.group(3), "relres", float(m.group(4))))
            continue
        m = LOADED.match(line)
        if m:
            found.append(("loaded", int(m.group(1)), m.group(2), "relres", float(m.group(3))))
    return found


def bands(specs):
    out = {}
    for s in specs:
        system, _, band = s.rpartition("=")
        lo, hi = band.split(":")
        out[system or "*"] = (int(lo), int(hi))
    return out


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("usage: plugin_solves.py [checks] -- PLUGIN_COMPARE_ARGS")
    cut = argv.index("--")
    mine, theirs = argv[:cut], argv[cut + 1:]
    its, ref_its = [], []
    ratio = None
    diff = None
    reason = r"CONVERGED_RTOL|CONVERGED_ATOL"
    max_error = max_relres = None
    count = None
    ref_nan_ok = False
    nan_ok = False
    i = 0
    while i < len(mine):
        opt, val = mine[i], mine[i + 1] if i + 1 < len(mine) else None
        if val is None:
            sys.exit(f"plugin_solves.py: {opt} needs a value")
        if opt == "--its":
            its.append(val)
        elif opt == "--ref-its":
            ref_its.append(val)
        elif opt == "--max-its-ratio":
            ratio = float(val)
        elif opt == "--its-diff":
            diff = int(val)
        elif opt == "--reason":
            reason = val
        elif opt == "--max-error":
            max_error = float(val)
        elif opt == "--max-relres":
            max_relres = float(val)
        elif opt == "--solves":
            count = int(val)
        elif opt == "--ref-nan-ok":
            ref_nan_ok = val == "1"
        elif opt == "--nan-ok":
            nan_ok = val == "1"
        else:
            sys.exit(f"plugin_solves.py: unknown option {opt}")
        i += 2

    outputs = []
    run = plugin_compare.run

    def recording_run(cmd, env_extra=None):
        rc, out = run(cmd, env_extra)
        outputs.append(out)
        return rc, out

    plugin_compare.run = recording_run
    sys.argv = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugin_compare.py")] + theirs
    rc = plugin_compare.main()

    failures = []
    per_run = [solves(o) for o in outputs]
    names = ["heptane", "reference"]
    band_of = [bands(its), bands(ref_its)]
    print(f"{'run':<10} {'system':<9} {'#':>3} {'its':>6} {'band':>10}  {'reason':<22} {'error/relres':>12}")
    for r, found in enumerate(per_run):
        name = names[r] if r < len(names) else f"run {r}"
        if count is not None and len(found) != count:
            failures.append(f"{name} run: {len(found)} solves reported, {count} expected")
        if count is None and not found:
            failures.append(f"{name} run: no solve reported")
        for k, (system, n, why, kind, value) in enumerate(found):
            b = band_of[r].get(system, band_of[r].get("*")) if r < 2 else None
            flags = []
            if b and not b[0] <= n <= b[1]:
                flags.append(f"its {n} outside [{b[0]}, {b[1]}]")
            if not re.fullmatch(reason, why):
                flags.append(f"reason {why} not /{reason}/")
            limit = max_error if kind == "error" else max_relres
            if limit is not None and not value <= limit and not ((nan_ok or (r == 1 and ref_nan_ok)) and math.isnan(value)):
                flags.append(f"{kind} {value:.3e} > {limit:.1e}")
            band = f"[{b[0]},{b[1]}]" if b else "-"
            print(f"{name:<10} {system:<9} {k + 1:>3} {n:>6} {band:>10}  {why:<22} {value:>12.3e}" + ("  <-- " + "; ".join(flags) if flags else ""))
            failures += [f"{name} run, {system} solve {k + 1}: {f}" for f in flags]
    if (ratio is not None or diff is not None) and len(per_run) >= 2 and len(per_run[0]) != len(per_run[1]):
        failures.append(f"heptane reported {len(per_run[0])} solves, the reference {len(per_run[1])}")
    if ratio is not None:
        if len(per_run) < 2:
            failures.append("--max-its-ratio needs a reference run")
        else:
            for k, (h, ref) in enumerate(zip(per_run[0], per_run[1])):
                if not h[1] <= ratio * ref[1]:
                    failures.append(f"solve {k + 1}: heptane {h[1]} iterations > {ratio} x the reference's {ref[1]}")
            print(f"iterations: heptane {sum(s[1] for s in per_run[0])}, reference {sum(s[1] for s in per_run[1])} (at most {ratio} x per solve)")
    if diff is not None:
        if len(per_run) < 2:
            failures.append("--its-diff needs a reference run")
        else:
            for k, (h, ref) in enumerate(zip(per_run[0], per_run[1])):
                if abs(h[1] - ref[1]) > diff:
                    failures.append(f"solve {k + 1}: heptane {h[1]} iterations, the reference {ref[1]} (more than {diff} apart)")
    for f in failures:
        print("FAIL: " + f)
    if rc == 0 and not failures:
        print("PASS (solves)")
        return 0
    print("FAILED (solves)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
