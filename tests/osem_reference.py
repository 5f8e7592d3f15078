#!/usr/bin/env python3
"""NumPy reference for OSEM with given subsets (tests/cli_osem_mpirun.sh), run at test time.

    osem_reference.py A.mtx g.mtx ITERS "LAYOUT" OUT.mtx

LAYOUT: every subset's rows, 1-based ranges, subsets separated by " | " and ranges by ",",
e.g. "1..40,81..120 | 41..80,121..160" (what heptane mlem reports under mpirun). OSEM as
Hudson & Larkin: norm_s = A_s^T 1; f0 = sum(g) / sum(norm) where norm > 0, else 0; for each
subset in order: q = A_s f, c = g_s / q (0 where q = 0), b = A_s^T c, f = f * b / norm_s where
norm_s > 0 (a voxel the subset does not see keeps its value). Writes f (Matrix Market array)
and prints the final log-likelihood sum(g log(Af) - Af) over rows with Af > 0. Exits 77
(skipped) when numpy cannot be imported.
"""
import sys

try:
    import numpy as np
except ImportError:
    print("osem_reference: numpy not available to /usr/bin/python3: skipped")
    sys.exit(77)


def read_mm(path):
    with open(path) as f:
        header = f.readline().lower().split()
        lines = [ln for ln in f if ln.strip() and not ln.startswith("%")]
    size = [int(t) for t in lines[0].split()]
    body = np.array([[float(t) for t in ln.split()] for ln in lines[1:]])
    if header[2] == "array":
        return body[:, 0]
    rows, cols = size[0], size[1]
    r = body[:, 0].astype(np.int64) - 1
    c = body[:, 1].astype(np.int64) - 1
    return rows, cols, r, c, body[:, 2]


def main():
    a_path, g_path, iters, layout, out = sys.argv[1:6]
    rows, cols, r, c, v = read_mm(a_path)
    g = read_mm(g_path)
    assert g.shape[0] == rows
    subsets = []
    for part in layout.split("|"):
        sel = np.zeros(rows, dtype=bool)
        for rng in part.split(","):
            lo, hi = (int(t) for t in rng.strip().split(".."))
            sel[lo - 1:hi] = True
        subsets.append(sel)
    covered = np.sum([s.astype(int) for s in subsets], axis=0)
    assert np.all(covered == 1), "the subsets must cover every row once"

    def fwd(f, mask):  # (A f) on the rows of mask (others 0)
        q = np.zeros(rows)
        k = mask[r]
        np.add.at(q, r[k], v[k] * f[c[k]])
        return q

    def back(u, mask):  # A_s^T u
        b = np.zeros(cols)
        k = mask[r]
        np.add.at(b, c[k], v[k] * u[r[k]])
        return b

    norms = [back(np.ones(rows), s) for s in subsets]
    norm = np.sum(norms, axis=0)
    f = np.where(norm > 0, g.sum() / norm[norm > 0].sum(), 0.0)
    for _ in range(int(iters)):
        for s, ns in zip(subsets, norms):
            q = fwd(f, s)
            cq = np.zeros(rows)
            nz = s & (q != 0)
            cq[nz] = g[nz] / q[nz]
            b = back(cq, s)
            upd = ns > 0
            f[upd] = f[upd] * b[upd] / ns[upd]
    q = fwd(f, np.ones(rows, dtype=bool))
    pos = q > 0
    print("loglik %.17g" % np.sum(g[pos] * np.log(q[pos]) - q[pos]))
    with open(out, "w") as o:
        o.write("%%MatrixMarket matrix array real general\n%d 1\n" % cols)
        for x in f:
            o.write("%.17g\n" % x)


if __name__ == "__main__":
    main()
