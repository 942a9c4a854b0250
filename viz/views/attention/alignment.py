"""The Attention tab's alignment (head) view of an ``AttentionResult``: one kind and layer, query tokens joined to
key tokens by lines as strong as the weights (drawn by ``viz.lines``). Its ``head`` 0 means all heads, each in its
own colour, not their mean.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz import describe
from viz.lines import ALL_HEADS, THRESHOLD, lines_spec
from viz.views.outputs import Figure, finish_figure
from viz.vocab import AXIS_LABELS, GERMAN_SIDES, KIND_LABELS

if TYPE_CHECKING:  # for the type hints only
    from model.network.inference import AttentionResult


def lines_head_choices(n_heads: int) -> list[tuple[str, int]]:
    """The alignment view's head selector: all heads (each in its colour), or one."""
    return [("all", ALL_HEADS)] + [(str(h), h) for h in range(1, n_heads + 1)]


def alignment_plot(result: AttentionResult | None, kind: str, layer, head=ALL_HEADS) -> Figure | None:
    """The alignment (head) view of one kind and layer of ``result``: ``head`` 1..h, or 0 = all heads in colour;
    None before the session has a result.

    Drawn from the same maps as the Attention tab and /attention (see ``viz.lines``).
    """
    if result is None:
        return None
    maps = result.maps(kind)  # a ValueError names the kinds
    n_layers, n_heads = maps.shape[:2]
    try:
        layer, head = int(layer), int(head)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"Layer must be 1–{n_layers} and head 0–{n_heads} (0 = all heads).") from None
    which = "all heads" if head == ALL_HEADS else f"head {head}"
    q_label, k_label = AXIS_LABELS[kind]
    spec = lines_spec(maps, *result.tokens(kind), layer, head, title=f"{KIND_LABELS[kind]} · layer {layer} · {which}",
                      query_label=q_label, key_label=k_label)
    heads = list(range(1, n_heads + 1)) if head == ALL_HEADS else [head]  # (lines_spec has checked them)
    said = describe.alignment(f"Alignment view: {KIND_LABELS[kind]}, layer {layer}, {which}",
                              maps[layer - 1, [h - 1 for h in heads]], heads, *result.tokens(kind), threshold=THRESHOLD
                              ).in_german(*GERMAN_SIDES[kind])
    return finish_figure(spec, f"{kind}_lines_layer{layer}_{'all' if head == ALL_HEADS else f'head{head}'}", said)
