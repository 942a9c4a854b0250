"""A translation token by token, as the model sees it: one bar per token, its probability under teacher forcing.

Input (``model.probes.forcing.TokenProbs``, as plain lists here): per decoder row i, the token it was given to
predict, the model's probability of it, and the model's own first choice with its probability. A bar's
height is the probability of the given token (0..1); its colour says whether the model would have chosen
that token itself (blue) or another one (orange, and the model's choice is written above the bar), so a
disagreement shows at a glance. Okabe–Ito blue and orange: told apart with any colour vision, on light and
dark pages. Token text is escaped (``escape_token``), positions carry the tokens (a repeated word keeps its bar).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from viz.text import escape_text, escape_token
from viz.vocab import MARK_EDGE, TEXT_COLOR, TRANSPARENT

AGREE_COLOR = "#0072b2"  # the model's first choice is the given token
DISAGREE_COLOR = "#e69f00"  # the model would have written another token
TOKEN_LEN = 14


def token_probs_spec(
    tokens: Sequence[str], probs, top_tokens: Sequence[str], top_probs, title: Sequence[str] = ()
) -> dict:
    """The bar chart as a plain figure dict (numpy arrays inside), for ``viz.encode.plotly_json``.

    ``title``: its lines (plain text, escaped here)."""
    p, top_p = (np.asarray(a, dtype=np.float32) for a in (probs, top_probs))  # (T,) each
    n = len(tokens)
    if p.shape != (n,) or top_p.shape != (n,) or len(top_tokens) != n or n == 0:
        raise ValueError(f"need one probability, top token and top probability per token, for {n} tokens")
    if not (np.isfinite(p).all() and np.isfinite(top_p).all()) or p.min() < 0 or max(p.max(), top_p.max()) > 1 + 1e-6:
        raise ValueError("probabilities must lie in [0, 1]")
    agree = np.array([a == b for a, b in zip(tokens, top_tokens)])
    shown = [escape_token(t, TOKEN_LEN) for t in tokens]
    top_shown = [escape_token(t, TOKEN_LEN) for t in top_tokens]
    customdata = np.empty((n, 3), dtype=object)  # (T, 3): given token, the model's choice, its probability
    customdata[:, 0], customdata[:, 1] = shown, top_shown
    customdata[:, 2] = [f"{v:.3f}" for v in top_p]
    bars = dict(
        type="bar",
        x=np.arange(n),
        y=p,
        marker=dict(color=[AGREE_COLOR if a else DISAGREE_COLOR for a in agree], line=MARK_EDGE),
        text=["" if a else f"→ {t}" for a, t in zip(agree, top_shown)],
        textposition="outside",
        textangle=-90 if n > 12 else 0,
        cliponaxis=False,
        customdata=customdata,
        hovertemplate="given: %{customdata[0]}: p = %{y:.3f}<br>the model's first choice: %{customdata[1]} "
        "(%{customdata[2]})<extra></extra>",
        showlegend=False,
    )
    legend = (f"<span style='color:{AGREE_COLOR}'>■</span> the model's first choice too   "
              f"<span style='color:{DISAGREE_COLOR}'>■</span> it prefers another (named above the bar)")
    layout = dict(
        template=dict(layout=dict(hovermode="closest")),
        title=dict(text="<br>".join(map(escape_text, title)), x=0, xref="paper", xanchor="left", font=dict(size=13)),
        height=300 if n > 12 else 260,
        autosize=True,
        margin=dict(l=8, r=8, t=40 + 18 * len(title), b=8),
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        font=dict(color=TEXT_COLOR, size=12),
        bargap=0.25,
        xaxis=dict(tickmode="array", tickvals=list(range(n)), ticktext=shown, range=[-0.6, n - 0.4],
                   showgrid=False, zeroline=False, automargin=True),
        yaxis=dict(title=dict(text="probability"), range=[0, 1.45 if n > 12 else 1.2], tickvals=[0, 0.5, 1],
                   showgrid=True, gridcolor="rgba(136,136,136,0.25)", zeroline=False, automargin=True),
        annotations=[dict(text=legend, xref="paper", yref="paper", x=0, y=1, xanchor="left", yanchor="bottom",
                          showarrow=False, font=dict(size=11))],
    )
    return dict(data=[bars], layout=layout)
