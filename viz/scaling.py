"""Figures and read-aloud text for the "Why 1/√d_k" tab (§3.2.1 and footnote 4).

Inputs are the plain dicts and numpy arrays that ``model.probes.scaling`` returns (this module imports neither
torch nor gradio): ``dot_product_variance`` -> variance_figure/variance_text, ``dot_product_samples`` ->
histogram_figure/histogram_text, ``saturation_example`` -> weights_figure/weights_text,
``saturation_curves`` -> curves_figure/curves_text, and two ``attention_entropy`` (L, H) arrays ->
entropy_comparison_figure/entropy_comparison_text.

Style, as in viz.heatmaps: transparent backgrounds and mid-grey text, so the figures read on light and dark
pages alike; two mid-tone colours that are told apart by colour-blind viewers (blue = scaled as in the paper,
orange = unscaled; each with its line style and marker too); the maps' scale for the heatmaps
(viz.heatmaps.COLORSCALE). No layout title (gr.Plot's label does that job, and a title makes Gradio reserve 100 px
above the plot). Text is Markdown; every number is ours, nothing is user input.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.axes import bare_axis
from viz.heatmaps import COLORSCALE
from viz.vocab import TEXT_COLOR, TRANSPARENT

GRID_COLOR = "rgba(136,136,136,0.25)"
SCALED_COLOR = "#3A8FD9"  # × 1/√d_k, the paper's
UNSCALED_COLOR = "#E8701A"  # × 1, or the factor chosen on the slider
REF_COLOR = TEXT_COLOR
FONT_SIZE = 16
SUBPLOT_TITLE_SIZE = 13
LEGEND_BOTTOM_PX = 108  # the curves' legend ends this far below the figure's top, above two-line subplot titles
PART1_PX = 400  # part 1's two figures: beside the controls, whole on the first screen at 1280×720

PAPER_QUOTE = (
    "“We suspect that for large values of d_k, the dot products grow large in magnitude, pushing the softmax "
    "function into regions where it has extremely small gradients. To counteract this effect, we scale the "
    "dot products by 1/√d_k.”"
)
FOOTNOTE_4 = (
    "“To illustrate why the dot products get large, assume that the components of q and k are independent "
    "random variables with mean 0 and variance 1. Then their dot product, q·k = Σ q_i k_i, has mean 0 and "
    "variance d_k.”"
)
PAPERS_FACTOR = "with the paper's factor"
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


# ----------------------------------------------------------------------------- numbers as words


def fmt(x: float) -> str:
    """A number as a teacher would say it: 512, 3.14, 0.044, −45.6, 2.4 × 10⁻⁷."""
    x = float(x)
    if not math.isfinite(x):
        return "n/a"
    if x < 0:
        return "−" + fmt(-x)
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e5 or a < 1e-3:
        e = math.floor(math.log10(a))
        m = x / 10**e
        if round(abs(m), 1) >= 10:
            m, e = m / 10, e + 1
        return f"{m:.1f} × 10{str(e).translate(_SUPERSCRIPT)}"
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 1:
        return f"{x:.3g}"
    return f"{x:.3g}"


def weight(x: float) -> str:
    """A softmax weight, keeping a nearly one-hot weight distinguishable from 1: 0.19, 0.9997, 1 − 2.0 × 10⁻⁷."""
    x = float(x)
    if x < 0.99:
        return f"{x:.2f}"
    if 1 - x >= 1e-4:
        return f"{x:.4f}"
    return "1" if x >= 1 else f"1 − {fmt(1 - x)}"


def times(r: float) -> str:
    """A ratio: "4.2", "36", "480", "3.1 × 10⁴"."""
    return f"{r:.1f}" if r < 10 else fmt(r) if r >= 1e5 else f"{r:,.0f}"


def smaller(ratio: float, other: str) -> str:
    """Compare a gradient with ``other``, given other / it: "480 times smaller than …", "about the same size as …"."""
    if 0.8 <= ratio <= 1.25:
        return f"about the same size as {other}"
    if ratio > 1:
        return f"{times(ratio)} times smaller than {other}"
    return f"{times(1 / ratio)} times larger than {other}"


def _nearest(grid: np.ndarray, d_k: float) -> int:
    """Index of the grid point nearest ``d_k`` in log scale."""
    return int(np.argmin(np.abs(np.log2(grid) - math.log2(d_k))))


def value_at(curves: dict, setting: str, metric: str, d_k: float) -> float:
    """A ``saturation_curves`` curve's value at ``d_k``: linear in log d_k (and in log value for the gradients)."""
    x, y = np.log2(curves["d_k"]), np.asarray(curves[setting][metric], dtype=np.float64)
    if metric in ("jacobian_norm", "grad_q_norm"):
        return float(2.0 ** np.interp(math.log2(d_k), x, np.log2(np.maximum(y, 1e-300))))
    return float(np.interp(math.log2(d_k), x, y))


