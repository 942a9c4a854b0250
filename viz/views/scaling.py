"""The "Why 1/√d_k" tab (§3.2.1 and footnote 4): random vectors first, then the trained model itself.

The view's choices: log₂ d_k (0..10), the number of keys, the seed, and ``factor``, one slider with one meaning in
every part of the tab: the number every q·k is multiplied by (0 … 1; 1 = no scaling). Its text says which factor that
is (``factor_label``: "× 1/√24 = × 0.204 (the model's own 1/√d_k)"), and beside the slider what it means for the
random vectors' d_k and for the model's (``factor_note``). A factor within ``SNAP`` of a 1/√d_k is that 1/√d_k.
Sections 1 and 2 measure random vectors (``model.probes.scaling``, on ``device``); section 3 runs the trained
model with its 1/√d_k replaced, through the ``attention`` callable the app passes in
(``(text, target=None, scale=None) -> AttentionResult``) and ``trained`` (``text -> AttentionResult``,
the model as trained, which the app caches per sentence: moving the slider re-runs only the changed model).
"""

from __future__ import annotations

import base64
import html
import json
import math
import time
from collections.abc import Callable, Iterator
from functools import lru_cache, wraps
from typing import TYPE_CHECKING

import numpy as np

from model.probes import scaling as footnote4
from viz import describe
from viz import scaling as figures
from viz.views.attention.maps import check_view, head_plot
from viz.views.inputs import check_log2_dk, check_n_keys, check_seed, check_tab_factor, check_text, checked
from viz.views.outputs import Figure, finish_figure
from viz.vocab import MEAN

if TYPE_CHECKING:
    from model.network.config import TransformerConfig
    from model.network.inference import AttentionResult


SLIDER_STEP = 0.0001
SNAP = 0.0005  # a factor this close to a 1/√d_k is that 1/√d_k (the slider's 0.2041 is the model's 1/√24)


def trained_intro(cfg: TransformerConfig) -> str:
    """Section 3's heading: the trained model's own d_k and scale."""
    return (f"### 3 · Inside the trained model (d_k = {cfg.d_k})\nThe same factor replaces the model's own "
            f"× 1/√{cfg.d_k} = × {cfg.scale:.3f}: at {slider_value(cfg.scale)} (the button “the model's own”) you see "
            f"the model as trained, at 1 without any scaling.")


def slider_value(factor: float) -> float:
    """``factor`` as the slider holds it (its step)."""
    return round(float(factor), 4)


def snapped(factor: float, d_k: int) -> float:
    """``factor``, or 1/√d_k exactly where it is within ``SNAP`` of it."""
    own = 1 / math.sqrt(d_k)
    return own if abs(float(factor) - own) <= SNAP else float(factor)


def factor_label(factor: float, d_k: int, whose: str = "the model's own") -> str:
    """The factor applied, as a multiplication: "× 1/√24 = × 0.204 (the model's own 1/√d_k)" (``d_k``'s, ``whose``),
    "× 1 (no scaling)", "× 0 (every key the same weight)", "× 0.5 = × 1/√4"."""
    factor = snapped(factor, d_k)
    if math.isclose(factor, 1 / math.sqrt(d_k), rel_tol=1e-12):
        return f"× 1/√{d_k} = × {factor:.3g} ({whose} 1/√d_k)"
    if factor == 1:
        return "× 1 (no scaling)"
    if factor == 0:
        return "× 0 (every key the same weight)"
    return f"× {factor:.3g} = × 1/√{1 / factor ** 2:.3g}"


