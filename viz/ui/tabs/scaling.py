"""The "Why 1/√d_k" tab: footnote 4 measured (dot products grow with d_k, large logits saturate the softmax), then
the trained model with its scale replaced. Its scale factor, and a button that takes it into "Inside a head", are
what ``build_scaling`` returns for that tab."""

from __future__ import annotations

import functools

import gradio as gr

from viz.heatmaps import weight_bar_html
from viz.scaling import ENTROPY_LABEL, PAPER_QUOTE
from viz.ui.wiring import (
    PRIVATE,
    Page,
    following,
    hidden_box,
    how_to_read,
    in_browser,
    layer_slider,
    listener,
    page_and_api,
    plot_value,
    sentence_box,
)
from viz.views import scaling
from viz.views.attention import context, maps
from viz.views.page import PAGE


def build_scaling(page: Page) -> tuple[gr.Slider, gr.Button, gr.Button]:
    """The tab; returns its scale factor (× that on every q·k of the tab, 0 … 1), its button "Inside one head with
    this scale factor →" (``build_inside_head`` wires it) and its button to the Lab (``build_lab`` wires it)."""
    device = page.runs.toy_device
    with gr.Tab("Why 1/√d_k", id="scaling") as tab:
        gr.Markdown(PAPER_QUOTE)
        how_to_read("scaling")
        first = {"log2_dk": 9, "n_keys": 16, "factor": 1, "seed": 0}  # the controls' first values
        # Sections 1 and 2 for the first values are drawn once, as the app is built (the same for every visitor):
        # a page load runs no event for a tab it does not show.
        variance = scaling.variance_checked(first["log2_dk"], first["seed"], device=device)
        saturation = scaling.saturation_checked(first["log2_dk"], first["n_keys"], first["factor"], first["seed"],
                                                device=device)
        # One screen at 1280×720: the random vectors' controls beside part 1's figures (stacked on a phone)
        with gr.Row(elem_id="scaling-first"):
            with gr.Column(scale=0, min_width=260, elem_id="scaling-controls"):
                log2_dk = gr.Slider(0, 10, value=first["log2_dk"], step=1, label="log₂ d_k (d_k = 1 … 1024)",
                                    elem_id="log2-dk")
                n_keys = gr.Slider(2, 64, value=first["n_keys"], step=1, label="number of keys (part 2)",
                                   elem_id="n-keys")
                seed = gr.Number(first["seed"], precision=0, label="seed", minimum=0, maximum=2**31 - 1,
                                 elem_id="seed")
            with gr.Column(scale=4, min_width=320):
                gr.Markdown("### 1 · Dot products grow with d_k")
                with gr.Row():
                    var_plot = gr.Plot(plot_value(variance[0]), label="Variance of q·k", elem_id="variance")
                    hist_plot = gr.Plot(plot_value(variance[1]), label="Distribution of q·k", elem_id="histogram")
        var_text = gr.Markdown(variance[2])
        gr.Markdown("### 2 · Large logits saturate the softmax and its gradient vanishes")
        # the factor: parts 2 and 3 (part 1 measures q·k as it is), in words beside it, and two factors to set
        with gr.Row(equal_height=True):
            factor = gr.Slider(0, 1, value=first["factor"], step=scaling.SLIDER_STEP, elem_id="scale-factor",
                               label="× factor on every q·k of this tab (1 = no scaling)", scale=2, min_width=280)
            with gr.Column(scale=4, min_width=320):
                note = gr.Markdown(scaling.factor_note(page.runs.cfg, first["factor"], first["log2_dk"]),
                                   elem_id="factor-note")
            with gr.Column(scale=1, min_width=200):
                own = gr.Button(f"the model's own: × 1/√{page.runs.cfg.d_k}", size="sm", elem_id="factor-own")
                none = gr.Button("no scaling: × 1", size="sm", elem_id="factor-none")
        with gr.Row():
            weights_plot = gr.Plot(plot_value(saturation[0]), label="Softmax weights for one query",
                                   elem_id="softmax-weights")
            curves_plot = gr.Plot(plot_value(saturation[1]), label="Against d_k", elem_id="curves")
        sat_text = gr.Markdown(saturation[2])
        to_inside = trained_model_section(page, tab, factor)
        gr.Markdown("### 4 · The same, in training\nThe model above was trained *with* 1/√d_k; changing the factor "
                    "afterwards is not training without it. The Lab trained siblings without it (and with additive "
                    "attention): their loss, gradient and entropy curves.")
        to_lab = gr.Button("The same, in training: the Lab →", elem_id="to-lab")
    gr.on([log2_dk.change, seed.change], listener(scaling.variance_checked, device=device),
          [log2_dk, seed], [var_plot, hist_plot, var_text], api_name="scaling_variance", preprocess=False)
    gr.on([log2_dk.change, n_keys.change, factor.change, seed.change],
          listener(scaling.saturation_checked, device=device), [log2_dk, n_keys, factor, seed],
          [weights_plot, curves_plot, sat_text], api_name="scaling_saturation", preprocess=False)
    gr.on([factor.change, log2_dk.change], listener(scaling.factor_note, page.runs.cfg), [factor, log2_dk], note,
          queue=False, preprocess=False, show_progress="hidden", **PRIVATE)
    own.click(lambda: scaling.slider_value(page.runs.cfg.scale), None, factor, queue=False, **PRIVATE)
    none.click(lambda: 1.0, None, factor, queue=False, **PRIVATE)
    return factor, to_inside, to_lab