# ----------------------------------------------------------------------------- shared look


_AXIS = dict(gridcolor=GRID_COLOR, zerolinecolor=GRID_COLOR, linecolor=TEXT_COLOR, showline=True,
             title=dict(font=dict(size=FONT_SIZE)))
# One template instead of per-axis updates: it applies to every subplot's axes and is ~3× cheaper to set.
TEMPLATE = go.layout.Template(layout=dict(
    paper_bgcolor=TRANSPARENT,
    plot_bgcolor=TRANSPARENT,
    font=dict(size=FONT_SIZE, color=TEXT_COLOR),  # subplot titles inherit it
    colorway=[SCALED_COLOR, UNSCALED_COLOR, REF_COLOR],
    xaxis=_AXIS,
    yaxis=_AXIS,
    # The legend sits in the top margin of the whole figure, above any subplot titles.
    # (right-aligned: Gradio's plot label badge covers the top-left corner)
    legend=dict(orientation="h", x=1, xanchor="right", yref="container", y=0.995, yanchor="top", bgcolor=TRANSPARENT),
    hoverlabel=dict(font=dict(size=FONT_SIZE)),
))


def _style(fig: go.Figure, height: int, top: int = 60) -> go.Figure:
    fig.update_layout(template=TEMPLATE, height=height, margin=dict(l=70, r=30, t=top, b=60))
    return fig


def _vline(x: float, n_axes: int = 1) -> list[dict]:
    """A dotted vertical line at data x across each of the first ``n_axes`` subplots (cheaper than add_vline).

    Shapes take data coordinates on log axes too (unlike annotations, which take log10 of them).
    """
    refs = [("x", "y")] + [(f"x{i}", f"y{i}") for i in range(2, n_axes + 1)]
    return [dict(type="line", x0=x, x1=x, y0=0, y1=1, xref=xr, yref=f"{yr} domain", layer="below",
                 line=dict(color=TEXT_COLOR, dash="dot", width=1.5)) for xr, yr in refs]


def _log2_axis(dks: np.ndarray, every: int = 1) -> dict:
    """A log x axis labelled at the grid's powers of two (every ``every``-th one, counted from the largest)."""
    ticks = [int(d) for d in dks][::-1][::every][::-1]
    return dict(type="log", tickvals=ticks, ticktext=[str(t) for t in ticks])


# ----------------------------------------------------------------------------- footnote 4: variance


