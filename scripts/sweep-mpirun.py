#!/usr/bin/env python3
"""Random sweep of `heptane solve` under mpirun against one process (a bug hunt, not a test).

    python3 scripts/sweep-mpirun.py HEPTANE DATA_DIR [--seed S] [--count N] [--logs DIR]

Runs HEPTANE solve N times with a random system -- a Matrix Market file of DATA_DIR (e.g.
../shared/data) or a generated grid of 2-12 z-planes, Nc 1-3 -- and random options (solver,
--pc, --precision, --format csr, --rtol), once on one process and once under
`mpirun -np 2..4` on CPU ranks (with --split cells, --coarse or --amg-global at random). It
prints one line per run and flags: a hang (90 s), a crash, an exit with no JSON report and no
error message, a solve that one process converges and the ranks do not, a "converged" whose
true relative residual is above twice --rtol, and an error the ranks give where one process
does not. Each flagged run's output goes to DIR/sweep-mpirun-SEED-K.log (default /tmp). A flag
is a lead to read: block Jacobi over the ranks is a weaker preconditioner than one process's,
and BiCGStab may break down on hard files where one process converges. The 2026-12-05 runs
(550 solves) found three faults, now tests in tests/cli_distributed.sh and cli_null_space.sh.
"""
import argparse
import glob
import json
import os
import random
import signal
import subprocess
import time


def run(cmd, env, timeout=90):
    t = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, time.time() - t
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # mpirun and every rank
        out, err = p.communicate()
        return None, out or "", err or "", timeout


def report(out):
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("heptane")
    ap.add_argument("data")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--logs", default="/tmp")
    o = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_WAIT_POLICY="passive")
    files = [f for f in sorted(glob.glob(os.path.join(o.data, "*.mtx"))) if "rhs" not in os.path.basename(f)]
    rng = random.Random(o.seed)
    flagged = 0
    for k in range(o.count):
        if files and rng.random() < 0.6:
            src = [rng.choice(files)]
        else:
            nc = rng.choice([1, 1, 2, 3])
            grid = "%dx%dx%d" % (rng.randint(3, 12), rng.randint(3, 12), rng.randint(2, 10))
            model = rng.choice(["", ":reservoir", ":channelized", ":uniform"])
            src = ["--generate", grid + ("x%d" % nc if nc > 1 else "") + model]
        np_ = rng.choice([2, 3, 4])
        solver = rng.choice(["bicgstab", "gmres", "cg"])
        rtol = rng.choice(["1e-6", "1e-9"])
        a = src + ["--solver", solver, "--pc", rng.choice(["none", "jacobi", "bjacobi", "ilu0", "ilu0-mc", "amg", "cpr"]),
                   "--rtol", rtol, "--max-it", "3000", "--json", "--quiet", "--device", "cpu"]
        if rng.random() < 0.3:
            a += ["--precision", rng.choice(["mixed", "single"])]
        if rng.random() < 0.2:
            a += ["--format", "csr"]
        if solver == "cg" and rng.random() < 0.5:
            a += ["--no-symmetry-check"]
        extra = []
        if rng.random() < 0.2:
            extra.append("--coarse")
        elif "amg" in a or "cpr" in a:
            if rng.random() < 0.4:
                extra.append(rng.choice(["--amg-global", "--amg-per-rank"]))
        if rng.random() < 0.2:
            extra += ["--split", "cells"]
        rc1, o1, e1, _ = run([o.heptane, "solve"] + a, env)
        rcn, on, en, dt = run(["mpirun", "--oversubscribe", "-n", str(np_), o.heptane, "solve"] + a + extra, env)
        j1, jn = report(o1), report(on)
        flags = []
        if rcn is None:
            flags.append("HANG")
        elif rcn not in (0, 1, 2):
            flags.append("exit %d" % rcn)
        if any(w in en for w in ("Segmentation", "Aborted", "terminate called")):
            flags.append("CRASH")
        if rcn in (0, 1) and jn is None and "error" not in en:
            flags.append("no report, no error")
        if j1 and jn:
            if j1["converged"] and not jn["converged"]:
                flags.append("%s on %d ranks (one process: %s, %d iterations)" % (jn["reason"], np_, j1["reason"], j1["iterations"]))
            if jn["converged"] and (jn.get("true_relres") or 0) > 2 * float(rtol):
                flags.append("converged with true relres %.1e" % jn["true_relres"])
        if rcn == 1 and jn is None and rc1 == 0:
            flags.append("an error on the ranks only: " + (en.strip().splitlines() or ["?"])[0][:160])
        line = "%4d np%d %s %s | %s [%.1f s] one process %s, ranks %s" % (
            k, np_, " ".join(a), " ".join(extra), "FLAG " + "; ".join(flags) if flags else "ok", dt,
            "%s/%d" % (j1["reason"], j1["iterations"]) if j1 else "exit %s" % rc1,
            "%s/%d" % (jn["reason"], jn["iterations"]) if jn else "exit %s" % rcn)
        print(line, flush=True)
        if flags:
            flagged += 1
            with open(os.path.join(o.logs, "sweep-mpirun-%d-%d.log" % (o.seed, k)), "w") as f:
                f.write(line + "\n---- one process ----\n" + o1 + e1 + "\n---- ranks ----\n" + on + en)
    print("sweep-mpirun: %d of %d runs flagged" % (flagged, o.count))


if __name__ == "__main__":
    main()
