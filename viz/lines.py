"""The alignment (head) view: two columns of tokens and a line for each pair, as a plotly figure spec.

Query tokens stand in the left column, key tokens in the right one (token i at height i, row 0 on top,
placed by position so a repeated word keeps its own row). A line joins query q to key k; its opacity
is the attention weight w[q, k] of the chosen layer, for one head or for every head in its own colour.
For cross-attention this is the word alignment; like `viz.heatmaps`, rows attend to columns.

Encoding (plotly cannot vary opacity within one trace, and one trace per line is slow at 60 × 60):
- the opacity of a line is its weight rounded to the nearest tenth, ``round(w * LEVELS) / LEVELS``
  with ``LEVELS = 10``, so |opacity - weight| <= 0.05; lines that would round to 0 (w < 0.05) are not
  drawn (``THRESHOLD``);
- one ``scatter`` trace per (head, opacity level) holds all of its lines as segments
  x = [0, 1, None, ...], y = [q, k, None, ...]: at most LEVELS traces per head (80 for 8 heads), plus
  the two token columns and, with all heads, one legend entry per head (at most 90 traces). A softmax
  row has at most 1 / THRESHOLD = 20 weights >= 0.05, so a head draws at most 20 lines per query token;
- machine-readable: each line trace carries ``meta = {LINE_META: {"head": h (1-based), "level": n,
  "q": [...], "k": [...]}}``, the query and key index of each of its segments in order; its opacity
  is n / LEVELS, the alpha of its line colour (rgba): an opacity on the trace would be a group opacity,
  which Chromium composites as a dark veil over a dark page. The token columns carry
  ``meta = {TOKEN_META: "q" | "k"}`` and ``customdata`` = the token index (``LINE_META``, ``TOKEN_META``).
  The page script (assets/web/lines.js) reads these to show only one token's lines on hover or click: plotly
  draws each segment as its own ``path.js-line``, in this order, and the script hides the others.

Colours: eight hues of middle lightness, so that every line drawn at full strength is ≥ 3:1 against a light and a dark
page (``HEAD_COLORS``); head h takes colour h (cycling past 8 heads), the same in the one-head and all-heads views,
where each head also has its line style (``HEAD_DASHES``), the legend's sample too. A
weaker weight is drawn fainter (its opacity): that is the figure's message, not a mark to be read on its own.
Transparent background, mid-grey text at 14 px (a projector), token text escaped (`escape_token`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from viz.axes import bare_axis
from viz.heatmaps import check_attention
from viz.text import escape_text, escape_token
from viz.vocab import TEXT_COLOR, TRANSPARENT

LEVELS = 10  # opacity resolution: weights are drawn at the nearest tenth
THRESHOLD = 0.5 / LEVELS  # lines below this round to opacity 0 and are left out
ALL_HEADS = 0  # `head` value: every head, each in its own colour
# One hue per head, each ≥ 3:1 against white and against the dark theme's #27272a (WCAG 1.4.11; Okabe–Ito's orange, sky
# blue and yellow were 2.3, 2.3 and 1.3:1 on white): orange, blue, green, olive, purple, red, pink, grey
HEAD_COLORS = ("#C26A00", "#2E86C1", "#008B6B", "#8C8C3A", "#9467BD", "#E0475B", "#CC79A7", "#7F7F7F")
# … and, with every head drawn, a line style per head, its legend entry drawn in the same (colour is never the only
# channel, WCAG 1.4.1): solid, dots, dashes, long dashes, dash-dot, long dash-dot-dot, dash-dash-dot, dot pairs. In px
# (plotly scales its named dashes with the line's width; these stay the same in the legend's thicker sample)
HEAD_DASHES = ("solid", "2px,4px", "10px,5px", "20px,5px", "10px,4px,2px,4px", "20px,4px,2px,4px,2px,4px",
               "6px,3px,6px,3px,2px,6px", "2px,2px,2px,9px")
FONT_PX = 14
ROW_PX = 24  # vertical pitch of one token row
LEGEND_PX = 72  # bottom margin for the heads' legend: two rows of entries (a phone), under the axis titles' ends
LINE_PX = 2

# The page script's contract (assets/web/lines.js shows only a hovered or clicked token's lines): the names of the
# trace ``meta`` entries it reads.
LINE_META = "attnLines"  # on each line trace: {"head", "level", "q": [...], "k": [...]}
TOKEN_META = "attnTokens"  # on each token column: "q" or "k"; its customdata is the token index


def head_color(head: int, alpha: float | None = None) -> str:
    """Colour of head ``head`` (1-based); with ``alpha``, as rgba() with that opacity."""
    color = HEAD_COLORS[(head - 1) % len(HEAD_COLORS)]
    if alpha is None:
        return color
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:g})"


def head_dash(head: int) -> str:
    """Line style of head ``head`` (1-based) where every head is drawn (``HEAD_DASHES``, cycling past 8 heads)."""
    return HEAD_DASHES[(head - 1) % len(HEAD_DASHES)]


def _segments(q: np.ndarray, k: np.ndarray) -> tuple[list, list]:
    """Segment lists for plotly: x = [0, 1, None, ...], y = [q0, k0, None, q1, k1, None, ...]."""
    n = len(q)
    x = [0, 1, None] * n
    y: list = [None] * (3 * n)
    y[0::3], y[1::3] = q.tolist(), k.tolist()
    return x, y


def _line_traces(w: np.ndarray, heads: Sequence[int]) -> list[dict]:
    """w (H_shown, Q, K) of the heads numbered ``heads`` (1-based) -> one trace per (head, level); more than one
    head: each in its line style too."""
    level = np.rint(w.astype(np.float64) * LEVELS).astype(np.int64)  # (H_shown, Q, K), 0..LEVELS
    traces = []
    for i, head in enumerate(heads):
        for n in range(1, LEVELS + 1):
            q, k = np.nonzero(level[i] == n)  # row-major: segments ordered by query, then key
            if not len(q):
                continue
            x, y = _segments(q, k)
            traces.append(
                dict(
                    type="scatter",
                    mode="lines",
                    x=x,
                    y=y,
                    line=dict(color=head_color(head, n / LEVELS), width=LINE_PX,
                              dash=head_dash(head) if len(heads) > 1 else "solid"),
                    hoverinfo="skip",
                    name=f"head {head}",
                    legendgroup=f"head {head}",
                    showlegend=False,
                    meta={LINE_META: {"head": head, "level": n, "q": q.tolist(), "k": k.tolist()}},
                )
            )
    return traces


def _legend_trace(head: int) -> dict:
    """The legend entry of one head: a zero-length line under the first token dot.

    Separate from the line traces, which the page script may empty (plotly drops empty traces from the
    legend); a click on the entry hides or shows the head's whole legend group.
    """
    return dict(
        type="scatter",
        mode="lines",
        x=[0, 0],
        y=[0, 0],
        line=dict(color=head_color(head), width=3, dash=head_dash(head)),  # its lines' colour and style
        hoverinfo="skip",
        name=str(head),  # short: the legend's title says "heads" (8 entries fit a phone's width in two rows)
        legendgroup=f"head {head}",
        showlegend=True,
    )


def _token_trace(side: str, texts: list[str], x: float, label: str) -> dict:
    """One column of token dots: the hover (and click) targets, labelled by the axis ticks beside them."""
    n = len(texts)
    return dict(
        type="scatter",
        mode="markers",
        x=[x] * n,
        y=list(range(n)),
        yaxis="y" if side == "q" else "y2",
        marker=dict(size=10, color=TEXT_COLOR),
        customdata=list(range(n)),
        text=texts,
        hovertemplate=f"{escape_text(label)} %{{customdata}}: %{{text}}<extra></extra>",
        showlegend=False,
        meta={TOKEN_META: side},
    )


def _token_axis(texts: list[str], rows: int, title: str, **extra) -> dict:
    return bare_axis(
        title=dict(text=escape_text(title), font=dict(size=FONT_PX)),
        tickmode="array",
        tickvals=list(range(len(texts))),
        ticktext=texts,
        tickfont=dict(size=FONT_PX),
        range=[rows - 0.5, -0.5],  # reversed: token 0 on top; the same range on both sides
        automargin=True,
        fixedrange=True,
        **extra,
    )


def lines_spec(
    weights,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    layer: int = 1,
    head: int = ALL_HEADS,
    *,
    title: str = "",
    query_label: str = "query (attending) token",
    key_label: str = "key (attended) token",
) -> dict:
    """The alignment view of ``weights`` (L, H, Q, K) at ``layer`` (1-based) as a plotly figure spec.

    ``head``: 1..H draws that head only; ``ALL_HEADS`` (0) draws every head in its own colour and line style,
    with a legend entry per head (a legend click hides or shows a head). See the module docstring.
    """
    w = check_attention(weights, query_tokens, key_tokens, ndim=4)  # (L, H, Q, K)
    n_layers, n_heads, n_q, n_k = w.shape
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 1 <= layer <= n_layers:
        raise ValueError(f"layer must be an integer from 1 to {n_layers}, got {layer!r}")
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head <= n_heads:
        raise ValueError(f"head must be an integer from 1 to {n_heads}, or {ALL_HEADS} for all heads; got {head!r}")
    heads = list(range(1, n_heads + 1)) if head == ALL_HEADS else [int(head)]
    shown = w[layer - 1, [h - 1 for h in heads]]  # (H_shown, Q, K)

    q_text = [escape_token(t) for t in query_tokens]
    k_text = [escape_token(t) for t in key_tokens]
    rows = max(n_q, n_k)
    top, bottom = (40 if title else 12), (LEGEND_PX if len(heads) > 1 else 12)
    data = _line_traces(shown, heads)
    if len(heads) > 1:
        data += [_legend_trace(h) for h in heads]
    data += [_token_trace("q", q_text, 0, "query"), _token_trace("k", k_text, 1, "key")]
    layout = dict(
        template=dict(layout=dict(hovermode="closest")),  # plotly's default template kept out of the JSON
        height=ROW_PX * rows + top + bottom,  # margins reserved: the rows keep ROW_PX on any width
        autosize=True,
        margin=dict(l=8, r=8, t=top, b=bottom),
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        font=dict(color=TEXT_COLOR, size=FONT_PX),
        hovermode="closest",
        dragmode=False,
        xaxis=bare_axis(range=[-0.08, 1.08], showticklabels=False, fixedrange=True),
        yaxis=_token_axis(q_text, rows, query_label, side="left"),
        yaxis2=_token_axis(k_text, rows, key_label, side="right", overlaying="y"),
        legend=dict(orientation="h", x=0, xanchor="left", y=0, yanchor="top", font=dict(size=FONT_PX),
                    title=dict(text="heads", side="left"), itemwidth=44),  # (a whole period of each style)
        showlegend=len(heads) > 1,
    )
    if title:
        layout["title"] = dict(text=escape_text(title), x=0, xref="paper", xanchor="left", font=dict(size=FONT_PX))
    return dict(data=data, layout=layout)
