#!/usr/bin/env python3
"""Plot BiCGStab time per iteration against N from `heptane bench solve --csv` output.

    plot_solve.py SOLVE.csv OUT.svg

Self-contained SVG: x = N (log), y = ms per iteration (log), one line per format/implementation,
and the floor (2 x matrix bytes + 15 x 8N over the copy bandwidth) of the BDIA-GH rows dashed.
"""
import csv
import math
import sys
from collections import defaultdict

from svg_lines import draw_series, write_svg

COLOURS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#ff7f0e"]


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    series = defaultdict(dict)
    floor = {}
    with open(argv[1], newline="") as f:
        for r in csv.DictReader(f):
            if float(r["per_it_ms"]) <= 0:
                continue
            n = float(r["n"]) * (1 + float(r["nnz"]) / 1e12)  # keep equal-N systems apart
            series[f"{r['format']} {r['impl']}"][n] = float(r["per_it_ms"])
            if r["format"] == "bdiagh" and float(r["floor_ms"]) > 0:
                floor[n] = float(r["floor_ms"])
    series["floor (BDIA-GH)"] = floor
    W, H, L, R, T, B = 900, 520, 70, 220, 40, 60
    xs = [x for s in series.values() for x in s]
    ys = [y for s in series.values() for y in s.values()]
    xlo, xhi = math.log10(min(xs)) - 0.05, math.log10(max(xs)) + 0.05
    ylo, yhi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    px = lambda x: L + (math.log10(x) - xlo) / (xhi - xlo) * (W - L - R)
    py = lambda y: T + (1 - (math.log10(y) - ylo) / (yhi - ylo)) * (H - T - B)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="15">BiCGStab time per iteration (ms, log) against N, '
         f'no preconditioner</text>']
    for e in range(ylo, yhi + 1):
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(10**e):.1f}" y2="{py(10**e):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 8}" y="{py(10**e) + 4:.1f}" text-anchor="end">{10**e:g}</text>')
    for n in sorted(set(int(round(x)) for x in xs)):
        o.append(f'<text x="{px(n):.1f}" y="{H - B + 18}" text-anchor="middle">{n // 1024}K</text>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 15}" text-anchor="middle">N (rows)</text>')
    draw_series(o, [(label, pts.items()) for label, pts in sorted(series.items())], px, py,
                W - R, T, COLOURS, dashed=lambda label: label.startswith("floor"))
    write_svg(o, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
