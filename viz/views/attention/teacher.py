"""With a translation of one's own (teacher forcing): the model's own translation beside it, and per token of the
given one the model's probability of that token, where the model disagrees visible at a glance.

The numbers come from ``model.probes.forcing.token_probs`` (one teacher-forced pass over the result's ids); this
presenter only draws them (``viz.probs``) and names what the figure shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from viz.probs import token_probs_spec
from viz.text import plain_token
from viz.views.attention.context import export_title, with_export
from viz.views.outputs import SKIP, Figure, Update, finish_figure, skipped

if TYPE_CHECKING:
    from model.network.inference import AttentionResult
    from model.probes.forcing import TokenProbs

LABEL = "Your translation, token by token: the model's probability of each token (teacher forcing)"


def summary(probs: TokenProbs) -> str:
    """One line: how many of the given tokens the model would have chosen itself, and the least likely one."""
    agree = sum(a == b for a, b in zip(probs.tokens, probs.top_tokens))
    low = int(np.argmin(probs.probs))
    return (f"the model's first choice at {agree} of {len(probs.tokens)} positions; least likely: "
            f"“{plain_token(probs.tokens[low])}” (p = {probs.probs[low]:.3f})")


def forced_plot(result: AttentionResult | None, probs: TokenProbs | None) -> Figure | None:
    """The bar chart for a teacher-forced ``result`` and its ``probs``; None without a translation of one's own."""
    if result is None or probs is None or not result.teacher_forced:
        return None
    title = ("How likely the model finds each of your tokens", summary(probs))
    spec = token_probs_spec(probs.tokens, probs.probs, probs.top_tokens, probs.top_probs, title)
    figure = finish_figure(spec, "your_translation_probabilities")
    return with_export(figure, export_title(result, "the model's probability of each of your tokens"))


class GivenView(NamedTuple):
    """What the page shows of a run beside its maps: the model's own translation (its box always shows the
    model's, also when the maps are of a translation the user gave) and that translation's token probabilities."""

    translation: str
    shown: bool  # whether the probabilities' section is on the page
    plot: Figure | None


def given_view(
    result: AttentionResult | None,
    own: Callable[[str], AttentionResult],
    probs: Callable[[AttentionResult], TokenProbs],
) -> GivenView | None:
    """``own(text)``: the model's own run of a sentence; ``probs(result)``: ``model.probes.forcing.token_probs``. None
    before the session has a result."""
    if result is None:
        return None
    translation = own(result.source_text).translation if result.teacher_forced else result.translation
    if not result.teacher_forced:
        return GivenView(translation, False, None)
    return GivenView(translation, True, forced_plot(result, probs(result)))


def given_outputs(own: Callable[[str], AttentionResult], probs: Callable[[AttentionResult], TokenProbs],
                  result: AttentionResult | None) -> tuple[str, Update, Figure | None] | tuple[Update, ...]:
    """``given_view`` as the tab's outputs after a run: the translation box, the section shown or hidden, its
    plot; no change before the session has a result. Without a translation of one's own the run has already
    written the model's translation: only the section is hidden (no redraw of the rest)."""
    out = given_view(result, own, probs)
    if out is None:
        return skipped(3)
    if not out.shown:
        return SKIP, Update(visible=False), SKIP
    return out.translation, Update(visible=True), out.plot
