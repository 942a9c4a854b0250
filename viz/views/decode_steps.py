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
here runs the model: every choice is drawn from one ``DecodeSteps``.

Also the alignment (head) view of an ``AttentionResult`` (``alignment_plot``, drawn by ``viz.lines``): its
``head`` 0 means all heads, each in its own colour, not their mean.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from model.terms import WORD_MARKER
from viz.heatmaps import TEXT_COLOR, TRANSPARENT, _escape_text, escape_token
from viz.lines import ALL_HEADS, lines_spec
from viz.views.figure import Figure, finish_figure
from viz.views.inputs import check_text
from viz.views.updates import Update, skipped
from viz.vocab import AXIS_LABELS, KIND_LABELS, MEAN

if TYPE_CHECKING:  # for the type hints only
    from model.network.inference import AttentionResult
    from model.probes.steps import DecodeSteps

BAR_COLOR = "#56B4E9"  # Okabe–Ito sky blue: shows on light and dark pages
CHOSEN_COLOR = "#E69F00"  # Okabe–Ito orange
MASKED_COLOR = "#999999"
GRID_COLOR = "rgba(136,136,136,0.25)"
FONT_PX = 14
FUTURE_LABEL = "?"  # tick label of a position not yet written
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


class DecodeStepView(NamedTuple):
    """A tuple, in the order a listener's outputs list them: app.listener turns each Figure into a gr.Plot value."""

    markdown: str
    top5: Figure  # finished figures (``finish_figure``)
    self_row: Figure
    cross_row: Figure


def _axis(**extra) -> dict:
    """An axis without zero line, border or tick marks (and no grid unless asked); the rest from the caller."""
    return {"showgrid": False, "zeroline": False, "showline": False, "ticks": "", **extra}


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


def md_escape(text: str) -> str:
    """Plain text for Markdown: no emphasis, links, HTML or maths from the text itself."""
    text = "".join("\ufffd" if ord(c) < 32 or c == "\x7f" else c for c in str(text))
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("$", "&#36;")


def _which(head: int, n_heads: int) -> str:
    return f"mean of {n_heads} heads" if head == MEAN else f"head {head}"


def shown(piece: str) -> str:
    """A piece as the figures show it ("▁Haus" -> "Haus", "m" -> "·m"), as plain (unescaped) text."""
    return html.unescape(escape_token(piece))


def _pick(maps: np.ndarray, layer: int, head: int) -> np.ndarray:
    """(L, H, K) rows of one step -> (K,): one head's row, or the mean over the layer's heads."""
    rows = maps[layer - 1]  # (H, K)
    return rows.mean(axis=0) if head == MEAN else rows[head - 1]


def _layout(title_lines: list[str], height: int, **axes) -> dict:
    """Plain-text title lines (escaped here, one per line: short enough for a phone) and the axes."""
    return dict(
        title=dict(text="<br>".join(_escape_text(line) for line in title_lines), x=0, xref="paper",
                   xanchor="left", font=dict(size=FONT_PX)),
        height=height,
        autosize=True,
        margin=dict(l=8, r=8, t=24 + 20 * len(title_lines), b=8),
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        font=dict(color=TEXT_COLOR, size=FONT_PX),
        hovermode="closest",
        showlegend=False,
        **axes,
    )


def _token_xaxis(labels: list[str], title: str) -> dict:
    """Tokens placed by position (a categorical axis would merge repeated words)."""
    return _axis(
        title=dict(text=_escape_text(title)),
        tickmode="array",
        tickvals=list(range(len(labels))),
        ticktext=labels,
        range=[-0.5, len(labels) - 0.5],
        automargin=True,
        fixedrange=True,
    )


def _value_axis(title: str, top: float = 1.0) -> dict:
    return _axis(title=dict(text=title), range=[0, top], tickvals=[0, 0.25, 0.5, 0.75, 1], automargin=True,
                 showgrid=True, gridcolor=GRID_COLOR, fixedrange=True)


def _bars(values: np.ndarray, labels: list[str], what: str) -> dict:
    return dict(
        type="bar",
        x=np.arange(len(values)),
        y=np.asarray(values, dtype=np.float32),
        marker=dict(color=BAR_COLOR),
        customdata=labels,
        hovertemplate=f"{_escape_text(what)} %{{x}}: %{{customdata}}<br>weight %{{y:.3f}}<extra></extra>",
    )