def variance_figure(var: dict, d_k: int | None = None) -> go.Figure:
    """Measured Var(q·k) and Var(q·k/√d_k) against d_k on log–log axes, with the line Var = d_k."""
    d = np.asarray(var["d_k"], dtype=np.float64)
    fig = go.Figure()
    fig.add_scatter(x=d, y=var["var"], mode="markers", name="measured Var(q·k)",
                    marker=dict(size=12, color=UNSCALED_COLOR),
                    hovertemplate="d_k = %{x}<br>Var(q·k) = %{y:.3g}<extra></extra>")
    fig.add_scatter(x=d, y=var["var_scaled"], mode="lines+markers", name="measured Var(q·k / √d_k)",
                    line=dict(color=SCALED_COLOR, width=3), marker=dict(size=10),
                    hovertemplate="d_k = %{x}<br>Var(q·k/√d_k) = %{y:.3g}<extra></extra>")
    # Drawn last so that it shows on top of the measured points it predicts; listed first in the legend.
    fig.add_scatter(x=d, y=d, mode="lines", name="Var = d_k (footnote 4)", legendrank=1,
                    line=dict(color=TEXT_COLOR, dash="dash", width=2.5), hoverinfo="skip")
    if d_k is not None:
        fig.update_layout(shapes=_vline(d_k))
    # every other power of two: flat, apart and clear of the axis title on a phone too
    fig.update_xaxes(title=dict(text="d_k (dimension of queries and keys)"), automargin=True, **_log2_axis(d, 2))
    fig.update_yaxes(type="log", title=dict(text="variance of the dot product"), exponentformat="power", dtick=1)
    return _style(fig, PART1_PX)


def variance_text(var: dict, d_k: int) -> str:
    i = _nearest(var["d_k"], d_k)
    d = int(var["d_k"][i])
    return (
        f"Footnote 4 of the paper: {FOOTNOTE_4}\n\n"
        f"Measured with {var['n_samples']:,} random pairs per point: at d_k = {d} the variance of q·k is "
        f"{fmt(var['var'][i])} (expected {d}), and after dividing by √d_k it is {fmt(var['var_scaled'][i])} "
        f"(expected 1). The orange points climb along the line Var = d_k, while the blue, scaled points stay "
        f"flat at 1 for every d_k."
    )


def histogram_figure(samples: np.ndarray, d_k: int, bins: int = 48) -> go.Figure:
    """Histograms of q·k (top) and q·k/√d_k (bottom) on one shared x axis, with their normal densities."""
    raw = np.asarray(samples, dtype=np.float64)
    scaled = raw / math.sqrt(d_k)
    half = 4.5 * max(math.sqrt(d_k), 1.0)  # ±4.5 standard deviations of the wider of the two
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.14,
                        subplot_titles=(f"raw q·k: standard deviation √{d_k} = {fmt(math.sqrt(d_k))}",
                                        "q·k / √d_k: standard deviation 1"))
    for row, (x, sd, color, name) in enumerate(
        ((raw, math.sqrt(d_k), UNSCALED_COLOR, "q·k"), (scaled, 1.0, SCALED_COLOR, "q·k / √d_k")), start=1
    ):
        width = 9.0 * sd / bins  # `bins` bins across ±4.5 sd; the dashed line is the normal density
        edges = np.arange(-4.5 * sd, 4.5 * sd + width / 2, width)
        density, edges = np.histogram(x, bins=edges, density=True)
        centres = (edges[:-1] + edges[1:]) / 2
        fig.add_bar(x=centres, y=density, width=width, name=name, marker=dict(color=color, line=dict(width=0)),
                    opacity=0.85, hovertemplate="%{x:.3g}: density %{y:.3g}<extra></extra>", row=row, col=1)
        grid = np.linspace(-half, half, 301)
        fig.add_scatter(x=grid, y=np.exp(-0.5 * (grid / sd) ** 2) / (sd * math.sqrt(2 * math.pi)), mode="lines",
                        name=f"normal, variance {fmt(sd * sd)}", line=dict(color=REF_COLOR, dash="dash", width=2),
                        hoverinfo="skip", row=row, col=1)
    fig.update_xaxes(range=[-half, half], tickvals=_inner_ticks(half))
    fig.update_xaxes(title=dict(text=f"value of the dot product (d_k = {d_k})"), row=2, col=1)
    fig.update_yaxes(title=dict(text="density"), rangemode="tozero")
    fig.update_layout(bargap=0, showlegend=False)
    return _style(fig, PART1_PX)


