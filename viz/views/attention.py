"""The Attention tab: every layer × head of one kind at a glance (overview), one head up close (detail).

The view's choices: ``kind`` (one of ``KINDS``), ``layer`` (1..N) and ``head`` (1..h, or ``MEAN`` = 0 for
the mean of the layer's heads). Everything is drawn from an ``AttentionResult`` the model already returned:
changing a choice never runs the model. Also the input checks of the plain API (beam, scale).
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from viz.heatmaps import detail_spec, overview_spec
from viz.views.figure import Figure, finish_figure
from viz.vocab import AXIS_LABELS, KIND_LABELS, KINDS

if TYPE_CHECKING:  # for the type hints only: this module needs no torch
    from model.config import TransformerConfig
    from model.inference import AttentionResult

MEAN = 0  # the head selector's "mean over heads"
KIND_CHOICES = [(label, kind) for kind, label in KIND_LABELS.items()]
EXAMPLES = [  # captions like the training data, then everyday sentences it has rarely seen
    ["Two dogs are running through the snow."],
    ["A little girl in a pink dress is climbing a wooden fence."],
    ["A man in a blue shirt is playing the guitar on the street."],
    ["A group of people are standing in front of a large building."],
    ["The cat sat on the mat."],
    ["I would like a cup of coffee, please."],
]
DEFAULT_SOURCE = EXAMPLES[0][0]


def head_choices(n_heads: int) -> list[tuple[str, int]]:
    return [("mean", MEAN)] + [(str(h), h) for h in range(1, n_heads + 1)]


def check_view(cfg: TransformerConfig, kind: str, layer, head=MEAN) -> tuple[str, int, int]:
    """The view's choices as (kind, layer, head) ints, or a ValueError that says what to choose."""
    if kind not in KINDS:
        raise ValueError(f"Unknown attention kind {kind!r}: choose one of {', '.join(KINDS)}.")
    message = f"Layer must be 1–{cfg.n_layers} and head 0–{cfg.n_heads} (0 = mean over heads)."
    try:
        layer, head = int(layer or 1), int(head or 0)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(message) from None
    if not 1 <= layer <= cfg.n_layers or not 0 <= head <= cfg.n_heads:
        raise ValueError(message)
    return kind, layer, head


def overview_plot(result: AttentionResult, kind: str) -> Figure:
    """All layers × heads of one kind, as one heatmap (see ``viz.heatmaps.overview_spec``)."""
    q_tokens, k_tokens = result.tokens(kind)
    return finish_figure(overview_spec(result.maps(kind), q_tokens, k_tokens), f"{kind}_all_heads")


def head_plot(result: AttentionResult, kind: str, layer: int, head: int, title: str, filename: str) -> Figure:
    """One head (or the mean of a layer's heads, ``head`` = MEAN) up close, tokens on the axes by position.

    The figure's title is ``title`` followed by the layer and the head ("… · layer 3 · head 5").
    """
    maps = result.maps(kind)[layer - 1]  # (H, Q, K)
    weights = maps.mean(axis=0) if head == MEAN else maps[head - 1]  # (Q, K)
    which = f"mean of {maps.shape[0]} heads" if head == MEAN else f"head {head}"
    q_label, k_label = AXIS_LABELS[kind]
    spec = detail_spec(weights, *result.tokens(kind), f"{title} · layer {layer} · {which}",
                       query_label=q_label, key_label=k_label)
    return finish_figure(spec, filename)


def detail_plot(cfg: TransformerConfig, result: AttentionResult | None, kind: str, layer, head) -> Figure | None:
    """The Attention tab's detail for the view's choices; None before the session has a result."""
    if result is None:
        return None
    kind, layer, head = check_view(cfg, kind, layer, head)
    filename = f"{kind}_layer{layer}_{'mean' if head == MEAN else f'head{head}'}"
    return head_plot(result, kind, layer, head, KIND_LABELS[kind], filename)


def views(cfg: TransformerConfig, result: AttentionResult | None, kind: str, layer, head) -> tuple[Figure | None, ...]:
    """(overview, detail) for the view's choices, from the session's maps; (None, None) before it has any."""
    if result is None:
        return None, None
    return overview_plot(result, kind), detail_plot(cfg, result, kind, layer, head)


def status_text(result: AttentionResult, device_label: str) -> str:
    """What is shown (the model's translation or the user's), the token counts, the device, and any warnings."""
    mode = "the translation you gave (teacher forcing)" if result.teacher_forced else "the model's greedy translation"
    lines = [
        f"Showing {mode}: {len(result.source_tokens)} source tokens, {len(result.target_tokens)} decoder positions. "
        f"Model on **{device_label}**."
    ]
    lines += [f"⚠️ {w}" for w in result.warnings]
    return "\n\n".join(lines)


def tile_from_click(cfg: TransformerConfig, message: str) -> tuple[int, int] | None:
    """'layer,head,nonce' (the page script's message for a click on an overview tile) -> (layer, head), or None."""
    try:
        layer, head = (int(v) for v in (message or "").split(",")[:2])
        check_view(cfg, KINDS[0], layer, head)
    except ValueError:
        return None
    return layer, head


def export_files(result: AttentionResult | None) -> list[str]:
    """The session's maps as attention.npz and attention.json (the content of `python -m model.translate`),
    in a new temporary folder; their paths."""
    if result is None:
        raise ValueError("Nothing to export yet: visualise a sentence first.")
    folder = Path(tempfile.mkdtemp(prefix="attention-"))
    (folder / "attention.npz").write_bytes(result.to_npz_bytes())
    (folder / "attention.json").write_text(result.to_json(), encoding="utf-8")
    return [str(folder / "attention.npz"), str(folder / "attention.json")]


# ---- the plain API (/translate, /attention)
def check_beam(beam) -> int:
    try:
        beam = int(beam)
    except (TypeError, ValueError, OverflowError):
        beam = 0
    if not 1 <= beam <= 8:
        raise ValueError("Beam size must be between 1 and 8.")
    return beam


def check_scale(scale) -> float | None:
    """None (the model's own 1/sqrt(d_k)) or a factor in (0, 100]."""
    if scale is None:
        return None
    try:
        ok = math.isfinite(scale) and 0 < scale <= 100
    except TypeError:
        ok = False
    if not ok:
        raise ValueError("scale must be a positive number (the model's own is 1/sqrt(d_k)).")
    return scale
