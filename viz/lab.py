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
# One colour and one marker per setting (its seeds share both; a seed is told by its line style): each colour is
# ≥ 3:1 against white and against the dark theme's #27272a, and h1 / h1-unscaled, compared most, differ in hue.
RUN_COLORS = {
    "h8": "#1F77B4", "h1": "#C26A00", "h1-unscaled": "#BC5090", "h1-additive": "#008B6B", "h8-unscaled": "#9467BD",
    "h4": "#EF5675", "h2": "#B8860B", "h16": "#7F7F7F",
}
RUN_SYMBOLS = {"h8": "circle", "h1": "square", "h1-unscaled": "x", "h1-additive": "diamond",
               "h8-unscaled": "triangle-up", "h4": "star", "h2": "triangle-down", "h16": "cross"}
SEED_DASHES = ("solid", "dash", "dot", "dashdot")  # seed 1, 2, 3, … — the legend names each
CURVES = (  # (key, subplot title, log y); "softmax_grad" comes from the time-lapse maps (``series``). Short titles:
    # on a phone a longer one was cut at the figure's edge
    ("probe_loss", "validation loss (nats per token)", False),
    ("softmax_grad", "softmax gradient ‖diag(p) − pp<sup>T</sup>‖", False),
    ("grad_wq", "‖∇W<sup>Q</sup>‖ (log scale)", True),
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


LEGEND_LINE_PX = 24  # the curves' height added per legend entry past six


def _layout(height: int) -> dict:
    return dict(height=height, autosize=True, margin=dict(l=8, r=8, t=36, b=8), paper_bgcolor=TRANSPARENT,
                plot_bgcolor=TRANSPARENT, font=dict(size=FONT_SIZE, color=TEXT_COLOR), hovermode="x unified",
                legend=dict(orientation="h", x=0, y=-0.08, yanchor="top", font=dict(size=FONT_SIZE)))


def _curve(entry: dict, s: int, key: str, kind: str, layer: int) -> tuple[list, np.ndarray]:
    """(steps, values) of seed index ``s`` of a setting for one panel."""
    if key == "softmax_grad":
        tl = entry["series"][s]
        return tl["step"], _layer_values(tl["softmax_grad"][kind], layer)
    curves = entry["curves"][s]
    if key == "probe_loss":
        return curves["step"], np.asarray(curves[key], dtype=np.float64)
    return curves["step"], _layer_values(curves[f"{key}.{kind}"], layer)


def curves_figure(runs: Sequence[dict], kind: str, layer: int = MEAN) -> go.Figure:
    """Validation loss, the softmax's own gradient, ‖∇W^Q‖ and attention entropy over training steps, one line per
    seed (``runs``: entries of ``Lab.runs_payload()["runs"]``): a setting's colour and marker, the seed's line style
    (solid, dashed, dotted: as the legend says).
    ``kind`` and ``layer`` pick the attention of the lower panels (``MEAN``: over layers)."""
    fig = make_subplots(rows=len(CURVES), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=[title for _, title, _ in CURVES])
    for entry in runs:
        color, symbol = run_color(entry["name"]), RUN_SYMBOLS.get(entry["name"], "circle")
        for s, seed in enumerate(entry["seeds"]):
            name = f"{legend_name(entry['label'])} · seed {seed}"
            dash = SEED_DASHES[min(seed, len(SEED_DASHES)) - 1]
            for row, (key, _, _) in enumerate(CURVES, start=1):
                if key == "softmax_grad" and not entry.get("series", [None] * (s + 1))[s]:
                    continue
                steps, y = _curve(entry, s, key, kind, layer)
                fig.add_trace(go.Scatter(
                    x=steps, y=y, mode="lines+markers", name=name, legendgroup=name, showlegend=row == 1,
                    line=dict(color=color, width=2.5, dash=dash),
                    marker=dict(symbol=symbol, size=8, color=color, maxdisplayed=8),
                    hovertemplate=f"{escape_token(name, 60)}: %{{y:.4g}}<extra></extra>"), row=row, col=1)
    # four panels of ~250 px: a log axis's ticks stay apart on a phone; the legend (on top, below) takes its room from
    # them, on a phone a line or so per run, so the figure grows with it
    lines = sum(len(entry["seeds"]) for entry in runs)
    fig.update_layout(**_layout(1100 + LEGEND_LINE_PX * max(0, lines - 6)))
    # The legend goes on top (it pushes the top margin as it grows): below, a long list of runs on a phone ran over
    # the x-axis title, and in the lecture it fell under the screen's edge.
    fig.update_layout(legend=dict(y=1.035, yanchor="bottom"), margin=dict(l=8, r=8, t=36, b=8))
    axis = dict(gridcolor=GRID_COLOR, zerolinecolor=GRID_COLOR, linecolor=TEXT_COLOR, showline=True)
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    log_row = [key for key, _, _ in CURVES].index("grad_wq") + 1
    fig.update_yaxes(type="log", dtick=1, exponentformat="power", row=log_row, col=1)  # 10⁻², 10⁻¹: no crowding
    fig.update_xaxes(title_text="training step", row=len(CURVES), col=1)
    fig.update_annotations(font_size=FONT_SIZE)
    return fig


def curve_trace(runs: Sequence[dict], name: str, key: str = "probe_loss") -> int:
    """The index, in ``curves_figure(runs, …)``'s traces, of setting ``name``'s first seed's curve ``key``."""
    i = 0
    for entry in runs:
        for s in range(len(entry["seeds"])):
            for k, _, _ in CURVES:
                if k == "softmax_grad" and not entry.get("series", [None] * (s + 1))[s]:
                    continue
                if entry["name"] == name and s == 0 and k == key:
                    return i
                i += 1
    raise ValueError(f"no run {name!r} among the curves")


def table3a_figure(points: Sequence[dict], paper: Sequence[tuple[int, float]]) -> go.Figure:
    """Table 3 (A) as a chart: test BLEU against h = 8 (its seeds' mean) for every seed of every h (a point; a
    circle trained on the CPU, an open diamond on a GPU), each h's mean ± sd over seeds, and the paper's row
    against its base (newstest2013) beside it. ``points``: {"h", "seed", "bleu", "device"} with "bleu" already
    relative to h = 8; ``paper``: (h, BLEU − base)."""
    fig = go.Figure()
    by_h: dict[int, list[float]] = {}
    for p in points:
        by_h.setdefault(p["h"], []).append(p["bleu"])
    hs = sorted(by_h)
    means = [float(np.mean(by_h[h])) for h in hs]
    sds = [float(np.std(by_h[h], ddof=1)) if len(by_h[h]) > 1 else 0.0 for h in hs]
    fig.add_trace(go.Scatter(
        x=hs, y=means, mode="lines+markers", name="ours: mean ± sd over seeds", line=dict(color=RUN_COLORS["h8"],
        width=2.5), marker=dict(size=12, symbol="line-ew-open", color=RUN_COLORS["h8"], line=dict(width=3)),
        error_y=dict(type="data", array=sds, visible=True, color=RUN_COLORS["h8"], thickness=2, width=10),
        hovertemplate="h = %{x}: %{y:+.2f} (mean)<extra></extra>"))
    for device, symbol in (("CPU", "circle"), ("GPU", "diamond-open")):
        mine = [p for p in points if p["device"] == device]
        if mine:
            fig.add_trace(go.Scatter(
                x=[p["h"] for p in mine], y=[p["bleu"] for p in mine], mode="markers", name=f"a seed ({device})",
                marker=dict(size=10, symbol=symbol, color=RUN_COLORS["h1"], line=dict(width=2, color=RUN_COLORS["h1"])),
                customdata=[p["seed"] for p in mine],
                hovertemplate="h = %{x}, seed %{customdata}: %{y:+.2f}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=[h for h, _ in paper], y=[d for _, d in paper], mode="lines+markers", name="the paper (newstest2013)",
        line=dict(color=TEXT_COLOR, width=2, dash="dash"), marker=dict(size=9, symbol="square", color=TEXT_COLOR),
        hovertemplate="paper, h = %{x}: %{y:+.1f}<extra></extra>"))
    fig.update_layout(**_layout(390))  # the tab's first figure: whole on the first screen at 1280×720
    # the legend on top at the right: at the left the Plot's label (Gradio's badge over the figure's corner) hid it
    fig.update_layout(hovermode="closest", legend=dict(y=1.02, yanchor="bottom", x=1, xanchor="right"),
                      margin=dict(l=8, r=8, t=8, b=8))
    axis = dict(gridcolor=GRID_COLOR, zerolinecolor=TEXT_COLOR, linecolor=TEXT_COLOR, showline=True)
    fig.update_xaxes(type="log", tickvals=[1, 2, 4, 8, 16, 32], ticktext=["1", "2", "4", "8", "16", "32"],
                     title_text="heads h (d_k = d_model / h)", **axis)
    fig.update_yaxes(title_text="BLEU − BLEU at h = 8", zeroline=True, **axis)
    return fig


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
                      margin=dict(l=8, r=8, t=64, b=8))  # (a title of two lines)
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
    fig.update_layout(**_layout(max(320, 30 * v.shape[0] + 140)))
    # the head labels sit on top, below the component's label badge (~40 px): a 36-px margin put H1 under it
    fig.update_layout(hovermode="closest", margin=dict(l=8, r=8, t=72, b=8))
    fig.update_xaxes(side="top", showgrid=False)
    fig.update_yaxes(autorange="reversed", showgrid=False, type="category")
    return fig


def role_legend() -> str:
    """The role codes of ``head_timeline_figure``, as one line for the page."""
    return " · ".join(f"**{code}** {role}" for role, code in ROLE_CODES.items() if code.strip())
