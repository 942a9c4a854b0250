"""The "Inside a head" tab: one head's Equation (1) and Figure 2 (right) for one query, on the live model.

The view's choices: ``kind`` (one of ``KINDS``), ``layer`` and ``head`` (1-based), ``query`` (0-based, a
position on the query side: a source token for encoder self-attention, a decoder position otherwise) and
``factor`` (None = the model's own 1/√d_k; else the scale this one sub-layer uses, e.g. the Why tab's).
The sentence is the Attention tab's: its ``AttentionResult`` (no decode is repeated). The numbers come from
``model.probes.inside.inside_head``, which the app passes in as ``run(result, kind, layer, head, query, factor)``
(``Runs.inside_head``, wrapped for ZeroGPU), so that this module never loads a model. The choices are
checked here first, with the messages of every other endpoint (``viz.views.inputs``). The figures are drawn
by ``viz.inside``; here they are finished for gr.Plot, and the steps are written out as a Markdown table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from viz import describe
from viz.inside import (
    TOKEN_LEN,
    contributions_spec,
    figure2_spec,
    footnote4_spec,
    head_output_spec,
    projections_spec,
    scores_spec,
)
from viz.text import md_escape, plain_token
from viz.views.inputs import MAX_SCALE, check_kind, check_tab_factor, real_number, whole_number
from viz.views.outputs import Figure, Update, finish_figure, open_tab, skipped
from viz.views.scaling import snapped
from viz.vocab import GERMAN_SIDES, KIND_LABELS, MEAN

if TYPE_CHECKING:  # for the type hints only: this module needs no torch
    from model.network.config import TransformerConfig
    from model.network.inference import AttentionResult
    from model.probes.inside import HeadInside

Run = Callable[..., "HeadInside"]  # (result, kind, layer, head, query, factor) -> HeadInside
INTRO = ("Equation (1) and Figure 2 on the model's own numbers, for one query of the Attention tab's sentence: "
         "pick a token below, or click a row of that tab's close-up.")
PLOT_LABELS = {  # the figures' gr.Plot labels, by InsideHeadView field
    "scores": "(b) q·k → × scale → mask → softmax", "figure2": "(d) Figure 2 (right), live",
    "projections": "(a) x → q, K, V", "head_output": "(c) head = Σ α_j v_j",
    "footnote4": "Footnote 4: the same softmax, scaled three ways", "contributions": "Weights vs contributions",
}
NO_SENTENCE = "Visualise a sentence on the Attention tab first: this tab looks inside its heads."


class InsideHeadView(NamedTuple):
    """A tuple, in the order a listener's outputs list them: viz.ui.wiring.listener makes a Figure a gr.Plot value."""

    markdown: str  # the steps as a table
    footnote4_text: str  # footnote 4 on this head, beside its figure
    scores: Figure  # (b) q·k_j -> × scale -> mask -> softmax
    figure2: Figure  # (d) the h heads -> Concat -> W^O -> Add & Norm
    projections: Figure  # (a) x -> q, K, V
    head_output: Figure  # (c) Σ_j α_j v_j
    footnote4: Figure  # trained scale vs × 1 vs the factor
    contributions: Figure  # α_j vs ‖α_j v_j W^O_i‖


def inside_head_view(hi: HeadInside) -> InsideHeadView:
    """Every figure and the Markdown for one computed head (see ``model.probes.inside.HeadInside``)."""
    name = f"{hi.kind}_layer{hi.layer}_head{hi.head}_query{hi.query}"
    specs = {"scores": scores_spec, "figure2": figure2_spec, "projections": projections_spec,
             "head_output": head_output_spec, "footnote4": footnote4_spec, "contributions": contributions_spec}
    figures = {field: finish_figure(spec(hi), f"{name}_{field}", german=german_keys(hi, field))
               for field, spec in specs.items()}
    return InsideHeadView(markdown=inside_markdown(hi), footnote4_text=footnote4_markdown(hi), **figures)


def german_keys(hi: HeadInside, field: str) -> dict | None:
    """Where a figure's German keys are (decoder self-attention's: the target's tokens), for ``finish_figure``: the
    rows of its table, and its x tick labels (the head's output: its y, a row per key); None where it has none."""
    if not GERMAN_SIDES[hi.kind][1] or field not in ("scores", "footnote4", "contributions", "head_output"):
        return None
    across = field != "head_output"
    return {"rows": True, "columns": False, "x": across, "y": not across, "words": describe.tokens(hi.key_tokens)}


# ------------------------------------------------------------------------------------------- the choices
def check_view(cfg: TransformerConfig, kind, layer, head) -> tuple[str, int, int]:
    """(kind, layer 1…N, head 1…h), or a ValueError in the words of every endpoint (no "mean" head here)."""
    return (check_kind(kind), whole_number(layer, "layer", 1, cfg.n_layers),
            whole_number(head, "head", 1, cfg.n_heads))