def _inner_ticks(half: float) -> list[float]:
    """Ticks at a round step, 0 and its multiples within 80 % of ±``half``: none at the axis's ends, where a label
    ran into the y axis's "0" on a phone."""
    raw = 0.8 * half / 2
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    k = int(0.8 * half // step)
    return [float(step * i) for i in range(-k, k + 1)]


def histogram_text(samples: np.ndarray, d_k: int) -> str:
    raw = np.asarray(samples, dtype=np.float64)
    lo, hi = np.quantile(raw, [0.025, 0.975])
    s = math.sqrt(d_k)
    return (
        f"With d_k = {d_k}, the middle 95 % of {raw.size:,} random dot products lie between {fmt(lo)} and "
        f"{fmt(hi)}; footnote 4 predicts about ±1.96·√d_k = ±{fmt(1.96 * s)}. "
        f"Divided by √d_k they lie between {fmt(lo / s)} and {fmt(hi / s)}, whatever d_k is. "
        f"Both panels share one x axis: the wider the logits, the more the largest one dominates the softmax."
    )


# ----------------------------------------------------------------------------- §3.2.1: saturation


def _factor_label(f: float, d_k: int) -> str:
    if math.isclose(f, 1 / math.sqrt(d_k), rel_tol=1e-9):
        return f"× 1/√{d_k} = {fmt(f)}" + (" (paper)" if d_k != 1 else " (paper = unscaled)")
    return f"× {fmt(f)}" + (" (unscaled)" if f == 1 else "")


def _short_factor_label(f: float, d_k: int) -> str:
    """``_factor_label`` short enough for a subplot title on a phone: "× 1/√512 (paper)", "× 0.42", "× 1 (unscaled)"."""
    if math.isclose(f, 1 / math.sqrt(d_k), rel_tol=1e-9):
        return f"× 1/√{d_k} (paper)"
    return _factor_label(f, d_k)


def weights_figure(example: dict) -> go.Figure:
    """Softmax weights of one query over n keys: paper's factor (left) vs chosen factor (right), y in 0..1.

    Subplot titles of three short lines and one x-axis title: side by side on a phone they must not overlap."""
    d_k, n = example["d_k"], example["n_keys"]
    settings = (("paper", SCALED_COLOR), ("chosen", UNSCALED_COLOR))
    titles = [f"{_short_factor_label(example[s]['factor'], d_k)}<br>largest {weight(example[s]['max_weight'])}<br>"
              f"entropy {fmt(example[s]['entropy'])} nats" for s, _ in settings]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06, subplot_titles=titles)
    keys = [str(j + 1) for j in range(n)]
    for col, (s, color) in enumerate(settings, start=1):
        fig.add_bar(x=keys, y=example[s]["weights"], name=_factor_label(example[s]["factor"], d_k),
                    marker=dict(color=color, line=dict(width=0)), customdata=example["logits"],
                    hovertemplate="%{x}: weight %{y:.3g}<br>q·k = %{customdata:.3g}<extra></extra>", row=1, col=col)
    fig.update_layout(bargap=0.15, showlegend=False)
    fig.update_yaxes(range=[0, 1.02], dtick=0.25)
    fig.update_yaxes(title=dict(text="softmax weight"), row=1, col=1)
    fig.update_xaxes(tickangle=0, type="category")
    fig.update_xaxes(title=dict(text=f"key (of {n}, d_k = {d_k})"), row=1, col=1)
    fig.update_annotations(font_size=SUBPLOT_TITLE_SIZE)
    return _style(fig, 480, top=110)


