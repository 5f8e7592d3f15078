#!/usr/bin/env python3
"""Bar chart (SVG) of one '%' column of the markdown tables a `heptane bench` run printed.

    plot_bars.py BENCH.md COLUMN OUT.svg "title"

Each table row becomes a bar labelled by its first two cells; tables follow one another (e.g.
fp64 then fp32) and their rows are prefixed t1, t2, ... No plotting library needed.
"""
import sys


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    src, col, out, title = argv[1:5]
    bars, table, header = [], 0, None
    for line in open(src):
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            table += 1
            continue
        if set(cells[0]) <= set("-") or col not in header:
            continue
        v = cells[header.index(col)].rstrip("%")
        try:
            bars.append((f"t{table} {cells[0]} {cells[1].split(' (')[0]}", float(v)))
        except ValueError:
            pass
    W, L, T, bh = 760, 230, 40, 18
    H = T + len(bars) * (bh + 4) + 40
    vmax = max(110.0, max(v for _, v in bars))
    px = lambda v: L + v / vmax * (W - L - 30)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
         f'font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="10" y="22" font-size="14">{title}</text>']
    for g in range(0, int(vmax) + 1, 20):
        o.append(f'<line x1="{px(g):.1f}" x2="{px(g):.1f}" y1="{T}" y2="{H - 30}" stroke="#ddd"/>')
        o.append(f'<text x="{px(g):.1f}" y="{H - 14}" text-anchor="middle">{g}%</text>')
    for i, (label, v) in enumerate(bars):
        y = T + i * (bh + 4)
        o.append(f'<text x="{L - 6}" y="{y + 13}" text-anchor="end">{label}</text>')
        o.append(f'<rect x="{L}" y="{y}" width="{px(v) - L:.1f}" height="{bh}" fill="#1f77b4"/>')
        o.append(f'<text x="{px(v) + 4:.1f}" y="{y + 13}">{v:g}%</text>')
    o.append("</svg>")
    open(out, "w").write("\n".join(o) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