def check_factor(value) -> float | None:
    """The API's factor: null = the model's own 1/√d_k, else a number in (0, MAX_SCALE]."""
    if value is None:
        return None
    what = f"factor must be a positive number up to {MAX_SCALE:g} (null = the model's own 1/√d_k, 1 = unscaled)"
    return real_number(value, what, 0.0, MAX_SCALE, lo_open=True)


def factor_from_text(text) -> float | None:
    """The tab's factor box: empty = the model's own 1/√d_k, else a number written as text ("0.125", "1")."""
    if text is not None and not isinstance(text, str):  # a text box sends text: a JSON number is a caller's slip
        raise ValueError(f"The scale factor is the text of its box, such as \"1\" (unscaled) or \"0.125\"; got "
                         f"{type(text).__name__} {str(text)[:40]}.")
    text = "" if text is None else text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"The scale factor must be a number such as 1 (unscaled) or 0.125; leave it empty for "
                         f"the model's own 1/√d_k. Got {text[:40]!r}.") from None
    return check_factor(value)


def factor_from_slider(d_k: int, factor) -> str:
    """The Why tab's factor (× that on every q·k) as the text of this tab's factor box: empty for the model's own
    1/√d_k (``viz.views.scaling.snapped``)."""
    factor = snapped(check_tab_factor(factor), d_k)
    return "" if math.isclose(factor, d_k ** -0.5) else f"{factor:.4g}"


def check_query(value, tokens: Sequence[str]) -> int:
    return whole_number(value, "query", 0, len(tokens) - 1, "; a 0-based position on the query side")


def query_choices(tokens: Sequence[str]) -> list[tuple[str, int]]:
    """(label, position) pairs for the query chips, "3: dogs": plain text (a gr.Radio shows labels as text)."""
    return [(f"{j}: {plain_token(t, TOKEN_LEN)}", j) for j, t in enumerate(tokens)]


def head_choices(n_heads: int) -> list[tuple[str, int]]:
    return [(str(h), h) for h in range(1, n_heads + 1)]


def which_label(kind, layer, head, factor_text) -> str:
    """The folded choices' title, the head they show and its scale: "Head: Encoder self-attention · layer 2 · head 3 ·
    × 1/√d_k (change)". A value it cannot read is shown as it is (the tab's own messages come with its figures)."""
    factor = str(factor_text or "").strip()
    scale = f"× {factor}" if factor else "× 1/√d_k"
    return f"Head: {KIND_LABELS.get(kind, kind)} · layer {layer} · head {head} · {scale} (change)"


def follow(cfg: TransformerConfig, result: AttentionResult | None, kind, layer, head, query):
    """The tab takes over the Attention tab's view: (kind, layer, head, query chips, query). The "mean" head
    becomes head 1; the query stays where it was while the sentence has it, else 0."""
    if result is None:
        raise ValueError(NO_SENTENCE)
    kind, layer, head = check_view(cfg, kind, layer, head or 1)
    tokens = result.tokens(kind)[0]
    try:
        query = check_query(query, tokens)
    except ValueError:
        query = 0
    return kind, layer, head, query_choices(tokens), query


def take_over(cfg: TransformerConfig, result: AttentionResult | None, kind, layer, head, query) -> tuple:
    """``follow`` as the tab's outputs: (kind, layer, head, the query chips with their choice)."""
    *picked, chips, query = follow(cfg, result, kind, layer, head, query)
    return *picked, Update(choices=chips, value=query)


def row_clicked(cfg: TransformerConfig, message: str, result: AttentionResult | None, kind, layer, head) -> tuple:
    """A click on a row of the Attention tab's close-up: this tab opens on that query (``take_over``'s outputs,
    then the tab); anything else changes nothing."""
    row = row_from_click(message)
    if row is None:
        return skipped(5)
    return *take_over(cfg, result, kind, layer, head, row), open_tab("inside")


def mean_note(n_heads: int, a_layer, a_head, head) -> str:
    """What the tab says after a click on a row of the Attention tab's close-up (``row_clicked``): when that close-up
    showed the mean of a layer's heads (``a_head``), that this tab opened one head, ``head``, of it; else nothing."""
    if a_head not in (MEAN, str(MEAN)):
        return ""
    return (f"ℹ️ The close-up showed the **mean of layer {a_layer}'s {n_heads} heads**. A mean has no queries, keys "
            f"and values of its own: this tab opened **head {head}** of that layer — pick another head above.")


def row_from_click(message: str) -> int | None:
    """'row,time' (the page script's message for a click on a row of the detail heatmap) -> the row, or None."""
    try:
        row = int((message or "").split(",")[0])
    except ValueError:
        return None
    return row if row >= 0 else None


def present(run: Run, cfg: TransformerConfig, result: AttentionResult | None, kind, layer, head, query,
            factor_text="") -> InsideHeadView:
    """The tab's listener: the choices checked, ``run`` computes, everything is drawn."""
    if result is None:
        raise ValueError(NO_SENTENCE)
    kind, layer, head = check_view(cfg, kind, layer, head)
    query = check_query(query, result.tokens(kind)[0])
    return inside_head_view(run(result, kind, layer, head, query, factor_from_text(factor_text)))


