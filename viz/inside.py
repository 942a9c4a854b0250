"""Figure specs for "inside one head": a `model.probes.inside.HeadInside` -> plotly specs, one per step of §3.2.1–3.2.2.

Each labelled with the paper's symbol and its shape:
  projections_spec    (a) x -> q = x W^Q_i, K = x_kv W^K_i, V = x_kv W^V_i   (small heatmaps, values on hover)
  scores_spec         (b) q·k_j -> × scale -> mask (−∞) -> softmax α_j       (bars per key)
  head_output_spec    (c) V, α and α_j v_j, summed: head_i = Σ_j α_j v_j
  contributions_spec      α_j against ‖α_j v_j W^O_i‖ (Kobayashi et al. 2020), both normalised over the keys
  figure2_spec        (d) Figure 2 (right), live: h heads -> Concat -> W^O -> Sublayer(x) -> Add & Norm
  footnote4_spec          this head's softmax as trained, unscaled (× 1) and × the chosen factor
Specs are plain dicts (numpy inside) for `viz.encode.plotly_json`, like `viz.heatmaps.detail_spec`; the
presenter is `viz.views.inside_head`. Look as in viz.heatmaps: transparent backgrounds, mid-grey text;
titles are annotations, 16 px for the figure, 14 px per panel (a layout title makes Gradio reserve 100 px
above the plot), broken into lines that fit a 390-px phone (``viz.wrap``); panels are stacked in bands rather
than set side by side where their titles would not fit a phone. Signed vectors use a diverging blue–white–red
scale centred on 0, each panel its own symmetric range (the hover shows the value). Every token goes through
`escape_token`. Figure 2 reads bottom to top, like the paper's. Arrays and tokens in, dicts out: no torch, no
gradio.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from viz.axes import bare_axis
from viz.heatmaps import COLORSCALE
from viz.margins import widest_px
from viz.scaling import SCALED_COLOR, UNSCALED_COLOR
from viz.text import escape_token
from viz.vocab import KIND_LABELS, TEXT_COLOR, TRANSPARENT
from viz.wrap import fit_lines, lines, phone_width

if TYPE_CHECKING:  # viz never imports torch at run time
    from model.probes.inside import HeadInside

DIVERGING = [[0.0, "#3f7fd0"], [0.17, "#67a9cf"], [0.33, "#d1e5f0"], [0.5, "#f7f7f7"], [0.67, "#fddbc7"],
             [0.83, "#ef8a62"], [1.0, "#e0464f"]]  # ColorBrewer RdBu, blue = negative; its ends
# lightened to ≥ 3:1 against a dark page too (RdBu's were 2.5 and 2.2:1 on #27272a; 4.1:1 on white)
WEIGHT_SCALE = [list(stop) for stop in COLORSCALE]
FACTOR_COLOR = "#9C6ADE"  # the third case of footnote 4
MASKED_COLOR = "rgba(136,136,136,0.45)"
GRID = "rgba(136,136,136,0.2)"
HIGHLIGHT = "#E8701A"
TITLE_PX, FONT_PX, SUBTITLE_PX = 16, 14, 12
_TITLE_ROOM = 24  # px above a band that its title takes
_LINE = 18  # px per further line of a 14-px panel title
_LEGEND_ROW = 20  # px per legend line, between a figure title and the plot
_TOP = 72  # px above the plot: the two-line figure title, clear of the gr.Plot label badge (top-left, ~30 px)
_BADGE = 36  # of which the gr.Plot label badge's room
_TICK_PAD = 6  # px between tick labels and the plot area
TOKEN_LEN = 20  # characters of a token shown
KEY_ROW_PX = 17  # px a key's row in panel (a), up to 30 keys (13 past that)
_KEYS_AXIS = dict(type="category", autorange="reversed")  # one row per key, "j: token", row 0 on top


# ------------------------------------------------------------------------------------------------ shared
def _tok(token: str) -> str:
    return escape_token(token, TOKEN_LEN)


def _labels(tokens: Sequence[str]) -> list[str]:
    """Unique category labels "j: token" (a categorical axis would merge two equal tokens)."""
    return [f"{j}: {_tok(t)}" for j, t in enumerate(tokens)]


def _ref(i: int) -> tuple[str, str]:
    return ("x", "y") if i == 1 else (f"x{i}", f"y{i}")


def _key(axis: str, i: int) -> str:
    """Layout key of panel i's axis: "xaxis", "xaxis2", ..."""
    return axis if i == 1 else f"{axis}{i}"