def factor_note(cfg: TransformerConfig, factor, log2_dk) -> str:
    """Beside the slider: the factor applied on every part of the tab, and what it is for each part's d_k."""
    factor, d_k = check_tab_factor(factor), 2 ** check_log2_dk(log2_dk)
    applied = snapped(snapped(factor, cfg.d_k), d_k)
    text = "every key the same weight" if applied == 0 else (
        "no scaling" if applied == 1 else f"= × 1/√{1 / applied ** 2:.3g}")
    return (f"**Every q·k on this tab × {applied:.4g}** ({text}). The paper's 1/√d_k would be × 1/√{d_k} = "
            f"× {d_k ** -0.5:.3g} for the random vectors of parts 1–2 (d_k = {d_k}), and is × 1/√{cfg.d_k} = "
            f"× {cfg.scale:.3g} for the model of part 3 (d_k = {cfg.d_k}), the factor it was trained with.")


@lru_cache(maxsize=16)
def _variance(seed: int, device) -> dict:
    return footnote4.dot_product_variance(seed=seed, device=device)


@lru_cache(maxsize=16)
def _curves(n_keys: int, seed: int, device) -> dict:
    return footnote4.saturation_curves(n_keys=n_keys, seed=seed, device=device)


def _built_once(view: Callable) -> Callable:
    """``view`` (figures, then a text) built once for each choice of its arguments and kept as JSON (at most 32
    choices): sections 1 and 2 are the same for every visitor (their samples are seeded), and building their four
    figures took ~160 ms of the server's time on every page load. Each call gets figures of its own."""
    @lru_cache(maxsize=32)
    def kept(*args, **kwargs) -> str:
        return json.dumps(view(*args, **kwargs))

    @wraps(view)
    def run(*args, **kwargs):
        *shown, text = json.loads(kept(*args, **kwargs))
        return (*(Figure(figure) for figure in shown), text)

    return run


@_built_once
def variance_view(log2_dk, seed, *, device) -> tuple[Figure, Figure, str]:
    """Section 1: Var(q·k) against d_k, the histogram of q·k at this d_k, and their text."""
    d_k, seed = 2 ** int(log2_dk), int(seed)
    var = _variance(seed, device)
    samples = footnote4.dot_product_samples(d_k, seed=seed, device=device)
    text = figures.variance_text(var, d_k) + "\n\n" + figures.histogram_text(samples, d_k)
    return (finish_figure(figures.variance_figure(var, d_k), "variance"),
            finish_figure(figures.histogram_figure(samples, d_k), "histogram"), text)


@_built_once
def saturation_view(log2_dk, n_keys, factor, seed, *, device) -> tuple[Figure, Figure, str]:
    """Section 2: one query's softmax weights at the paper's and the chosen factor, the curves against d_k."""
    d_k, n_keys, seed = 2 ** int(log2_dk), int(n_keys), int(seed)
    example = footnote4.saturation_example(d_k, factor=snapped(factor, d_k), n_keys=n_keys, seed=seed,
                                           device=device)
    curves = _curves(n_keys, seed, device)
    text = figures.weights_text(example) + "\n\n" + figures.curves_text(curves, d_k)
    return (finish_figure(figures.weights_figure(example), "softmax_weights"),
            finish_figure(figures.curves_figure(curves, d_k), "curves"), text)


def live_view(
    cfg: TransformerConfig,
    attention: Callable[..., AttentionResult],
    trained: Callable[[str], AttentionResult],
    text: str,
    factor,
    kind: str,
    layer,
    *,
    both: Callable[[str, float], tuple[AttentionResult, AttentionResult]] | None = None,
) -> tuple[Figure, Figure, Figure, str]:
    """Section 3: the trained model with 1/√d_k replaced by the chosen factor.

    Returns the mean-over-heads map as trained and as changed (both for the same target, the trained
    model's translation, so that they line up), the mean attention entropy per head both ways, and
    Markdown with both models' own translations and the entropy summary. ``both(text, factor)``, where the app
    offers it (``Runs.trained_and_scaled``), gives ``trained(text)`` and ``attention(text, scale=factor)`` at once:
    the two greedy decodes as one batch, a scale per row (the same tokens as each alone).
    """
    kind, layer, _ = check_view(cfg, kind, layer)
    factor = snapped(factor, cfg.d_k)
    normal, changed = both(text, factor) if both is not None else (trained(text), attention(text, scale=factor))
    # The changed model on the trained model's translation: encoder self-attention reads the source alone, so that
    # the changed model's own run has its maps (no third pass: ~14 ms of a run's ~100 on the server).
    forced = changed if kind == "encoder_self" else attention(text, normal.translation or None, scale=factor)
    *figs, entropies = _run_figures(cfg, normal, forced, kind, layer, factor)
    return *figs, _summary(cfg, factor, normal.translation, changed.translation, *entropies)


