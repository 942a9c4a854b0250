"""The Lab tab: the paper's claims tested by training sibling models — Table 3 (A) beside ours, footnote 4's
curves, two siblings on the visitor's sentence, and attention forming over training (the time-lapse). Its data
are the shipped records of ``model.serving.lab`` (``assets/lab/``); its words are ``viz.views.lab``'s.

Its endpoints for scripts (/lab_runs, /lab_attention, /timelapse) are ``viz.views.api``'s."""

from __future__ import annotations

import functools
from collections.abc import Callable

import gradio as gr

from model.serving.lab import SHIPPED
from viz.lab import role_legend
from viz.ui.wiring import (
    PRIVATE,
    Page,
    following,
    how_to_read,
    in_browser,
    listener,
    on_link,
    page_and_api,
    sentence_box,
    unless_drawn,
)
from viz.views import lab
from viz.views.attention import maps
from viz.views.page import PAGE


def build_lab(page: Page, to_lab: gr.Button) -> None:
    """The tab; ``to_lab`` (the "Why 1/√d_k" tab's "the same, in training" button) opens it."""
    runs = page.runs
    shelf = runs.lab
    payload = shelf.runs_payload()
    names = [r["name"] for r in payload["runs"]]
    with gr.Tab("Lab", id="lab", elem_id="lab-tab") as tab:
        gr.Markdown("## The paper's claims, tested by training\nSibling models of the shipped one, each trained "
                    "with one thing changed — the number of heads at constant compute (Table 3 A), no 1/√d_k "
                    "(footnote 4), additive attention — on the same data, vocabulary and budget.")
        how_to_read("lab")
        # Table 3 (A) first: the tab's first figure whole on the first screen at 1280×720; what the lab finds under it
        table3a = gr.Plot(label="Table 3 (A): test BLEU against h = 8, every seed a point", elem_id="lab-table3a")
        table3a_note = gr.Markdown(elem_id="lab-table3a-note")
        gr.Markdown(lab.summary(shelf), elem_id="lab-summary")
        gr.Markdown("### Footnote 4 in training")
        curves = gr.Plot(label="Training curves", elem_id="lab-curves")
        with gr.Row():  # under the curves, as their key: the figure a few Tab presses from the tab's start
            kind = gr.Dropdown(maps.KIND_CHOICES, value="encoder_self", label="Kind", scale=2)
            layer = gr.Slider(0, runs.cfg.n_layers, value=0, step=1, label="Layer (0 = mean over layers)", scale=2)
            chosen = gr.CheckboxGroup(lab.run_choices(shelf), value=[n for n in lab.FOOTNOTE4_RUNS if n in names],
                                      label="Runs", scale=5, elem_id="lab-runs")
        curves_note = gr.Markdown(elem_id="lab-curves-note")
        gr.Markdown("### Two siblings on your sentence")
        live = [(lab_label, name) for lab_label, name in lab.run_choices(shelf) if name in shelf.live]
        sides = [("the shipped model (h = 8)", SHIPPED), *live]
        with gr.Row():
            text = sentence_box("English sentence", scale=4)
            # left: the first live sibling other than the reference (h = 8 as the shipped model, once its weights ship)
            first = next((name for _, name in live if name != shelf.index["reference"]), SHIPPED)
            left = gr.Dropdown(sides, value=first, label="Left", scale=2)
            right = gr.Dropdown(sides, value=SHIPPED, label="Right", scale=2)
            pair_kind = gr.Dropdown(maps.KIND_CHOICES, value="cross", label="Kind", scale=2)
            run_btn = gr.Button("Run both", variant="primary", scale=1)
        opened = following(page, tab, text, "lab-opened")  # the Attention tab's sentence, unless one was typed here
        notice = gr.Markdown(elem_id="lab-notice")
        with gr.Row():
            with gr.Column():
                left_text = gr.Markdown()
                left_plot = gr.Plot(label="Left: layers × heads", elem_id="lab-left")
            with gr.Column():
                right_text = gr.Markdown()
                right_plot = gr.Plot(label="Right: layers × heads", elem_id="lab-right")
        gr.Markdown("### Attention forming: the time-lapse")
        sentences = [(s["source"], str(i)) for i, s in enumerate(shelf.sentences)]
        tl_runs = shelf.timelapse_runs()
        with gr.Row():
            example = gr.Dropdown(sentences, value="0" if sentences else None, label="Sentence", scale=4)
            tl_run = gr.Dropdown(tl_runs, value=shelf.index["reference"] if shelf.index["reference"] in tl_runs
                                 else (tl_runs[0] if tl_runs else None), label="Run", scale=2, elem_id="lab-tl-run")
            tl_kind = gr.Dropdown(maps.KIND_CHOICES, value="cross", label="Kind", scale=2)
            tl_layer = gr.Slider(1, runs.cfg.n_layers, value=5, step=1, label="Layer", scale=2)
            tl_head = gr.Slider(1, runs.cfg.n_heads, value=4, step=1, label="Head", scale=2)
        n_steps = len(shelf.records[shelf.index["reference"]]["timelapse"]["steps"]) if shelf.records else 1
        with gr.Row():
            step = gr.Slider(0, max(n_steps - 1, 1), value=n_steps - 1, step=1, elem_id=PAGE["labStep"], scale=6,
                             label="Training snapshot (0 = the untrained model … the last = the end of training)")
            # ▶ Play presses Next ▶ once a second (assets/web/timelapse.js); it never starts by itself
            gr.Button("▶ Play", elem_id=PAGE["labPlay"], scale=1, min_width=110)
            next_snapshot = gr.Button("Next ▶", elem_id=PAGE["labNext"], scale=1, min_width=110)
        tl_plot = gr.Plot(label="One head at this step", elem_id="lab-timelapse")
        tl_note = gr.Markdown(elem_id="lab-timelapse-note")
        stat = gr.Radio(list(lab.STATS), value="sharpness", label="Per head over the steps")
        heads = gr.Plot(label="The layer's heads over training", elem_id="lab-heads")
        gr.Markdown("Roles (the Head analysis tab's rule, over the shipped sample): " + role_legend() +
                    "; blank: mixed.")
        drawn = {name: gr.State(None) for name in ("curves", "table3a", "timelapse", "heads")}  # (unless_drawn)
    to_lab.click(lambda: gr.Tabs(selected="lab"), None, page.tabs, show_progress_on=to_lab, **PRIVATE)
    if not shelf.records:
        on_link(page, "lab", lab.open_link, inputs=[], outputs=[chosen], runs=names)  # the runs on the curves
        return  # nothing shipped yet: the summary says so
    # Each figure drawn again only for new values (opening the tab again draws nothing); the curves come with a link
    # that names the tab (a lecture's move)
    on_link(page, "lab", lab.open_link_drawn, shelf, inputs=[kind, layer, chosen],
            outputs=[chosen, drawn["curves"], curves, curves_note], runs=names)
    # each figure: its presenter, inputs and outputs; drawn as its controls change, and all four as the tab opens, in
    # one event (four had cost the page four round trips and their status work, in a row, at every opening)
    curves_fig = (unless_drawn(functools.partial(lab.curves_plot, shelf), 2), [drawn["curves"], kind, layer, chosen],
                  [curves, curves_note, drawn["curves"]])
    table3a_fig = (unless_drawn(functools.partial(lab.table3a_plot, shelf), 2), [drawn["table3a"]],
                   [table3a, table3a_note, drawn["table3a"]])
    timelapse_fig = (unless_drawn(functools.partial(lab.timelapse_plot, shelf), 2),
                     [drawn["timelapse"], example, tl_kind, tl_layer, tl_head, step, tl_run],
                     [tl_plot, tl_note, drawn["timelapse"]])
    heads_fig = (unless_drawn(functools.partial(lab.heads_plot, shelf), 1), [drawn["heads"], tl_kind, tl_layer, stat],
                 [heads, drawn["heads"]])
    gr.on([kind.change, layer.change, chosen.change], listener(curves_fig[0]), *curves_fig[1:], **PRIVATE)
    page_and_api([opened.change, run_btn.click, text.submit], lab.compare, runs, inputs=[text, left, right, pair_kind],
                 outputs=[left_text, left_plot, right_text, right_plot], notice=notice, api_name="lab_compare",
                 preprocess=False)  # its own checks, with messages (a Dropdown's would name Python types)
    next_snapshot.click(None, step, step, js=in_browser("snapshotNext"))
    gr.on([example.change, tl_run.change, tl_kind.change, tl_layer.change, tl_head.change, step.change],
          listener(timelapse_fig[0]), *timelapse_fig[1:], **PRIVATE, trigger_mode="always_last")
    gr.on([tl_kind.change, tl_layer.change, stat.change], listener(heads_fig[0]), *heads_fig[1:], **PRIVATE)
    opening_inputs, opening = all_at_once(curves_fig, table3a_fig, timelapse_fig, heads_fig)
    tab.select(listener(opening), opening_inputs, [out for fig in (curves_fig, table3a_fig, timelapse_fig, heads_fig)
                                                   for out in fig[2]], **PRIVATE)


def all_at_once(*figures: tuple) -> tuple[list, Callable]:
    """``figures`` (each a presenter, its inputs and its outputs) as one listener: its inputs (each component once) and
    a function of their values that returns every figure's outputs, in order."""
    inputs = list({id(c): c for _, ins, _ in figures for c in ins}.values())

    def opening(*values):
        given = dict(zip(map(id, inputs), values, strict=True))
        return tuple(out for present, ins, _ in figures for out in present(*(given[id(c)] for c in ins)))

    return inputs, opening
