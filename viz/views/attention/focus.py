"""Long sentences in the close-up: focus on a range of tokens, hide <s> and </s>, tick labels that never overlap.

Focus (``Focus``, chosen by the user): the close-up shows positions ``first`` … ``last`` (1-based, both ends
included, the same range on both axes, cut to each axis's length) with their weights as the model gave them
(a row's shown weights may then sum to less than 1). ``hide_special`` drops the <s> and </s> rows and columns
and renormalises every row over the keys that remain (so each row sums to 1 again); the figure's title says so.
Both keep the tokens' own positions on the axes and in the hover: a focused map is a window, never renumbered.

Tick labels (``thin_ticks``): beyond ``LONG_TOKENS`` tokens the column labels turn upright (-90°), and on each
axis only every n-th label is kept so that neighbours are at least one label height apart, for the figure's
height (rows) and, for the columns, for the plot area the figure has on a 390-px phone (``columns_px``: the
figure's ``PHONE_FIGURE_PX`` less the row labels, the axis title, the colour bar and the masked cells' legend; wider
screens give more room), at the axis's own tick font size.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from model.terms import BOS_PIECE, EOS_PIECE, MAX_TOKENS
from viz.views.inputs import shown, whole_number

SPECIAL = (BOS_PIECE, EOS_PIECE)  # BOS (first decoder position) and EOS (last source token)
LONG_TOKENS = 30  # more tokens than this on an axis: upright column labels, thinned as needed
PHONE_FIGURE_PX = 320  # the close-up's width on a 390-px phone (326 px measured in Chromium)
COLORBAR_PX = 88  # the colour bar with its tick labels and title, right of the plot (viz.margins' right margin)
LEGEND_PX = 122  # the masked cells' legend (decoder self-attention), in the colour bar's column when shown (idem)
AXIS_TITLE_PX = 24  # the rows' axis title, left of their labels
# the most plot area (columns) a phone's close-up has: its width less the colour bar, the rows' axis title and the
# figure's side margins; the row labels (and the legend) take theirs from this (``columns_px``)
MIN_AXIS_PX = PHONE_FIGURE_PX - COLORBAR_PX - AXIS_TITLE_PX - 16
LINE_HEIGHT = 1.3  # a label's extent across its axis, in font sizes (rows; columns once upright)
MARGINS_PX = 60  # title and axis title, besides the column labels, in the figure's height
CHAR_WIDTH = 0.6  # average character width in font sizes (upright column labels take this much height)


@dataclass(frozen=True)
class Focus:
    first: int = 1  # 1-based position of the first token shown
    last: int | None = None  # of the last, None = to the end
    hide_special: bool = False



NO_FOCUS = Focus()


def check_focus(first=1, last=None, hide_special=False) -> Focus:
    """The close-up's focus from the page or the API: positions 1 … ``MAX_TOKENS`` (``last`` = ``MAX_TOKENS`` or
    null = to the end) and whether <s>/</s> are hidden (true or false)."""
    first = whole_number(1 if first is None else first, "The close-up's first token", 1, MAX_TOKENS)
    last = whole_number(MAX_TOKENS if last is None else last, "The close-up's last token", 1, MAX_TOKENS)
    if last < first:
        raise ValueError(f"The close-up's last token ({last}) comes before its first ({first}): swap them.")
    if not isinstance(hide_special, bool):
        raise ValueError(f"Hiding <s> and </s> is true or false; got {shown(hide_special)}.")
    return Focus(first, None if last == MAX_TOKENS else last, bool(hide_special))


@dataclass
class FocusedMap:
    weights: np.ndarray  # (Q', K') the rows and columns shown
    query_tokens: list[str]
    key_tokens: list[str]
    query_start: int  # 0-based position of the first row shown
    key_start: int  # … and of the first column
    note: str  # for the title: "" or e.g. "tokens 10–30 · <s> and </s> hidden, rows renormalised"


def _window(tokens: list[str], focus: Focus) -> range:
    """The 0-based positions shown on an axis of these tokens."""
    keep = [i for i, t in enumerate(tokens) if not (focus.hide_special and t in SPECIAL)]
    lo, hi = focus.first - 1, len(tokens) if focus.last is None else focus.last
    shown = [i for i in keep if lo <= i < hi]
    if not shown:
        raise ValueError(f"The close-up's tokens {focus.first}–{focus.last or 'end'} are past this side's "
                         f"{len(tokens)} tokens: choose a first token from 1 to {len(tokens)}.")
    if shown != list(range(shown[0], shown[-1] + 1)):  # <s> and </s> sit at the ends, so this never happens
        raise ValueError("special tokens inside the sentence cannot be hidden")
    return range(shown[0], shown[-1] + 1)


def focus_map(weights, query_tokens: list[str], key_tokens: list[str], focus: Focus) -> FocusedMap:
    """``weights`` (Q, K) seen through ``focus`` (see the module docstring)."""
    w = np.asarray(weights, dtype=np.float32)  # (Q, K)
    if focus.hide_special:
        kept = np.array([t not in SPECIAL for t in key_tokens])  # (K,)
        w = np.where(kept[None, :], w, 0).astype(np.float32)
        total = w.sum(axis=1, keepdims=True)  # (Q, 1)
        w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)  # rows sum to 1 over the kept keys
    rows, cols = _window(list(query_tokens), focus), _window(list(key_tokens), focus)
    notes = []
    if focus.first > 1 or (focus.last is not None and focus.last < max(len(query_tokens), len(key_tokens))):
        notes.append(f"tokens {focus.first}–{min(focus.last or MAX_TOKENS, max(len(query_tokens), len(key_tokens)))}")
    if focus.hide_special:
        notes.append("<s> and </s> hidden, rows renormalised")
    return FocusedMap(np.ascontiguousarray(w[rows.start:rows.stop, cols.start:cols.stop]),
                      list(query_tokens[rows.start:rows.stop]), list(key_tokens[cols.start:cols.stop]),
                      rows.start, cols.start, " · ".join(notes))


# ------------------------------------------------------------------------------------------- tick labels
def _font_px(layout: dict, axis: dict) -> float:
    return float((axis.get("tickfont") or {}).get("size") or (layout.get("font") or {}).get("size") or 12)


def _label_chars(text: str) -> int:
    """Characters a label shows (entities such as &lt; count as one)."""
    return len(html.unescape(text))


def _thin(axis: dict, step: int) -> None:
    if step > 1:
        axis["tickvals"] = list(axis["tickvals"])[::step]
        axis["ticktext"] = list(axis["ticktext"])[::step]


def columns_px(layout: dict) -> float:
    """The plot area's width on a 390-px phone (px): ``MIN_AXIS_PX`` less the widest row label and, when the
    masked cells' legend is shown, what it takes beyond the colour bar."""
    y = layout["yaxis"]
    row_labels = max((_label_chars(t) for t in y["ticktext"]), default=0) * CHAR_WIDTH * _font_px(layout, y) + 4
    legend = max(0, LEGEND_PX - COLORBAR_PX) if layout.get("showlegend") else 0
    return max(MIN_AXIS_PX - row_labels - legend, 1)


def thin_ticks(spec: dict) -> dict:
    """Thin (and turn upright) the tick labels of a close-up spec (``viz.heatmaps.detail_spec``) so that no two
    overlap; changes ``spec`` in place and returns it. Call it after any change of the tick font size."""
    layout = spec["layout"]
    x, y = layout["xaxis"], layout["yaxis"]
    n_x, n_y = len(x["tickvals"]), len(y["tickvals"])
    if max(n_x, n_y) <= LONG_TOKENS:
        return spec
    x_px, y_px = _font_px(layout, x), _font_px(layout, y)
    x["tickangle"] = -90
    x_step = math.ceil(n_x * LINE_HEIGHT * x_px / columns_px(layout))
    _thin(x, x_step)
    column_labels = max((_label_chars(t) for t in x["ticktext"]), default=0) * CHAR_WIDTH * x_px
    rows_px = layout["height"] - MARGINS_PX - column_labels - (layout.get("margin") or {}).get("t", 40)
    y_step = math.ceil(n_y * LINE_HEIGHT * y_px / max(rows_px, 1))
    _thin(y, y_step)
    return spec
