"""Attention heatmaps as plotly figures: every layer × head at a glance, and one head up close.

Shape contract (as in BertViz, checked by `check_attention` with clear ValueErrors):
  a stack of attention weights is `(L, H, Q, K)` = (layers, heads, query tokens, key tokens);
  one map is `(Q, K)`. Row q holds how much query token q attends to each key token, so rows sum
  to 1 and every value lies in [0, 1]. `query_tokens` has Q entries, `key_tokens` has K.

Token display: every token and every piece of text goes through ``viz.text`` (``escape_token``, ``escape_text``).

Colours: one scale on 0..1 for both figures (``COLORSCALE``, black to orange): perceptually ordered, colour-blind
safe, its strongest colour ≥ 3:1 against a light and a dark page, and it keeps its contrast on a projector.
Backgrounds are transparent and text is mid-grey, so the figures read on light and dark pages alike.

Overview encoding (size and draw speed): ONE heatmap trace of one big uint8 matrix. Weights are
stored as whole percent (0..100), so the hover shows the weight as "%{z}%" with no per-cell text;
tiles are separated by cells holding a gap value (101) that the colour scale paints transparent
(a uint8 array cannot hold NaN). The axes are categorical with one unique, compact label per
row/column ("L2 query 5: Haus", "H3 key 7: house"); the hover shows those two labels and the weight.
Hovering a gap cell shows "(gap)" and "weight 101%" (uint8 has no NaN, so plotly cannot skip it).
Size for 6 × 8 × 32 × 32: ~57k cells = ~76 KB of base64 plus ~10 KB of labels; if long tokens would
push the labels past a budget, they fall back to positions only ("L2 query 5").

Masked positions (``causal=True``, the decoder's self-attention, §3.1): cell (i, j) with key j after query i
is drawn from the mask, never from its value (which is exactly 0): one grey path shape over those cells,
listed in the legend beside the colour bar as "masked". The overview's payload grows by that path only
(about 2·T short commands per tile); its hover adds one line on what grey means. The detail's hover says
"masked: −∞ before the softmax" on exactly those cells, and, given ``predicts``, which token each row predicts.

Detail view: float32 z, zmin 0 / zmax 1, tokens at numeric positions with tickvals/ticktext (plotly
merges repeated category labels), per-cell customdata for the hover "query → key: weight".
Titles and axis labels are escaped too (no markup from the caller).

Marks on a drawn figure (the Head analysis tab's): ``mark_off`` shades switched-off heads' tiles on an overview;
``add_title_line`` and ``rescale_detail`` give a detail map a second title line and colours from 0 to its maximum.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz.axes import bare_axis
from viz.margins import COLORBAR_XPAD
from viz.text import escape_text, escape_token
from viz.vocab import TEXT_COLOR, TRANSPARENT

# Inferno's first two thirds (plotly.colors.sequential.Inferno's stops 0–6): black to orange, lightness rising
# monotonically (CIELAB L* 0 to 60; Viridis spans 15 to 92), colour-blind safe. Its top, the strongest weight, is ≥ 3:1
# against the page in light and dark (WCAG 1.4.11: 3.16:1 on white, 4.72:1 on #27272a); Viridis's yellow was 1.26:1 on
# white (tests/test_mark_contrast.py)
_INFERNO = "#000004 #1b0c41 #4a0c6b #781c6d #a52c60 #cf4446 #ed6925".split()
COLORSCALE: tuple[tuple[float, str], ...] = tuple((i / (len(_INFERNO) - 1), c) for i, c in enumerate(_INFERNO))

_LEVELS = 100  # overview stores round(weight * 100) as uint8: whole percent, error <= 0.005
_GAP = _LEVELS + 1  # cell value between tiles; painted transparent by _OVERVIEW_COLORSCALE
_OVERVIEW_COLORSCALE = [[p * _LEVELS / _GAP, c] for p, c in COLORSCALE] + [
    [(_LEVELS + 0.5) / _GAP, TRANSPARENT],
    [1.0, TRANSPARENT],
]
_ROW_PX = 120  # overview height per layer row
_BAND_PX = 14  # blank band above each tile row, room for the "L1 H1" tile labels
_OVERVIEW_TOKEN_LEN = 16  # tokens are shortened harder in the overview hover labels
_OVERVIEW_LABEL_BUDGET = 14_000  # characters of row/column labels before falling back to positions only
# The overview's row and column labels begin "L<layer> query " and "H<head> key " (1-based); the page script
# (assets/web/overview.js, given these patterns by app.py) reads a clicked tile's layer and head from them.
LAYER_LABEL = r"^L(\d+) query "
HEAD_LABEL = r"^H(\d+) key "

_NDIM_NAMES = {2: "(Q, K)", 3: "(H, Q, K)", 4: "(L, H, Q, K)"}


def check_attention(
    weights, query_tokens: Sequence[str], key_tokens: Sequence[str], *, ndim: int | None = None
) -> np.ndarray:
    """Check weights `(..., Q, K)` against the tokens; return them as a float32 array.

    `ndim` (optional) also demands that many dimensions: 4 for `(L, H, Q, K)`, 2 for `(Q, K)`.
    Raises ValueError when the array is not numeric, has the wrong number of dimensions, is empty,
    holds NaN/inf or values outside [0, 1], or when Q != len(query_tokens) or K != len(key_tokens).
    """
    arr = np.asarray(weights)
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"attention weights must be a numeric array, got dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        name = _NDIM_NAMES.get(ndim, f"{ndim}-D")
        raise ValueError(f"attention weights must have shape {name}, got {arr.ndim}-D shape {arr.shape}")
    if arr.ndim < 2:
        raise ValueError(f"attention weights must be at least 2-D (Q, K), got shape {arr.shape}")
    for name, tokens in (("query_tokens", query_tokens), ("key_tokens", key_tokens)):
        if isinstance(tokens, str) or not isinstance(tokens, Sequence):
            raise ValueError(f"{name} must be a list of token strings, got {type(tokens).__name__}")
    n_q, n_k = arr.shape[-2:]
    if n_q != len(query_tokens):
        raise ValueError(
            f"attention weights have {n_q} query rows (shape {arr.shape}, axis -2) "
            f"but {len(query_tokens)} query_tokens were given"
        )
    if n_k != len(key_tokens):
        raise ValueError(
            f"attention weights have {n_k} key columns (shape {arr.shape}, axis -1) "
            f"but {len(key_tokens)} key_tokens were given"
        )
    if arr.size == 0:
        raise ValueError(f"attention weights are empty: shape {arr.shape}")
    arr = arr.astype(np.float32, copy=False)
    if not np.isfinite(arr).all():
        raise ValueError("attention weights contain NaN or infinity")
    lo, hi = float(arr.min()), float(arr.max())
    if lo < -1e-3 or hi > 1 + 1e-3:
        raise ValueError(f"attention weights must lie in [0, 1] (softmax output), got min {lo:.4g}, max {hi:.4g}")
    return arr


def _base_layout(title: str, height: int, template: dict | None = None) -> dict:
    """Layout shared by both figures: transparent, grey text, tight margins, responsive width.

    An explicit (small) template keeps plotly's default one (~7 KB, light-theme colours) out of the JSON.
    """
    return dict(
        template=template or dict(layout=dict(hovermode="closest")),
        title=dict(text=escape_text(title), x=0, xref="paper", xanchor="left", font=dict(size=14)),
        height=height,
        autosize=True,
        margin=dict(l=8, r=8, t=40 if title else 12, b=8),
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        font=dict(color=TEXT_COLOR, size=12),
    )


def _clean_axis(**extra) -> dict:
    """An axis with no grid, zero line or border, its tick labels drawn as they are (``bare_axis``); tick labels
    decided by the caller."""
    return bare_axis(**extra)


WEIGHT_TICKS = (0, 0.25, 0.5, 0.75, 1)  # the weight colour bar's ticks (a map's colour range is 0…1)


def weight_bar_html(label: str = "colour: attention weight") -> str:
    """The maps' colour bar (``COLORSCALE`` on 0…1, ``WEIGHT_TICKS``) as HTML, for several maps shown together on one
    scale (the Why tab's two): the page's own text, at its own size (app.css ``.attn-weight-bar``)."""
    stops = ", ".join(f"{colour} {at * 100:g}%" for at, colour in COLORSCALE)
    ticks = "".join(f'<span style="left: {v * 100:g}%">{v:g}</span>' for v in WEIGHT_TICKS)
    return (f'<div class="attn-weight-bar" role="img" aria-label="{label}: 0 to 1, black to orange">'
            f'<span class="attn-weight-label">{label}</span>'
            f'<span class="attn-weight-ramp" style="background: linear-gradient(to right, {stops})">'
            f'<span class="attn-weight-ticks">{ticks}</span></span></div>')


def _colorbar(tickvals: Sequence[float], title: str = "weight") -> dict:
    return dict(
        title=dict(text=title, side="right"),
        tickvals=list(tickvals),
        ticktext=[f"{v:g}" for v in WEIGHT_TICKS],
        thickness=12,
        outlinewidth=0,
        ticklabeloverflow="allow",  # see viz.axes.bare_axis
        x=1,  # at the plot area's right edge and xpad beyond it, whatever its width (viz.margins)
        xpad=COLORBAR_XPAD,
    )


MASKED_COLOR = "#888888"  # mid grey, outside the scale: 3.54:1 on white, 4.20:1 on the dark theme's #27272a
MASKED_NAME = "masked<br>(−∞ before<br>the softmax)"  # the legend entry, beside the colour bar
MASKED_HOVER = "masked: −∞ before the softmax (a key after the query)"


def _staircase(n: int, x0: float, y0: float) -> str:
    """The cells above the diagonal (key j > query i) of an n × n map whose cell (0, 0) is centred at (x0, y0),
    in axis units, as one closed SVG sub-path: along the top edge, down the right edge, then up the stairs."""
    if n < 2:
        return ""
    stairs = "".join(f"H{x0 + i + 0.5:g}V{y0 + i - 0.5:g}" for i in range(n - 2, -1, -1))
    return f"M{x0 + 0.5:g},{y0 - 0.5:g}H{x0 + n - 0.5:g}V{y0 + n - 1.5:g}{stairs}Z"


def _mask_layout(path: str, layout: dict, heatmap: dict) -> None:
    """Add the masked cells (``path``) as a grey shape with a legend entry below the colour bar."""
    layout["shapes"] = [dict(type="path", path=path, xref="x", yref="y", fillcolor=MASKED_COLOR, line=dict(width=0),
                             layer="above", showlegend=True, name=MASKED_NAME)]
    layout["showlegend"] = True
    layout["legend"] = dict(x=1, xanchor="left", y=0, yanchor="bottom", bgcolor=TRANSPARENT, font=dict(size=10),
                            itemclick=False, itemdoubleclick=False)
    heatmap["colorbar"].update(len=0.7, y=1, yanchor="top")


def _check_square(w: np.ndarray) -> None:
    if w.shape[-1] != w.shape[-2]:
        raise ValueError(f"masked (causal) attention must be square (Q = K), got shape {w.shape}")


def _gap_label(i: int) -> str:
    """The i-th label of a cell between tiles: "(gap)" made unique by invisible zero-width spaces."""
    return "(gap)" + "\u200b" * i


def _overview_labels(
    n_layers: int, n_heads: int, band: int, q_text: list[str], k_text: list[str]
) -> tuple[list[str], list[str]]:
    """Unique category labels: y per row (band rows, then queries), x per column (keys, gap)."""
    y: list[str] = []
    x: list[str] = []
    for layer in range(n_layers):
        # gap rows need unique names too (a categorical axis merges equal ones)
        y += [_gap_label(layer * band + r) for r in range(band)]
        y += [f"L{layer + 1} query {i}{t}" for i, t in enumerate(q_text)]
    for head in range(n_heads):
        if head:
            x.append(_gap_label(head))
        x += [f"H{head + 1} key {j}{t}" for j, t in enumerate(k_text)]
    return x, y


def overview_figure(
    weights, query_tokens: Sequence[str], key_tokens: Sequence[str], title: str = "", *, causal: bool = False
) -> go.Figure:
    """All layers × heads of `weights` `(L, H, Q, K)` as one heatmap: rows = layers, columns = heads.

    Layer 1 is the top tile row; each tile is labelled "L{l} H{h}" (1-based). One colour scale for all
    tiles; the weights are stored as whole percent (uint8), so they round-trip within 0.005.
    `causal`: the maps are masked (key j > query i never seen), drawn grey (see the module docstring).
    """
    return go.Figure(overview_spec(weights, query_tokens, key_tokens, title, causal=causal))


def overview_spec(
    weights, query_tokens: Sequence[str], key_tokens: Sequence[str], title: str = "", *, causal: bool = False
) -> dict:
    """`overview_figure` as a plain dict (numpy arrays inside), for `viz.encode.plotly_json`.

    The app sends this without building a `go.Figure`: plotly's validation of ~2,000 labels and 48
    annotations costs more than the model's whole forward pass.
    """
    w = check_attention(weights, query_tokens, key_tokens, ndim=4)  # (L, H, Q, K)
    if causal:
        _check_square(w)
    n_layers, n_heads, n_q, n_k = w.shape
    band = max(1, math.ceil(_BAND_PX * n_q / (_ROW_PX - _BAND_PX)))  # blank rows above each tile row
    rows, cols = n_layers * (band + n_q), n_heads * (n_k + 1) - 1

    grid = np.full((n_layers, band + n_q, n_heads, n_k + 1), _GAP, dtype=np.uint8)  # (L, band+Q, H, K+1)
    pct = np.clip(np.rint(w * _LEVELS), 0, _LEVELS).astype(np.uint8)  # (L, H, Q, K)
    grid[:, band:, :, :n_k] = pct.transpose(0, 2, 1, 3)  # (L, Q, H, K)
    z = np.ascontiguousarray(grid.reshape(rows, cols + 1)[:, :cols])  # (rows, cols), last gap column dropped

    q_text = [": " + escape_token(t, _OVERVIEW_TOKEN_LEN) for t in query_tokens]
    k_text = [": " + escape_token(t, _OVERVIEW_TOKEN_LEN) for t in key_tokens]
    x, y = _overview_labels(n_layers, n_heads, band, q_text, k_text)
    if sum(map(len, x)) + sum(map(len, y)) > _OVERVIEW_LABEL_BUDGET:  # long sentences: positions only
        x, y = _overview_labels(n_layers, n_heads, band, [""] * n_q, [""] * n_k)

    heatmap = dict(
        type="heatmap",
        z=z,
        x=x,
        y=y,
        zmin=0,
        zmax=_GAP,
        colorscale=_OVERVIEW_COLORSCALE,
        colorbar=_colorbar([0, 25, 50, 75, 100]),
        hovertemplate="%{y}<br>%{x}<br>weight %{z}%<extra></extra>",
    )
    annotations = [
        dict(text=f"L{layer + 1} H{head + 1}", x=head * (n_k + 1) - 0.5, y=layer * (band + n_q) + band - 0.5)
        for layer in range(n_layers)
        for head in range(n_heads)
    ]
    # one set of defaults instead of repeating them on every tile label
    label_defaults = dict(xref="x", yref="y", xanchor="left", yanchor="bottom", showarrow=False, font=dict(size=10))
    layout = _base_layout(
        title,
        height=_ROW_PX * n_layers + (52 if title else 24),
        template=dict(layout=dict(annotationdefaults=label_defaults)),
    )
    layout.update(
        annotations=annotations,
        xaxis=_clean_axis(type="category", showticklabels=False, range=[-0.5, cols - 0.5], constrain="domain"),
        yaxis=_clean_axis(
            type="category",
            showticklabels=False,
            range=[rows - 0.5, -0.5],  # reversed: layer 1 on top
            scaleanchor="x",
            scaleratio=1,
            constrain="domain",  # square cells
        ),
    )
    if causal:  # every tile's cells above its diagonal, as one path; category axes take positions as numbers
        tiles = (_staircase(n_q, head * (n_k + 1), layer * (band + n_q) + band)
                 for layer in range(n_layers) for head in range(n_heads))
        _mask_layout("".join(tiles), layout, heatmap)
        heatmap["hovertemplate"] = heatmap["hovertemplate"].replace("<extra>", "<br>(grey: masked)<extra>")
    return dict(data=[heatmap], layout=layout)


def detail_figure(
    weights2d, query_tokens: Sequence[str], key_tokens: Sequence[str], title: str = "", **options
) -> go.Figure:
    """One attention map `(Q, K)` (one head, or the mean over heads) with the tokens on the axes.

    Tokens sit at numeric positions 0..n-1 (tickvals/ticktext), so a repeated word keeps its own
    row/column; rows = query tokens (row 0 on top), columns = key tokens; colour range 0..1.
    `options`: `query_label` and `key_label` (the axis titles), `causal` and `predicts` (see `detail_spec`).
    """
    return go.Figure(detail_spec(weights2d, query_tokens, key_tokens, title, **options))


def detail_spec(
    weights2d,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str = "",
    *,
    query_label: str = "query (attending) token",
    key_label: str = "key (attended) token",
    causal: bool = False,
    predicts: Sequence[str] | None = None,
    query_start: int = 0,
    key_start: int = 0,
    subtitle: str = "",
    bar_title: str = "weight",
) -> dict:
    """`detail_figure` as a plain dict (numpy arrays inside), for `viz.encode.plotly_json`.

    `causal`: cells with key j > query i are masked (grey, hover "masked: −∞ before the softmax").
    `predicts`: per query row, the token that row predicts (decoder rows, §3.1: row i is fed token i and
    predicts token i+1), named in the hover.
    `query_start`, `key_start`: the sentence positions of the first row and column (a window of a longer
    map, ``viz.views.attention.focus``): rows and columns sit at their own positions, on the axes and in the hover.
    `subtitle`: a second, smaller title line (what a focused map leaves out).
    `bar_title`: the colour bar's title ("": none; plotly then draws the bar without measuring it whole, ~5 ms less
    a draw in Chromium).
    """
    w = check_attention(weights2d, query_tokens, key_tokens, ndim=2)  # (Q, K) float32
    if causal:
        _check_square(w)
    n_q, n_k = w.shape
    q_text = [escape_token(t) for t in query_tokens]
    k_text = [escape_token(t) for t in key_tokens]
    notes = _cell_notes(n_q, n_k, causal, predicts)  # (Q, K) extra hover lines, or None
    # (Q, K, 4) per cell: query text, key text, query position, key position (and the notes, if any). With
    # ticktext set, plotly's %{x}/%{y} would show the tick text, so the positions travel here too.
    customdata = np.empty((n_q, n_k, 4 if notes is None else 5), dtype=object)
    customdata[:, :, 0] = np.array(q_text, dtype=object)[:, None]
    customdata[:, :, 1] = np.array(k_text, dtype=object)[None, :]
    q_pos, k_pos = np.arange(query_start, query_start + n_q), np.arange(key_start, key_start + n_k)
    customdata[:, :, 2] = q_pos[:, None]
    customdata[:, :, 3] = k_pos[None, :]
    if notes is not None:
        customdata[:, :, 4] = notes

    heatmap = dict(
        type="heatmap",
        z=w,
        x=k_pos,
        y=q_pos,
        zmin=0,
        zmax=1,
        colorscale=[list(stop) for stop in COLORSCALE],
        colorbar=_colorbar(WEIGHT_TICKS, bar_title),
        customdata=customdata,
        hovertemplate="%{customdata[0]} → %{customdata[1]}: %{z:.3f}"
        "<br>query %{customdata[2]} → key %{customdata[3]}" + ("" if notes is None else "%{customdata[4]}")
        + "<extra></extra>",
    )
    cell_px = 28 if max(n_q, n_k) <= 24 else 18
    layout = _base_layout(title, height=int(min(900, max(360, cell_px * n_q + 140))))
    layout.update(
        xaxis=_clean_axis(
            title=dict(text=escape_text(key_label)),
            tickmode="array",
            tickvals=k_pos.tolist(),
            ticktext=k_text,
            range=[key_start - 0.5, key_start + n_k - 0.5],
            automargin=True,
        ),
        yaxis=_clean_axis(
            title=dict(text=escape_text(query_label)),
            tickmode="array",
            tickvals=q_pos.tolist(),
            ticktext=q_text,
            range=[query_start + n_q - 0.5, query_start - 0.5],  # reversed: the first row on top
            automargin=True,
        ),
    )
    if causal and n_q > 1:
        _mask_layout(_staircase(n_q, key_start, query_start), layout, heatmap)
    if subtitle:
        layout["title"]["subtitle"] = dict(text=escape_text(subtitle), font=dict(size=12))
        layout["margin"]["t"] += 22
    return dict(data=[heatmap], layout=layout)


def _cell_notes(n_q: int, n_k: int, causal: bool, predicts: Sequence[str] | None) -> np.ndarray | None:
    """(Q, K) hover lines for the detail: which token the cell's row predicts, and whether the cell is masked."""
    if not causal and predicts is None:
        return None
    notes = np.full((n_q, n_k), "", dtype=object)
    if predicts is not None:
        if isinstance(predicts, str) or len(predicts) != n_q:
            raise ValueError(f"predicts must name one token per query row ({n_q}), got {predicts!r:.80}")
        notes += np.array([f"<br>this row predicts: {escape_token(t)}" for t in predicts], dtype=object)[:, None]
    if causal:
        notes[np.triu_indices(n_q, k=1, m=n_k)] += "<br>" + MASKED_HOVER
    return notes