def _title(text: str, i: int | None = None, shift: int = 0, right: bool = False) -> dict:
    """A title above panel ``i`` (or above the whole figure, ``shift`` px higher), from its left edge (or,
    ``right``, leftwards from its right edge): safe markup built here, tokens escaped by the caller."""
    xref, yref = (f"{_ref(i)[0]} domain", f"{_ref(i)[1]} domain") if i else ("paper", "paper")
    return dict(text=text, x=int(right), y=1, yshift=shift, xref=xref, yref=yref, yanchor="bottom",
                xanchor="right" if right else "left", align="right" if right else "left", showarrow=False,
                font=dict(size=TITLE_PX if i is None else FONT_PX))


def _figure_title(name: str, hi: HeadInside, shift: int = 0, width: float | None = None,
                  sub_px: int = SUBTITLE_PX) -> dict:
    """The figure's title: its name, and below it, smaller (``sub_px``), which head and query (so an exported image
    says), each broken into lines of at most ``width`` px (default: a phone's full plot width)."""
    width = phone_width() if width is None else width
    sub = fit_lines(_where(hi), sub_px, width).split("<br>")
    text = "<br>".join([fit_lines(name, TITLE_PX, width), *(f'<span style="font-size:{sub_px}px">{line}</span>'
                                                            for line in sub)])
    return _title(text, shift=shift)


def _top(figure_title: dict) -> int:
    """px above the plot for a ``_figure_title`` of that many lines (the badge's room, 20 px a title line, 16 a
    subtitle line)."""
    text = figure_title["text"]
    sub, larger = text.count(f"font-size:{SUBTITLE_PX}px"), text.count(f"font-size:{FONT_PX}px")
    return _BADGE + 20 * (lines(text) - sub - larger) + 16 * sub + 18 * larger


def _fit(text: str, width: float, font_px: int = FONT_PX) -> str:
    return fit_lines(text, font_px, width)


def _gap(base: int, *texts: str) -> int:
    """A band's gap: ``base`` px for one-line titles, ``_LINE`` more per further line of the longest."""
    return base + _LINE * (max(lines(t) for t in texts) - 1)


def _labels_px(labels: Sequence[str], font_px: int = FONT_PX) -> float:
    """Room that tick labels take left of the plot area (their widest, and the pad)."""
    return widest_px(labels, font_px) + _TICK_PAD


def _token_ticks(tokens: Sequence[str], width: float) -> dict:
    """A token axis's labels: flat where every one fits its column on a phone, else upright."""
    upright = widest_px(tokens, FONT_PX) + 4 > width / max(1, len(tokens))
    return dict(tickangle=-90 if upright else 0)


def _layout(height: int, top: int = _TOP, **extra) -> dict:
    arrows = dict(arrowcolor=TEXT_COLOR, axref="pixel", ayref="pixel", yanchor="middle", font=dict(size=FONT_PX))
    layout = dict(
        template=dict(layout=dict(hovermode="closest", annotationdefaults=arrows,
                                  shapedefaults=dict(line=dict(color=TEXT_COLOR)))), height=int(height), autosize=True,
        margin=dict(l=8, r=8, t=top, b=8), paper_bgcolor=TRANSPARENT, plot_bgcolor=TRANSPARENT,
        font=dict(color=TEXT_COLOR, size=FONT_PX), hoverlabel=dict(font=dict(size=FONT_PX)), showlegend=False,
    )
    layout.update(extra)
    return layout