def _run_figures(cfg: TransformerConfig, normal: AttentionResult, forced: AttentionResult, kind: str, layer: int,
                 factor: float) -> tuple[Figure, Figure, Figure, tuple[np.ndarray, np.ndarray]]:
    """A run's two maps (as trained, and changed on the same target) and its entropy per head; the two (L, H)
    entropies."""
    label = factor_label(factor, cfg.d_k)
    # each map's colour bar says what it shows in the subtitle, not in a title of its own (_where_below)
    plots = (_where_below(head_plot(normal, kind, layer, MEAN, f"trained: × 1/√{cfg.d_k} = {cfg.scale:.3g}",
                                    "scale_trained", bar_title="")),
             _where_below(head_plot(forced, kind, layer, MEAN, f"changed: {label}", "scale_changed", bar_title="")))
    ent_normal = footnote4.attention_entropy(normal.maps(kind))  # (L, H)
    ent_changed = footnote4.attention_entropy(forced.maps(kind))
    entropy = entropy_figure(ent_normal, ent_changed, (f"× 1/√d_k = {cfg.scale:.3g}", label))
    return *plots, entropy, (ent_normal, ent_changed)


DECODING = "*decoding…*"  # a translation not there yet (live_stream's first answer)


def _summary(cfg: TransformerConfig, factor: float, normal: str | None, changed: str | None, ent_normal,
             ent_changed) -> str:
    """The run's Markdown: both translations (None: still decoding), the same-translation note, the entropies."""
    label = factor_label(factor, cfg.d_k)
    shown = [DECODING if t is None else (t or "(empty)") for t in (changed, normal)]
    note = "" if None in (normal, changed) else same_translation_note(factor, cfg.scale, changed, normal,
                                                                       ent_normal, ent_changed)
    return (f"**Translation with {label}:** {shown[0]}\n\n**Translation as trained:** {shown[1]}\n\n"
            + note + figures.entropy_comparison_text(ent_normal, ent_changed))


def live_stream(
    cfg: TransformerConfig,
    attention: Callable[..., AttentionResult],
    trained: Callable[[str], AttentionResult],
    text: str,
    factor,
    kind: str,
    layer,
    *,
    both: Callable[[str, float], tuple[AttentionResult, AttentionResult]],
    source: Callable[[str, float], tuple[AttentionResult, AttentionResult]],
    cached: Callable[[str, float | None], bool],
) -> Iterator[tuple[str, str]]:
    """The page's run (``live_view``'s, as ``live_frames`` gives it to the page): encoder self-attention reads the
    source alone, so where the run is not cached its three figures come first, from the encoder at both scales
    (``source(text, factor)``: as trained and changed, one batch, a few ms), then the two translations once the
    greedy decodes are done (tens of ms more: the page draws the maps meanwhile), with each map's export title,
    which names the translation (``meta.export.title``; the page writes it into the figure drawn). Other kinds, or
    a cached run: one answer."""
    kind, layer, _ = check_view(cfg, kind, layer)
    factor = snapped(factor, cfg.d_k)
    if kind != "encoder_self" or (cached(text, None) and cached(text, factor)):
        yield live_frames(live_view(cfg, attention, trained, text, factor, kind, layer, both=both))
        return
    normal, changed = source(text, factor)
    *figs, entropies = _run_figures(cfg, normal, changed, kind, layer, factor)
    yield live_frames((*figs, _summary(cfg, factor, None, None, *entropies)))
    *done, summary = live_view(cfg, attention, trained, text, factor, kind, layer, both=both)
    exports = {plot_id: figure["layout"]["meta"]["export"]["title"] for plot_id, figure in zip(LIVE_PLOTS, done)
               if "export" in figure["layout"].get("meta", {})}
    yield json.dumps({"exports": exports, "answer": time.monotonic_ns()}, separators=(",", ":"),
                     ensure_ascii=False), summary


