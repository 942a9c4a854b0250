"""The "Inside a head" tab: one head's Equation (1) and Figure 2 (right) for one query, on the live model.

The view's choices: ``kind`` (one of ``KINDS``), ``layer`` and ``head`` (1-based), ``query`` (0-based, a
position on the query side: a source token for encoder self-attention, a decoder position otherwise) and
``factor`` (None = the model's own 1/√d_k; else the scale this one sub-layer uses, e.g. the Why tab's).
The numbers come from ``model.inside.inside_head`` (the app passes it in as ``run``, wrapped for ZeroGPU,
so that this module never loads a model); the choices are checked there, with clear ValueErrors. The
figures are drawn by ``viz.inside``; here they are finished for gr.Plot, and the steps are written out as a
Markdown table to read aloud.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from viz.heatmaps import escape_token
from viz.inside import (
    KIND_NAMES,
    TOKEN_LEN,
    contributions_spec,
    figure2_spec,
    footnote4_spec,
    head_output_spec,
    projections_spec,
    scores_spec,
)
from viz.views.figure import Figure, finish_figure

if TYPE_CHECKING:  # for the type hints only: this module needs no torch
    from model.inside import HeadInside

_MARKDOWN_SPECIALS = str.maketrans({c: "\\" + c for c in "\\`*_{}[]()#+-.!|~"})
_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;", "$": "&#36;"})


class InsideHeadView(NamedTuple):
    """A tuple, in the order a listener's outputs list them: app.listener turns each Figure into a gr.Plot value."""

    markdown: str
    projections: Figure  # (a) x -> q, K, V
    scores: Figure  # (b) q·k_j -> × scale -> mask -> softmax
    head_output: Figure  # (c) Σ_j α_j v_j
    figure2: Figure  # (d) the h heads -> Concat -> W^O -> Add & Norm
    footnote4: Figure  # trained scale vs × 1 vs the factor
    contributions: Figure  # α_j vs ‖α_j v_j W^O_i‖


def inside_head_view(hi: HeadInside) -> InsideHeadView:
    """Every figure and the Markdown for one computed head (see ``model.inside.HeadInside``)."""
    name = f"{hi.kind}_layer{hi.layer}_head{hi.head}_query{hi.query}"
    return InsideHeadView(
        markdown=inside_markdown(hi),
        projections=finish_figure(projections_spec(hi), f"{name}_qkv"),
        scores=finish_figure(scores_spec(hi), f"{name}_scores"),
        head_output=finish_figure(head_output_spec(hi), f"{name}_output"),
        figure2=finish_figure(figure2_spec(hi), f"{name}_figure2"),
        footnote4=finish_figure(footnote4_spec(hi), f"{name}_footnote4"),
        contributions=finish_figure(contributions_spec(hi), f"{name}_contributions"),
    )


def present(run: Callable[..., HeadInside], text: str, target: str, kind: str, layer, head, query,
            factor=None) -> InsideHeadView:
    """The tab's listener: ``run(text, target, kind, layer, head, query, factor)`` computes (and checks the
    choices: a ValueError says what to choose), then everything is drawn."""
    return inside_head_view(run(text, target, kind, layer, head, query, factor))


def query_choices(tokens: Sequence[str]) -> list[tuple[str, int]]:
    """(label, position) pairs for a query picker, "3: dogs": plain text (a gr.Radio shows labels as text)."""
    return [(f"{j}: {html.unescape(escape_token(t, TOKEN_LEN))}", j) for j, t in enumerate(tokens)]


# ---------------------------------------------------------------------------------------------- Markdown
def _md_tok(token: str) -> str:
    """A token for Markdown: displayed as in the figures, Markdown and HTML characters escaped."""
    return html.unescape(escape_token(token, TOKEN_LEN)).translate(_MARKDOWN_SPECIALS).translate(_ENTITIES)


