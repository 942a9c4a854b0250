"""The Head analysis tab: every head's statistics and role, heads switched off for one request, the shipped
ranking, raw attention beside its rollout (``viz.views.head_analysis``)."""

from __future__ import annotations

import gradio as gr

from model.probes.ablation import all_heads, load_ranking
from viz.ui.wiring import (
    ABLATIONS,
    PRIVATE,
    AttentionView,
    Page,
    click_box,
    hidden_box,
    how_to_read,
    in_browser,
    layer_slider,
    listener,
    on_link,
)
from viz.views import head_analysis as heads_view
from viz.views.attention import maps
from viz.views.page import PAGE


def build_head_analysis(page: Page, view: AttentionView) -> None:
    """Head analysis (viz.views.head_analysis): every head's statistics and role, for the session's sentence or the
    shipped sample (a click on a cell opens that head on the Attention tab, ``view``); heads switched off for one
    request, with the sample's BLEU/chrF before and after; the shipped ranking; raw attention beside its rollout.
    Ablations run one at a time (``ABLATIONS``), beside everything else."""
    runs, cfg = page.runs, page.runs.cfg
    ranking = load_ranking()
    with gr.Tab("Head analysis", id="heads") as tab:
        gr.Markdown(heads_view.INTRO)
        how_to_read("heads")
        with gr.Row(equal_height=True):
            scope = gr.Radio(heads_view.SCOPE_CHOICES, value="sentence", label="Statistics of", elem_id="heads-scope")
            stat = gr.Dropdown(heads_view.STAT_CHOICES, value="spread", label="Colour shows", elem_id="heads-stat")
        with gr.Row(elem_id="heads-grid-row"):
            grid = gr.Plot(label="Layers × heads per kind: click a cell", elem_id=PAGE["cellGrid"], min_width=420)
            rules = gr.Markdown(elem_id="heads-rules")
        cell = click_box(PAGE["cellClick"])
        frames = hidden_box("heads-frames")  # every statistic's grid (stats_frames)
        gr.Markdown("### Switch heads off, for your request only")
        with gr.Row():
            heads = gr.Dropdown(all_heads(cfg.n_layers, cfg.n_heads), multiselect=True, scale=3, elem_id="heads-off",
                                label="Heads to switch off (kind:layer:head; type to filter)")
            top = gr.Button("The ranking's top 5", scale=1, elem_id="heads-top")
            go = gr.Button("Switch off and translate", variant="primary", scale=1, elem_id="ablate")
        with gr.Row():
            with gr.Column():
                ablation = gr.Markdown(heads_view.ABLATION_PROMPT, elem_id="ablation")
                gr.Markdown(heads_view.ranking_markdown(ranking), elem_id="ranking")
            with gr.Column():
                kind = gr.Radio(maps.KIND_CHOICES, value="cross", label="Maps without them",
                                elem_id="ablated-kind")
                ablated = gr.Plot(label="This sentence without them (tiles of the heads off say so)", elem_id="ablated")
        last = gr.State(None)  # (sentence, heads off) of the last ablation: its result stays in runs' cache
        brought = gr.State(None)  # the grids a link drew with its answer (heads_view.stats_key): not computed again
        gr.Markdown(heads_view.ROLLOUT_NOTE)
        layer = layer_slider(cfg, cfg.n_layers, elem_id="rollout-layer")
        rollout = []
        for pair in (("enc-raw", "enc"), ("cross-raw", "cross")):  # raw | rollout, the encoder then cross-attention
            with gr.Row():
                rollout += [gr.Plot(elem_id=f"rollout-{name}", show_label=False, min_width=300) for name in pair]
    # Every statistic's grid comes in one answer (heads_view.stats_frames): the page draws the one chosen, and another
    # statistic, without a round trip (assets/web/heads.js)
    gr.on([tab.select, scope.change], listener(heads_view.stats_opened, runs.sample_stats),
          [brought, page.result, scope], [rules, frames, brought], trigger_mode="always_last", **PRIVATE)
    gr.on([frames.change, stat.change], None, [frames, stat], grid, js=in_browser("headsStat"))
    gr.on([tab.select, layer.change], listener(heads_view.rollout_plots), [page.result, layer], rollout, **PRIVATE)

    def run_ablation(result, heads_, kind_, progress=gr.Progress()):  # noqa: B008 (Gradio's progress bar)
        return heads_view.ablation_for(runs.ablate, result, heads_, kind_, progress)

    view.redraw(cell.change(listener(heads_view.open_cell, cfg.n_layers, cfg.n_heads), cell,
                            [view.kind, view.layer, view.head, page.tabs], **PRIVATE))
    top.click(listener(heads_view.top_heads, ranking), None, heads, **PRIVATE)
    go.click(listener(run_ablation), [page.result, heads, kind], [ablation, ablated, last], show_progress_on=ablated,
             **PRIVATE, **ABLATIONS)
    kind.change(listener(heads_view.ablation_again, runs.ablate), [last, kind], [ablation, ablated], **PRIVATE,
                **ABLATIONS)
    on_link(page, "heads", heads_view.open_link_drawn, runs.sample_stats, inputs=[view.kind, page.result, scope],
            outputs=[scope, stat, kind, brought, rules, frames],
            stat=heads_view.STATS, scope=tuple(heads_view.SCOPES))
