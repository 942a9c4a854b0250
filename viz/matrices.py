"""Figure specs for Equation (1) as whole matrices: a `model.probes.matrices.HeadMatrices` -> plotly specs, in reading
order, every cell's value on hover:

  projections_spec   X -> Q = X W^Q_i + b, K = X W^K_i + b, V = X W^V_i + b   (cross: K, V from the encoder output)
  stage_spec         one of the four (queries × keys) maps: Q Kᵀ, × scale, + M (the mask), softmax (rows sum to 1)
  output_spec        head_i = A V, Concat(head_1..h), · W^O + b -> MultiHead

The first three maps share one diverging colour range (the raw scores'), so the scaling is seen as the colours
fading; the softmax has the Attention tab's scale on 0..1. Masked cells (decoder self-attention: a key after its
query, −∞ before the softmax) are covered grey and hatched, with a legend entry, as the Attention tab's close-up
draws them grey. Every trace whose rows are the queries carries ``meta = QUERY_ROWS``: the page script
(assets/web/inside.js) opens the one-query view on a clicked row of those. The tab's query is outlined.
Arrays and tokens in, dicts out: no torch, no gradio (look and helpers: ``viz.inside``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from viz.axes import bare_axis
from viz.heatmaps import MASKED_COLOR, MASKED_HOVER, _staircase
from viz.inside import DIVERGING, HIGHLIGHT, TOKEN_LEN, WEIGHT_SCALE, _bands, _key, _layout, _ref, _title
from viz.text import escape_token
from viz.vocab import KIND_LABELS, TEXT_COLOR, TRANSPARENT

if TYPE_CHECKING:  # viz never imports torch at run time
    from model.probes.matrices import HeadMatrices

STAGES = ("scores", "scaled", "masked", "weights")  # the four (queries × keys) maps, in Equation (1)'s order
QUERY_ROWS = "query rows"  # a trace's meta: its rows are the queries (a click opens the one-query view)
MASKED_LEGEND = "masked: −∞ (grey, hatched)"
HATCH_COLOR = "rgba(60,60,60,0.55)"
_TOP = 84  # px above the plot: a title of three short lines (the figures are narrow on a phone)
SHORT_KINDS = {"encoder_self": "encoder self", "decoder_self": "decoder self (masked)", "cross": "encoder–decoder"}
_CELL_PX = 22  # px per row of a (queries × keys) map, within the bounds below
_MAP_PX = (220, 560)


def _tok(token: str) -> str:
    return escape_token(token, TOKEN_LEN)


def _where(hm: HeadMatrices) -> str:
    return f"{KIND_LABELS[hm.kind]} · layer {hm.layer} · head {hm.head}"


def _scale_text(hm: HeadMatrices) -> str:
    """"÷ √d_k: × 1/√24 = × 0.204", or the factor that replaced it."""
    if hm.scaled_as_trained:
        return f"÷ √d<sub>k</sub>: × 1/√{hm.d_k} = × {hm.scale:.3g}"
    return f"× {hm.scale:.3g} (the chosen factor, in place of 1/√{hm.d_k} = {hm.model_scale:.3g})"


def _rows_hover(tokens: Sequence[str], n_cols: int, what: str) -> tuple[np.ndarray, str]:
    """(rows, n_cols) customdata with each row's "j “token”", and a hover naming the cell's dimension."""
    rows = np.array([f"{j} “{_tok(t)}”" for j, t in enumerate(tokens)], dtype=object)
    return np.repeat(rows[:, None], n_cols, axis=1), f"%{{customdata}} · dim %{{x}}: %{{z:.3f}}<extra>{what}</extra>"


def _matrix(z, i: int, tokens: Sequence[str], what: str, *, query_rows: bool, bound: float | None = None) -> dict:
    """A (rows × dims) matrix in panel ``i``: diverging, symmetric about 0, the row's token and dim on hover."""
    z = np.asarray(z, dtype=np.float32)
    bound = bound or float(np.abs(z).max()) or 1.0
    custom, hover = _rows_hover(tokens, z.shape[1], what)
    xr, yr = _ref(i)
    trace = dict(type="heatmap", z=z, x=np.arange(z.shape[1]), y=np.arange(z.shape[0]), xaxis=xr, yaxis=yr,
                 zmin=-bound, zmax=bound, colorscale=DIVERGING, showscale=False, customdata=custom,
                 hovertemplate=hover)
    if query_rows:
        trace["meta"] = QUERY_ROWS
    return trace


