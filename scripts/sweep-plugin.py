#!/usr/bin/env python3
"""Random sweep of PETSc plugin configurations against PETSc's own solvers (a bug hunt, not a test).

    python3 scripts/sweep-plugin.py BUILD_DIR [--seed S] [--count N] [--logs DIR]

Runs BUILD_DIR/tests/plugin_host (a PETSc program that knows nothing of heptane) N times, each
with a random configuration -- 1-4 ranks; a DMDA (PETSc's default split) or a plain Mat,
natural or permuted numbering, a rank that owns no rows; AIJ, BAIJ, SBAIJ; 1-4 unknowns per
cell; 2-D or 3-D; 1-3 Newton solves, a new pattern, a recreated matrix, a shell Amat, a
shifted Pmat, a pure-Neumann system; heptane's KSPs with any PC type, or PETSc's KSPs with hamg
and hcpr as a PC; the -heptane_* options -- once with the plugin loaded and once with PETSc's
own KSP and PC (gamg for hamg, ilu for hcpr) on the same ranks. It prints one line per run and
flags: a non-zero exit that PETSc's run does not share, a hang (60 s), a solve that PETSc
converges and heptane does not (fp32 true-residual breakdowns and hcg's refusal of a
nonsymmetric matrix excepted), an error above 1e-5, three times PETSc's iterations. Each
flagged run's output goes to DIR/sweep-plugin-SEED-K.log (default /tmp). A flag is a lead to
read, not a verdict: PETSc's own failures (MUMPS after a new pattern on MPIBAIJ, ICC of
MPIBAIJ) and an explicit -heptane_format bdiagh on a matrix that is no grid's are expected.
The 2026-12-05 runs (1,070 configurations) found four bugs, each now a test in
tests/plugin.cmake.
"""
import argparse
import os
import random
import re
import signal
import subprocess
import time

LINE = re.compile(r"host: solve (\d+) N=(\d+) its=(\d+) reason=(\S+) rnorm=(\S+) true=(\S+) rel_error=(\S+)")


def run(cmd, env, timeout=60):
    t = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out, time.time() - t
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # mpirun and every rank
        out, _ = p.communicate()
        return None, out or "", timeout