def _bands(heights: Sequence[int], gap: int | Sequence[int]) -> tuple[int, list[tuple[float, float]]]:
    """Stack bands of ``heights`` px top to bottom, each below a ``gap`` px strip (one for all, or one per band)
    for its title and arrows: (total px, y domains as fractions of the plot area)."""
    gaps = [gap] * len(heights) if isinstance(gap, int) else list(gap)
    total = sum(heights) + sum(gaps)
    domains, top = [], total
    for h, g in zip(heights, gaps):
        top -= g
        domains.append(((top - h) / total, top / total))
        top -= h
    return total, domains


def _heat(z, i: int, hover: str, *, y=None, scale=None, zmin=None, zmax=None) -> dict:
    """One heatmap in panel ``i``; signed values on the diverging scale, symmetric about 0."""
    z = np.atleast_2d(np.asarray(z, dtype=np.float32))
    if scale is None:
        bound = float(np.abs(z).max()) or 1.0
        zmin, zmax, scale = -bound, bound, DIVERGING
    xr, yr = _ref(i)
    trace = dict(type="heatmap", z=z, x=np.arange(z.shape[1]), xaxis=xr, yaxis=yr, zmin=zmin, zmax=zmax,
                 colorscale=scale, showscale=False, hovertemplate=hover)
    if y is not None:
        trace["y"] = list(y)
    return trace


def _row_box(i: int, row0: float, row1: float, color: str = HIGHLIGHT, fill: str | None = None) -> dict:
    """An outlined (or filled) box over rows row0..row1 of panel ``i``, across its width."""
    xr, yr = _ref(i)
    return dict(type="rect", xref=f"{xr} domain", yref=yr, x0=0, x1=1, y0=row0 - 0.5, y1=row1 + 0.5,
                line=dict(color=color, width=0 if fill else 2.5), fillcolor=fill or TRANSPARENT, layer="above")


def _panel(layout: dict, i: int, x_domain, y_domain, **y_extra) -> None:
    """Place panel i's axes over ``x_domain`` × ``y_domain``; no tick labels unless ``y_extra`` asks."""
    xr, yr = _ref(i)
    layout[_key("xaxis", i)] = bare_axis(automargin=True, domain=list(x_domain), anchor=yr, showticklabels=False)
    layout[_key("yaxis", i)] = bare_axis(automargin=True, domain=list(y_domain), anchor=xr,
                                         **{"showticklabels": False, **y_extra})


def _symbol(name: str, hi: HeadInside) -> str:
    return f"W<sup>{name}</sup><sub>{hi.head}</sub>"


def _where(hi: HeadInside) -> str:
    return f"{KIND_LABELS[hi.kind]} · layer {hi.layer} · head {hi.head} · query {hi.query} “{_tok(hi.query_token)}”"


