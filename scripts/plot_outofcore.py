#!/usr/bin/env python3
"""Plot out-of-core product times against the resident fraction from `heptane bench spmv
--out-of-core --json` output.

    plot_outofcore.py RUN.json OUT.svg

Self-contained SVG: x = the share of the matrix's bytes resident on the device, y = ms per
product; per precision A x and A^T x (solid) and the floor (dashed: streamed bytes / pinned H2D
+ resident bytes and vectors / device copy, both measured in the run).
"""
import json
import sys

from svg_lines import draw_series, write_svg

COLOURS = ["#d62728", "#ff7f0e", "#7f7f7f", "#1f77b4", "#2ca02c", "#bcbd22"]


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        run = json.load(f)
    series = []
    for prec in dict.fromkeys(r["precision"] for r in run["runs"]):
        rows = [r for r in run["runs"] if r["precision"] == prec]
        series.append((f"{prec}: A x", [(r["resident_share"], 1e3 * r["ax_seconds"]) for r in rows]))
        series.append((f"{prec}: A^T x", [(r["resident_share"], 1e3 * r["atx_seconds"]) for r in rows]))
        series.append((f"{prec}: floor", [(r["resident_share"], 1e3 * r["ax_floor_seconds"]) for r in rows]))
    ymax = max(y for _, pts in series for _, y in pts) * 1.08
    W, H, L, R, T, B = 900, 480, 70, 230, 40, 60
    px = lambda x: L + x * (W - L - R)
    py = lambda y: T + (1 - y / ymax) * (H - T - B)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="15">Out-of-core product, ms, against the resident share '
         f'({run["device"]}, H2D {run["h2d_gb_per_s"]:.1f} GB/s)</text>']
    step = 10 ** len(str(int(ymax))) / 10
    y = 0.0
    while y <= ymax:
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 8}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += step
    for x in (0, 0.25, 0.5, 0.75, 1):
        o.append(f'<text x="{px(x):.1f}" y="{H - B + 18}" text-anchor="middle">{x:g}</text>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 15}" text-anchor="middle">share of the matrix '
             f'resident on the device</text>')
    draw_series(o, series, px, py, W - R, T, COLOURS, radius=3, dashed=lambda s: s.endswith("floor"))
    write_svg(o, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
