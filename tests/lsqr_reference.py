#!/usr/bin/python3
"""SciPy reference for heptane's LSQR (tests/test_lsqr_scipy.cpp), run at test time.

    lsqr_reference.py --data DIR --out FILE [--run PROGRAM [ARGS...]]

Runs scipy.sparse.linalg.lsqr on illc1033 and well1033 (DIR/<name>.mtx, DIR/<name>_rhs1.mtx)
for several parameter sets, writes the results (istop, itn, the norms and x) to FILE, then
runs PROGRAM (the heptane test program) with HEPTANE_LSQR_REFERENCE=FILE and exits with its
status. Exits 77 (ctest: skipped) with the reason when scipy cannot be imported by this
interpreter or DIR is missing, so a missing reference is never reported as a pass.

Rounding spread. For each case SciPy is also run 15 more times with every entry of b
multiplied by (1 + 2^-53 z), z ~ N(0, 1) from a seeded generator: changes of about half a
unit in the last place, the size of the rounding differences between two implementations
(summation order in the products and norms). LSQR on these ill-conditioned matrices loses
orthogonality, and then the iteration at which a tolerance is met moves under such changes
even within SciPy (well1033 at atol = btol = 1e-8: 185 to 189; illc1033: by tens). The
range [itn_min, itn_max] over the 16 runs is written next to SciPy's itn so the test can tell
a count decided by rounding from a real disagreement.
"""
import argparse
import os
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--run", nargs=argparse.REMAINDER)
    a = p.parse_args()

    try:
        import numpy as np
        import scipy
        import scipy.io
        import scipy.sparse.linalg as sla
    except ImportError as e:
        print(f"SKIPPED: {sys.executable} cannot import numpy/scipy ({e}); "
              "install python3-scipy (apt) to run the LSQR reference test")
        return 77
    if not os.path.exists(os.path.join(a.data, "illc1033.mtx")):
        print(f"SKIPPED: the real-matrix folder {a.data} (illc1033.mtx) is missing")
        return 77

    # name: (damp, atol, btol, conlim, iter_lim, x0) -- x0 None or a constant
    cases = {
        "tol_1e-8": (0.0, 1e-8, 1e-8, 1e8, 10000, None),
        "damped": (0.1, 1e-10, 1e-10, 1e8, None, None),
        "damped_strong": (1.0, 1e-8, 1e-8, 1e8, None, None),
        "iter_lim_20": (0.0, 1e-6, 1e-6, 1e8, 20, None),
        "x0_damped": (0.1, 1e-10, 1e-10, 1e8, None, 0.1),
    }
    lines = [f"# scipy {scipy.__version__}, numpy {np.__version__}"]
    for matrix in ("illc1033", "well1033"):
        A = scipy.io.mmread(os.path.join(a.data, matrix + ".mtx")).tocsr()
        b = np.asarray(scipy.io.mmread(os.path.join(a.data, matrix + "_rhs1.mtx")),
                       dtype=float).ravel()
        m, n = A.shape
        for name, (damp, atol, btol, conlim, iter_lim, x0c) in cases.items():
            x0 = None if x0c is None else np.full(n, x0c)
            kw = dict(damp=damp, atol=atol, btol=btol, conlim=conlim, iter_lim=iter_lim, x0=x0)
            r = sla.lsqr(A, b, **kw)
            rng = np.random.default_rng(20240601)
            itns = [r[2]] + [sla.lsqr(A, b * (1 + 2.0**-53 * rng.standard_normal(m)), **kw)[2]
                             for _ in range(15)]
            lines.append(f"case {name} {matrix} {damp!r} {atol!r} {btol!r} {conlim!r} "
                         f"{-1 if iter_lim is None else iter_lim} "
                         f"{'none' if x0c is None else repr(x0c)}")
            lines.append("scipy {} {} {} {} {}".format(
                r[1], r[2], min(itns), max(itns),
                " ".join(repr(float(v)) for v in (r[3], r[4], r[5], r[6], r[7], r[8]))))
            lines.append(f"x {n} " + " ".join(repr(float(v)) for v in r[0]))
            print(f"{matrix} {name}: istop {r[1]} itn {r[2]} (spread {min(itns)}..{max(itns)}) "
                  f"r1norm {r[3]:.6e}")
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if not a.run:
        return 0
    env = dict(os.environ, HEPTANE_LSQR_REFERENCE=a.out)
    sys.stdout.flush()
    return subprocess.run(a.run, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
