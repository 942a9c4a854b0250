"""The Decoding tab: the greedy translation one step at a time (``viz.views.decode_steps``), predict then reveal."""

from __future__ import annotations

import functools

import gradio as gr

from viz.ui.wiring import (
    PRIVATE,
    WHILE_MOVING,
    Page,
    click_box,
    hidden_box,
    how_to_read,
    in_browser,
    layer_slider,
    listener,
    on_link,
    sentence_box,
    unless_moving,
    warn,
)
from viz.views import decode_steps as decoding
from viz.views.attention import maps
from viz.views.page import PAGE
from viz.vocab import MEAN


def build_decoding(page: Page) -> None:
    """The greedy translation one step at a time (viz.views.decode_steps); it follows the Attention tab's sentence.
    Sessions keep only the sentence: its DecodeSteps stay in ``runs.steps``' bounded cache."""
    cfg, steps = page.runs.cfg, page.runs.steps
    with gr.Tab("Decoding, step by step", id="decoding") as tab:
        decoded, followed = gr.State(""), gr.State("")  # the sentence shown, the one taken over
        with gr.Row():
            source = sentence_box("English sentence (the Attention tab's, or your own)", scale=4,
                                  elem_id="decode-source")
            run_btn = gr.Button("Translate step by step", variant="primary", scale=1, elem_id="decode-run")
        # One screen at 1280×720: the step's controls, what it wrote and the top 5; then where it looked, per layer.
        # The figures carry their titles (and exports keep them): no label badge (Gradio adds 100 px above a title).
        with gr.Row(equal_height=True, elem_id="decode-step-row"):
            prev_btn = gr.Button("◀ Previous", elem_id=PAGE["stepPrev"], min_width=140)
            next_btn = gr.Button("Next ▶", elem_id=PAGE["stepNext"], min_width=140)
            step = gr.Slider(1, 2, value=1, step=1, label="Step (← / → keys)", elem_id="decode-step", scale=3,
                             min_width=300)
            with gr.Column(min_width=360, elem_id="decode-predict"):  # side by side (app.css): the row stays low
                predict = gr.Checkbox(False, label="Predict, then reveal", elem_id="predict-mode")
                reveal_btn = gr.Button("Reveal", elem_id="reveal", interactive=False)
        with gr.Row(elem_id="decode-top-row"):
            with gr.Column(scale=2, min_width=300):
                status = gr.Markdown(elem_id="decode-status")
            top5 = gr.Plot(show_label=False, elem_id="decode-top5", scale=3, min_width=320)
        with gr.Row(equal_height=True, elem_id="decode-choice-row"):
            layer = layer_slider(cfg, cfg.n_layers, elem_id="decode-layer", min_width=240)
            head = gr.Radio(maps.head_choices(cfg.n_heads), value=MEAN, label="Head", scale=2,
                            elem_id="decode-head")
        with gr.Row(elem_id="decode-maps-row"):
            self_row = gr.Plot(show_label=False, elem_id="decode-self", min_width=320)
            cross_row = gr.Plot(show_label=False, elem_id="decode-cross", min_width=320)
        frames = hidden_box("decode-frames")  # every step's view (decoding.step_frames)
        held = hidden_box("decode-held")  # … and every head's, for the layer shown (decoding.held_heads)
        ask = click_box(PAGE["decodeAsk"])  # a head the page holds no view of: the page asks the server here
        hold = click_box(PAGE["decodeHold"])  # … and for every head's view, once a view's frames are drawn
        revealed = gr.Checkbox(False, visible="hidden", elem_id="decode-revealed")  # the page's own: not a gr.State
        how_to_read("decoding")
    view, choices = [status, top5, self_row, cross_row], [decoded, step, layer, head, predict]  # DecodeStepView
    started = [decoded, step, revealed, *view, frames]  # decoding.start
    # (not while a lecture's move is on its way: the move brings the tab's view, ``unless_moving``; it had drawn the
    # tab's three figures a second time, after a second round trip)
    tab.select(listener(unless_moving(functools.partial(decoding.follow, steps), 2 + len(started))),
               [page.lecture_go, page.result, followed, layer, head, predict], [source, followed, *started],
               js=WHILE_MOVING, **PRIVATE)
    gr.on([run_btn.click, source.submit], listener(decoding.start, steps), [source, layer, head, predict], started,
          **PRIVATE)
    # A step, a Reveal or a head is drawn in the browser from every step's view (assets/web/decoding.js): no round
    # trip. Every head's comes once a view's frames are drawn and the page is idle (``hold``: ``held_heads``, "" for a
    # long sentence: then a head is asked of the server, ``ask``).
    step.change(None, [frames, held, step, predict, head], [revealed, *view], js=in_browser("decodeStep"))
    reveal_btn.click(None, [frames, held, step, head], [revealed, status, top5], js=in_browser("decodeReveal"))
    predict.change(listener(decoding.toggle_predict, steps), choices, [revealed, reveal_btn, *view], **PRIVATE)
    frames.change(None, frames, None, js=in_browser("decodeFrames"))
    hold.change(listener(decoding.held_heads, steps), [decoded, layer], held, show_progress="hidden", **PRIVATE)
    head.input(None, [frames, held, step, predict, revealed, head], view, js=in_browser("decodeHead"))
    # (the user's choices only: a link sets layer, head and step at once, and draws them)
    gr.on([layer.input, ask.change], listener(decoding.redraw, steps), [*choices, revealed], [*view, frames],
          **PRIVATE)
    prev_btn.click(None, step, step, js=in_browser("stepPrev"))
    next_btn.click(None, step, step, js=in_browser("stepNext"))
    on_link(page, "decoding", decoding.open_link, steps, warn, cfg.n_layers, inputs=[page.result, predict],
            outputs=[layer, head, source, followed, *started])
