"""The Head analysis tab: what each head does, what the translation loses without it, raw vs rolled-out attention.

  stats_grid_plot     per kind a layers × heads grid coloured by one statistic, each cell labelled with the
                      head's role (drawn by ``viz.stats_grid``); a click on a cell opens that head on the
                      Attention tab (``cell_from_click`` reads the page's message)
  analysis_markdown   what the statistics mean and the role rule (its thresholds from ``model.probes.analysis``)
  ablation_markdown   the sentence and the sample's BLEU/chrF with and without the switched-off heads
  ranking_markdown    the shipped ranking's top heads (``assets/head_ranking.json``)
  rollout_plots       raw attention (mean over heads) beside its rollout, for the encoder and for cross-attention
  stats_view, ablation_view   what the tab shows for its choices, from results the model already returned (every
                      statistic's grid at once: ``stats_frames``; the page draws the one chosen)
  ablation_for, ablation_again  the tab's ablation of the session's sentence, and its maps of another kind
All text from the model or the user is escaped (``escape_token`` for tokens, ``md_escape`` for Markdown).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from model.probes.analysis import (
    STAT_LABELS,
    STATS,
    applies,
    role_rule_markdown,
    rollout,
    sentence_stats,
    source_relevance,
)
from model.terms import KINDS
from viz import describe
from viz.heatmaps import add_title_line, detail_spec, mark_off, rescale_detail
from viz.stats_grid import stats_grid_spec
from viz.text import md_escape
from viz.views.attention.maps import overview_plot
from viz.views.attention.share import View, opens
from viz.views.outputs import SKIP, Figure, changes, finish_figure, open_tab, skipped
from viz.vocab import AXIS_LABELS, KIND_LABELS

if TYPE_CHECKING:
    from model.network.inference import AttentionResult
    from model.probes.ablation import AblationResult
    from model.probes.analysis import HeadStats

INTRO = (
    "Which of the heads matter, and what do they do? A grid per kind of attention colours every head by one "
    "statistic of its maps and names its role (the rule is beside the grid); **click a cell** to open that "
    "head on the Attention tab. Then switch heads off — for your request only, the shared model never changes — "
    "and see what this sentence and the shipped sample lose; last, raw attention beside its rollout."
)
ROLLOUT_NOTE = (
    "**Raw attention vs rollout** (Abnar & Zuidema 2020). Raw: one layer's map, the mean of its heads. Rollout: "
    "each layer's mean map mixed with the residual connection (0.5·A + 0.5·I, rows renormalised) and multiplied "
    "through the layers below, so a row shows how much of each *input* token reaches that position. Below, the "
    "decoder's cross-attention composed with the encoder's top rollout: input tokens behind each output token. "
    "Raw maps of upper layers can mislead; rollout is a better guide to what flowed where."
)
ABLATION_PROMPT = "Pick heads (or the ranking's top five) and press the button: the sample takes a few seconds."
STAT_CHOICES = [(STAT_LABELS[s], s) for s in STATS]
SCOPES = {"sentence": "this sentence", "sample": "the shipped sample (the first 200 pairs of Multi30k val)"}
SCOPE_CHOICES = [("This sentence", "sentence"), ("Sample (200 val sentences)", "sample")]


def check_stat(stat: str) -> str:
    if stat not in STATS:
        raise ValueError(f"Unknown statistic {stat!r}: choose one of {', '.join(STATS)}.")
    return stat


def stats_grid_plot(stats: HeadStats, stat: str, title: str = "") -> Figure:
    """The grid of ``stat`` (``viz.stats_grid``): one panel per kind where the statistic applies."""
    check_stat(stat)
    kinds = [k for k in KINDS if applies(k, stat)]
    values, roles = {k: stats.mean(k, stat) for k in kinds}, stats.roles()
    spec = stats_grid_spec(values, roles, stat, STAT_LABELS[stat], title)
    return finish_figure(spec, f"head_{stat}", describe.stats_grid(STAT_LABELS[stat], values, roles, KIND_LABELS))


def stats_frames(stats: HeadStats) -> str:
    """Every statistic's grid for ``stats``, for the page to draw another statistic without asking the server
    (assets/web/heads.js, as the Decoding tab draws its steps): JSON ``{"base": the first statistic's figure,
    "stats": {statistic: its changes from the base}}`` (``viz.views.outputs.changes``). ~20 KB."""
    base = stats_grid_plot(stats, STATS[0])
    grids = {stat: changes(base, stats_grid_plot(stats, stat)) for stat in STATS}
    return json.dumps({"base": base, "stats": grids}, separators=(",", ":"), ensure_ascii=False)


def stats_view(
    sample_stats: Callable[[], HeadStats], result: AttentionResult | None, scope: str
) -> tuple[str, str]:
    """(Markdown, every statistic's grid as ``stats_frames``; "" for none) for the view's scope: the session's
    sentence (``result``, no model run) or the sample (``sample_stats()``, read from its file or computed once). The
    page draws the grid of the statistic chosen from those."""
    if scope not in SCOPES:
        raise ValueError(f"Unknown scope {scope!r}: choose one of {', '.join(SCOPES)}.")
    if scope == "sentence":
        if result is None:
            return "Translate a sentence on the Attention tab first.", ""
        stats = sentence_stats(result)
    else:
        stats = sample_stats()
    return analysis_markdown(stats, SCOPES[scope]), stats_frames(stats)


def cell_from_click(n_layers: int, n_heads: int, message: str) -> tuple[str, int, int] | None:
    """'kind,layer,head[,nonce]' (the page's message for a click on a grid cell) -> (kind, layer, head) 1-based,
    or None when the message is not one."""
    parts = (message or "").split(",")
    if len(parts) < 3 or parts[0] not in KINDS:
        return None
    try:
        layer, head = int(parts[1]), int(parts[2])
    except ValueError:
        return None
    return (parts[0], layer, head) if 1 <= layer <= n_layers and 1 <= head <= n_heads else None


def open_cell(n_layers: int, n_heads: int, message: str) -> tuple:
    """A click on a grid cell (``cell_from_click``): (kind, layer, head) on the Attention tab, opened; or no change."""
    picked = cell_from_click(n_layers, n_heads, message)
    return (*picked, open_tab("attention")) if picked else skipped(4)


def open_link(link: View | None, kind) -> tuple:
    """A link that names this tab (viz.views.attention.share): its scope and statistic (each missing one as it is),
    the Attention tab's kind, opened from the same link, for the maps without the heads switched off, and the tab
    opened; any other link changes nothing."""
    if not opens(link, "heads"):
        return skipped(4)
    return link.scope or SKIP, link.stat or SKIP, kind, open_tab("heads")


def stats_key(result: AttentionResult | None, scope: str) -> str | None:
    """What ``stats_view`` draws from: the scope, and for the sentence's the sentence (None: nothing to draw)."""
    if scope not in SCOPES or (scope == "sentence" and result is None):
        return None
    sentence = (result.source_text, tuple(result.target_tokens), result.teacher_forced) if scope == "sentence" else ()
    return repr((scope, sentence))


def open_link_drawn(sample_stats: Callable[[], HeadStats], link: View | None, kind, result: AttentionResult | None,
                    scope: str) -> tuple:
    """``open_link`` with the link's grids in the same answer (a page load's or a lecture's move: the tab's opening
    then computes nothing again, ``stats_opened``): its outputs but the tab, what the grids show (``stats_key``),
    ``stats_view``'s outputs, then the tab opened; any other link changes nothing."""
    *opened, tab = open_link(link, kind)
    if tab is SKIP:
        return *opened, SKIP, SKIP, SKIP, SKIP
    scope = scope if opened[0] is SKIP else opened[0]
    return *opened, stats_key(result, scope), *stats_view(sample_stats, result, scope), tab


def stats_opened(sample_stats: Callable[[], HeadStats], brought: str | None, result: AttentionResult | None,
                 scope: str) -> tuple:
    """``stats_view`` as the tab opens or its scope changes, then None (what a link brought is drawn over); nothing
    where the grids show that already (``brought``: a link's, ``open_link_drawn``)."""
    if brought is not None and brought == stats_key(result, scope):
        return SKIP, SKIP, SKIP
    return *stats_view(sample_stats, result, scope), None


def analysis_markdown(stats: HeadStats, where: str) -> str:
    """The statistics' definitions and the role rule, and how many sentences ``stats`` pools (``where``)."""
    defs = "\n".join(f"- **{s}**: {md_escape(STAT_LABELS[s].removeprefix(f'{s}: '))}" for s in STATS)
    return (
        f"Statistics of **{md_escape(where)}** ({stats.sentences} sentence{'s' * (stats.sentences != 1)}), each the "
        "mean over the rows of a head's map (a row = one query token; weights over the keys it can see):\n\n"
        f"{defs}\n\n*previous*, *self* and *offset* exist for self-attention only, *next* for the encoder only "
        "(the decoder cannot look ahead); *sharpness* is the largest weight on any key but EOS/`<s>`.\n\n"
        f"{role_rule_markdown()}"
    )


# ---------------------------------------------------------------------------------------------------- ablation
def _delta(after: float, before: float) -> str:
    d = after - before
    return f"{after:.2f} ({'+' if d >= 0 else '−'}{abs(d):.2f})"


def ablation_view(result: AblationResult, kind: str) -> tuple[str, Figure]:
    """(Markdown, overview of ``kind``'s maps for the sentence with the heads off; their tiles marked "off")."""
    if kind not in KINDS:
        raise ValueError(f"Unknown kind {kind!r}: choose one of {', '.join(KINDS)}.")
    figure = overview_plot(result.attention, kind)
    off = [tuple(int(n) for n in h.split(":")[1:]) for h in result.heads_off if h.split(":")[0] == kind]
    mark_off(figure, off)
    return ablation_markdown(result), figure


def ablation_for(ablate: Callable, result: AttentionResult | None, heads, kind: str,
                 progress: Callable | None = None) -> tuple[str, Figure, tuple[str, tuple[str, ...]]]:
    """The tab's ablation: the session's sentence (``result.source_text``, greedy) with ``heads`` off, through
    ``ablate(text, heads, progress=...)`` (the app's cached ``Runs.ablate``). -> (Markdown, overview of ``kind``,
    what a session keeps to draw another kind: (text, heads off))."""
    if result is None:
        raise ValueError("Translate a sentence on the Attention tab first.")
    ablated = ablate(result.source_text, heads, progress=progress)
    return (*ablation_view(ablated, kind), (result.source_text, tuple(ablated.heads_off)))


def ablation_again(ablate: Callable, last: tuple | None, kind: str) -> tuple[str, Figure | None]:
    """The last ablation (``last`` from ``ablation_for``) drawn for another ``kind`` (cached: no model run)."""
    if not last:
        return ABLATION_PROMPT, None
    text, heads = last
    return ablation_view(ablate(text, list(heads)), kind)


def top_heads(ranking: dict | None, n: int = 5) -> list[str]:
    """The ``n`` heads whose loss costs the shipped sample the most BLEU (none without a ranking)."""
    return [row["head"] for row in (ranking or {}).get("heads", [])[:n]]


def ablation_markdown(result: AblationResult) -> str:
    """Translation and the sample's BLEU/chrF, with every head on and with ``result.heads_off`` off."""
    b, a = result.before, result.after
    off = ", ".join(f"`{h}`" for h in result.heads_off) or "none"
    changed = "unchanged" if result.attention.translation == result.translation_before else "changed"
    return "\n".join([
        f"**Switched off:** {off} (for this request only; the shared model is untouched).",
        "",
        "| | every head | without them |",
        "|---|---|---|",
        f"| this sentence (greedy) | {md_escape(result.translation_before)} "
        f"| {md_escape(result.attention.translation)} |",
        f"| sample BLEU ({a.sentences} sentences) | {b.bleu:.2f} | {_delta(a.bleu, b.bleu)} |",
        f"| sample chrF | {b.chrf:.2f} | {_delta(a.chrf, b.chrf)} |",
        "",
        f"The translation is {changed}. Cased sacreBLEU, greedy decoding; BLEU {_code(b.bleu_signature)}, "
        f"chrF {_code(b.chrf_signature)}.",
        *([f"\n{md_escape(result.note)}"] if result.note else []),  # where the sample ran (a ZeroGPU Space)
    ])


def _code(text: str) -> str:
    """``text`` as a Markdown code span (shown as it is: no escapes; backticks and control characters go)."""
    return "`" + "".join(c for c in str(text) if c != "`" and ord(c) >= 32) + "`"


def ranking_markdown(ranking: dict | None, top: int = 10) -> str:
    """The ``top`` heads whose loss costs the sample the most BLEU, from the shipped ranking."""
    if not ranking:
        return "No head ranking was shipped: run `python -m model.rank_heads`."
    rows = [f"| {i + 1} | {_code(r['head'])} | {r['bleu_loss']:+.2f} | {r['chrf_loss']:+.2f} |"
            for i, r in enumerate(ranking["heads"][:top])]
    base, losses = ranking["baseline"], [r["bleu_loss"] for r in ranking["heads"]]
    return "\n".join([
        f"**The shipped ranking.** BLEU and chrF the sample ({ranking['sample']['sentences']} sentences, greedy) "
        f"loses when one head alone is switched off; with every head: BLEU {base['bleu']:.2f}, chrF "
        f"{base['chrf']:.2f}. No single head matters much: the largest loss is {max(losses):.2f} BLEU, and "
        f"{sum(x < 0 for x in losses)} of {len(losses)} heads *raise* BLEU when off (up to {-min(losses):.2f}) — "
        f"on {ranking['sample']['sentences']} sentences, differences this small are mostly noise. "
        f"Written by {_code(ranking['command'])}.",
        "",
        "| rank | head | BLEU lost | chrF lost |",
        "|---|---|---|---|",
        *rows,
    ])


# ---------------------------------------------------------------------------------------------------- rollout
def rollout_plots(result: AttentionResult | None, layer) -> tuple[Figure | None, ...]:
    """(encoder raw, encoder rollout, cross raw, cross through the encoder rollout) at ``layer`` (1..N); four
    Nones before the session has a result.

    Raw = the mean of the layer's heads; rollout as ``model.probes.analysis.rollout`` / ``source_relevance``. Each map
    is coloured from 0 to its own largest weight (the title says which).
    """
    if result is None:
        return (None,) * 4
    n_layers = result.encoder_self.shape[0]
    try:
        layer = int(layer)
    except (TypeError, ValueError, OverflowError):
        layer = 0
    if not 1 <= layer <= n_layers:
        raise ValueError(f"Layer must be 1–{n_layers}.")
    src, tgt = result.tokens("cross")[1], result.tokens("cross")[0]
    enc_rollout = rollout(result.encoder_self)  # (L, S, S)
    relevance = source_relevance(result.cross, enc_rollout)  # (L, T, S)
    enc_q, enc_k = AXIS_LABELS["encoder_self"]
    cross_q, cross_k = AXIS_LABELS["cross"]
    heads = result.encoder_self.shape[1]
    specs = [  # two short title lines each: a phone's figure (~320 px) cuts longer ones
        (result.encoder_self[layer - 1].mean(0), src, src, (f"Raw: encoder layer {layer}", f"mean of {heads} heads"),
         enc_q, enc_k, f"encoder_raw_layer{layer}"),
        (enc_rollout[layer - 1], src, src, ("Rollout: input tokens reaching", f"encoder layer {layer}"),
         enc_q, "input token (key)", f"encoder_rollout_layer{layer}"),
        (result.cross[layer - 1].mean(0), tgt, src, (f"Raw: cross-attention, decoder layer {layer}",
                                                     f"mean of {heads} heads"),
         cross_q, cross_k, f"cross_raw_layer{layer}"),
        (relevance[layer - 1], tgt, src, ("Through the encoder rollout: input", f"tokens behind decoder layer {layer}"),
         cross_q, "input token", f"cross_rollout_layer{layer}"),
    ]
    figures = []
    for w, q, k, (title, second), ql, kl, name in specs:
        top = max(float(np.max(w)), 1e-3)  # each map its own range: rollout spreads thin, 0–1 would hide it
        spec = detail_spec(w, q, k, title, query_label=ql, key_label=kl)
        add_title_line(spec, f"{second} · colour 0–{top:.2f}")
        rescale_detail(spec, top)
        figures.append(finish_figure(spec, name, german={"rows": True, "columns": False} if q is tgt else None))
    return tuple(figures)  # (cross-attention's rows: the German decoder positions)