def weights_text(example: dict) -> str:
    d_k, n = example["d_k"], example["n_keys"]
    p, c = example["paper"], example["chosen"]
    first = (
        f"One random query meets {n} random keys with d_k = {d_k}. Scaled by the paper's 1/√d_k = "
        f"{fmt(p['factor'])}, the largest weight is {weight(p['max_weight'])} and the entropy {fmt(p['entropy'])} "
        f"nats (an even spread would be log {n} = {fmt(math.log(n))})."
    )
    if math.isclose(c["factor"], p["factor"], rel_tol=1e-9):
        return first + " Move the slider towards 1 to see what happens without the scaling."
    ratio = p["jacobian_norm"] / max(c["jacobian_norm"], 1e-300)
    return (
        f"{first} Multiplied by {fmt(c['factor'])} instead, the largest weight is {weight(c['max_weight'])} and the "
        f"entropy {fmt(c['entropy'])} nats. The softmax's gradient (the size of its Jacobian) is then "
        f"{smaller(ratio, PAPERS_FACTOR)}"
        + (": the paper's “regions where it has extremely small gradients”." if ratio >= 10 else ".")
    )


_CURVE_PANELS = (  # two short lines each: four panels side by side on a phone
    ("entropy", "softmax entropy<br>(nats)", False),
    ("max_weight", "largest<br>softmax weight", False),
    ("jacobian_norm", "softmax gradient<br>‖diag(w) − wwᵀ‖", True),
    ("grad_q_norm", "gradient reaching q<br>‖∂loss/∂q‖", True),
)


# Each setting's line style and marker beside its colour (the legend shows both): colour is never the only channel
CURVE_STYLES = {"scaled": ("solid", "circle"), "unscaled": ("dash", "square")}


def curves_figure(curves: dict, d_k: int | None = None) -> go.Figure:
    """Entropy, largest weight and two gradient sizes against d_k (log x; gradients on log y), median query."""
    d = np.asarray(curves["d_k"], dtype=np.float64)
    fig = make_subplots(rows=2, cols=2, shared_xaxes=True, vertical_spacing=0.18, horizontal_spacing=0.18,
                        subplot_titles=[t for _, t, _ in _CURVE_PANELS])
    for i, (metric, _, log_y) in enumerate(_CURVE_PANELS):
        row, col = divmod(i, 2)
        row, col = row + 1, col + 1
        if metric == "entropy":
            fig.add_scatter(x=[d[0], d[-1]], y=[math.log(curves["n_keys"])] * 2, mode="lines",
                            name=f"even spread: log {curves['n_keys']}", line=dict(color=REF_COLOR, dash="dash"),
                            hoverinfo="skip", row=row, col=col)
        for setting, color, name in (("scaled", SCALED_COLOR, "× 1/√d_k (paper)"),
                                     ("unscaled", UNSCALED_COLOR, "× 1 (unscaled)")):  # and CURVE_STYLES
            y = np.asarray(curves[setting][metric], dtype=np.float64)
            if log_y:
                y = np.where(y > 0, y, np.nan)  # a log axis cannot show 0
            fig.add_scatter(x=d, y=y, mode="lines+markers", name=name, legendgroup=setting, showlegend=i == 0,
                            line=dict(color=color, width=3, dash=CURVE_STYLES[setting][0]),
                            marker=dict(size=7, symbol=CURVE_STYLES[setting][1]),
                            hovertemplate=f"d_k = %{{x}}<br>{name}: %{{y:.3g}}<extra></extra>", row=row, col=col)
        if d_k is not None:
            ys = [value_at(curves, s, metric, d_k) for s in ("scaled", "unscaled")]
            fig.add_scatter(x=[d_k, d_k], y=ys, mode="markers", showlegend=False, hoverinfo="skip",
                            marker=dict(size=15, color=[SCALED_COLOR, UNSCALED_COLOR],
                                        symbol=[CURVE_STYLES[s][1] for s in ("scaled", "unscaled")],
                                        line=dict(color=TEXT_COLOR, width=2)), row=row, col=col)
        if log_y:
            fig.update_yaxes(type="log", exponentformat="power", dtick=1, row=row, col=col)
    if d_k is not None:
        fig.update_layout(shapes=_vline(d_k, 4))
    fig.update_yaxes(rangemode="tozero", row=1)
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    fig.update_xaxes(**_log2_axis(d, every=3))
    fig.update_xaxes(title=dict(text="d_k"), row=2)
    fig.update_annotations(font_size=SUBPLOT_TITLE_SIZE, yshift=8)  # clear of the top tick label ("1" on a phone)
    # The legend ends just above the subplot titles and grows upwards (three rows on a phone), clear of Gradio's
    # label badge over the figure's top-left corner (one row on a wide screen).
    fig.update_layout(legend=dict(y=1 - LEGEND_BOTTOM_PX / 700, yanchor="bottom", font=dict(size=SUBPLOT_TITLE_SIZE)))
    return _style(fig, 700, top=150)


