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

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from model.terms import WORD_MARKER
from viz import describe
from viz.step_bars import cross_row_spec, hidden_spec, prob_text, self_row_spec, top5_spec, which_heads
from viz.text import md_escape, plain_token
from viz.views.attention.share import opens
from viz.views.inputs import check_text
from viz.views.outputs import SKIP, Figure, Update, changes, finish_figure, open_tab, skipped
from viz.vocab import MEAN

if TYPE_CHECKING:  # for the type hints only
    from model.network.inference import AttentionResult
    from model.probes.steps import DecodeSteps
    from viz.views.attention.share import View


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


def _next_token(steps: DecodeSteps, step: int, layer: int, head: int, reveal: bool) -> tuple[str, Figure]:
    """The parts of a step's view that hold its next token: the Markdown, and the top 5 (a placeholder while the next
    token is hidden)."""
    if not reveal:
        return step_markdown(steps, step, layer, head, reveal), finish_figure(hidden_spec(step),
                                                                               f"decode_step{step}_top5")
    german = {"rows": True, "columns": False, "y": True, "x": False,  # the German candidates: its bars' rows
              "words": describe.tokens(steps.top_tokens[step - 1])}
    return (step_markdown(steps, step, layer, head, reveal),
            finish_figure(top5_spec(steps, step), f"decode_step{step}_top5", german=german))


def _rows(steps: DecodeSteps, step: int, layer: int, head: int) -> tuple[Figure, Figure]:
    """The parts of a step's view that show where it looked: its self-attention and cross-attention rows."""
    name = f"decode_step{step}_{{}}_layer{layer}_{'mean' if head == MEAN else f'head{head}'}"
    return (finish_figure(self_row_spec(steps, step, layer, head), name.format("self"),  # German keys
                          german={"rows": True, "columns": False, "y": False, "x": True,
                                  "words": describe.tokens(steps.prefix_tokens(step - 1))}),
            finish_figure(cross_row_spec(steps, step, layer, head), name.format("cross")))


def decode_step_view(steps: DecodeSteps, step, layer, head=MEAN, reveal: bool = True) -> DecodeStepView:
    """The Decoding tab's figures and Markdown for one step (1-based) and the view's choices."""
    step, layer, head = check_choices(steps, step, layer, head)
    markdown, top5 = _next_token(steps, step, layer, head, bool(reveal))
    self_row, cross_row = _rows(steps, step, layer, head)
    return DecodeStepView(top5=top5, self_row=self_row, cross_row=cross_row, markdown=markdown)


# Every head's view for the layer shown, held by the page (``held_heads``): a head chosen is drawn with no round trip.
# Bounded at HELD_STEPS steps: a head's rows are ~2–4 KB of JSON a step (their values, titles and descriptions), so
# the page holds ~200 KB for the tab's first sentence (8 steps, 9 choices of head; ~55 ms of the server's time, once
# per sentence and layer) and ~530 KB at 16 (~120 ms). A Multi30k caption's translation has ~13 tokens, nearly every
# one fewer than 16; beyond it, a head is a round trip as before.
HELD_STEPS = 16


def _changes_of(part: int, base, other) -> list[list]:
    """``changes`` of one part (``DecodeStepView``'s index) of a view, its paths from the view."""
    return changes(base, other, (part,))


def _frames(steps: DecodeSteps, layer: int, heads: list[int]) -> str:
    """Every step's view for one layer and the heads ``heads``, as JSON: ``{"text": the sentence, "layer", "base": step
    1's view (revealed) for ``heads[0]``, "steps": [[revealed, hidden], ...], "heads": {head: [[rows, Markdown
    revealed, Markdown hidden], ...]}}``, one entry a step (assets/web/decoding.js builds a view from them): a step's
    revealed view for ``heads[0]`` is the base with ``revealed`` (its ``changes``); hidden, that with ``hidden`` (the
    top 5 hidden) too; for a head, with the head's ``rows`` too (the changes of the two attention rows from
    ``heads[0]``'s), and the Markdown the head's own."""
    first = heads[0]
    base = list(decode_step_view(steps, 1, layer, first, reveal=True))
    frames, rows = [], {head: [] for head in heads}
    for t in range(1, steps.n_steps + 1):
        shown = list(decode_step_view(steps, t, layer, first, reveal=True)) if t > 1 else base
        _, hidden_top5 = _next_token(steps, t, layer, first, reveal=False)
        frames.append([[change for i in (1, 2, 3) for change in _changes_of(i, base[i], shown[i])],
                       _changes_of(1, shown[1], hidden_top5)])
        for head in heads:
            own = _rows(steps, t, layer, head) if head != first else shown[2:]
            rows[head].append([_changes_of(2, shown[2], own[0]) + _changes_of(3, shown[3], own[1]),
                               step_markdown(steps, t, layer, head, True), step_markdown(steps, t, layer, head, False)])
    return json.dumps({"text": steps.source_text, "layer": layer, "base": base, "steps": frames, "heads": rows},
                      separators=(",", ":"), ensure_ascii=False)


def step_frames(steps: DecodeSteps, layer, head) -> str:
    """Every step's view for one layer and head (``_frames``), for the page to draw a step, or its Reveal, without
    asking the server (assets/web/decoding.js). ~4 KB a step."""
    _, layer, head = check_choices(steps, 1, layer, head)
    return _frames(steps, layer, [head])