def _axes(layout: dict, i: int, x_domain, y_domain, tokens: Sequence[str] | None, n_rows: int) -> None:
    """Panel i: rows top to bottom, token labels on the left when given, no x labels (dims: hover)."""
    xr, yr = _ref(i)
    layout[_key("xaxis", i)] = bare_axis(domain=list(x_domain), anchor=yr, showticklabels=False)
    y = dict(domain=list(y_domain), anchor=xr, range=[n_rows - 0.5, -0.5], showticklabels=tokens is not None)
    if tokens is not None:
        y.update(tickmode="array", tickvals=list(range(n_rows)), ticktext=[_tok(t) for t in tokens], automargin=True)
    layout[_key("yaxis", i)] = bare_axis(**y)


def _row_box(i: int, row: int) -> dict:
    xr, yr = _ref(i)
    return dict(type="rect", xref=f"{xr} domain", yref=yr, x0=0, x1=1, y0=row - 0.5, y1=row + 0.5,
                line=dict(color=HIGHLIGHT, width=2), fillcolor=TRANSPARENT, layer="above")


def _band_height(n_rows: int) -> int:
    return int(min(_MAP_PX[1], max(60, 16 * n_rows)))


# ------------------------------------------------------------------------------------------- X -> Q, K, V
def projections_spec(hm: HeadMatrices, query: int | None = None) -> dict:
    """X -> Q, K, V with their shapes, bands stacked top to bottom (they read on a phone too): X (cross: the
    decoder's X, then the encoder output), then Q | K | V side by side."""
    n_q, n, d, dk, i = len(hm.query_tokens), len(hm.key_tokens), hm.d_model, hm.d_k, hm.head
    cross = hm.kind == "cross"
    w = lambda name: f"W<sup>{name}</sup><sub>{i}</sub>"  # noqa: E731
    data = [_matrix(hm.x_q, 1, hm.query_tokens, "X", query_rows=True)]
    titles = [_title(f"X{' (decoder)' if cross else ''} · {n_q} × {d}", 1)]
    heights = [_band_height(n_q)]
    if cross:
        data.append(_matrix(hm.x_kv, 2, hm.key_tokens, "encoder output", query_rows=False))
        titles.append(_title(f"the encoder output · {n} × {d}", 2))
        heights.append(_band_height(n))
    first = len(data) + 1  # Q, K, V: panels first … first + 2
    data += [_matrix(hm.q, first, hm.query_tokens, "Q", query_rows=True),
             _matrix(hm.k, first + 1, hm.key_tokens, "K", query_rows=not cross),
             _matrix(hm.v, first + 2, hm.key_tokens, "V", query_rows=not cross)]
    titles += [_title(f"Q · {n_q} × {dk}", first), _title(f"K · {n} × {dk}", first + 1),
               _title(f"V · {n} × {dk}", first + 2)]
    heights.append(_band_height(max(n_q, n)))
    total, domains = _bands(heights, gap=30)
    how = f'Q = X {w("Q")} + b; K, V: {w("K")}, {w("V")}' + (" on the encoder output" if cross else " likewise")
    titles.append(_title(f'X → Q, K, V: every position at once<br><span style="font-size:12px">{how}</span><br>'
                         f'<span style="font-size:12px">{_where(hm)}</span>'))
    layout = _layout(total + _TOP + 8, top=_TOP, annotations=titles,
                     shapes=[_row_box(p, query) for p in (1, first)] if query is not None else [])
    _axes(layout, 1, (0.0, 1.0), domains[0], hm.query_tokens, n_q)
    if cross:
        _axes(layout, 2, (0.0, 1.0), domains[1], hm.key_tokens, n)
    for j, (x_domain, rows) in enumerate((((0.0, 0.3), n_q), ((0.36, 0.66), n), ((0.72, 1.0), n))):
        _axes(layout, first + j, x_domain, domains[-1], hm.query_tokens if j == 0 else None, rows)
    return dict(data=data, layout=layout)


# --------------------------------------------------------------------------------- the (queries × keys) maps
def stage_values(hm: HeadMatrices, stage: str) -> np.ndarray:
    """(Q, n) float32: what one stage's map shows (the "masked" stage: masked cells NaN, as −∞ is not drawn)."""
    if stage == "scores":
        return hm.scores
    if stage == "scaled":
        return hm.scaled
    if stage == "masked":
        return np.where(hm.masked, np.float32(np.nan), hm.scaled).astype(np.float32)
    if stage == "weights":
        return hm.weights
    raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")


