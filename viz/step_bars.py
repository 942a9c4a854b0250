"""The Decoding tab's figures: one step of the greedy translation as bars.

  top5_spec        the model's most likely next tokens with their probabilities, most likely on top, the chosen
                   (greedy) one marked by colour AND by the text "✓ chosen"
  hidden_spec      the top-5 figure's place while the next token is hidden ("predict, then reveal")
  self_row_spec    the decoder self-attention row of step t over all T decoder positions: the prefix as bars, the
                   positions not yet written as hatched "masked" bars (their tokens are never named)
  cross_row_spec   the cross-attention row of step t over the source tokens

Each takes a ``DecodeSteps`` (``model.probes.steps``) and 1-based step, layer and head (``MEAN`` = 0: the mean of
the layer's heads); this module imports neither torch nor gradio. Tokens are placed by position (a categorical
axis would merge repeated words) and escaped (``viz.text``); transparent backgrounds, mid-grey text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from viz.axes import bare_axis
from viz.text import escape_text, escape_token, plain_token
from viz.vocab import MARK_EDGE, MEAN, TEXT_COLOR, TRANSPARENT

if TYPE_CHECKING:  # for the type hints only
    from model.probes.steps import DecodeSteps

BAR_COLOR = "#56B4E9"  # Okabe–Ito sky blue: shows on light and dark pages
CHOSEN_COLOR = "#E69F00"  # Okabe–Ito orange
MASKED_COLOR = "#999999"
GRID_COLOR = "rgba(136,136,136,0.25)"
FONT_PX = 14
ROW_PX = 340  # an attention row: under the step's controls on the first screen at 1280×720 (app.css)
FUTURE_LABEL = "?"  # tick label of a position not yet written


def which_heads(head: int, n_heads: int) -> str:
    """How titles (and the tab's Markdown) name the head choice: "head 3", or "mean of 8 heads"."""
    return f"mean of {n_heads} heads" if head == MEAN else f"head {head}"


def _pick(maps: np.ndarray, layer: int, head: int) -> np.ndarray:
    """(L, H, K) rows of one step -> (K,): one head's row, or the mean over the layer's heads."""
    rows = maps[layer - 1]  # (H, K)
    return rows.mean(axis=0) if head == MEAN else rows[head - 1]


def _layout(title_lines: list[str], height: int, **axes) -> dict:
    """Plain-text title lines (escaped here, one per line: short enough for a phone) and the axes."""
    return dict(
        title=dict(text="<br>".join(escape_text(line) for line in title_lines), x=0, xref="paper",
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
    return bare_axis(
        title=dict(text=escape_text(title)),
        tickmode="array",
        tickvals=list(range(len(labels))),
        ticktext=labels,
        range=[-0.5, len(labels) - 0.5],
        automargin=True,
        fixedrange=True,
    )


def _value_axis(title: str, top: float = 1.0) -> dict:
    return bare_axis(title=dict(text=title), range=[0, top], tickvals=[0, 0.25, 0.5, 0.75, 1], automargin=True,
                     showgrid=True, gridcolor=GRID_COLOR, fixedrange=True)


def _bars(values: np.ndarray, labels: list[str], what: str) -> dict:
    return dict(
        type="bar",
        x=np.arange(len(values)),
        y=np.asarray(values, dtype=np.float32),
        marker=dict(color=BAR_COLOR, line=MARK_EDGE),
        customdata=labels,
        hovertemplate=f"{escape_text(what)} %{{x}}: %{{customdata}}<br>weight %{{y:.3f}}<extra></extra>",
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
    title = [f"Masked self-attention of step {t} (input: {plain_token(prefix[-1])})",
             f"layer {layer} · {which_heads(head, n_heads)}" + (" · hatched = masked" if n_future else "")]
    xaxis = _token_xaxis(labels + [FUTURE_LABEL] * n_future, "decoder position (key)")
    return dict(data=data, layout=_layout(title, ROW_PX, xaxis=xaxis, yaxis=_value_axis("weight"), bargap=0.15))


def cross_row_spec(steps: DecodeSteps, t: int, layer: int, head: int) -> dict:
    """Cross-attention of step t (1-based) over the source tokens."""
    labels = [escape_token(p) for p in steps.source_tokens]
    row = _pick(steps.cross_rows(t - 1), layer, head)  # (S,)
    title = [f"Encoder–decoder attention of step {t} over the source",
             f"layer {layer} · {which_heads(head, steps.cross.shape[1])}"]
    xaxis = _token_xaxis(labels, "source token (key)")
    return dict(data=[_bars(row, labels, "source token")],
                layout=_layout(title, ROW_PX, xaxis=xaxis, yaxis=_value_axis("weight"), bargap=0.15))


def prob_text(p: float) -> str:
    """A probability as the bars (and the tab's Markdown) write it: 3 decimals, tiny ones in e-notation."""
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
        marker=dict(color=[CHOSEN_COLOR if c else BAR_COLOR for c in chosen], line=MARK_EDGE),
        text=[prob_text(float(p)) for p in probs],
        textposition="outside",
        cliponaxis=False,
        customdata=labels,
        hovertemplate="%{customdata}: p = %{x:.4f}<extra></extra>",
    )
    yaxis = bare_axis(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels,
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