# ------------------------------------------------------------------------------------------ (a) projections
def projections_spec(hi: HeadInside) -> dict:
    """(a) x -> q (1 × d_k) and x_kv -> K, V (n × d_k): the head's projections, values on hover. Two bands, so that
    it is whole on a 1280×720 first screen beside the tab's controls for a sentence of up to ~10 keys (a longer one
    scrolls: ``KEY_ROW_PX`` a key): x beside q, then the keys' x beside their K and V (one row a key, named left of
    x; each title fits its column on a phone). Its texts are 14 px or more (presentation mode draws it 16/14 times
    larger: app.css)."""
    n, d, dk = len(hi.key_tokens), hi.d_model, hi.d_k
    keys = _labels(hi.key_tokens)
    row = KEY_ROW_PX if n <= 30 else 13
    width = phone_width(_labels_px(keys))
    source = "encoder output" if hi.kind == "cross" else "x at every key"  # (two lines in its column on a phone)
    x_q = "x (decoder)" if hi.kind == "cross" else "x"  # (at the query the subtitle names)
    columns = {1: (0.0, 0.7), 2: (0.75, 1.0), 3: (0.0, 0.5), 4: (0.54, 0.76), 5: (0.78, 1.0)}
    band = {1: 0, 2: 0, 3: 1, 4: 1, 5: 1}
    text = {1: f"{x_q} · 1 × {d}", 2: f"q · 1 × {dk}", 3: f"{source} · {n} × {d}", 4: f"K · {n} × {dk}",
            5: f"V · {n} × {dk}"}
    text = {i: _fit(t, width * (columns[i][1] - columns[i][0])) for i, t in text.items()}
    gaps = [_gap(30, *(text[i] for i in band if band[i] == b)) for b in range(2)]
    plot_h, rows = _bands([22, n * row], gap=gaps)
    data = [
        _heat(hi.x[None], 1, "dim %{x}: %{z:.3f}<extra>x</extra>"),
        _heat(hi.q[None], 2, "dim %{x}: %{z:.3f}<extra>q</extra>"),
        _heat(hi.x_kv, 3, "%{y} · dim %{x}: %{z:.3f}<extra>x_kv</extra>", y=keys),
        _heat(hi.k, 4, "%{y} · dim %{x}: %{z:.3f}<extra>K</extra>", y=keys),
        _heat(hi.v, 5, "%{y} · dim %{x}: %{z:.3f}<extra>V</extra>", y=keys),
    ]
    # the figure's title over the whole figure, from over the keys' names (a phone's full width: two lines)
    over_names = round(0.8 * widest_px(keys, FONT_PX))  # (the names' room as drawn: a little less)
    figure_title = _figure_title(f"(a) q = x {_symbol('Q', hi)} + b, K = x {_symbol('K', hi)} + b, "
                                 f"V = x {_symbol('V', hi)} + b", hi, sub_px=FONT_PX,
                                 width=phone_width(_labels_px(keys)) + over_names)
    figure_title["xshift"] = -over_names
    titles = [*(_title(text[i], i) for i in columns), figure_title]
    shapes = []
    if hi.kind != "cross":  # the query's own row among the keys
        shapes.append(_row_box(3, hi.query, hi.query))
    if hi.masked.any():
        first = int(np.argmax(hi.masked))
        shapes += [_row_box(i, first, n - 1, fill=MASKED_COLOR) for i in (4, 5)]
        titles.append(dict(text="masked", x=0.5, y=(first + n - 1) / 2, xref="x4 domain",
                           yref="y4", showarrow=False, font=dict(color="#ffffff"), bgcolor="rgba(70,70,70,0.9)"))
    top = _top(figure_title)
    layout = _layout(plot_h + top + 8, top=top, annotations=titles, shapes=shapes)
    for i in columns:  # the keys named left of x_kv (K and V, right of it, share its rows)
        keys_axis = dict(_KEYS_AXIS, showticklabels=i == 3, **({"dtick": 1} if row == KEY_ROW_PX else {}))  # (each key)
        _panel(layout, i, columns[i], rows[band[i]], **(keys_axis if i >= 3 else {}))
    return dict(data=data, layout=layout)


# --------------------------------------------------------------------------------- (b) scores to weights
def _bars(values, i: int, colors, hover: str, keys: list[str]) -> dict:
    xr, yr = _ref(i)
    return dict(type="bar", x=np.arange(len(keys)), y=np.asarray(values, dtype=np.float32), xaxis=xr, yaxis=yr,
                marker=dict(color=list(colors)), customdata=keys, hovertemplate=hover)