@lru_cache(maxsize=32)
def _entropy_skeleton(n_layers: int, n_heads: int, labels: tuple[str, str]) -> str:
    """The entropy figure for this shape and these labels with every entropy 0, as JSON text (``entropy_figure``)."""
    zeros = np.zeros((n_layers, n_heads))
    return json.dumps(finish_figure(figures.entropy_comparison_figure(zeros, zeros, labels), "entropy_per_head"))


def entropy_figure(normal: np.ndarray, changed: np.ndarray, labels: tuple[str, str]) -> Figure:
    """``figures.entropy_comparison_figure`` of two (L, H) entropies, finished for gr.Plot: the same figure, made
    from one built once per shape and labels (building it anew takes plotly ~12 ms, this ~0.2 ms) with what depends
    on the numbers written in: the map's z (``figures.entropy_rows``, float32 as plotly sends it) and the colour
    scale's top (tests/test_scaling.py checks it against the figure built anew)."""
    a, b = np.asarray(normal, dtype=np.float64), np.asarray(changed, dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:  # the figure's own message
        return finish_figure(figures.entropy_comparison_figure(a, b, labels), "entropy_per_head")
    figure = json.loads(_entropy_skeleton(*a.shape, tuple(labels)))
    (trace,) = figure["data"]
    trace["z"]["bdata"] = base64.b64encode(figures.entropy_rows(a, b).tobytes()).decode("ascii")
    figure["layout"]["coloraxis"]["cmax"] = float(np.nanmax([np.nanmax(a), np.nanmax(b), 1e-9]))
    return Figure(describe.attach(figure, describe.generic(figure, "Entropy per head")))  # of these numbers


# The run's three figures by their Plot's element id, in live_view's order
LIVE_PLOTS = ("live-normal", "live-changed", "live-entropy")
WAITING = "The model's run is drawn here."


def live_waiting(cfg: TransformerConfig) -> tuple[Figure, Figure, Figure]:
    """The three Plots' own figures (blank, as tall as a run's usually are): each run is drawn in the figure shown
    (``live_frames``, assets/web/live.js), so that the Plots have one from the start."""
    heights = (360, 360, figures.entropy_height(cfg.n_layers))
    return tuple(finish_figure(figures.waiting_figure(h, WAITING), "scale_waiting") for h in heights)


def live_frames(out: tuple) -> tuple[str, str]:
    """``live_view``'s outputs as the page takes them: the three figures as JSON by their Plot's id (for the page to
    draw in the figures it shows: assets/web/live.js; three new Plot values would each be drawn from scratch in a new
    element, ~1.7 times as long), the two maps as the page shows them (``page_map``) with their captions, and the
    Markdown. The endpoint ``scaling_live`` answers ``live_view``'s outputs as they are."""
    *figures, summary = out
    maps = [page_map(figure) for figure in figures[:2]]
    frames = {"figures": dict(zip(LIVE_PLOTS, [figure for figure, _ in maps] + figures[2:], strict=True)),
              "captions": {f"{plot_id}-caption": caption for plot_id, (_, caption) in zip(LIVE_PLOTS, maps)},
              "answer": time.monotonic_ns()}
    return json.dumps(frames, separators=(",", ":"), ensure_ascii=False), summary


MAP_CAPTIONS = ("As trained", "With the chosen scale")  # each map's caption before the tab's first run
CAPTION_TOP = 30  # px of top margin a map keeps without its title (clear of the plotly toolbar's row)
BAR_RIGHT = 12  # px of right margin a map keeps without its colour bar


def caption_html(title: str, subtitle: str = "") -> str:
    """A map's caption (``page_map``) as its HTML element starts; the page writes each run's into its two lines."""
    return (f'<div class="attn-caption"><div class="attn-caption-title">{html.escape(title)}</div>'
            f'<div class="attn-caption-sub">{html.escape(subtitle)}</div></div>')


def page_map(figure: Figure) -> tuple[dict, list[str]]:
    """One of a run's two maps as the page shows it, and its caption: [title, subtitle] as plain text. The page
    writes the caption above the map, in the page's own text (it wraps on a phone, and plotly draws no title: ~3 ms a
    map less in Chromium), and shows one colour bar for both maps (``viz.heatmaps.weight_bar_html``: both are weights
    on 0…1 in the same colours) instead of one each (~4 ms a map). A map saved from the page gets its own bar back
    (``meta.export.showscale``: assets/web/export.js) and its title from ``meta.export.title``, as every figure does.
    The figure is a copy: the endpoint's answer keeps its title and bar."""
    layout = dict(figure["layout"])
    title = layout.pop("title", None) or {}
    caption = [html.unescape(title.get("text", "")), html.unescape((title.get("subtitle") or {}).get("text", ""))]
    layout["margin"] = {**layout["margin"], "t": CAPTION_TOP, "r": BAR_RIGHT}
    meta = dict(layout.get("meta") or {})
    if "margins" in meta:  # the page's own fit of the column labels (assets/web/draw.js) keeps the same right margin
        meta["margins"] = {**meta["margins"], "r": BAR_RIGHT}
    meta["export"] = {**meta.get("export", {}), "showscale": True}
    layout["meta"] = meta
    heatmap, *rest = figure["data"]
    return {**figure, "data": [{**heatmap, "showscale": False}, *rest], "layout": layout}, caption


BAR_SAYS = "colour: weight"  # what a map's colour bar shows (it has no title: live_view)


def _where_below(figure: Figure) -> Figure:
    """The map's layer and head on a second, smaller title line, and what its colour bar shows: "changed: × 1/√24 =
    × 0.204 (the model's own 1/√d_k) · layer 1 · mean of 8 heads" on one line was cut at a phone's right edge; a
    colour bar with a title costs plotly a measurement of the whole bar (~5 ms a map in Chromium)."""
    title = figure["layout"]["title"]
    text, _, where = title["text"].partition(" · layer ")
    if where:
        title["text"], old = text, (title.get("subtitle") or {}).get("text")
        title["subtitle"] = dict(text=" · ".join(filter(None, (f"layer {where}", old, BAR_SAYS))), font=dict(size=12))
        figure["layout"]["margin"]["t"] += 0 if old else 22
    return figure


def same_translation_note(factor: float, own: float, changed: str, trained_translation: str, ent_normal,
                          ent_changed) -> str:
    """Where the changed model still translates the same, what to look at instead: the maps (sharper or flatter,
    by the mean entropies)."""
    if factor == own or changed != trained_translation:
        return ""
    before, after = float(np.nanmean(ent_normal)), float(np.nanmean(ent_changed))
    how = "sharper" if after < before else "flatter"
    return (f"**The same translation** — the greedy words survive this factor here. Look at the maps instead: "
            f"with it the heads are {how} (mean attention entropy {before:.2f} → {after:.2f} nats), as the entropy "
            f"per head shows. The two maps above are the mean of the layer's heads, which averages most of that "
            f"difference away.\n\n")


# The tab's listeners: the presenters above with their inputs checked first (``viz.views.inputs``).
variance_checked = checked(variance_view, log2_dk=check_log2_dk, seed=check_seed)
saturation_checked = checked(saturation_view, log2_dk=check_log2_dk, n_keys=check_n_keys, factor=check_tab_factor,
                             seed=check_seed)
live_checked = checked(live_view, text=check_text, factor=check_tab_factor)
live_stream_checked = checked(live_stream, text=check_text, factor=check_tab_factor)
