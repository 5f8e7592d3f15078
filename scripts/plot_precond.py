#!/usr/bin/env python3
"""Stacked bars (SVG) of time to solution per system and preconditioner, from the CSVs that
`heptane bench precond --csv FILE` writes.

    plot_precond.py OUT.svg "title" LABEL=FILE.csv [LABEL=FILE.csv ...]

Each CSV row becomes one bar, grouped by system (the CSV's `system` column, in the order first
seen): operator build, preconditioner setup, the solve's iterations, and the rest of the
call's total (uploads, downloads, the true residual), labelled "LABEL (pc): N its, T ms". The
bars of a system share one scale, so a long and a short system stay readable side by side.
No plotting library needed.
"""
import csv
import sys

from svg_lines import write_svg

PARTS = [("operator_ms", "operator build", "#1f77b4"), ("pc_setup_ms", "preconditioner setup", "#ff7f0e"),
         ("solve_ms", "iterations", "#2ca02c"), (None, "rest of the total", "#bbbbbb")]


def read(label, path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            parts = [float(r[k]) for k, _, _ in PARTS if k]
            total = float(r["total_ms"])
            parts.append(max(0.0, total - sum(parts)))
            rows.append((r["system"], f'{label} ({r["solver"]})', int(r["iterations"]), total, parts,
                         r["converged"] == "1"))
    return rows


def main(argv):
    if len(argv) < 4 or any("=" not in a for a in argv[3:]):
        print(__doc__, file=sys.stderr)
        return 2
    out, title = argv[1], argv[2]
    rows = []
    for a in argv[3:]:
        label, path = a.split("=", 1)
        rows += read(label, path)
    systems = []
    for s, *_ in rows:
        if s not in systems:
            systems.append(s)
    W, L, T, bh = 900, 250, 56, 18
    n_bars = len(rows)
    H = T + n_bars * (bh + 4) + len(systems) * 44 + 20
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
         f'font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="10" y="22" font-size="14">{title}</text>']
    x = 10
    for _, name, colour in PARTS:  # legend
        o.append(f'<rect x="{x}" y="32" width="12" height="12" fill="{colour}"/>')
        o.append(f'<text x="{x + 16}" y="43">{name}</text>')
        x += 24 + 7 * len(name)
    y = T
    for s in systems:
        mine = [r for r in rows if r[0] == s]
        vmax = max(r[3] for r in mine) * 1.02
        px = lambda v: v / vmax * (W - L - 180)
        o.append(f'<text x="10" y="{y + 24}" font-weight="bold">{s}</text>')
        y += 32
        for _, label, its, total, parts, conv in mine:
            o.append(f'<text x="{L - 6}" y="{y + 13}" text-anchor="end">{label}</text>')
            xx = L
            for v, (_, _, colour) in zip(parts, PARTS):
                o.append(f'<rect x="{xx:.1f}" y="{y}" width="{px(v):.1f}" height="{bh}" fill="{colour}"/>')
                xx += px(v)
            note = f'{its} its, {total:.1f} ms' + ("" if conv else " (not converged)")
            o.append(f'<text x="{xx + 4:.1f}" y="{y + 13}">{note}</text>')
            y += bh + 4
        y += 12
    write_svg(o, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