def score_bound(hm: HeadMatrices) -> float:
    """The colour range ±bound the three score maps share: the largest raw |q·k| over the allowed cells."""
    allowed = hm.scores[~hm.masked]
    return float(np.abs(allowed).max()) if allowed.size else 1.0


def _stage_title(hm: HeadMatrices, stage: str) -> str:
    """Three short lines (the figures are narrow): the step, its shape or what it did, which head."""
    n_q, n = len(hm.query_tokens), len(hm.key_tokens)
    allowed = hm.scores[~hm.masked].astype(np.float64)
    small = '<br><span style="font-size:12px">{}</span>'
    if stage == "scores":
        name, note = "① S = Q K<sup>T</sup>", f"{n_q} × {n}: queries × keys · std {allowed.std():.2f}"
    elif stage == "scaled":
        name = "② ÷ √d<sub>k</sub>" if hm.scaled_as_trained else f"② × {hm.scale:.3g} (not 1/√d<sub>k</sub>)"
        note = (f"× 1/√{hm.d_k} = × {hm.scale:.3g}" if hm.scaled_as_trained else "the chosen factor") + \
            f" · std {allowed.std() * hm.scale:.2f}"
    elif stage == "masked":
        name = "③ + M, the mask"
        note = (f"−∞ on each key after its query: {int(hm.masked.sum())} cells" if hm.masked.any()
                else "nothing masked here (M = 0)")
    else:
        rows = hm.weights.astype(np.float64).sum(-1)
        name, note = "④ A = softmax, row by row", f"each row sums to 1 (±{np.abs(rows - 1).max():.0e})"
    return name + small.format(note) + small.format(f"{SHORT_KINDS[hm.kind]} · layer {hm.layer} · head {hm.head}")


def _hatch(n: int) -> str:
    """Diagonal strokes over the cells above the diagonal of an n × n map (cell (0, 0) centred at (0, 0)), between
    the line through the staircase's outer corners (x − y = 1) and the map's top and right edges."""
    strokes = []
    for c in range(0, 2 * n - 2):
        x0, y0 = (c + 1) / 2, (c - 1) / 2
        x1, y1 = (c + 0.5, -0.5) if c + 0.5 <= n - 0.5 else (n - 0.5, c - n + 0.5)
        if x1 - x0 > 1e-9:
            strokes.append(f"M{x0:g},{y0:g}L{x1:g},{y1:g}")
    return "".join(strokes)


def _mask_shapes(hm: HeadMatrices) -> list[dict]:
    """The masked cells grey, then hatched; the grey one in the legend."""
    n = len(hm.key_tokens)
    if not hm.masked.any() or n < 2:
        return []
    grey = dict(type="path", path=_staircase(n, 0, 0), xref="x", yref="y", fillcolor=MASKED_COLOR,
                line=dict(width=0), layer="above", showlegend=True, name=MASKED_LEGEND)
    hatch = dict(type="path", path=_hatch(n), xref="x", yref="y", line=dict(color=HATCH_COLOR, width=1.2),
                 layer="above")
    return [grey, hatch]


