"""The Attention tab: every layer × head of one kind at a glance (overview), one head up close (detail).

The view's choices: ``kind`` (one of ``KINDS``), ``layer`` (1..N) and ``head`` (1..h, or ``MEAN`` = 0 for
the mean of the layer's heads). Everything is drawn from an ``AttentionResult`` the model already returned:
changing a choice never runs the model. The checks of every input are ``viz.views.inputs``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from model.terms import KINDS
from viz import describe, margins
from viz.heatmaps import detail_spec, overview_spec
from viz.text import PIECE_NOTE, md_escape, piece_example
from viz.views.attention import projector
from viz.views.attention.context import DECODER_KINDS, export_title, next_tokens, with_export
from viz.views.attention.focus import NO_FOCUS, Focus, check_focus, focus_map, thin_ticks
from viz.views.exports import ExportFolder
from viz.views.inputs import check_beam, check_head, check_kind, check_layer, check_scale, check_text  # noqa: F401
from viz.views.memo import ViewMemo
from viz.views.outputs import SKIP, Figure, Update, finish_figure
from viz.vocab import AXIS_LABELS, GERMAN_SIDES, KIND_LABELS, MEAN

if TYPE_CHECKING:  # for the type hints only: this module needs no torch
    from model.network.config import TransformerConfig
    from model.network.inference import AttentionResult
    from model.serving.runs import Runs, SessionResult

KIND_CHOICES = [(label, kind) for kind, label in KIND_LABELS.items()]
# Sentences to try (the first is the sentence box's default; the benchmark times them): captions like the training
# data, then everyday sentences it has rarely seen. The examples that teach are ``examples.EXAMPLES``.
SAMPLE_SENTENCES = (
    "Two dogs are running through the snow.",
    "A little girl in a pink dress is climbing a wooden fence.",
    "A man in a blue shirt is playing the guitar on the street.",
    "A group of people are standing in front of a large building.",
    "The cat sat on the mat.",
    "I would like a cup of coffee, please.",
)
DEFAULT_SOURCE = SAMPLE_SENTENCES[0]


def head_choices(n_heads: int) -> list[tuple[str, int]]:
    return [("mean", MEAN)] + [(str(h), h) for h in range(1, n_heads + 1)]


def check_view(cfg: TransformerConfig, kind: str, layer, head=MEAN) -> tuple[str, int, int]:
    """The view's choices as (kind, layer, head) ints, or a ValueError that says what to choose
    (see ``viz.views.inputs``: layer 2.5 is an error, head null is the mean)."""
    return check_kind(kind), check_layer(cfg, layer), check_head(cfg, head)


def overview_plot(result: AttentionResult, kind: str, present: bool = False) -> Figure:
    """All layers × heads of one kind, as one heatmap (see ``viz.heatmaps.overview_spec``); ``present``:
    for a projector (``viz.views.attention.projector``)."""
    q_tokens, k_tokens = result.tokens(kind)
    maps = result.maps(kind)  # (L, H, Q, K)
    spec = projector.fit_overview(overview_spec(maps, q_tokens, k_tokens, causal=kind == "decoder_self"))
    rows_de, columns_de = GERMAN_SIDES[kind]  # its table's rows are heads: only the pairs it quotes are German
    german = [*(q_tokens if rows_de else ()), *(k_tokens if columns_de else ())]
    english = set(describe.tokens([*(q_tokens if not rows_de else ()), *(k_tokens if not columns_de else ())]))
    said = describe.overview(KIND_LABELS[kind], maps, q_tokens, k_tokens, trace=spec["data"][0]).in_german(
        False, False, words=[t for t in describe.tokens(german) if t not in english])
    figure = finish_figure(margins.fit(projector.present_overview(spec) if present else spec), f"{kind}_all_heads",
                           said)
    what = f"{KIND_LABELS[kind]} · all {maps.shape[0]} layers (rows) × {maps.shape[1]} heads (columns)"
    return with_export(figure, export_title(result, what), category_ticks=True)


def head_plot(result: AttentionResult, kind: str, layer: int, head: int, title: str, filename: str,
              present: bool = False, colour: str = "fixed", focus: Focus = NO_FOCUS, bar_title: str = "weight",
              ) -> Figure:
    """One head (or the mean of a layer's heads, ``head`` = MEAN) up close, tokens on the axes by position.

    The figure's title is ``title`` followed by the layer and the head ("… · layer 3 · head 5"), its subtitle
    what ``focus`` changed ("tokens 10–30 · <s> and </s> hidden, rows renormalised", ``viz.views.attention.focus``),
    ``bar_title`` its colour bar's title (``viz.heatmaps.detail_spec``).
    ``colour`` is its colour scale and ``present`` presentation mode (``viz.views.attention.projector``). Long
    sentences get thinned, upright tick labels (``viz.views.attention.focus.thin_ticks``).
    """
    maps = result.maps(kind)[layer - 1]  # (H, Q, K)
    weights = maps.mean(axis=0) if head == MEAN else maps[head - 1]  # (Q, K)
    which = f"mean of {maps.shape[0]} heads" if head == MEAN else f"head {head}"
    q_label, k_label = AXIS_LABELS[kind]
    shown = focus_map(weights, *result.tokens(kind), focus)  # (Q', K'), the whole map unless focused
    title = f"{title} · layer {layer} · {which}"
    rows = slice(shown.query_start, shown.query_start + len(shown.query_tokens))
    predicts = next_tokens(result)[rows] if kind in DECODER_KINDS else None
    spec = detail_spec(shown.weights, shown.query_tokens, shown.key_tokens, title, query_label=q_label,
                       key_label=k_label, causal=kind == "decoder_self", predicts=predicts,
                       query_start=shown.query_start, key_start=shown.key_start, subtitle=shown.note,
                       bar_title=bar_title)
    projector.colour_scale(spec, colour)
    spec = projector.present_detail(spec, shown.weights) if present else spec
    figure = finish_figure(margins.fit(thin_ticks(spec)), filename, described(shown, title, kind, bar_title))
    return with_export(figure, export_title(result, " · ".join(filter(None, (title, shown.note)))))


def described(shown, title: str, kind: str, measure: str) -> describe.Description:
    """What the close-up says (``viz.describe.attention_map``): its cells as drawn, masked ones so named; Enter on a
    cell opens its row's query in "Inside a head", as a click does."""
    n_q, n_k = shown.weights.shape
    rows = np.arange(shown.query_start, shown.query_start + n_q)  # the figure's y of each row (its position)
    masked = (np.arange(shown.key_start, shown.key_start + n_k)[None, :] > rows[:, None]) if kind == "decoder_self" \
        else None
    name = ", ".join(describe.plain(part) for part in title.split(" · "))
    return describe.attention_map(name, shown.weights, shown.query_tokens, shown.key_tokens,
                                  measure=measure or "weight", masked=masked, query_start=shown.query_start,
                                  key_start=shown.key_start, send_rows=[str(r) for r in rows]
                                  ).in_german(*GERMAN_SIDES[kind])


def detail_plot(cfg: TransformerConfig, result: AttentionResult | None, kind: str, layer, head,
                present=False, colour="fixed", first=1, last=None, hide_special=False) -> Figure | None:
    """The Attention tab's detail for the view's choices; None before the session has a result.
    ``first``, ``last``, ``hide_special``: the close-up's focus (``viz.views.attention.focus.check_focus``)."""
    if result is None:
        return None
    kind, layer, head = check_view(cfg, kind, layer, head)
    colour, present = projector.check_colour(colour), present is True
    focus = check_focus(first, last, hide_special)
    filename = f"{kind}_layer{layer}_{'mean' if head == MEAN else f'head{head}'}"
    return head_plot(result, kind, layer, head, KIND_LABELS[kind], filename, present, colour, focus)


def views(cfg: TransformerConfig, result: AttentionResult | None, kind: str, layer, head,
          present=False, colour="fixed", first=1, last=None, hide_special=False) -> tuple[Figure | None, ...]:
    """(overview, detail) for the view's choices, from the session's maps; (None, None) before it has any.
    ``present`` (True for presentation mode) and ``colour`` (the close-up's scale): ``viz.views.attention.projector``;
    ``first``, ``last``, ``hide_special``: the close-up's focus (``viz.views.attention.focus``)."""
    if result is None:
        return None, None

    def draw() -> tuple[Figure, Figure]:
        detail = detail_plot(cfg, result, kind, layer, head, present, colour, first, last, hide_special)
        return overview_plot(result, kind, present is True), detail

    # a class running the slide's sentences asks for the same figures of one run hundreds of times (viz.views.memo)
    return VIEWS(result, (kind, layer, head, present, colour, first, last, hide_special), draw)


VIEWS = ViewMemo()


def status_text(result: AttentionResult, device_label: str) -> str:
    """What is shown (the model's translation or the user's), the token counts, the device, what the "·" of a word
    piece means (with a word of this sentence, where it has one), and any warnings."""
    mode = "the translation you gave (teacher forcing)" if result.teacher_forced else "the model's greedy translation"
    lines = [
        f"Showing {mode}: {len(result.source_tokens)} source tokens, {len(result.target_tokens)} decoder positions. "
        f"Model on **{device_label}**."
    ]
    example = piece_example([*result.source_tokens, *result.target_tokens])
    if example:
        lines.append(f"{PIECE_NOTE}: {md_escape(example)}.")
    lines += [f"⚠️ {w}" for w in result.warnings]
    return "\n\n".join(lines)


class Visualised(NamedTuple):
    """What a run shows, in the order the tab's outputs list them."""

    translation: str
    status: str
    overview: Figure | None
    detail: Figure | None
    session: SessionResult  # what the session's gr.State keeps: the key of its result in the shared cache


def visualise(runs: Runs, warn: Callable[[str], object], text: str, target_text: str, kind_: str, layer_, head_,
              present_=False, colour_="fixed", first=1, last=None, hide_special=False) -> Visualised:
    """Translate (or force ``target_text``), then draw the overview and the detail (``first`` … ``last``: the
    tokens it shows, ``hide_special``: without <s> and </s>, rows renormalised). Runs the model once."""
    cfg = runs.cfg
    kind_, layer_, head_ = check_view(cfg, kind_, layer_, head_)
    focus = (first, last, hide_special)
    check_focus(*focus)
    # The state keeps only the key (session); the maps stay in runs.cache, shared and bounded in bytes.
    session, result = runs.session(check_text(text), check_text(target_text, "given translation"))
    for warning in result.warnings:
        warn(warning)  # the app passes viz.ui.wiring.warn: a popup (gr.Warning)
    status = status_text(result, runs.translator.device_label)
    return Visualised(result.translation, status, *views(cfg, result, kind_, layer_, head_, present_, colour_, *focus),
                      session)


def open_tile(cfg: TransformerConfig, message: str) -> tuple[int, int] | tuple[Update, Update]:
    """A click on an overview tile (``tile_from_click``): its (layer, head) for the close-up, else no change."""
    return tile_from_click(cfg, message) or (SKIP, SKIP)


def tile_from_click(cfg: TransformerConfig, message: str) -> tuple[int, int] | None:
    """'layer,head,nonce' (the page script's message for a click on an overview tile) -> (layer, head), or None."""
    try:
        layer, head = (int(v) for v in (message or "").split(",")[:2])
        check_view(cfg, KINDS[0], layer, head)
    except ValueError:
        return None
    return layer, head


def nothing_yet(what: str) -> str:
    """What a call that needs the session's run says before there is one."""
    return f"Nothing to {what} yet: visualise a sentence first."


def export_files(exports: ExportFolder, result: AttentionResult | None) -> list[str]:
    """The session's maps as attention.npz and attention.json (the content of `python -m model.translate`),
    written as one export of ``exports`` (bounded: the oldest exports are removed); their paths."""
    if result is None:
        raise ValueError(nothing_yet("export"))
    return exports.write({"attention.npz": result.to_npz_bytes(), "attention.json": result.to_json().encode()})