def curves_text(curves: dict, d_k: int = 512) -> str:
    v = {(s, m): value_at(curves, s, m, d_k) for s in ("scaled", "unscaled") for m, _, _ in _CURVE_PANELS}
    ratio_j = v["scaled", "jacobian_norm"] / max(v["unscaled", "jacobian_norm"], 1e-300)
    ratio_q = v["scaled", "grad_q_norm"] / max(v["unscaled", "grad_q_norm"], 1e-300)
    where = "" if np.isclose(curves["d_k"], d_k).any() else " (read between the measured points)"
    return (
        f"The paper, §3.2.1: {PAPER_QUOTE}\n\n"
        f"For a typical query (the median of {curves['n_trials']:,} random queries, each over {curves['n_keys']} "
        f"keys) at d_k = {d_k}{where}, the unscaled softmax gives one key a weight of "
        f"{weight(v['unscaled', 'max_weight'])} (entropy {fmt(v['unscaled', 'entropy'])} nats), and its gradient is "
        f"{smaller(ratio_j, 'with scaling')}; the gradient that reaches the query is "
        f"{smaller(ratio_q, 'with scaling')}. "
        f"With the 1/√d_k scaling every curve stays roughly level as d_k grows (largest weight "
        f"{weight(v['scaled', 'max_weight'])}, entropy {fmt(v['scaled', 'entropy'])} nats)."
    )


# ----------------------------------------------------------------------------- the live model


def entropy_comparison_figure(
    normal: np.ndarray,
    changed: np.ndarray,
    labels: tuple[str, str] = ("trained scale × 1/√d_k", "changed scale"),
) -> go.Figure:
    """Mean attention entropy per head, (L, H) each, on one colour scale: one map, ``normal``'s layers above
    ``changed``'s (``entropy_rows``; side by side, a phone left each cell ~14 px for a 22-px number), each half titled.

    One heatmap with no gaps between its cells: plotly draws such a map as an image of one pixel a cell (with gaps,
    of one pixel a pixel), and one map draws faster than two as subplots (27 against 31 ms in Chromium on this 2-core
    machine; its 96 cell texts are most of what is left)."""
    a, b = np.asarray(normal, dtype=np.float64), np.asarray(changed, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"expected two (L, H) arrays of one shape, got {a.shape} and {b.shape}")
    n_layers, n_heads = a.shape
    top = float(np.nanmax([np.nanmax(a), np.nanmax(b), 1e-9]))
    gap = _ENTROPY_GAP_PX // _ENTROPY_ROW_PX
    layers = [str(k) for k in range(1, n_layers + 1)]
    rows = ([f"{labels[1]} · layer {k}" for k in layers] + [""] * gap  # from the bottom, as entropy_rows
            + [f"{labels[0]} · layer {k}" for k in layers])
    fig = go.Figure(go.Heatmap(
        z=entropy_rows(a, b), x=np.arange(1, n_heads + 1), y=np.arange(1, len(rows) + 1), coloraxis="coloraxis",
        texttemplate="%{z:.2f}", textfont=dict(size=12), customdata=[[r] * n_heads for r in rows], hoverongaps=False,
        hovertemplate="%{customdata}, head %{x}: %{z:.2f} nats<extra></extra>"))
    # the colour bar under the map, across it: beside it, it took a phone's columns. No title of its own (a title
    # costs plotly a measurement of the whole bar, ~5 ms a draw): the unit is in the Plot's label (ENTROPY_LABEL).
    # Its tick labels drawn as they are, as the axes' are (viz.axes.bare_axis).
    fig.update_layout(coloraxis=dict(colorscale=[list(stop) for stop in COLORSCALE], cmin=0, cmax=top, colorbar=dict(
        outlinewidth=0, orientation="h", thickness=12, x=0, xanchor="left", ticklabeloverflow="allow",
        len=1, y=-64 / (_ENTROPY_ROW_PX * len(rows)), yanchor="top")))
    # each half's title from the left edge, just above it (the lower one's in the gap)
    fig.update_layout(annotations=[
        dict(text=text, x=0, xref="paper", xanchor="left", y=y + 0.5, yref="y", yanchor="bottom", showarrow=False,
             font=dict(size=SUBPLOT_TITLE_SIZE)) for text, y in ((labels[0], len(rows)), (labels[1], n_layers))])
    fig.update_xaxes(bare_axis(title=dict(text="head"), dtick=1))
    fig.update_yaxes(bare_axis(title=dict(text="layer"), tickvals=[i + 1 for i, r in enumerate(rows) if r],
                               ticktext=layers * 2))
    fig = _style(fig, entropy_height(n_layers), top=60)
    fig.update_layout(margin=dict(l=60, r=12, b=110))
    return fig