def stage_spec(hm: HeadMatrices, stage: str, query: int | None = None) -> dict:
    """One (queries × keys) map of Equation (1): ``stage`` one of ``STAGES``; ``query`` outlined."""
    z = stage_values(hm, stage)
    n_q, n = z.shape
    q_text, k_text = [_tok(t) for t in hm.query_tokens], [_tok(t) for t in hm.key_tokens]
    custom = np.empty((n_q, n, 3), dtype=object)
    custom[:, :, 0] = np.array([f"{j} “{t}”" for j, t in enumerate(q_text)], dtype=object)[:, None]
    custom[:, :, 1] = np.array([f"{j} “{t}”" for j, t in enumerate(k_text)], dtype=object)[None, :]
    custom[:, :, 2] = ""
    if hm.masked.any():
        custom[:, :, 2][hm.masked] = "<br>" + MASKED_HOVER
    bound = score_bound(hm)
    colours = (dict(zmin=0, zmax=1, colorscale=WEIGHT_SCALE) if stage == "weights" else
               dict(zmin=-bound, zmax=bound, colorscale=DIVERGING))
    if stage == "masked" and hm.masked.any():
        custom[:, :, 2][hm.masked] = "<br>−∞ (masked: a key after the query)"
    heat = dict(type="heatmap", z=z, x=np.arange(n), y=np.arange(n_q), customdata=custom, meta=QUERY_ROWS,
                hovertemplate="query %{customdata[0]} → key %{customdata[1]}: %{z:.4f}%{customdata[2]}"
                              "<extra></extra>", hoverongaps=True,
                colorbar=dict(thickness=8, outlinewidth=0, len=0.9, x=1, xpad=4, tickfont=dict(size=11)), **colours)
    plot_h = int(min(_MAP_PX[1], max(_MAP_PX[0], _CELL_PX * n_q)))
    shapes = _mask_shapes(hm) if stage in ("masked", "weights") else []
    if query is not None:
        shapes.append(_row_box(1, query))
    legend = any(s.get("showlegend") for s in shapes)  # the masked cells' entry, at the figure's foot
    layout = _layout(plot_h + _TOP + 80 + 28 * legend, top=_TOP,
                     annotations=[_title(_stage_title(hm, stage))], shapes=shapes, showlegend=legend,
                     legend=dict(orientation="h", x=0, xanchor="left", y=0, yanchor="bottom", yref="container",
                                 bgcolor=TRANSPARENT, itemclick=False, itemdoubleclick=False))
    layout["margin"]["b"] = 8 + 28 * legend
    layout["xaxis"] = bare_axis(tickmode="array", tickvals=list(range(n)), ticktext=k_text, range=[-0.5, n - 0.5],
                                automargin=True, tickangle=-60 if n > 6 else 0, title=dict(text="keys"))
    layout["yaxis"] = bare_axis(tickmode="array", tickvals=list(range(n_q)), ticktext=q_text,
                                range=[n_q - 0.5, -0.5], automargin=True, title=dict(text="queries"))
    return dict(data=[heat], layout=layout)


# ------------------------------------------------------------------------- A V -> Concat -> W^O -> MultiHead
def output_spec(hm: HeadMatrices, query: int | None = None) -> dict:
    """head_i = A V (Q × d_v), then Concat(head_1..h) (Q × h·d_v, head i's slice outlined), then · W^O + b, bands
    stacked top to bottom."""
    n_q, dk, h, d, i = len(hm.query_tokens), hm.d_k, hm.n_heads, hm.d_model, hm.head
    total, (head_band, cat_band, out_band) = _bands([_band_height(n_q)] * 3, gap=30)
    data = [_matrix(hm.output, 1, hm.query_tokens, f"head {i}", query_rows=True),
            _matrix(hm.concat, 2, hm.query_tokens, "Concat", query_rows=True),
            _matrix(hm.sublayer_output, 3, hm.query_tokens, "MultiHead", query_rows=True)]
    titles = [
        _title(f"head<sub>{i}</sub> = A V · {n_q} × {dk}", 1),
        _title(f"Concat(head<sub>1</sub>, …, head<sub>{h}</sub>) · {n_q} × {h * dk}", 2),
        _title(f"· W<sup>O</sup> + b → MultiHead · {n_q} × {d}", 3),
        _title(f'A V → head, then Concat → W<sup>O</sup><br><span style="font-size:12px">W<sup>O</sup>: '
               f'{h * dk} × {d}; head {i}\'s slice of Concat outlined</span><br>'
               f'<span style="font-size:12px">{_where(hm)}</span>'),
    ]
    cat = dict(xref="x2", yref="y2 domain", y0=0, y1=1)
    shapes = [dict(cat, type="rect", x0=(i - 1) * dk - 0.5, x1=i * dk - 0.5, line=dict(color=HIGHLIGHT, width=3),
                   fillcolor=TRANSPARENT)]
    shapes += [dict(cat, type="line", x0=j * dk - 0.5, x1=j * dk - 0.5, line=dict(width=1, color=TEXT_COLOR))
               for j in range(1, h)]
    if query is not None:
        shapes += [_row_box(p, query) for p in (1, 2, 3)]
    layout = _layout(total + _TOP + 8, top=_TOP, annotations=titles, shapes=shapes)
    _axes(layout, 1, (0.0, dk / (h * dk) * 2), head_band, hm.query_tokens, n_q)  # as wide as 2 of Concat's slices
    _axes(layout, 2, (0.0, 1.0), cat_band, hm.query_tokens, n_q)
    _axes(layout, 3, (0.0, 1.0), out_band, hm.query_tokens, n_q)
    return dict(data=data, layout=layout)