def self_row_spec(steps: DecodeSteps, t: int, layer: int, head: int) -> dict:
    """Decoder self-attention of step t (1-based) over all T positions; positions >= t drawn as masked."""
    n_steps, n_heads = steps.n_steps, steps.cross.shape[1]
    prefix = steps.prefix_tokens(t - 1)  # t tokens: BOS + the t - 1 written so far
    labels = [escape_token(p) for p in prefix]
    row = _pick(steps.self_rows(t - 1), layer, head)  # (t,)
    n_future = n_steps - t
    masked = dict(
        type="bar",
        x=np.arange(t, n_steps),
        y=np.ones(n_future, dtype=np.float32),
        marker=dict(color=MASKED_COLOR, opacity=0.35, pattern=dict(shape="/", fgcolor=MASKED_COLOR)),
        hovertemplate="position %{x}: masked (not written yet)<extra></extra>",
    )
    data = [_bars(row, labels, "position")] + ([masked] if n_future else [])
    title = [f"Masked self-attention of step {t} (input: {shown(prefix[-1])})",
             f"layer {layer} · {_which(head, n_heads)}" + (" · hatched = masked" if n_future else "")]
    xaxis = _token_xaxis(labels + [FUTURE_LABEL] * n_future, "decoder position (key)")
    return dict(data=data, layout=_layout(title, 360, xaxis=xaxis, yaxis=_value_axis("weight"), bargap=0.15))


def cross_row_spec(steps: DecodeSteps, t: int, layer: int, head: int) -> dict:
    """Cross-attention of step t (1-based) over the source tokens."""
    labels = [escape_token(p) for p in steps.source_tokens]
    row = _pick(steps.cross_rows(t - 1), layer, head)  # (S,)
    title = [f"Encoder–decoder attention of step {t} over the source",
             f"layer {layer} · {_which(head, steps.cross.shape[1])}"]
    xaxis = _token_xaxis(labels, "source token (key)")
    return dict(data=[_bars(row, labels, "source token")],
                layout=_layout(title, 360, xaxis=xaxis, yaxis=_value_axis("weight"), bargap=0.15))


def _prob_text(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def top5_spec(steps: DecodeSteps, t: int) -> dict:
    """The model's top next tokens at step t (1-based), most likely on top, the chosen one marked."""
    i = t - 1
    probs = steps.top_probs[i]  # (K,)
    chosen = steps.top_ids[i] == steps.chosen_ids[i]  # (K,) bool
    labels = [escape_token(p) + (" ✓ chosen" if c else "") for p, c in zip(steps.top_tokens[i], chosen)]
    bars = dict(
        type="bar",
        orientation="h",
        x=probs.astype(np.float32),
        y=np.arange(len(probs)),
        marker=dict(color=[CHOSEN_COLOR if c else BAR_COLOR for c in chosen]),
        text=[_prob_text(float(p)) for p in probs],
        textposition="outside",
        cliponaxis=False,
        customdata=labels,
        hovertemplate="%{customdata}: p = %{x:.4f}<extra></extra>",
    )
    yaxis = _axis(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels,
                  range=[len(labels) - 0.5, -0.5], automargin=True, fixedrange=True,
                  ticks="outside", ticklen=8, tickcolor=TRANSPARENT)  # invisible ticks: a gap before the bars
    title = [f"Step {t}: the {len(labels)} most likely next tokens"]
    layout = _layout(title, 320, xaxis=_value_axis("probability", top=1.15), yaxis=yaxis, bargap=0.25)
    return dict(data=[bars], layout=layout)


def hidden_spec(t: int) -> dict:
    """The top-5 figure's place while the next token is hidden: no token, no probability."""
    note = dict(text="Hidden: what will the model write next?<br>Predict it, then press Reveal.", x=0.5, y=0.5,
                xref="paper", yref="paper", showarrow=False, font=dict(size=18))
    hidden_axis = dict(visible=False, fixedrange=True)
    return dict(data=[], layout=_layout([f"Step {t}: next token hidden"], 320, xaxis=hidden_axis,
                                        yaxis=hidden_axis, annotations=[note]))


def prefix_text(tokens: list[str]) -> str:
    """Pieces joined as text ("▁" starts a word); the leading BOS shown as <s>."""
    return "".join(tokens).replace(WORD_MARKER, " ").strip()


def step_markdown(steps: DecodeSteps, t: int, layer: int, head: int, reveal: bool) -> str:
    i = t - 1
    lines = [
        f"**Step {t} of {steps.n_steps}** · layer {layer} · {_which(head, steps.cross.shape[1])}",
        f"Written so far (the decoder's input): {md_escape(prefix_text(steps.prefix_tokens(i)))}",
    ]
    if reveal:
        where = np.flatnonzero(steps.top_ids[i] == steps.chosen_ids[i])
        prob = f" (p = {_prob_text(float(steps.top_probs[i][where[0]]))})" if len(where) else ""
        lines.append(f"Next token: **{md_escape(shown(steps.chosen_tokens[i]))}**{prob}")
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
    return finish_figure(spec, f"{kind}_lines_layer{layer}_{'all' if head == ALL_HEADS else f'head{head}'}")
