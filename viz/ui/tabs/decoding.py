"""The Decoding tab: the greedy translation one step at a time (``viz.views.decode_steps``), predict then reveal."""

from __future__ import annotations

import gradio as gr

from viz.ui.wiring import PRIVATE, Page, how_to_read, in_browser, layer_slider, listener, sentence_box
from viz.views import decode_steps as decoding
from viz.views.attention import maps
from viz.views.page import PAGE
from viz.vocab import MEAN


def build_decoding(page: Page) -> None:
    """The greedy translation one step at a time (viz.views.decode_steps); it follows the Attention tab's sentence.
    Sessions keep only the sentence: its DecodeSteps stay in ``runs.steps``' bounded cache."""
    cfg, steps = page.runs.cfg, page.runs.steps
    with gr.Tab("Decoding, step by step", id="decoding") as tab:
        decoded, followed, revealed = gr.State(""), gr.State(""), gr.State(False)  # the sentence shown, taken over
        with gr.Row():
            source = sentence_box("English sentence (the Attention tab's, or your own)", scale=4,
                                  elem_id="decode-source")
            run_btn = gr.Button("Translate step by step", variant="primary", scale=1, elem_id="decode-run")
        # One screen at 1280×720: the step's controls, what it wrote and the top 5; then where it looked, per layer.
        # The figures carry their titles (and exports keep them): no label badge (Gradio adds 100 px above a title).
        with gr.Row(equal_height=True):
            prev_btn = gr.Button("◀ Previous", elem_id=PAGE["stepPrev"], min_width=140)
            next_btn = gr.Button("Next ▶", elem_id=PAGE["stepNext"], min_width=140)
            step = gr.Slider(1, 2, value=1, step=1, label="Step (← / → keys)", elem_id="decode-step", scale=3,
                             min_width=300)
            with gr.Column(min_width=240):
                predict = gr.Checkbox(False, label="Predict, then reveal", elem_id="predict-mode")
                reveal_btn = gr.Button("Reveal", elem_id="reveal", interactive=False)
        with gr.Row():
            with gr.Column(scale=2, min_width=300):
                status = gr.Markdown(elem_id="decode-status")
            top5 = gr.Plot(show_label=False, elem_id="decode-top5", scale=3, min_width=320)
        with gr.Row(equal_height=True):
            layer = layer_slider(cfg, cfg.n_layers, elem_id="decode-layer", min_width=240)
            head = gr.Radio(maps.head_choices(cfg.n_heads), value=MEAN, label="Head", scale=2,
                            elem_id="decode-head")
        with gr.Row():
            self_row = gr.Plot(show_label=False, elem_id="decode-self", min_width=320)
            cross_row = gr.Plot(show_label=False, elem_id="decode-cross", min_width=320)
        how_to_read("decoding")
    view, choices = [status, top5, self_row, cross_row], [decoded, step, layer, head, predict]  # DecodeStepView
    tab.select(listener(decoding.follow, steps), [page.result, followed, layer, head, predict],
               [source, followed, decoded, step, revealed, *view], **PRIVATE)
    gr.on([run_btn.click, source.submit], listener(decoding.start, steps), [source, layer, head, predict],
          [decoded, step, revealed, *view], **PRIVATE)
    step.change(listener(decoding.show_step, steps), choices, [revealed, *view], trigger_mode="always_last", **PRIVATE)
    predict.change(listener(decoding.toggle_predict, steps), choices, [revealed, reveal_btn, *view], **PRIVATE)
    gr.on([layer.change, head.change], listener(decoding.redraw, steps), [*choices, revealed], view, **PRIVATE)
    reveal_btn.click(listener(decoding.reveal, steps), choices, [revealed, *view], **PRIVATE)
    prev_btn.click(None, step, step, js=in_browser("stepPrev"))
    next_btn.click(None, step, step, js=in_browser("stepNext"))

