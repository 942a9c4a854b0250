"""The "Why 1/√d_k" tab (§3.2.1 and footnote 4): random vectors first, then the trained model itself.

The view's choices: log₂ d_k (0..10), the number of keys, the seed, and ``alpha``, one slider for the
scale factor: 0 = the paper's × 1/√d_k … 1 = × 1 (no scaling), geometric in between (``factor_for``).
Sections 1 and 2 measure random vectors (``model.probes.scaling``, on ``device``); section 3 runs the trained
model with its 1/√d_k replaced, through the ``attention`` callable the app passes in
(``(text, target=None, scale=None) -> AttentionResult``) and ``trained`` (``text -> AttentionResult``,
the model as trained, which the app caches per sentence: moving the slider re-runs only the changed model).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from model.probes import scaling as footnote4
from viz import scaling as figures
from viz.views.attention.maps import check_view, head_plot
from viz.views.inputs import check_alpha, check_log2_dk, check_n_keys, check_seed, check_text, checked
from viz.views.outputs import Figure, finish_figure
from viz.vocab import MEAN

if TYPE_CHECKING:
    from model.network.config import TransformerConfig
    from model.network.inference import AttentionResult


def trained_intro(cfg: TransformerConfig) -> str:
    """Section 3's heading: the trained model's own d_k and scale."""
    return (f"### 3 · Inside the trained model (d_k = {cfg.d_k})\nThe same slider replaces the model's "
            f"1/√{cfg.d_k} = {cfg.scale:.3f}: at 0 you see the model as trained, at 1 without scaling.")


def factor_for(d_k: int, alpha: float) -> float:
    """alpha 0 -> the paper's 1/sqrt(d_k), alpha 1 -> 1 (no scaling), geometric in between."""
    return float(d_k ** (-(1.0 - float(alpha)) / 2.0))


def factor_label(factor: float, alpha: float) -> str:
    """"× 0.177 (the paper's 1/√d_k)", "× 1 (no scaling)", or just "× 0.42" in between."""
    return f"× {factor:.3g}" + (" (the paper's 1/√d_k)" if alpha == 0 else " (no scaling)" if alpha == 1 else "")


@lru_cache(maxsize=16)
def _variance(seed: int, device) -> dict:
    return footnote4.dot_product_variance(seed=seed, device=device)


@lru_cache(maxsize=16)
def _curves(n_keys: int, seed: int, device) -> dict:
    return footnote4.saturation_curves(n_keys=n_keys, seed=seed, device=device)


def variance_view(log2_dk, seed, *, device) -> tuple[Figure, Figure, str]:
    """Section 1: Var(q·k) against d_k, the histogram of q·k at this d_k, and their text."""
    d_k, seed = 2 ** int(log2_dk), int(seed)
    var = _variance(seed, device)
    samples = footnote4.dot_product_samples(d_k, seed=seed, device=device)
    text = figures.variance_text(var, d_k) + "\n\n" + figures.histogram_text(samples, d_k)
    return (finish_figure(figures.variance_figure(var, d_k), "variance"),
            finish_figure(figures.histogram_figure(samples, d_k), "histogram"), text)


def saturation_view(log2_dk, n_keys, alpha, seed, *, device) -> tuple[Figure, Figure, str]:
    """Section 2: one query's softmax weights at the paper's and the chosen factor, the curves against d_k."""
    d_k, n_keys, seed = 2 ** int(log2_dk), int(n_keys), int(seed)
    example = footnote4.saturation_example(d_k, factor=factor_for(d_k, alpha), n_keys=n_keys, seed=seed,
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
    alpha,
    kind: str,
    layer,
) -> tuple[Figure, Figure, Figure, str]:
    """Section 3: the trained model with 1/√d_k replaced by the chosen factor.

    Returns the mean-over-heads map as trained and as changed (both for the same target, the trained
    model's translation, so that they line up), the mean attention entropy per head both ways, and
    Markdown with both models' own translations and the entropy summary.
    """
    kind, layer, _ = check_view(cfg, kind, layer)
    factor = factor_for(cfg.d_k, alpha)
    normal = trained(text)
    forced = attention(text, normal.translation or None, scale=factor)
    changed_translation = attention(text, scale=factor).translation
    label = factor_label(factor, alpha)
    plots = (head_plot(normal, kind, layer, MEAN, f"trained: × 1/√{cfg.d_k} = {cfg.scale:.3g}", "scale_trained"),
             head_plot(forced, kind, layer, MEAN, f"changed: {label}", "scale_changed"))
    ent_normal = footnote4.attention_entropy(normal.maps(kind))  # (L, H)
    ent_changed = footnote4.attention_entropy(forced.maps(kind))
    labels = (f"× 1/√d_k = {cfg.scale:.3g}", label)
    entropy = finish_figure(figures.entropy_comparison_figure(ent_normal, ent_changed, labels), "entropy_per_head")
    summary = (f"**Translation with {label}:** {changed_translation or '(empty)'}\n\n"
               f"**Translation as trained:** {normal.translation or '(empty)'}\n\n"
               + figures.entropy_comparison_text(ent_normal, ent_changed))
    return *plots, entropy, summary


# The tab's listeners: the presenters above with their inputs checked first (``viz.views.inputs``).
variance_checked = checked(variance_view, log2_dk=check_log2_dk, seed=check_seed)
saturation_checked = checked(saturation_view, log2_dk=check_log2_dk, n_keys=check_n_keys, alpha=check_alpha,
                             seed=check_seed)
live_checked = checked(live_view, text=check_text, alpha=check_alpha)