def scores_spec(hi: HeadInside) -> dict:
    """(b) one bar per key: q·k_j, then × scale, then the mask (−∞ on masked keys), then softmax α_j."""
    n, keys, masked = len(hi.key_tokens), _labels(hi.key_tokens), hi.masked
    scaled = hi.scores * hi.scale
    base = np.where(masked, MASKED_COLOR, SCALED_COLOR)
    top = int(np.argmax(hi.weights))
    scale_name = f"1/√d_k = 1/√{hi.d_k}" if hi.scaled_as_trained else "the chosen factor"
    mask_text = ("the mask: keys after the query → −∞ before the softmax" if masked.any()
                 else "the mask: none here (no future keys, no padding in one sentence)")
    data = [
        _bars(hi.scores, 1, base, "%{customdata}: q·k = %{y:.3f}<extra></extra>", keys),
        _bars(scaled, 2, base, "%{customdata}: %{y:.3f}<extra></extra>", keys),
        _bars(np.where(masked, 0, scaled), 3, np.where(masked, TRANSPARENT, SCALED_COLOR),
              "%{customdata}: %{y:.3f}<extra></extra>", keys),
        _bars(hi.weights, 4, np.where(np.arange(n) == top, HIGHLIGHT, SCALED_COLOR),
              "%{customdata}: α = %{y:.4f}<extra></extra>", keys),
    ]
    if masked.any():  # masked keys: a distinct "−∞" marker instead of a bar
        idx = np.flatnonzero(masked)
        data.append(dict(type="scatter", x=idx, y=np.zeros(len(idx), np.float32), xaxis="x3", yaxis="y3",
                         mode="markers+text", text=["−∞"] * len(idx), textposition="bottom center",
                         marker=dict(symbol="x-thin", size=12, line=dict(width=2, color=TEXT_COLOR)),
                         customdata=[keys[j] for j in idx],
                         hovertemplate="%{customdata}: masked: −∞ before the softmax<extra></extra>"))
    width = phone_width(_labels_px(["−0.25", "−100"]))  # the y axes' numbers left of the bars
    text = [
        f"q·k<sub>j</sub>, raw · 1 × {n} · std over the allowed keys {hi.score_std:.2f}, "
        f"√d_k = {math.sqrt(hi.d_k):.2f}",
        f"× {hi.scale:.4g} ({scale_name})",
        mask_text,
        f"softmax → α<sub>j</sub> · entropy {hi.entropy:.2f} nats (uniform: "
        f"{math.log(max(1, int((~masked).sum()))):.2f}) · largest {hi.max_weight:.3f} on “{_tok(hi.key_tokens[top])}”",
    ]
    text = [_fit(t, width) for t in text]
    figure_title = _figure_title("(b) scores to weights", hi, width=width)
    titles = [*(_title(t, i) for i, t in enumerate(text, start=1)), figure_title]
    ticktext = [_tok(t) for t in hi.key_tokens]
    ticks = _token_ticks(ticktext, width)
    below = 8 + (widest_px(ticktext, FONT_PX) if ticks["tickangle"] else 20)  # the bottom band's token labels
    plot_h, domains = _bands([110] * 4, gap=[_gap(36, t) for t in text])
    top_px = _top(figure_title)
    layout = _layout(plot_h + top_px + below, top=top_px, annotations=titles, bargap=0.25)
    for i, dom in enumerate(domains, start=1):
        xr, yr = _ref(i)
        bottom = i == 4
        layout[_key("xaxis", i)] = bare_axis(
            automargin=True, anchor=yr, matches=None if i == 1 else "x", range=[-0.5, n - 0.5], showticklabels=bottom,
            tickmode="array", tickvals=list(range(n)), ticktext=ticktext, **ticks)
        layout[_key("yaxis", i)] = dict(  # (its labels drawn as they are: viz.axes.bare_axis)
            domain=list(dom), anchor=xr, zeroline=True, zerolinecolor=TEXT_COLOR, showgrid=True, gridcolor=GRID,
            automargin=True, ticklabeloverflow="allow", **({"range": [0, 1.05]} if bottom else {}))
    if hi.kind != "cross":  # the query's own key
        layout["shapes"] = [dict(type="rect", xref="x", yref="paper", x0=hi.query - 0.5, x1=hi.query + 0.5, y0=0,
                                 y1=1, fillcolor="rgba(232,112,26,0.10)", line=dict(width=0), layer="below")]
    return dict(data=data, layout=layout)