def inside_json(run: Run, attention: Callable[[str, str], AttentionResult], cfg: TransformerConfig,
                text: str, target: str, kind, layer, head, query, factor=None) -> dict:
    """``/inside_head``: the choices checked before the model runs, then ``HeadInside.to_json_dict()``.
    ``attention(text, target)`` is the Attention tab's run (cached): its sentence, its tokens."""
    kind, layer, head = check_view(cfg, kind, layer, head)
    factor = check_factor(factor)
    result = attention(text, target)
    query = check_query(query, result.tokens(kind)[0])
    return run(result, kind, layer, head, query, factor).to_json_dict()


# ---------------------------------------------------------------------------------------------- Markdown
def _md_tok(token: str) -> str:
    return md_escape(plain_token(token, TOKEN_LEN))


def _norm(v: np.ndarray) -> str:
    return f"‖·‖ = {float(np.linalg.norm(v.astype(np.float64))):.3g}"


def inside_markdown(hi: HeadInside) -> str:
    """The steps as a table: symbol, shape and a number to read aloud; then the footnote-4 comparison."""
    n, d, dk, h, i = len(hi.key_tokens), hi.d_model, hi.d_k, hi.n_heads, hi.head
    top, c_top = int(np.argmax(hi.weights)), int(np.argmax(hi.contributions))
    s = hi.sentence
    mode = "the translation you gave (teacher forcing)" if s.teacher_forced else "the model's greedy translation"
    allowed = int((~hi.masked).sum())
    rows = [
        ("x", "the sub-layer input at the query", f"1 × {d}", _norm(hi.x)),
        (f"q = x W^Q_{i} + b", "the query of this head", f"1 × {dk}", _norm(hi.q)),
        (f"K = x W^K_{i} + b", "one key per position" + (" (from the encoder output)" if hi.kind == "cross" else ""),
         f"{n} × {dk}", f"{n} keys"),
        (f"V = x W^V_{i} + b", "one value per position", f"{n} × {dk}", ""),
        ("q·k_j", "raw dot products", f"1 × {n}", f"std {hi.score_std:.3g} vs √d_k = {math.sqrt(dk):.3g}"),
        (f"× {hi.scale:.4g}", "the scale", f"1 × {n}", "1/√d_k" if hi.scaled_as_trained else "the chosen factor"),
        ("mask", "−∞ on keys after the query" if hi.masked.any() else "none", f"1 × {n}", f"{n - allowed} masked"),
        ("α = softmax(·)", "the weights (a row of the heatmap)" if hi.scaled_as_trained else
         "the weights with the factor", f"1 × {n}",
         f"max {hi.max_weight:.3f} on “{_md_tok(hi.key_tokens[top])}”, entropy {hi.entropy:.3f} nats"),
        (f"head_{i} = Σ_j α_j v_j", "this head's output", f"1 × {dk}", _norm(hi.output)),
        (f"Concat(head_1..head_{h})", f"all {h} heads for this query", f"1 × {h * dk}", ""),
        ("· W^O + b = Sublayer(x)", "the multi-head output", f"1 × {d}", _norm(hi.sublayer_output)),
        ("LayerNorm(x + Sublayer(x))", "Add & Norm (post-LN, §3.1)", f"1 × {d}", _norm(hi.layer_output)),
    ]
    table = ["| step | what | shape | here |", "|---|---|---|---|"]
    table += [f"| `{a}` | {b} | {c} | {e} |" for a, b, c, e in rows]
    header = (f"**{KIND_LABELS[hi.kind]}, layer {hi.layer}, head {i}, query {hi.query} "
              f"“{_md_tok(hi.query_token)}”** on {mode}.")
    contrib = (f"Largest contribution ‖α_j v_j W^O_{i}‖: “{_md_tok(hi.key_tokens[c_top])}” "
               f"({hi.contributions_normalised[c_top]:.2f} of the total; its weight α is {hi.weights[c_top]:.2f}).")
    warnings = "".join(f"\n\n⚠️ {md_escape(w)}" for w in s.warnings)
    return "\n\n".join([header, "\n".join(table), contrib]) + warnings


def footnote4_markdown(hi: HeadInside) -> str:
    """Footnote 4 on this head: the measured std of q·k against √d_k, and the softmax scaled three ways."""
    lines = [f"**Footnote 4 on this head.** Over its {int((~hi.masked).sum())} allowed keys, q·k has std "
             f"{hi.score_std:.3g}; for unit-variance q and k the paper expects √d_k = {math.sqrt(hi.d_k):.3g}.",
             "", "| scores × | entropy (nats) | largest weight |", "|---|---|---|"]
    lines += [f"| {c.label} | {c.entropy:.3f} | {c.max_weight:.4f} |" for c in hi.scale_cases]
    return "\n".join(lines)
