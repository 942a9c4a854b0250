"""The Decoding tab: the greedy translation one step at a time, with "predict, then reveal".

The view's choices: ``step`` (1..T, the step shown), ``layer`` (1..N), ``head`` (1..h, or ``MEAN`` = 0 for
the mean of the layer's heads) and ``reveal``. At step t the decoder has the prefix (BOS and the t - 1
tokens written so far) and writes one token. Three figures and a Markdown status:

- ``top5``: the model's five most likely next tokens with their probabilities, the chosen (greedy) one
  marked by colour AND by the text "✓ chosen";
- ``self_row``: the decoder self-attention row of step t over all T decoder positions: the prefix as
  bars, the positions not yet written as hatched "masked" bars (their tokens are never named);
- ``cross_row``: the cross-attention row of step t over the source tokens.

With ``reveal`` False ("predict, then reveal", for a classroom) the next token and its probabilities
are not in the output at all: ``top5`` is a placeholder and the Markdown asks for a guess. Nothing
here runs the model: every choice is drawn from one ``DecodeSteps``. The figures are drawn by ``viz.step_bars``;
here they are finished for gr.Plot, and the step is written out as Markdown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from model.terms import WORD_MARKER
from viz.step_bars import cross_row_spec, hidden_spec, prob_text, self_row_spec, top5_spec, which_heads
from viz.text import md_escape, plain_token
from viz.views.inputs import check_text
from viz.views.outputs import Figure, Update, finish_figure, skipped
from viz.vocab import MEAN

if TYPE_CHECKING:  # for the type hints only
    from model.network.inference import AttentionResult
    from model.probes.steps import DecodeSteps


class DecodeStepView(NamedTuple):
    """A tuple, in the order a listener's outputs list them: viz.ui.wiring.listener makes a Figure a gr.Plot value."""

    markdown: str
    top5: Figure  # finished figures (``finish_figure``)
    self_row: Figure
    cross_row: Figure


def check_choices(steps: DecodeSteps, step, layer, head) -> tuple[int, int, int]:
    """(step, layer, head) as ints in range, or a ValueError that says what to choose."""
    n_layers, n_heads = steps.cross.shape[:2]
    message = (f"Step must be 1–{steps.n_steps}, layer 1–{n_layers} and head 0–{n_heads} (0 = mean over heads); "
               f"got step {step!r}, layer {layer!r}, head {head!r}.")
    try:
        step, layer, head = int(step), int(layer), int(head)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(message) from None
    if not (1 <= step <= steps.n_steps and 1 <= layer <= n_layers and 0 <= head <= n_heads):
        raise ValueError(message)
    return step, layer, head


def prefix_text(tokens: list[str]) -> str:
    """Pieces joined as text ("▁" starts a word); the leading BOS shown as <s>."""
    return "".join(tokens).replace(WORD_MARKER, " ").strip()


def step_markdown(steps: DecodeSteps, t: int, layer: int, head: int, reveal: bool) -> str:
    i = t - 1
    lines = [
        f"**Step {t} of {steps.n_steps}** · layer {layer} · {which_heads(head, steps.cross.shape[1])}",
        f"Written so far (the decoder's input): {md_escape(prefix_text(steps.prefix_tokens(i)))}",
    ]
    if reveal:
        where = np.flatnonzero(steps.top_ids[i] == steps.chosen_ids[i])
        prob = f" (p = {prob_text(float(steps.top_probs[i][where[0]]))})" if len(where) else ""
        lines.append(f"Next token: **{md_escape(plain_token(steps.chosen_tokens[i]))}**{prob}")
    else:
        lines.append("Next token: hidden. What will the model write? Predict it, then press **Reveal**.")
    lines += [f"⚠️ {md_escape(w)}" for w in steps.warnings]
    return "\n\n".join(lines)


def decode_step_view(steps: DecodeSteps, step, layer, head=MEAN, reveal: bool = True) -> DecodeStepView:
    """The Decoding tab's figures and Markdown for one step (1-based) and the view's choices."""
    step, layer, head = check_choices(steps, step, layer, head)
    name = f"decode_step{step}_{{}}_layer{layer}_{'mean' if head == MEAN else f'head{head}'}"
    top5 = top5_spec(steps, step) if reveal else hidden_spec(step)
    return DecodeStepView(
        top5=finish_figure(top5, f"decode_step{step}_top5"),
        self_row=finish_figure(self_row_spec(steps, step, layer, head), name.format("self")),
        cross_row=finish_figure(cross_row_spec(steps, step, layer, head), name.format("cross")),
        markdown=step_markdown(steps, step, layer, head, bool(reveal)),
    )


def sentence_to_follow(result: AttentionResult | None, followed: str) -> str | None:
    """The sentence the Decoding tab takes over from the Attention tab as it opens, or None to keep its own.

    It follows by default: the Attention tab's sentence (``result``'s) when it is not the one last taken over
    (``followed``); a sentence typed into the Decoding tab stays until the Attention tab shows another.
    """
    if result is None or not result.source_text or result.source_text == followed:
        return None
    return result.source_text


# ------------------------------------------------------------------------------------------ the tab's listeners
# ``steps(text)`` is the app's cached ``Runs.steps``. The tab keeps the sentence it shows (``text``), the one it
# took over from the Attention tab (``followed``) and whether this step was revealed. "Predict, then reveal"
# (``predict``) hides each new step's next token until the Reveal button. Outputs in the order the tab lists them.
Steps = Callable[[str], "DecodeSteps"]


def step_outputs(steps: Steps, text: str, step, layer, head, reveal: bool) -> DecodeStepView | tuple[Update, ...]:
    """The view of one step, or no change before the tab has a sentence."""
    if not text:
        return skipped(len(DecodeStepView._fields))
    return decode_step_view(steps(text), step, layer, head, reveal=reveal)


def start(steps: Steps, text: str, layer, head, predict: bool) -> tuple:
    """A new sentence: (text shown, the step slider's range, not revealed, step 1's view)."""
    n_steps = steps(check_text(text)).n_steps  # a ValueError (an empty sentence) becomes a message
    return text, Update(maximum=n_steps, value=1), False, *step_outputs(steps, text, 1, layer, head, not predict)


def follow(steps: Steps, result: AttentionResult | None, followed: str, layer, head, predict: bool) -> tuple:
    """As the tab opens: the Attention tab's sentence in the text box, taken over and started
    (``sentence_to_follow``), or no change."""
    text = sentence_to_follow(result, followed)
    if text is None:
        return skipped(5 + len(DecodeStepView._fields))
    return text, text, *start(steps, text, layer, head, predict)


def show_step(steps: Steps, text: str, step, layer, head, predict: bool) -> tuple:
    """Another step: it starts hidden again when predicting."""
    return False, *step_outputs(steps, text, step, layer, head, not predict)


def toggle_predict(steps: Steps, text: str, step, layer, head, predict: bool) -> tuple:
    """Predict-then-reveal on or off: the Reveal button usable (and primary: the room's cue) only while on."""
    button = Update(interactive=predict, variant="primary" if predict else "secondary")
    return False, button, *step_outputs(steps, text, step, layer, head, not predict)


def redraw(steps: Steps, text: str, step, layer, head, predict: bool, revealed: bool):
    """Another layer or head: a reveal holds."""
    return step_outputs(steps, text, step, layer, head, not predict or revealed)


def reveal(steps: Steps, text: str, step, layer, head, _predict: bool) -> tuple:
    return True, *step_outputs(steps, text, step, layer, head, True)