def trained_model_section(page: Page, tab: gr.Tab, factor: gr.Slider) -> gr.Button:
    """Section 3 of the "Why" tab: the trained model with its 1/√d_k replaced by the factor ``factor`` picks.
    Returns its button that opens "Inside a head" with that factor."""
    runs, cfg = page.runs, page.runs.cfg
    gr.Markdown(scaling.trained_intro(cfg))
    with gr.Row():
        text = sentence_box("English sentence", scale=3, elem_id="live-text")
        kind = gr.Dropdown(maps.KIND_CHOICES, value="encoder_self", label="Kind", scale=2)
        layer = layer_slider(cfg, scale=2)
        run_btn = gr.Button("Run the model", variant="primary", scale=1, elem_id="live-run")
    live_notice = gr.Markdown(elem_id="live-notice")
    opened = following(page, tab, text, "live-opened")  # the Attention tab's sentence, unless one was typed here
    text.input(None, None, live_notice, js=in_browser("show", context.EDITED_LIVE))
    # Each run is drawn in the figure shown (live.js): the Plots keep these blank figures of their own as values.
    waiting = [plot_value(figure) for figure in scaling.live_waiting(cfg)]
    # Each map's caption above it, and one colour bar for both (scaling.page_map): the page writes each run's captions.
    gr.HTML(weight_bar_html(), elem_id="live-weight-bar", padding=False)
    with gr.Row():
        plots = []
        for plot_id, label, value in zip(scaling.LIVE_PLOTS, scaling.MAP_CAPTIONS, waiting):
            with gr.Column(min_width=320):
                gr.HTML(scaling.caption_html(label), elem_id=f"{plot_id}-caption", padding=False)
                plots.append(gr.Plot(value, label=label, show_label=False, elem_id=plot_id))
        normal, changed = plots
    entropy = gr.Plot(waiting[2], label=ENTROPY_LABEL, elem_id="live-entropy")
    summary = gr.Markdown(elem_id="live-summary")
    to_inside = gr.Button("Inside one head with this scale factor →", elem_id="to-inside")
    # the two greedy decodes of a run (as trained, and with the factor) as one batch (Runs.trained_and_scaled)
    live = functools.update_wrapper(functools.partial(scaling.live_checked, both=runs.trained_and_scaled),
                                    scaling.live_checked)
    # the page's run: its maps from the encoder alone first, drawn while the two decodes run (scaling.live_stream)
    stream = functools.update_wrapper(functools.partial(
        scaling.live_stream_checked, both=runs.trained_and_scaled, source=runs.source_attention,
        cached=runs.has_attention), scaling.live_stream_checked)
    frames = hidden_box(PAGE["liveFrames"])  # drawn in the figures shown (live.js)
    # Every control that changes what these maps mean redraws them (the slider sits far above: never a stale picture).
    # The endpoint answers the figures as they are; the page gets them as JSON (scaling.live_frames).
    page_and_api([run_btn.click, text.submit, opened.change, factor.change, kind.change, layer.change], live, cfg,
                 runs.attention, runs.trained, inputs=[text, factor, kind, layer],
                 outputs=[normal, changed, entropy, summary], notice=live_notice, api_name="scaling_live",
                 page_outputs=[frames, summary], stream=stream, preprocess=False,
                 trigger_mode="always_last", show_progress_on=[normal, changed, entropy, summary])
    return to_inside