def every_heads_frames(steps: DecodeSteps, layer) -> str:
    """Every step's view for one layer and each of its heads and their mean (``_frames``); "" beyond ``HELD_STEPS``
    steps (the page asks the server for a head then)."""
    _, layer, _ = check_choices(steps, 1, layer, MEAN)
    if steps.n_steps > HELD_STEPS:
        return ""
    return _frames(steps, layer, list(range(steps.cross.shape[1] + 1)))


def sentence_to_follow(result: AttentionResult | None, followed: str) -> str | None:
    """The sentence the Decoding tab takes over from the Attention tab as it opens, or None to keep its own.

    It follows by default: the Attention tab's sentence (``result``'s) when it is not the one last taken over
    (``followed``); a sentence typed into the Decoding tab stays until the Attention tab shows another.
    """
    if result is None or not result.source_text or result.source_text == followed:
        return None
    return result.source_text


def take_sentence(result: AttentionResult | None, followed: str, stamp: str) -> tuple:
    """Another tab's sentence box as that tab opens (the Why tab's, the Lab's): the Attention tab's sentence and the
    one taken over (``sentence_to_follow``; no change where the visitor typed their own there since), then ``stamp``
    (a hidden box's new value: the tab's run follows it, on the sentence now in the box)."""
    text = sentence_to_follow(result, followed)
    return (SKIP, SKIP, stamp) if text is None else (text, text, stamp)


# ------------------------------------------------------------------------------------------ the tab's listeners
# ``steps(text)`` is the app's cached ``Runs.steps``. The tab keeps the sentence it shows (``text``), the one it
# took over from the Attention tab (``followed``), whether this step was revealed, and every step's view for the
# layer and head shown (``step_frames``), then for every head of that layer (``held_heads``): the page draws another
# step, a Reveal or another head from those without a round trip (assets/web/decoding.js). "Predict, then reveal"
# (``predict``) hides each new step's next token until the Reveal button. Outputs in the order the tab lists them.
Steps = Callable[[str], "DecodeSteps"]
N_START = 4 + len(DecodeStepView._fields)  # what ``start`` returns


def step_outputs(steps: Steps, text: str, step, layer, head, reveal: bool) -> DecodeStepView | tuple[Update, ...]:
    """The view of one step, or no change before the tab has a sentence."""
    if not text:
        return skipped(len(DecodeStepView._fields))
    return decode_step_view(steps(text), step, layer, head, reveal=reveal)


def start(steps: Steps, text: str, layer, head, predict: bool, step: int = 1) -> tuple:
    """A new sentence: (text shown, the step slider's range and ``step``, not revealed, that step's view, every
    step's view)."""
    decoded = steps(check_text(text))  # a ValueError (an empty sentence) becomes a message
    return (text, Update(maximum=decoded.n_steps, value=step), False,
            *step_outputs(steps, text, step, layer, head, not predict), step_frames(decoded, layer, head))


def follow(steps: Steps, result: AttentionResult | None, followed: str, layer, head, predict: bool) -> tuple:
    """As the tab opens: the Attention tab's sentence in the text box, taken over and started
    (``sentence_to_follow``), or no change."""
    text = sentence_to_follow(result, followed)
    if text is None:
        return skipped(2 + N_START)
    return text, text, *start(steps, text, layer, head, predict)


def open_link(steps: Steps, warn: Callable[[str], object], n_layers: int, link: View | None,
              result: AttentionResult | None, predict: bool) -> tuple:
    """A link that names this tab (``link``, viz.views.attention.share): its layer, head and step (each missing one
    the tab's default: the last layer, the mean of its heads, step 1) on the Attention tab's sentence, opened from the
    same link, taken over (``follow``'s outputs after the layer and head), then the tab opened; any other link
    changes nothing. A step beyond the sentence's last is its last, said so."""
    if not opens(link, "decoding") or result is None or not result.source_text:
        return skipped(4 + N_START + 1)
    layer = link.layer or n_layers
    head = MEAN if link.head is None else link.head
    text = result.source_text
    n_steps = steps(text).n_steps
    step = min(link.step or 1, n_steps)
    if (link.step or 1) > n_steps:
        warn(f"The link's step must be from 1 to {n_steps} for this sentence: step {n_steps} is shown.")
    return layer, head, text, text, *start(steps, text, layer, head, predict, step), open_tab("decoding")


def toggle_predict(steps: Steps, text: str, step, layer, head, predict: bool) -> tuple:
    """Predict-then-reveal on or off: the Reveal button usable (and primary: the room's cue) only while on."""
    button = Update(interactive=predict, variant="primary" if predict else "secondary")
    return False, button, *step_outputs(steps, text, step, layer, head, not predict)


def held_heads(steps: Steps, text: str, layer) -> str:
    """Once a view's frames are drawn: every head's frames for its layer (``every_heads_frames``), for the page to draw
    a head without a round trip; "" before the tab has a sentence."""
    return every_heads_frames(steps(text), layer) if text else ""


def redraw(steps: Steps, text: str, step, layer, head, predict: bool, revealed: bool):
    """Another layer or head: a reveal holds; every step's view for them."""
    if not text:
        return skipped(len(DecodeStepView._fields) + 1)
    return (*step_outputs(steps, text, step, layer, head, not predict or revealed),
            step_frames(steps(text), layer, head))
