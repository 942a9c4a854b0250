"""Figures of the Lab tab: the sibling models' training curves, and attention forming over training.

Inputs are the plain records of ``model.serving.lab`` (``Lab.runs_payload()``, ``Lab.timelapse(...)``, a run's
``timelapse`` statistics); this module imports neither torch nor gradio. Style as in ``viz.scaling``:
transparent backgrounds, mid-grey text, one colour per sibling (Okabe–Ito, told apart by colour-blind viewers),
a second seed of the same sibling dashed in its colour. No layout title (the component's label says it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.heatmaps import COLORSCALE
from viz.text import escape_token
from viz.vocab import TEXT_COLOR, TRANSPARENT

GRID_COLOR = "rgba(136,136,136,0.25)"
FONT_SIZE = 16
RUN_COLORS = {  # one per sibling (its seeds share it)
    "h8": "#0072B2", "h1": "#E69F00", "h1-unscaled": "#D55E00", "h1-additive": "#009E73", "h8-unscaled": "#CC79A7",
    "h4": "#56B4E9", "h2": "#F0E442", "h16": "#999999",
}
CURVES = (  # (key in a run's curves, subplot title, log y)
    ("probe_loss", "validation loss (nats per token)", False),
    ("grad_wq", "‖∇W<sup>Q</sup>‖ (solid) and ‖∇W<sup>K</sup>‖ (dotted)", True),
    ("entropy", "attention entropy (nats)", False),
)
MEAN = 0  # layer value: the mean over layers
# One letter per role (model.probes.analysis's rule), so that eight heads fit a phone's width; the start-sink is
# marked by its token (escaped: plotly and the page's Markdown read it as markup).
ROLE_CODES = {"alignment": "A", "broad": "B", "EOS-sink": "E", "start-sink": "&lt;s&gt;", "previous-token": "P",
              "next-token": "N", "self": "S", "punctuation": ",", "mixed": "", "no data": ""}


def run_color(name: str) -> str:
    return RUN_COLORS.get(name, TEXT_COLOR)


def legend_name(label: str) -> str:
    """A sibling's label without "dot product", which every run but the additive one has: one line on a phone."""
    return label.replace(", dot product, unscaled", ", unscaled").replace(", dot product", "")


def _layer_values(column: list[list[float]], layer: int) -> np.ndarray:
    """A curve column (steps × layers) -> (steps,) for one 1-based layer, or the mean over layers (``MEAN``)."""
    values = np.asarray(column, dtype=np.float64)  # (steps, L)
    return values.mean(axis=1) if layer == MEAN else values[:, layer - 1]


def _layout(height: int) -> dict:
    return dict(height=height, autosize=True, margin=dict(l=8, r=8, t=36, b=8), paper_bgcolor=TRANSPARENT,
                plot_bgcolor=TRANSPARENT, font=dict(size=FONT_SIZE, color=TEXT_COLOR), hovermode="x unified",
                legend=dict(orientation="h", x=0, y=-0.08, yanchor="top", font=dict(size=FONT_SIZE)))


def curves_figure(runs: Sequence[dict], kind: str, layer: int = MEAN) -> go.Figure:
    """Validation loss, gradient norms of W^Q / W^K and attention entropy over training steps, one line per
    run (``runs``: entries of ``Lab.runs_payload()["runs"]``; their seeds as separate lines, the second dashed).
    ``kind`` and ``layer`` pick the attention whose gradient and entropy are drawn (``MEAN``: over layers)."""
    fig = make_subplots(rows=len(CURVES), cols=1, shared_xaxes=True, vertical_spacing=0.07,
                        subplot_titles=[title for _, title, _ in CURVES])
    for entry in runs:
        color = run_color(entry["name"])
        for s, (seed, curves) in enumerate(zip(entry["seeds"], entry["curves"])):
            steps = curves["step"]
            name = legend_name(entry["label"]) + (f" (seed {seed})" if len(entry["seeds"]) > 1 else "")
            dash = "solid" if s == 0 else "dash"
            for row, (key, _, _) in enumerate(CURVES, start=1):
                if key == "probe_loss":
                    ys = [np.asarray(curves[key], dtype=np.float64)]
                elif key == "grad_wq":
                    ys = [_layer_values(curves[f"{w}.{kind}"], layer) for w in ("grad_wq", "grad_wk")]
                else:
                    ys = [_layer_values(curves[f"{key}.{kind}"], layer)]
                for i, y in enumerate(ys):
                    fig.add_trace(go.Scatter(
                        x=steps, y=y, mode="lines", name=name, legendgroup=name, showlegend=row == 1,
                        line=dict(color=color, width=2.5, dash="dot" if i == 1 else dash),
                        hovertemplate=f"{escape_token(name, 60)}: %{{y:.4g}}<extra></extra>"), row=row, col=1)
    fig.update_layout(**_layout(760))
    # The legend goes on top (it pushes the top margin as it grows): below, a long list of runs on a phone ran over
    # the x-axis title, and in the lecture it fell under the screen's edge.
    fig.update_layout(legend=dict(y=1.045, yanchor="bottom"))
    axis = dict(gridcolor=GRID_COLOR, zerolinecolor=GRID_COLOR, linecolor=TEXT_COLOR, showline=True)
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    fig.update_yaxes(type="log", dtick=1, exponentformat="power", row=2, col=1)  # 10⁻², 10⁻¹: no crowded minors
    fig.update_xaxes(title_text="training step", row=len(CURVES), col=1)
    fig.update_annotations(font_size=FONT_SIZE)
    return fig