# -------------------------------------------------------------------------------------- marks on a drawn figure
OFF_COLOUR = "#ff2d55"  # a switched-off head's tile (the page frames the chosen tile in the same colour)


def mark_off(figure: dict, off: list[tuple[int, int]]) -> None:
    """Shade the tiles of the switched-off (layer, head)s (1-based) on a finished overview figure (the plain-JSON
    dict of ``overview_spec``) and write "off" on them; the tiles are found by the overview's own row and column
    labels (``LAYER_LABEL``, ``HEAD_LABEL``), as the page does."""
    trace = next(t for t in figure["data"] if t.get("type") == "heatmap")

    def span(labels, pattern: str, n: int) -> tuple[float, float]:  # category axis: a label's index is its place
        at = [i for i, label in enumerate(labels) if (m := re.match(pattern, str(label))) and int(m.group(1)) == n]
        return at[0] - 0.5, at[-1] + 0.5

    layout = figure["layout"]
    for layer, head in off:
        (x0, x1), (y0, y1) = span(trace["x"], HEAD_LABEL, head), span(trace["y"], LAYER_LABEL, layer)
        layout.setdefault("shapes", []).append(dict(
            type="rect", name=f"L{layer} H{head} off", xref="x", yref="y", x0=x0, x1=x1, y0=y0, y1=y1,
            fillcolor="rgba(0,0,0,0.55)", line=dict(color=OFF_COLOUR, width=2), layer="above"))
        layout.setdefault("annotations", []).append(dict(
            text="off", xref="x", yref="y", x=(x0 + x1) / 2, y=(y0 + y1) / 2, showarrow=False,
            font=dict(color="#ffffff", size=11)))


def add_title_line(spec: dict, line: str) -> None:
    """Add ``line`` (plain text) under a detail figure's title, with the room it takes."""
    spec["layout"]["title"]["text"] += "<br>" + html.escape(line, quote=False)
    spec["layout"]["margin"]["t"] += 18


def rescale_detail(spec: dict, top: float) -> None:
    """Colour a detail heatmap from 0 to ``top`` instead of 0 to 1: rolled-out maps spread thin (a 0.1 maximum
    is common), which the 0–1 range paints as one dark blank."""
    heatmap = spec["data"][0]
    ticks = [0.0, top / 2, top]
    heatmap.update(zmax=top)
    heatmap["colorbar"].update(tickvals=ticks, ticktext=[f"{t:.2f}" for t in ticks])
