#!/usr/bin/env python3
"""Plot strong-scaling efficiency from `heptane bench scale --csv` output.

    plot_scale.py SCALE.csv OUT.svg

Self-contained SVG: x = GPUs (1, 2, 4, ...), y = efficiency T(1) / (P T(P)) in %, one line per
system (the rows with ranks = 1 give T(1)); the issue's targets (90 % on 2, 85 % on 4) marked.
"""
import csv
import sys
from collections import defaultdict

from svg_lines import draw_series, write_svg

COLOURS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#ff7f0e"]


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    t = defaultdict(dict)  # system -> ranks -> ms per iteration
    with open(argv[1], newline="") as f:
        for r in csv.DictReader(f):
            t[r["spec"]][int(r["ranks"])] = float(r["iter_ms"])
    eff = {}
    for spec, by_p in t.items():
        if 1 not in by_p:
            continue
        n = int(spec.split(":")[0].split("x")[0]) * int(spec.split("x")[1]) * int(spec.split("x")[2])
        label = f"{spec.split(':')[0]} ({n / 1e6:.1f} M cells)"
        eff[label] = {p: 100 * by_p[1] / (p * tp) for p, tp in sorted(by_p.items())}
    ps = sorted({p for e in eff.values() for p in e})
    W, H, L, R, T, B = 900, 480, 70, 280, 40, 60
    ylo, yhi = 0, 105
    px = lambda p: L + (ps.index(p) / max(1, len(ps) - 1)) * (W - L - R)
    py = lambda y: T + (1 - (y - ylo) / (yhi - ylo)) * (H - T - B)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="15">BiCGStab strong scaling: efficiency T(1) / (P T(P)), '
         f'%</text>']
    for y in range(0, 101, 20):
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 8}" y="{py(y) + 4:.1f}" text-anchor="end">{y}</text>')
    for p in ps:
        o.append(f'<text x="{px(p):.1f}" y="{H - B + 18}" text-anchor="middle">{p}</text>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 15}" text-anchor="middle">GPUs</text>')
    for p, target in ((2, 90), (4, 85)):
        if p in ps:
            o.append(f'<line x1="{px(p) - 14:.1f}" x2="{px(p) + 14:.1f}" y1="{py(target):.1f}" '
                     f'y2="{py(target):.1f}" stroke="black" stroke-width="2"/>')
            o.append(f'<text x="{px(p) - 18:.1f}" y="{py(target) + 4:.1f}" text-anchor="end">'
                     f'target {target} %</text>')
    draw_series(o, [(label, pts.items()) for label, pts in sorted(eff.items())], px, py, W - R, T,
                COLOURS, radius=3)
    write_svg(o, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
