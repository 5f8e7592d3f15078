"""Shared drawing of the self-contained SVG line plots (plot_spmv.py, plot_solve.py,
plot_scale.py): one polyline with dots per series, a legend on the right, and the file."""


def draw_series(o, series, px, py, legend_x, top, colours, radius=2.5, dashed=lambda label: False):
    """Append to `o` one line per (label, [(x, y), ...]) of `series` (in that order), with its
    legend entry at legend_x; `dashed(label)` marks the series drawn dashed."""
    for i, (label, pts) in enumerate(series):
        c = colours[i % len(colours)]
        dash = ' stroke-dasharray="5 4"' if dashed(label) else ""
        pp = sorted(pts)
        o.append(f'<polyline points="{" ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pp)}" '
                 f'fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        for x, y in pp:
            o.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{radius}" fill="{c}"/>')
        ly = top + 14 + i * 17
        o.append(f'<line x1="{legend_x + 12}" x2="{legend_x + 32}" y1="{ly - 4}" y2="{ly - 4}" '
                 f'stroke="{c}" stroke-width="3"{dash}/>')
        o.append(f'<text x="{legend_x + 38}" y="{ly}">{label}</text>')


def write_svg(o, path):
    """Close the SVG begun in `o` and write it to `path`."""
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
