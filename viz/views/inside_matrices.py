"""Inside a head, "whole matrices": Equation (1) for every query at once (``model.probes.matrices.head_matrices``,
figures ``viz.matrices``), beside the one-query view (``viz.views.inside_head``), and the tab's choice between them.

The tab's view is ``VIEWS``: "query" (one query, step by step) or "matrix" (whole matrices). A click on a row of a
whole-matrix figure opens the one-query view on that query (the page script sends "row,time", ``row_opened``).
Where the tab opens: ``opening`` — the head and query the model picks for footnote 4
(``model.probes.matrices.footnote4_pick``) while the Attention tab shows its own default head, else that tab's head.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from viz import matrices as figs
from viz.text import md_escape
from viz.views.attention.maps import check_view as attention_view
from viz.views.attention.share import View, opens, sharpest_head
from viz.views.inside_head import (
    NO_SENTENCE,
    InsideHeadView,
    check_query,
    check_view,
    factor_from_text,
    follow,
    inside_head_view,
    row_clicked,
    row_from_click,
    take_over,
)
from viz.views.memo import ViewMemo
from viz.views.outputs import SKIP, Figure, Update, changes, finish_figure, open_tab, skipped
from viz.vocab import KIND_LABELS, MEAN

if TYPE_CHECKING:  # for the type hints only: this module needs no torch
    from model.network.config import TransformerConfig
    from model.network.inference import AttentionResult
    from model.probes.matrices import Footnote4Pick, HeadMatrices

VIEWS = [("One query, step by step", "query"), ("Whole matrices: every query at once", "matrix")]
QUERY, MATRIX = (value for _, value in VIEWS)
PLOT_LABELS = {  # the whole-matrix figures' gr.Plot labels, by MatrixView field
    "projections": "X → Q, K, V", "scores": "① Q Kᵀ", "scaled": "② ÷ √d_k", "masked": "③ + mask",
    "weights": "④ softmax", "output": "· V → head → Concat → W^O",
}
N_QUERY_OUTPUTS = 8  # InsideHeadView's fields
N_MATRIX_OUTPUTS = 8  # MatrixView's fields
Matrices = Callable[..., "HeadMatrices"]  # (result, kind, layer, head, factor) -> HeadMatrices
Pick = Callable[..., "Footnote4Pick"]  # (result, kind) -> Footnote4Pick


class MatrixView(NamedTuple):
    """The whole-matrix outputs, in the order the tab lists them."""

    markdown: str  # what is shown, and how to use it
    projections: Figure
    scores: Figure
    scaled: Figure
    masked: Figure
    weights: Figure
    output: Figure
    table: str  # the steps as a table


def check_mode(value) -> str:
    if value not in (QUERY, MATRIX):
        raise ValueError(f"view must be {QUERY!r} or {MATRIX!r}, got {value!r}")
    return value


def matrix_view(hm: HeadMatrices, query: int | None = None) -> MatrixView:
    """Every whole-matrix figure (``query``, the one-query view's, outlined) and their steps as a table."""
    name = f"{hm.kind}_layer{hm.layer}_head{hm.head}"
    stages = {stage: finish_figure(figs.stage_spec(hm, stage, query), f"{name}_{stage}") for stage in figs.STAGES}
    return MatrixView(markdown=matrix_header(hm), table=matrix_table(hm),
                      projections=finish_figure(figs.projections_spec(hm, query), f"{name}_projections"),
                      output=finish_figure(figs.output_spec(hm, query), f"{name}_output"), **stages)


def matrix_header(hm: HeadMatrices) -> str:
    """Which head, and how to use the figures (and the sentence's warnings, if any)."""
    warnings = "".join(f"\n\n⚠️ {md_escape(w)}" for w in hm.sentence.warnings)
    return (f"**{KIND_LABELS[hm.kind]}, layer {hm.layer}, head {hm.head}: Equation (1) for all "
            f"{len(hm.query_tokens)} queries at once.** Hover a cell for its value; click a row to open that query "
            "step by step." + warnings)


def matrix_table(hm: HeadMatrices) -> str:
    """The steps of Equation (1) as matrices: symbol, shape and what it holds here, from the model's own matrices
    (three narrow columns: they read on a phone)."""
    n_q, n, d, dk, h, i = len(hm.query_tokens), len(hm.key_tokens), hm.d_model, hm.d_k, hm.n_heads, hm.head
    allowed = hm.scores[~hm.masked].astype(np.float64)
    rows = hm.weights.astype(np.float64).sum(-1)
    top = hm.weights.max(-1)
    kv = "X = the encoder output" if hm.kind == "cross" else "the same X"
    lines = [
        "| step | shape | here |", "|---|---|---|",
        f"| `X` | {n_q} × {d} | the sub-layer's input, a row per query |",
        f"| `Q = X W^Q_{i} + b` | {n_q} × {dk} | the queries |",
        f"| `K = X W^K_{i} + b` | {n} × {dk} | the keys, from {kv} |",
        f"| `V = X W^V_{i} + b` | {n} × {dk} | the values, from {kv} |",
        f"| ① `S = Q Kᵀ` | {n_q} × {n} | std {allowed.std():.3g} (√d_k = {math.sqrt(dk):.3g}) |",
        f"| ② `S × {hm.scale:.3g}` | {n_q} × {n} | "
        f"{'÷ √d_k' if hm.scaled_as_trained else 'the chosen factor'}: std {allowed.std() * hm.scale:.3g} |",
        f"| ③ `+ M` | {n_q} × {n} | "
        + (f"{int(hm.masked.sum())} cells −∞ (a key after its query) |" if hm.masked.any() else "nothing masked |"),
        f"| ④ `A = softmax(…)` | {n_q} × {n} | rows sum to 1 (±{np.abs(rows - 1).max():.1e}); largest weight in a "
        f"row {top.min():.2f} … {top.max():.2f} |",
        f"| `head_{i} = A V` | {n_q} × {dk} | this head's output |",
        f"| `Concat(head_1..{h})` | {n_q} × {h * dk} | all {h} heads |",
        f"| `· W^O + b` | {n_q} × {d} | MultiHead(Q, K, V); then Add & Norm (one-query view (d)) |",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- the tab's listener
HIDDEN_VIEW = "attn-hidden-view"  # (app.css: not displayed)


def view_shown(shown: bool) -> Update:
    """A view's column shown, or hidden but kept in the page: Gradio 6.31 takes a column with ``visible=False`` out
    of the page and makes it anew when it is shown again, its figures drawn from scratch (a lecture's move from stop 4
    back to stop 3: ~400 ms of Equation (1)'s six first draws); ``visible="hidden"`` keeps it, drawn, and its class
    hides it (the Column itself shows a "hidden" one)."""
    return Update(visible=True, elem_classes=[]) if shown else Update(visible="hidden", elem_classes=[HIDDEN_VIEW])


SHOWN = ViewMemo()  # a lecture hall opening one stop asks for the same view a hundred times (viz.views.memo)


def show(inside: Callable, matrices: Matrices, cfg: TransformerConfig, result: AttentionResult | None, mode,
         kind, layer, head, query, factor_text="") -> tuple:
    """The tab's draw: the one-query outputs, the whole-matrix outputs (the hidden view's left as they are), and each
    view's visibility."""
    if result is None:
        raise ValueError(NO_SENTENCE)
    mode = check_mode(mode)
    kind, layer, head = check_view(cfg, kind, layer, head)
    query = check_query(query, result.tokens(kind)[0])
    factor = factor_from_text(factor_text)

    def draw() -> tuple:
        if mode == QUERY:
            one = tuple(inside_head_view(inside(result, kind, layer, head, query, factor)))
            many = skipped(N_MATRIX_OUTPUTS)
        else:
            one = skipped(N_QUERY_OUTPUTS)
            many = tuple(matrix_view(matrices(result, kind, layer, head, factor), query))
        return (*one, *many, view_shown(mode == QUERY), view_shown(mode == MATRIX))

    return SHOWN(result, (inside, matrices, mode, kind, layer, head, query, factor), draw)


def query_figures(view: tuple) -> dict[str, Figure]:
    """The one-query view's figures (``InsideHeadView``'s) by their Plot's element id, "in-<field>"."""
    return {f"in-{field}": figure for field, figure in zip(InsideHeadView._fields, view, strict=True)
            if isinstance(figure, Figure)}


def query_frames(view: tuple) -> str:
    """The one-query view's figures (``query_figures``) as JSON, for the page to draw in the figures it shows
    (assets/web/inside.js): a new query redraws only what changed, and nothing where the page already drew these
    figures from what it holds (``held_queries``)."""
    figures = query_figures(view)
    # (each answer its own: the page draws every one, the same figures again too, after other views in between)
    return json.dumps({"figures": figures, "answer": time.monotonic_ns()}, separators=(",", ":"), ensure_ascii=False)


def show_query(inside: Callable, matrices: Matrices, cfg: TransformerConfig, result: AttentionResult | None, mode,
               kind, layer, head, query, factor_text="") -> tuple:
    """A new query: ``show``'s outputs and the one-query figures as ``query_frames`` (last). In the one-query view the
    figures go only there, for the page to draw in place, and the Plots keep their values; in the whole-matrix view,
    as ``show``. Where the page holds every query's panels (``held_queries``) it drew them before sending this call:
    the texts (the steps, footnote 4) come from here, and the figures, equal to those drawn, are not drawn again."""
    out = show(inside, matrices, cfg, result, mode, kind, layer, head, query, factor_text)
    if check_mode(mode) != QUERY:
        return (*out, SKIP)
    one = out[:N_QUERY_OUTPUTS]
    texts = [value if isinstance(value, str) else SKIP for value in one]
    return (*texts, *skipped(N_MATRIX_OUTPUTS), SKIP, SKIP, query_frames(one))


# A click on another query draws from what the page holds, with no round trip (assets/web/inside.js): once the view is
# drawn, a follow-up call (``held_queries``) sends every query's panels of the head shown. Bounded at HELD_QUERIES
# query tokens: a query's six panels are ~65 KB of JSON, ~14 KB of it what differs from query 0's (the query's own
# vectors, bars, weights and titles; K and V are the same), so the page holds ~70 KB + ~14 KB a query: ~500 KB at 32,
# sent once per head, never before the head's own view. A Multi30k caption has ~13 tokens a side and nearly every one
# fewer than 32; beyond it, a new query is a round trip (``show_query``) as before.
HELD_QUERIES = 32


def held_queries(inside: Callable, cfg: TransformerConfig, result: AttentionResult | None, mode, kind, layer, head,
                 query=None, factor_text="") -> str:
    """Every query's one-query panels of the head shown, for the page to draw a new query without asking
    (assets/web/inside.js): JSON ``{"view": the choices as received (view, kind, layer, head, factor), "queries": how
    many, "base": query 0's figures by element id, "changes": each query's as its ``changes`` from the base}``; ""
    (nothing held: a new query asks the server) in the whole-matrix view or beyond ``HELD_QUERIES`` query tokens.
    The page calls it only after the view's own call succeeded; a call with choices no view takes gets their
    message (a ValueError), as that call would. ``query`` (the one shown) is checked, not needed: every one is sent."""
    if result is None:
        return ""
    mode = check_mode(mode)
    checked_kind, checked_layer, checked_head = check_view(cfg, kind, layer, head)
    factor = factor_from_text(factor_text)
    n = len(result.tokens(checked_kind)[0])
    if query is not None:
        check_query(query, result.tokens(checked_kind)[0])
    if mode != QUERY or n > HELD_QUERIES:
        return ""
    figures = [query_figures(inside_head_view(inside(result, checked_kind, checked_layer, checked_head, q, factor)))
               for q in range(n)]
    return json.dumps({"view": [mode, kind, layer, head, factor_text], "queries": n, "base": figures[0],
                       "changes": [changes(figures[0], figure) for figure in figures]},
                      separators=(",", ":"), ensure_ascii=False)


def seen_key(result: AttentionResult, kind, layer, head) -> str:
    """The Attention tab's view as the tab saw it when it last opened: sentence (source and decoder tokens), kind,
    layer and head."""
    return repr((result.source_text, tuple(result.target_tokens), result.teacher_forced, kind, layer, head))


def opening(cfg: TransformerConfig, pick: Pick, result: AttentionResult | None, seen: str | None, a_kind, a_layer,
            a_head) -> tuple:
    """The tab opens: (kind, layer, head, the query chips with their choice, the view seen, the note of a click on a
    row of the mean's close-up: gone with a new view). Nothing changes while
    the Attention tab shows what it showed when this tab last opened (``seen``). Else the tab follows the Attention
    tab's head (``follow``), unless that tab shows its own default — the sharpest head it opens on, or the mean —
    then it opens on the head and query the model picks for footnote 4 (``pick``), of the same kind."""
    if result is None:
        raise ValueError(NO_SENTENCE)
    a_kind, a_layer, a_head = attention_view(cfg, a_kind, a_layer, a_head)
    key = seen_key(result, a_kind, a_layer, a_head)
    if seen == key:
        return SKIP, SKIP, SKIP, SKIP, SKIP, SKIP
    if a_head != MEAN and (a_layer, a_head) != sharpest_head(result.maps(a_kind)):
        *picked, chips, query = follow(cfg, result, a_kind, a_layer, a_head, 0)
        return *picked, Update(choices=chips, value=query), key, ""
    *_, chips, _ = follow(cfg, result, a_kind, a_layer, 1, 0)
    p = pick(result, a_kind)
    return p.kind, p.layer, p.head, Update(choices=chips, value=p.query), key, ""


def row_opened(result: AttentionResult | None, kind, message: str) -> tuple:
    """A click on a row of a whole-matrix figure ("row,time"): the one-query view on that query; else no change."""
    row = row_from_click(message)
    if result is None or row is None or row >= len(result.tokens(kind)[0]):
        return SKIP, SKIP
    return QUERY, row


def close_up_row(cfg: TransformerConfig, message: str, result: AttentionResult | None, kind, layer, head) -> tuple:
    """A click on a row of the Attention tab's close-up: ``row_clicked``'s outputs (this tab on that query), and
    the view seen (``seen_key``), so that the tab's opening keeps the clicked query."""
    out = row_clicked(cfg, message, result, kind, layer, head)
    return (*out, SKIP if out[0] is SKIP else seen_key(result, *attention_view(cfg, kind, layer, head)))


def open_link(cfg: TransformerConfig, link: View | None, result: AttentionResult | None, kind, layer, head) -> tuple:
    """A link that names this tab (viz.views.attention.share): the Attention tab's kind, layer and head, opened from
    the same link, with the link's query (``take_over``'s outputs), the view seen (``seen_key``: the tab's opening
    keeps them), the link's view (``show``: one query or whole matrices; none: the tab's own), then the tab opened; any
    other link (or none yet) changes nothing."""
    if not opens(link, "inside") or result is None:
        return skipped(7)
    seen = seen_key(result, *attention_view(cfg, kind, layer, head))
    show = check_mode(link.show) if link.show is not None else SKIP
    return *take_over(cfg, result, kind, layer, head, link.query or 0), seen, show, open_tab("inside")


# ------------------------------------------------------------------------------- a view brought with a link
N_SHOW = N_QUERY_OUTPUTS + N_MATRIX_OUTPUTS + 2  # show's outputs


def drawn_key(cfg: TransformerConfig, result: AttentionResult | None, mode, kind, layer, head, query,
              factor_text="") -> str | None:
    """What the tab's figures show when ``show`` draws them from these values: the sentence and every choice (None
    for values it refuses)."""
    try:
        kind, layer, head = check_view(cfg, kind, layer, head)
        query = check_query(query, result.tokens(kind)[0]) if result is not None else None
        return repr((check_mode(mode), seen_key(result, kind, layer, head), query, factor_from_text(factor_text)))
    except (ValueError, AttributeError):
        return None


def open_link_drawn(inside: Callable, matrices: Matrices, cfg: TransformerConfig, link: View | None,
                    result: AttentionResult | None, kind, layer, head, mode, factor_text, brought: str | None = None,
                    *shown_choices) -> tuple:
    """``open_link`` with the link's view drawn in the same answer (a page load's or a lecture's move: the tab's own
    opening then draws nothing again, ``show_opened``): its outputs but the tab, what the figures now show
    (``drawn_key``), ``show``'s outputs, then the tab opened; any other link changes nothing. The figures are not
    drawn again where they show that view already: a link drew it (``brought``) and the tab's choices
    (``shown_choices``: its kind, layer, head and query) are still the link's."""
    *opened, tab = open_link(cfg, link, result, kind, layer, head)
    if tab is SKIP:
        return *opened, SKIP, *skipped(N_SHOW), SKIP
    new_kind, new_layer, new_head, chips, _, new_mode = opened
    choices = (mode if new_mode is SKIP else new_mode, new_kind, new_layer, new_head, chips.props["value"])
    key = drawn_key(cfg, result, *choices, factor_text)
    if key is not None and key == brought and key == drawn_key(cfg, result, mode, *shown_choices, factor_text):
        return *opened, SKIP, *skipped(N_SHOW), tab
    return *opened, key, *show(inside, matrices, cfg, result, *choices, factor_text), tab


def show_opened(inside: Callable, matrices: Matrices, cfg: TransformerConfig, drawn: str | None, result, *choices):
    """The tab's draw as it opens (``show``), unless its figures show these choices already (``drawn``: a link
    brought them: ``open_link_drawn``); then what a link brought (None: the figures drawn here)."""
    if drawn is not None and drawn == drawn_key(cfg, result, *choices):
        return *skipped(N_SHOW), SKIP
    return *show(inside, matrices, cfg, result, *choices), None


def held_opened(inside: Callable, cfg: TransformerConfig, drawn: str | None, result, *choices):
    """``held_queries`` after the tab's opening, unless a link brought the view (``show_opened``): then none (a new
    query asks the server)."""
    if drawn is not None and drawn == drawn_key(cfg, result, *choices):
        return SKIP
    return held_queries(inside, cfg, result, *choices)
