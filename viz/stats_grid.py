"""The Head analysis tab's grid: per kind of attention a layers × heads grid coloured by one statistic of the heads'
maps, each cell labelled with the head's role (short; the hover gives it in full).

Every cell's customdata is [kind, layer, head, role] (1-based), so that a click can name the head (the page script,
assets/web/heads.js, reads it).
Colours: shares on 0..1 and entropy from 0 in the maps' scale (viz.heatmaps.COLORSCALE), the offset diverging around 0.
Inputs are plain arrays and role names (``model.probes.analysis`` computes them); this module imports neither torch
nor gradio. Transparent backgrounds, mid-grey text; titles and labels escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

import numpy as np

from viz.axes import bare_axis
from viz.heatmaps import COLORSCALE
from viz.vocab import KIND_LABELS, TEXT_COLOR, TRANSPARENT

ROLE_SHORT = {  # cell text, a word each (escaped: plotly reads it as markup); the hover gives the full role
    "EOS-sink": "EOS", "start-sink": "&lt;s&gt;", "previous-token": "prev", "next-token": "next", "self": "self",
    "punctuation": "punct", "alignment": "align", "broad": "broad", "mixed": "mixed", "no data": "",
}
# RdBu, its ends ≥ 3:1 on light and dark (viz.inside)
DIVERGING = [[0.0, "#3f7fd0"], [0.25, "#67a9cf"], [0.5, "#f7f7f7"], [0.75, "#ef8a62"], [1.0, "#e0464f"]]
_CELL_PX, _PANEL_GAP_PX, _TOP_PX = 30, 46, 40
CELL_TEXT_PX = 12  # presentation mode draws it at 16 px (assets/web/app.css)
# The colour bar lies under the grids, across them: on a 390-px phone eight columns then keep ~34 px each, room
# for a 12-px word ("broad", "mixed"); beside them it took ~60 px of the width.
_BAR_PX = 64


def _color_range(stat: str, values: np.ndarray) -> tuple[float, float, list]:
    """(cmin, cmax, colorscale): shares on 0..1, entropy from 0, offset diverging around 0."""
    finite = values[np.isfinite(values)]
    top = float(np.abs(finite).max()) if finite.size else 1.0
    if stat == "offset":
        m = max(1.0, math.ceil(top))
        return -m, m, DIVERGING
    sequential = [list(stop) for stop in COLORSCALE]
    if stat == "entropy":
        return 0.0, max(1.0, math.ceil(top * 2) / 2), sequential
    return 0.0, 1.0, sequential


def stats_grid_spec(values: Mapping[str, np.ndarray], roles: Mapping[str, list[list[str]]], stat: str,
                    stat_label: str, title: str = "") -> dict:
    """One panel per kind of ``values`` (kind -> (L, H) means of ``stat``, NaN where no row was counted), in its
    order: rows = layers 1..N top down, columns = heads 1..h, each cell labelled with ``roles[kind][layer][head]``."""
    kinds = list(values)
    n_layers, n_heads = values[kinds[0]].shape
    cmin, cmax, colorscale = _color_range(stat, np.stack([values[k] for k in kinds]))
    panel_px = n_layers * _CELL_PX
    plot_px = len(kinds) * (panel_px + _PANEL_GAP_PX)  # the y domains are fractions of it (inside the margins)
    height = _TOP_PX + plot_px + _BAR_PX
    data, annotations, layout = [], [], {}
    for i, kind in enumerate(kinds):
        top = i * (panel_px + _PANEL_GAP_PX) + _PANEL_GAP_PX - 8  # px below the plot area's top
        y0, y1 = 1 - (top + panel_px) / plot_px, 1 - top / plot_px
        suffix = "" if i == 0 else str(i + 1)
        customdata = np.empty((n_layers, n_heads, 4), dtype=object)  # kind, layer, head, full role
        for layer in range(n_layers):
            for head in range(n_heads):
                customdata[layer, head] = [kind, layer + 1, head + 1, roles[kind][layer][head]]
        data.append(dict(
            type="heatmap",
            z=values[kind].astype(np.float32),
            x=np.arange(1, n_heads + 1),
            y=np.arange(1, n_layers + 1),
            xaxis=f"x{suffix}",
            yaxis=f"y{suffix}",
            coloraxis="coloraxis",
            text=[[ROLE_SHORT.get(r, r) for r in row] for row in roles[kind]],
            texttemplate="%{text}",
            textfont=dict(size=CELL_TEXT_PX),
            customdata=customdata,
            xgap=2,
            ygap=2,
            hovertemplate=f"{html.escape(KIND_LABELS[kind])}<br>layer %{{customdata[1]}} · head %{{customdata[2]}}"
            f"<br>{html.escape(stat_label)}: %{{z:.3f}}<br>role: %{{customdata[3]}}<extra></extra>",
        ))
        axis = bare_axis(fixedrange=True)
        layout[f"xaxis{suffix}"] = dict(axis, domain=[0, 1], anchor=f"y{suffix}", tickmode="array",
                                        tickvals=list(range(1, n_heads + 1)), side="top",
                                        ticktext=[f"H{h}" for h in range(1, n_heads + 1)])
        layout[f"yaxis{suffix}"] = dict(axis, domain=[y0, y1], anchor=f"x{suffix}", autorange="reversed",
                                        automargin=True, tickmode="array", tickvals=list(range(1, n_layers + 1)),
                                        ticktext=[f"L{layer}" for layer in range(1, n_layers + 1)])
        annotations.append(dict(text=html.escape(KIND_LABELS[kind]), xref="paper", yref="paper", x=0, y=y1,
                                yshift=22, xanchor="left", yanchor="bottom", showarrow=False, font=dict(size=13)))
    layout.update(
        title=dict(text=html.escape(title), x=0, xanchor="left", font=dict(size=14)),
        height=height,
        autosize=True,
        margin=dict(l=8, r=8, t=_TOP_PX, b=_BAR_PX),
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        font=dict(color=TEXT_COLOR, size=12),
        coloraxis=dict(cmin=cmin, cmax=cmax, colorscale=colorscale,
                       colorbar=dict(title=dict(text=html.escape(stat), side="right"), thickness=12, outlinewidth=0,
                                     orientation="h", x=0, xanchor="left", len=1, y=-12 / plot_px, yanchor="top")),
        annotations=annotations,
        template=dict(layout=dict(hovermode="closest")),
        meta=dict(grid=dict(cell=_CELL_PX, gap=_PANEL_GAP_PX)),  # the page lays the panels side by side (heads.js)
    )
    return dict(data=data, layout=layout)