# ------------------------------------------------------------------------------------- (c) the head output
def head_output_spec(hi: HeadInside) -> dict:
    """(c) V (n × d_v), α (n × 1) and α_j v_j (n × d_v), summed over the keys: head_i = Σ_j α_j v_j (1 × d_v)."""
    n, dk, keys = len(hi.key_tokens), hi.d_k, _labels(hi.key_tokens)
    weighted = hi.weights[:, None] * hi.v  # (n, d_v)
    row = 20 if n <= 30 else 13
    width = phone_width(_labels_px(keys))
    columns = {1: (0.0, 0.36), 2: (0.40, 0.50), 3: (0.56, 1.0), 4: (0.56, 1.0)}
    room = {1: 0.38, 2: 0.14, 3: 0.44, 4: 1.0}  # of the width, for each title: up to the next title
    text = {
        1: f"V · {n} × {dk}",
        2: f"α<br>{n} × 1",
        3: f"α<sub>j</sub> v<sub>j</sub> · {n} × {dk}",
        4: f"the rows summed: head<sub>{hi.head}</sub> = Σ<sub>j</sub> α<sub>j</sub> v<sub>j</sub> · 1 × {dk}",
    }
    text = {i: _fit(t, width * room[i]) for i, t in text.items()}
    plot_h, (top, bottom) = _bands([n * row, 26], gap=[_gap(30, text[1], text[2], text[3]), _gap(30, text[4])])
    data = [
        _heat(hi.v, 1, "%{y} · dim %{x}: %{z:.3f}<extra>v_j</extra>", y=keys),
        _heat(hi.weights[:, None], 2, "%{y}: α = %{z:.4f}<extra></extra>", y=keys, scale=WEIGHT_SCALE, zmin=0, zmax=1),
        _heat(weighted, 3, "%{y} · dim %{x}: %{z:.3f}<extra>α_j v_j</extra>", y=keys),
        _heat(hi.output[None], 4, "dim %{x}: %{z:.3f}<extra>head_i</extra>"),
    ]
    figure_title = _figure_title("(c) the head's output", hi, width=width)
    titles = [*(_title(text[i], i, right=i == 4) for i in text), figure_title]
    top_px = _top(figure_title)
    layout = _layout(plot_h + top_px + 8, top=top_px, annotations=titles)
    for i in columns:
        _panel(layout, i, columns[i], top if i < 4 else bottom, **(dict(_KEYS_AXIS, showticklabels=i == 1)
                                                                     if i < 4 else {}))
    if hi.masked.any():
        layout["shapes"] = [_row_box(i, int(np.argmax(hi.masked)), n - 1, fill=MASKED_COLOR) for i in (1, 3)]
    return dict(data=data, layout=layout)


# A series of grouped bars: its colour, and its hatching (the legend's sample hatched alike): colour is never the only
# channel (WCAG 1.4.1). Plain, diagonal lines, dots; white over the bar's colour, in light and dark alike
SERIES_HATCH = ("", "/", ".")


def _grouped_bars(hi: HeadInside, series: list[tuple[str, np.ndarray, str, str]], title: str) -> dict:
    """Bars per key, one group per series (name, values in [0, 1], colour, hover; hatched: ``SERIES_HATCH``), a
    legend under the title, one entry a line (or more: each fits a phone)."""
    n, keys = len(hi.key_tokens), _labels(hi.key_tokens)
    width = phone_width(_labels_px(["0.8"]))
    names = [_fit(name, width - 40) for name, *_ in series]  # less the legend's symbol
    data = [dict(type="bar", name=name, x=np.arange(n), y=np.asarray(y, np.float32), marker=dict(
                 color=color, pattern=dict(shape=shape, fillmode="overlay", fgcolor="#ffffff", fgopacity=0.7)),
                 customdata=keys, hovertemplate=hover)
            for name, (_, y, color, hover), shape in zip(names, series, SERIES_HATCH)]
    room = _LEGEND_ROW * sum(lines(name) for name in names) + 6
    legend = dict(orientation="v", x=0, xanchor="left", y=1.0, yanchor="bottom", bgcolor=TRANSPARENT)
    figure_title = _figure_title(title, hi, shift=room, width=width)
    ticktext = [_tok(t) for t in hi.key_tokens]
    ticks = _token_ticks(ticktext, width)
    below = widest_px(ticktext, FONT_PX) if ticks["tickangle"] else 20
    layout = _layout(400 + room + below, top=_top(figure_title) + room, annotations=[figure_title],
                     barmode="group", showlegend=True, legend=legend)
    layout["xaxis"] = bare_axis(automargin=True, tickmode="array", tickvals=list(range(n)), ticktext=ticktext,
                                range=[-0.5, n - 0.5], **ticks)
    layout["yaxis"] = dict(range=[0, 1.05], showgrid=True, gridcolor=GRID, automargin=True,
                           ticklabeloverflow="allow")  # (its labels drawn as they are: viz.axes.bare_axis)
    return dict(data=data, layout=layout)


