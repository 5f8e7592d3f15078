#!/usr/bin/env python3
"""Plot effective GB/s per format against matrix size from `heptane bench spmv --csv` output.

    plot_spmv.py BENCH.csv OUT.svg [--precision double] [--op Ax]

Writes a self-contained SVG (no plotting library needed): x = stored entries (log scale),
y = effective bandwidth as % of the copy bandwidth measured in the same run, one line per
format/kernel. Rows whose check did not pass are left out.
"""
import csv
import math
import sys
from collections import defaultdict

from svg_lines import draw_series, write_svg

COLOURS = ["#d62728", "#ff9896", "#1f77b4", "#aec7e8", "#2ca02c", "#98df8a", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000"]


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, out = argv[1], argv[2]
    prec = argv[argv.index("--precision") + 1] if "--precision" in argv else "double"
    op = argv[argv.index("--op") + 1] if "--op" in argv else "Ax"
    series = defaultdict(list)
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            if row["precision"] != prec or row["op"] != op or row["status"] != "ok":
                continue
            if row["format"] == "probe":
                continue
            name = row["format"] if row["format"] == "cusparse" else row["format"]
            label = f"{name} {row['kernel']}" if name != "cusparse" else row["kernel"]
            series[label].append((float(row["nnz"]), float(row["pct_copy"])))
    if not series:
        print("no rows matched", file=sys.stderr)
        return 1
    W, H, L, R, T, B = 900, 520, 70, 230, 40, 60
    xs = [x for s in series.values() for x, _ in s]
    lo, hi = math.log10(min(xs)), math.log10(max(xs))
    ymax = max(110.0, max(y for s in series.values() for _, y in s) + 5)
    px = lambda x: L + (math.log10(x) - lo) / (hi - lo) * (W - L - R)
    py = lambda y: T + (1 - y / ymax) * (H - T - B)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="15">SpMV effective bandwidth, {prec}, {op} '
         f'(% of the device copy bandwidth)</text>']
    for y in range(0, int(ymax) + 1, 20):
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 8}" y="{py(y) + 4:.1f}" text-anchor="end">{y}%</text>')
    for e in range(math.ceil(lo), math.floor(hi) + 1):
        o.append(f'<line x1="{px(10**e):.1f}" x2="{px(10**e):.1f}" y1="{T}" y2="{H - B}" '
                 f'stroke="#eee"/>')
        o.append(f'<text x="{px(10**e):.1f}" y="{H - B + 18}" text-anchor="middle">1e{e}</text>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 15}" text-anchor="middle">stored entries '
             f'(nnz)</text>')
    o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(100):.1f}" y2="{py(100):.1f}" '
             f'stroke="#444" stroke-dasharray="4 3"/>')
    draw_series(o, sorted(series.items()), px, py, W - R, T, COLOURS)
    write_svg(o, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