def configuration(rng):
    """(ranks, program options, heptane's options, the reference's options, symmetric, ns)."""
    np_ = rng.choice([1, 1, 2, 2, 3, 4])
    dim = rng.choice([2, 3, 3])
    n = rng.choice([5, 7, 9, 12]) if dim == 3 else rng.choice([9, 16, 30])
    dof = rng.choice([1, 1, 2, 3, 4])
    use_dm = rng.choice([0, 1])
    sym = dof == 1 and rng.random() < 0.4
    mt = rng.choice(["aij", "aij", "baij", "sbaij"] if sym else ["aij", "baij"])
    ksp = rng.choice(["hbcgs", "hgmres", "hcg"] if sym else ["hbcgs", "hgmres", "hbcgs", "hgmres", "hcg"])
    pcs = ["none", "jacobi", "pbjacobi", "bjacobi", "ilu", "ilu1", "lu", "asm", "sor", "hamg", "hamg", "gamg"]
    if dof > 1:
        pcs += ["hcpr", "hcpr"]
    if sym:
        pcs += ["icc"]
    pc = rng.choice(pcs)
    a = ["-n", str(n), "-dim", str(dim), "-dof", str(dof), "-use_dm", str(use_dm)]
    if sym:
        a += ["-convection", "0"]
    if use_dm:
        a += ["-dm_mat_type", mt]
    else:
        a += ["-mat_type", mt]
        if rng.random() < 0.5:
            a += ["-permute", "1"]
        if np_ > 1 and rng.random() < 0.2:
            a += ["-empty_rank", str(rng.randrange(np_))]
    ns = rng.choice([1, 1, 2, 3])
    a += ["-solves", str(ns)]
    if ns > 1 and not sym and rng.random() < 0.3:
        a += ["-new_pattern_at", str(rng.randint(2, ns))]
    if ns > 1 and use_dm and rng.random() < 0.2:
        a += ["-recreate_mat_every", "1"]
    if rng.random() < 0.1:
        a += ["-shell_amat", "1"]
    elif rng.random() < 0.1:
        a += ["-pmat_shift", "0.5"]
    if sym and mt != "sbaij" and rng.random() < 0.2:
        a += ["-neumann", "1"]
    if rng.random() < 0.3:
        a += ["-x0", "1"]
    a += ["-ksp_rtol", "1e-8", "-ksp_max_it", "2000"]
    pca = ["-pc_type", "ilu", "-pc_factor_levels", "1"] if pc == "ilu1" else ["-pc_type", pc]
    petsc_ksp = None
    if pc in ("hamg", "hcpr") and rng.random() < 0.5:
        petsc_ksp = rng.choice(["gmres", "fgmres", "bcgs", "cg"] if sym else ["gmres", "fgmres", "bcgs"])
    h = ["-ksp_type", petsc_ksp or ksp] + pca
    if rng.random() < 0.25:
        h += ["-heptane_precision", rng.choice(["mixed", "single"])]
    if np_ > 1 and rng.random() < 0.3:
        h += ["-heptane_coarse"]
    if pc == "hamg" and rng.random() < 0.4:
        h += ["-heptane_amg_smoother", rng.choice(["jacobi", "l1jacobi", "ilu0mc", "chebyshev"])]
    if pc in ("hamg", "hcpr") and np_ > 1 and rng.random() < 0.4:
        h += ["-heptane_amg_global"]
    for opt, p in (("-heptane_threads 2", 0.15), ("-heptane_fold 0", 0.1), ("-heptane_petsc_pc", 0.1)):
        if rng.random() < p:
            h += opt.split()
    if rng.random() < 0.2:
        h += ["-heptane_format", rng.choice(["csr", "bdiagh", "auto"])]
    ref = {"hbcgs": ["-ksp_type", "bcgs", "-ksp_pc_side", "right"],
           "hgmres": ["-ksp_type", "gmres", "-ksp_pc_side", "right"], "hcg": ["-ksp_type", "cg"]}[ksp]
    if petsc_ksp:
        ref = ["-ksp_type", petsc_ksp]
    ref += {"hamg": ["-pc_type", "gamg"], "hcpr": ["-pc_type", "ilu"]}.get(pc, pca)
    return np_, a, h, ref, sym, ns


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--logs", default="/tmp")
    o = ap.parse_args()
    host = os.path.join(o.build, "tests", "plugin_host")
    plugin = os.path.join(o.build, "lib", "libheptane_petsc.so")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_WAIT_POLICY="passive", OMPI_MCA_rmaps_base_oversubscribe="1")
    rng = random.Random(o.seed)
    flagged = 0
    for k in range(o.count):
        np_, a, h, ref, sym, ns = configuration(rng)
        launch = ["mpirun", "-n", str(np_)] if np_ > 1 else []
        rc, out, dt = run(launch + [host] + a + ["-dll_append", plugin] + h, env)
        rrc, rout, _ = run(launch + [host] + a + ref, env)
        hs = [m.groups() for m in LINE.finditer(out)]
        rs = [m.groups() for m in LINE.finditer(rout)]
        flags = []
        if rc is None:
            flags.append("HANG")
        elif rc != 0 and rc != rrc:
            flags.append("exit %d (PETSc's run: %s)" % (rc, rrc))
        if "MISMATCH" in out:
            flags.append("MISMATCH")
        if rc == 0 and len(hs) != ns:
            flags.append("%d of %d solves" % (len(hs), ns))
        nonsym = "-new_pattern_at" in a or not sym
        for i, s in enumerate(hs):
            its, reason, err = int(s[2]), s[3], float(s[6])
            r = rs[i] if i < len(rs) else None
            if not reason.startswith("CONVERGED"):
                expected = (h[1] == "hcg" and nonsym and reason == "DIVERGED_INDEFINITE_MAT") or (
                    "-heptane_precision" in h and reason == "DIVERGED_BREAKDOWN")
                if not expected and (r is None or r[3].startswith("CONVERGED")):
                    flags.append("solve %d %s (PETSc: %s)" % (i + 1, reason, r[3] if r else "-"))
            elif err > 1e-5:
                flags.append("solve %d error %.1e" % (i + 1, err))
            if r and r[3].startswith("CONVERGED") and its > 3 * int(r[2]) + 10:
                flags.append("solve %d %d iterations (PETSc: %s)" % (i + 1, its, r[2]))
        line = "%4d np%d %s | %s | %s [%.1f s] its %s" % (k, np_, " ".join(a), " ".join(h), "FLAG " + "; ".join(flags) if flags else "ok", dt,
                                                          ",".join(s[2] for s in hs) or "-")
        print(line, flush=True)
        if flags:
            flagged += 1
            with open(os.path.join(o.logs, "sweep-plugin-%d-%d.log" % (o.seed, k)), "w") as f:
                f.write(line + "\n---- heptane ----\n" + out + "\n---- PETSc ----\n" + rout)
    print("sweep-plugin: %d of %d runs flagged" % (flagged, o.count))


if __name__ == "__main__":
    main()