def curve_trace(runs: Sequence[dict], name: str, key: str = "probe_loss") -> int:
    """The index, in ``curves_figure(runs, …)``'s traces, of run ``name``'s (first seed's) curve ``key`` (one of
    ``CURVES``' keys; for "grad_wq" its ‖∇W^Q‖ line)."""
    per_seed = [2 if k == "grad_wq" else 1 for k, _, _ in CURVES]
    before = 0
    for entry in runs:
        if entry["name"] == name:
            return before + sum(per_seed[:[k for k, _, _ in CURVES].index(key)])
        before += len(entry["seeds"]) * sum(per_seed)
    raise ValueError(f"no run {name!r} among the curves")


def timelapse_figure(weights, query_tokens: Sequence[str], key_tokens: Sequence[str], title: str,
                     causal: bool = False) -> go.Figure:
    """One head's map (Q, K) at one training step, on the fixed 0–1 scale (masked cells left blank)."""
    w = np.asarray(weights, dtype=np.float64)
    if causal:
        w = np.where(np.tril(np.ones_like(w, dtype=bool)), w, np.nan)
    xs = [escape_token(t) for t in key_tokens]
    ys = [escape_token(t) for t in query_tokens]
    fig = go.Figure(go.Heatmap(
        z=w, x=list(range(len(xs))), y=list(range(len(ys))), zmin=0, zmax=1, colorscale=COLORSCALE,
        customdata=np.array([[f"{q} → {k}" for k in xs] for q in ys]),
        hovertemplate="%{customdata}: %{z:.2f}<extra></extra>", hoverongaps=False,
        colorbar=dict(title=dict(text="weight", side="right"), thickness=12, outlinewidth=0)))
    fig.update_layout(**_layout(max(360, 28 * len(ys) + 160)))
    fig.update_layout(title=dict(text=title, x=0, font=dict(size=FONT_SIZE)), hovermode="closest",
                      margin=dict(l=8, r=8, t=48, b=8))
    # upright and 12 px: slanted or larger, neighbouring labels ran into each other in a phone's ~18-px columns
    fig.update_xaxes(tickvals=list(range(len(xs))), ticktext=xs, tickangle=-90, tickfont=dict(size=12), side="bottom",
                     showgrid=False, title_text="key")
    fig.update_yaxes(tickvals=list(range(len(ys))), ticktext=ys, autorange="reversed", showgrid=False,
                     title_text="query")
    return fig


def head_timeline_figure(values, roles: Sequence[Sequence[str]], steps: Sequence[int], stat_label: str) -> go.Figure:
    """One layer's heads (columns) over the snapshots (rows, the untrained model on top): ``values`` (steps, H) of
    one statistic, each cell marked with the head's role at that step (``roles``: steps × H; ``ROLE_CODES``).
    Answers "when did this head specialise?"; eight narrow columns fit a phone."""
    v = np.asarray(values, dtype=np.float64)  # (steps, H)
    text = [[ROLE_CODES.get(r, "?") for r in step_roles] for step_roles in roles]
    names = [list(step_roles) for step_roles in roles]
    fig = go.Figure(go.Heatmap(
        z=v, x=[f"H{h + 1}" for h in range(v.shape[1])], y=[f"step {s}" for s in steps], colorscale=COLORSCALE,
        text=text, texttemplate="%{text}", textfont=dict(size=FONT_SIZE), customdata=names,
        hovertemplate="%{y}, %{x}: %{z:.3f}, %{customdata}<extra></extra>",
        colorbar=dict(title=dict(text=stat_label, side="right"), thickness=12, outlinewidth=0)))
    fig.update_layout(**_layout(max(300, 30 * v.shape[0] + 110)))
    fig.update_layout(hovermode="closest", margin=dict(l=8, r=8, t=36, b=8))
    fig.update_xaxes(side="top", showgrid=False)
    fig.update_yaxes(autorange="reversed", showgrid=False, type="category")
    return fig


def role_legend() -> str:
    """The role codes of ``head_timeline_figure``, as one line for the page."""
    return " · ".join(f"**{code}** {role}" for role, code in ROLE_CODES.items() if code.strip())