def contributions_spec(hi: HeadInside) -> dict:
    """α_j against ‖α_j v_j W^O_i‖ / Σ (Kobayashi et al. 2020): how much each key moves the output."""
    return _grouped_bars(hi, [
        ("weight α<sub>j</sub>", hi.weights, SCALED_COLOR, "%{customdata}: α = %{y:.3f}<extra></extra>"),
        ("contribution ‖α<sub>j</sub> v<sub>j</sub> W<sup>O</sup><sub>i</sub>‖, normalised",
         hi.contributions_normalised, UNSCALED_COLOR, "%{customdata}: %{y:.3f} of the total<extra></extra>"),
    ], "weights vs contributions (Kobayashi et al. 2020)")


# ------------------------------------------------------------------------------- (d) Figure 2 (right), live
_BANDS_RIGHT, _RESIDUAL_X = 0.97, 0.985  # the bands end here (paper x); the residual line runs right of them
def figure2_spec(hi: HeadInside) -> dict:
    """(d) bottom to top: x -> the h heads' outputs -> Concat -> · W^O + b -> Sublayer(x) -> Add & Norm."""
    h, dk, d = hi.n_heads, hi.d_k, hi.d_model
    panel = {"out": 1, "sub": 2, "cat": 3, "heads": 4, "x": 5}  # top to bottom
    head_labels = [f"head {j + 1}" for j in range(h)]
    width = phone_width(_labels_px(head_labels))
    data = [
        _heat(hi.layer_output[None], panel["out"], "dim %{x}: %{z:.3f}<extra>LayerNorm</extra>"),
        _heat(hi.sublayer_output[None], panel["sub"], "dim %{x}: %{z:.3f}<extra>MultiHead</extra>"),
        _heat(hi.head_outputs.reshape(1, -1), panel["cat"], "dim %{x}: %{z:.3f}<extra>Concat</extra>"),
        _heat(hi.head_outputs, panel["heads"], "%{y} · dim %{x}: %{z:.3f}<extra></extra>", y=head_labels),
        _heat(hi.x[None], panel["x"], "dim %{x}: %{z:.3f}<extra>x</extra>"),
    ]
    text = {name: _fit(t, width * _BANDS_RIGHT) for name, t in {
        "out": f"Add & Norm: LayerNorm(x + Sublayer(x)) · 1 × {d} · the layer's attention output at "
               f"“{_tok(hi.query_token)}” (post-LN, §3.1)",
        "sub": f"Sublayer(x) = MultiHead = Concat(head<sub>1</sub>, …, head<sub>{h}</sub>) W<sup>O</sup> + b · 1 × {d}",
        "cat": f"Concat(head<sub>1</sub>, …, head<sub>{h}</sub>) · 1 × h·d_v = 1 × {h * dk}",
        "heads": f"head<sub>1</sub> … head<sub>{h}</sub> = softmax(q K<sup>T</sup> · {hi.scale:.3g}) V, per head · "
                 f"h × d_v = {h} × {dk} (head {hi.head} outlined)",
        "x": f"x: the sub-layer input at query {hi.query} “{_tok(hi.query_token)}” · 1 × {d}",
    }.items()}
    source = "the encoder output" if hi.kind == "cross" else "x"
    arrows = {  # the band each arrow points to -> its label; each arrow starts above the band below's title
        "heads": f"q = x W<sup>Q</sup><sub>i</sub>, K and V from {source} · each head: 1 × {dk}",
        "cat": f"Concat: {h} × {dk} → 1 × {h * dk}",
        "sub": f"· W<sup>O</sup> ({h * dk} × {d}) + b<sup>O</sup> → 1 × {d}",
        "out": f"+ x (residual, 1 × {d}), then LayerNorm → 1 × {d}",
    }
    label_x = 0.52  # the arrows' labels, right of the arrows (x = 0.5) and left of the residual line
    arrows = {upper: _fit(label, width * (_BANDS_RIGHT - label_x - 0.02)) for upper, label in arrows.items()}
    length = {upper: max(40, _LINE * lines(label) + 10) for upper, label in arrows.items()}
    below = dict(zip(list(panel)[:-1], list(panel)[1:]))  # the band under each band
    above = {under: upper for upper, under in below.items()}  # the arrow in a band's gap points to the band above
    gaps = [_gap(_TITLE_ROOM, text[name]) + (length[above[name]] if name in above else 0) for name in panel]
    plot_h, doms = _bands([26, 26, 26, 18 * h, 26], gaps)
    dom = dict(zip(panel, doms))
    figure_title = _figure_title("(d) Figure 2 (right), live", hi, width=width)
    titles = [*(_title(text[name], i) for name, i in panel.items()), figure_title]
    for upper, label in arrows.items():
        y, paper = dom[upper][0], dict(xref="paper", yref="paper")
        titles.append(dict(paper, x=0.5, y=y, ax=0, ay=length[upper], showarrow=True, arrowhead=2, arrowwidth=1.6,
                           text=""))
        titles.append(dict(paper, x=label_x, y=y - length[upper] / 2 / plot_h, xanchor="left", showarrow=False,
                           text=label))
    # the residual: x skips the heads and joins at Add & Norm (a line along the right edge, clear of the
    # "head 1 … head h" labels on the left and of the arrows' labels in the middle)
    x_mid, join = sum(dom["x"]) / 2, dom["out"][0] - 8 / plot_h
    shapes = [dict(type="path", xref="paper", yref="paper", line=dict(color=TEXT_COLOR, width=1.6, dash="dot"),
                   path=f"M {_BANDS_RIGHT},{x_mid:.4f} L {_RESIDUAL_X},{x_mid:.4f} L {_RESIDUAL_X},{join:.4f} "
                        f"L 0.9,{join:.4f}")]
    lo = hi.head - 1
    shapes.append(_row_box(panel["heads"], lo, lo))
    cat = dict(xref="x3", yref="y3 domain", y0=0, y1=1)  # the Concat strip: head i's slice outlined, slices split
    shapes.append(dict(cat, type="rect", x0=lo * dk - 0.5, x1=lo * dk + dk - 0.5, line=dict(color=HIGHLIGHT, width=3)))
    shapes += [dict(cat, type="line", x0=j * dk - 0.5, x1=j * dk - 0.5, line=dict(width=1)) for j in range(1, h)]
    top = _top(figure_title)
    layout = _layout(plot_h + top + 8, top=top, annotations=titles, shapes=shapes)
    for name, i in panel.items():
        _panel(layout, i, (0.0, _BANDS_RIGHT), dom[name],
               **(dict(_KEYS_AXIS, showticklabels=True) if name == "heads" else {}))
    return dict(data=data, layout=layout)


# ------------------------------------------------------------------------------------------- footnote 4
_CASE_COLORS = (SCALED_COLOR, UNSCALED_COLOR, FACTOR_COLOR)


def footnote4_spec(hi: HeadInside) -> dict:
    """This head's weights for the same q and K, scaled as trained, × 1 and × the factor (grouped bars)."""
    series = [(f"{html.escape(c.label)} · entropy {c.entropy:.2f} nats · largest {c.max_weight:.3f}", c.weights, color,
               f"%{{customdata}}: α = %{{y:.4f}}<extra>× {c.scale:.3g}</extra>")
              for c, color in zip(hi.scale_cases, _CASE_COLORS)]
    return _grouped_bars(hi, series, f"footnote 4 on this head: std(q·k) = {hi.score_std:.2f} over "
                         f"{int((~hi.masked).sum())} keys, √d_k = {math.sqrt(hi.d_k):.2f}")