def _norm(v: np.ndarray) -> str:
    return f"‖·‖ = {float(np.linalg.norm(v.astype(np.float64))):.3g}"


def inside_markdown(hi: HeadInside) -> str:
    """The steps as a table: symbol, shape and a number to read aloud; then the footnote-4 comparison."""
    n, d, dk, h, i = len(hi.key_tokens), hi.d_model, hi.d_k, hi.n_heads, hi.head
    top = int(np.argmax(hi.weights))
    c_top = int(np.argmax(hi.contributions))
    s = hi.sentence
    mode = "the translation you gave (teacher forcing)" if s.teacher_forced else "the model's greedy translation"
    allowed = int((~hi.masked).sum())
    own_scale = math.isclose(hi.scale, hi.model_scale)
    rows = [
        ("x", "the sub-layer input at the query", f"1 × {d}", _norm(hi.x)),
        (f"q = x W^Q_{i} + b", "the query of this head", f"1 × {dk}", _norm(hi.q)),
        (f"K = x W^K_{i} + b", "one key per position" + (" (from the encoder output)" if hi.kind == "cross" else ""),
         f"{n} × {dk}", f"{n} keys"),
        (f"V = x W^V_{i} + b", "one value per position", f"{n} × {dk}", ""),
        ("q·k_j", "raw dot products", f"1 × {n}", f"std {hi.score_std:.3g} vs √d_k = {math.sqrt(dk):.3g}"),
        (f"× {hi.scale:.4g}", "the scale", f"1 × {n}", "1/√d_k" if own_scale else "the chosen factor"),
        ("mask", "−∞ on keys after the query" if hi.masked.any() else "none", f"1 × {n}", f"{n - allowed} masked"),
        ("α = softmax(·)", "the weights (a row of the heatmap)" if own_scale else "the weights with the factor",
         f"1 × {n}", f"max {hi.max_weight:.3f} on “{_md_tok(hi.key_tokens[top])}”, entropy {hi.entropy:.3f} nats"),
        (f"head_{i} = Σ_j α_j v_j", "this head's output", f"1 × {dk}", _norm(hi.output)),
        (f"Concat(head_1..head_{h})", f"all {h} heads for this query", f"1 × {h * dk}", ""),
        ("· W^O + b = Sublayer(x)", "the multi-head output", f"1 × {d}", _norm(hi.sublayer_output)),
        ("LayerNorm(x + Sublayer(x))", "Add & Norm (post-LN, §3.1)", f"1 × {d}", _norm(hi.layer_output)),
    ]
    table = ["| step | what | shape | here |", "|---|---|---|---|"]
    table += [f"| `{a}` | {b} | {c} | {e} |" for a, b, c, e in rows]
    header = (f"**{KIND_NAMES[hi.kind].capitalize()}, layer {hi.layer}, head {i}, query {hi.query} "
              f"“{_md_tok(hi.query_token)}”** on {mode}.")
    contrib = (f"Largest contribution ‖α_j v_j W^O_{i}‖: “{_md_tok(hi.key_tokens[c_top])}” "
               f"({hi.contributions_normalised[c_top]:.2f} of the total; its weight α is {hi.weights[c_top]:.2f}).")
    warnings = "".join(f"\n\n⚠️ {html.escape(w)}" for w in s.warnings)
    return "\n\n".join([header, "\n".join(table), contrib, footnote4_markdown(hi)]) + warnings


def footnote4_markdown(hi: HeadInside) -> str:
    lines = [f"**Footnote 4 on this head.** Over its {int((~hi.masked).sum())} allowed keys, q·k has std "
             f"{hi.score_std:.3g}; for unit-variance q and k the paper expects √d_k = {math.sqrt(hi.d_k):.3g}.",
             "", "| scores × | entropy (nats) | largest weight |", "|---|---|---|"]
    lines += [f"| {c.label} | {c.entropy:.3f} | {c.max_weight:.4f} |" for c in hi.scale_cases]
    return "\n".join(lines)