def entropy_rows(normal: np.ndarray, changed: np.ndarray) -> np.ndarray:
    """The rows of ``entropy_comparison_figure``'s map, from the bottom: ``changed``'s layers 1…L, two rows of NaN
    (the gap, with the lower half's title), ``normal``'s layers 1…L; float32, as plotly sends it."""
    a, b = np.asarray(normal, dtype=np.float32), np.asarray(changed, dtype=np.float32)
    gap = np.full((_ENTROPY_GAP_PX // _ENTROPY_ROW_PX, a.shape[1]), np.nan, dtype=np.float32)
    return np.concatenate([b, gap, a])


_ENTROPY_ROW_PX, _ENTROPY_GAP_PX = 32, 64
ENTROPY_LABEL = "Mean attention entropy per head (nats)"  # the Plot's label: the colour bar's unit


def entropy_height(n_layers: int) -> int:
    """The height of ``entropy_comparison_figure`` for ``n_layers`` layers: two maps, the gap, the titles and the
    colour bar."""
    return 2 * _ENTROPY_ROW_PX * n_layers + _ENTROPY_GAP_PX + 60 + 110


def waiting_figure(height: int, text: str) -> dict:
    """A blank figure ``height`` px tall with ``text`` in its middle: what a figure of the model's run shows until the
    run's own is drawn in its place (a spec dict: no axes, no data)."""
    hidden = dict(visible=False)
    return dict(data=[], layout=dict(
        height=height, margin=dict(l=8, r=8, t=30, b=8), paper_bgcolor=TRANSPARENT, plot_bgcolor=TRANSPARENT,
        xaxis=hidden, yaxis=hidden, font=dict(color=TEXT_COLOR, size=14),
        annotations=[dict(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)]))


def entropy_comparison_text(
    normal: np.ndarray,
    changed: np.ndarray,
    labels: tuple[str, str] = ("the trained scale", "the changed scale"),
) -> str:
    a, b = np.asarray(normal, dtype=np.float64), np.asarray(changed, dtype=np.float64)
    ma, mb = float(np.nanmean(a)), float(np.nanmean(b))
    sharper = int(np.nansum(b < a))
    n = int(np.isfinite(a).sum())
    if mb < ma:
        why = "Sharper maps are the saturation of §3.2.1: larger logits push each softmax towards one key."
    else:
        why = "Smaller logits spread each softmax more evenly over the keys."
    return (
        f"Averaged over all {n} heads, the attention entropy is {fmt(ma)} nats with {labels[0]} and {fmt(mb)} nats "
        f"with {labels[1]}. Lower entropy means sharper, more one-hot attention; {sharper} of the {n} heads "
        f"became sharper. {why}"
    )
