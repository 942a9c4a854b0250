"""Attention Is All You Need — an attention visualiser (Gradio app). ``python app.py`` serves it on
http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT).

This file only composes: ``create_app(translator)`` builds one tab per view, each tab's builder holding its layout
AND its listeners. What a view shows comes from its gradio-free presenter, ``viz/views/<view>.py`` (the endpoints
without a page: ``viz/views/api.py``), through ``listener``; the page's script and style are ``assets/web/``.
Importing this module loads no model and changes no global state (``main()`` does both).

A new tab: a presenter, and here a ``<view>_tab(page)`` that opens its ``gr.Tab``, takes what tabs share from
``page`` (``Page``), wires its presenters with ``listener`` (``gr.on`` for several triggers, an ``api_name`` per
endpoint); then one line in ``create_app``.
"""

from __future__ import annotations

# ruff: noqa: E402 (the offline settings are made before gradio is imported)
import os

from viz.vocab import set_offline_env

set_offline_env()

import datetime
import functools
import inspect
import json
import sys
from copy import copy
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import gradio.state_holder as state_holder
import torch
from gradio.components.plot import PlotData

from model.cli import USER_ERRORS, fail
from model.network.inference import ASSETS, Translator
from model.probes.ablation import all_heads, load_ranking
from model.serving.batching import BatchSettings
from model.serving.cache import fixed_mmap_threshold
from model.serving.runs import Runs, SessionResult
from model.terms import MAX_TOKENS
from viz.architecture import figure1_svg, figure2_svg
from viz.scaling import PAPER_QUOTE
from viz.views import (
    api,
    architecture,
    attention,
    classroom,
    closeup,
    context,
    examples,
    projector,
    reading,
    scaling,
    share,
    teacher,
)
from viz.views import contributions as measures
from viz.views import decode_steps as decoding
from viz.views import head_analysis as heads_view
from viz.views import inside_head as inside_view
from viz.views.exports import ExportFolder
from viz.views.figure import Figure
from viz.views.model_card import header, model_card
from viz.views.page import PAGE, WEB, page_script
from viz.views.updates import Update
from viz.vocab import MAX_CHARS, MEAN

try:  # ZeroGPU hardware on Hugging Face Spaces: GPU work must run inside spaces.GPU.
    from spaces import GPU as ZEROGPU
except ImportError:
    ZEROGPU = None

MODEL_DIR = Path(os.environ.get("ATTN_MODEL_DIR", ASSETS))
SESSION_CAPACITY = 2000  # sessions Gradio keeps (least recently used go first): ~50 KB each, model/serving/README.md
CACHE_AGE_S = 3600  # Gradio deletes the app's cached files (exports) this old, checking as often
# A head ablation decodes the shipped sample (~3 CPU-seconds): one at a time, in a queue of its own, so that it never
# takes more than one of the workers the other requests share (its page events and /ablate share the queue).
ABLATIONS = {"concurrency_id": "ablate", "concurrency_limit": 1}
PRIVATE = {"api_visibility": "private"}  # the page's own events: no endpoint
# The page script (assets/web/lines.js) asks for the alignment view through v.lines_request once the view is on screen,
# and again after this says it is out of date: a run, or a new kind, layer or head.
LINES_STALE = "() => window.attnLinesStale()"


class AttentionView(SimpleNamespace):
    """The Attention tab's components by name (``attention_tab`` sets them): its listeners take them, and so do the
    tabs that follow its sentence and choices (source, target, kind, layer, head, present, colour, row_click)."""


@dataclass
class Page:
    """What the tab builders share; ``view``: the Attention tab's, set first so that other tabs can follow it."""

    runs: Runs
    demo: gr.Blocks
    tabs: gr.Tabs  # a presenter opens a tab by id: Update(selected="attention")
    result: gr.State  # the session's SessionResult (a key; listener hands presenters its AttentionResult), or None
    view: AttentionView | None = None
    alpha: gr.Slider | None = None  # the Why tab's scale factor (0 = × 1/√d_k … 1 = × 1): "Inside a head" takes it
    to_inside: gr.Button | None = None  # the Why tab's button that opens "Inside a head" with that factor


# ------------------------------------------------------------------------------------- presenters as listeners
def listener(present, *args, **kwargs):
    """``present`` as a Gradio listener, ``args``/``kwargs`` bound first (like functools.partial). It gets the
    session's AttentionResult for its ``SessionResult`` (the gr.State keeps a key into the byte-bounded cache); a
    ``Figure`` it returns becomes a gr.Plot value, an ``Update`` a gr.update (``SKIP``: no change); a ValueError
    (bad input, an empty sentence) reaches the user as its message, never as a traceback."""
    fn = functools.partial(present, *args, **kwargs) if args or kwargs else present

    def run(*inputs):
        try:
            out = fn(*(value.get() if isinstance(value, SessionResult) else value for value in inputs))
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return tuple(map(_shown, out)) if isinstance(out, tuple) else _shown(out)

    functools.update_wrapper(run, present)  # its name and docstring (the API page shows them)
    run.__wrapped__ = fn  # the signature Gradio reads: present's without the bound arguments, and their type hints
    kept = {*inspect.signature(fn).parameters, "return"}
    run.__annotations__ = {k: v for k, v in getattr(present, "__annotations__", {}).items() if k in kept}
    return run


def _shown(value):
    if isinstance(value, Figure):
        return PlotData(type="plotly", plot=json.dumps(value, separators=(",", ":")))
    return gr.update(**value.props) if isinstance(value, Update) else value


def page_and_api(triggers: list, present, *args, inputs: list, outputs: list, notice: gr.Markdown, api_name: str,
                 **event):
    """Wire ``present`` (``args`` bound first) twice, both in one queue: as the endpoint ``api_name`` for scripts
    (``listener``: bad input is an error with its message), an event with no trigger on the page; and for the
    page's ``triggers`` with one more output, ``notice``: there a bad input leaves the other outputs as they are —
    the last good view stays, with no red "Error" badges over it — and the notice says what to change; a good run
    clears it. Returns the page's event (to chain on)."""
    gr.on([], listener(present, *args), inputs, outputs, api_name=api_name, concurrency_id=api_name, **event)
    run = listener(present, *args)

    @functools.wraps(run)
    def on_page(*values):
        try:
            out = run(*values)
        except gr.Error as exc:
            return (*(gr.skip(),) * len(outputs), f"⚠️ {exc.message} *The figures still show the last good run.*")
        return (*(out if isinstance(out, tuple) else (out,)), "")

    return gr.on(triggers, on_page, inputs, [*outputs, notice], api_visibility="private", concurrency_id=api_name,
                 show_progress="minimal", **event)


def how_to_read(tab_id: str) -> None:
    """The tab's folded "How to read this" (``viz.views.reading``)."""
    with gr.Accordion(reading.TITLE, open=False, elem_classes="how-to-read"):
        gr.Markdown(reading.HOW_TO_READ[tab_id])


def sentence_box(label: str, **kwargs) -> gr.Textbox:
    return gr.Textbox(label=label, value=attention.DEFAULT_SOURCE, max_length=MAX_CHARS, **kwargs)


def layer_slider(cfg, value: int = 1, **kwargs) -> gr.Slider:
    return gr.Slider(1, cfg.n_layers, value=value, step=1, label="Layer", **kwargs)


def click_box(elem_id: str) -> gr.Textbox:
    """Hidden: the page script writes a click on a figure here (``PAGE``). Listen with .change, not .input: Gradio 6
    fires .input only on a keypress, never for a value set by the page script."""
    return gr.Textbox(visible="hidden", elem_id=elem_id)


# ------------------------------------------------------------------------------------------------- the tabs
def attention_tab(page: Page) -> AttentionView:
    cfg, v = page.runs.cfg, AttentionView()
    with gr.Tab("Attention", id="attention", elem_id="attention-tab"):
        # One screen at 1280×720 (a projector): sentence and translation, actions, then choices | overview | close-up.
        with gr.Row(elem_id="sentence-row"):
            v.source = sentence_box("English sentence", lines=1, scale=4, elem_id="source")
            v.target = gr.Textbox(label="Your own German translation (optional)", lines=1, scale=3,
                                  max_length=MAX_CHARS, elem_id="target")
            v.translation = gr.Textbox(label="German translation (the model's own)", interactive=False, scale=4,
                                       elem_id="translation")
        with gr.Row(equal_height=True, elem_id="action-row"):
            v.run_btn = gr.Button("Translate and show attention", variant="primary", elem_id="run", scale=0,
                                  min_width=300)
            v.example = gr.Dropdown(examples.CHOICES, value=examples.PROMPT, label="Examples that teach",
                                    show_label=False, container=False, scale=3, elem_id="example")
            v.copy_btn = gr.Button("Copy link to this view", size="md", elem_id=PAGE["copyLink"], scale=0,
                                   min_width=200)
            v.present = gr.Checkbox(False, label="Presentation mode", container=False, scale=0, min_width=190,
                                    elem_id="present")
        v.status = gr.Markdown(elem_id="status")
        v.notice = gr.Markdown(elem_id="notice")  # a bad input's message; the last good view stays (page_and_api)
        v.guide = gr.Markdown(visible=False, elem_id="guide")  # a link's notice, an example's caption
        with gr.Column(visible=False, elem_id="given") as v.given:  # a translation of one's own (teacher forcing)
            v.given_plot = gr.Plot(label=teacher.LABEL, elem_id="given-probs")
        with gr.Row(elem_id="plots-row"):
            choices_column(cfg, v)
            v.overview = gr.Plot(label="All layers (rows of tiles) × heads (columns) — click a tile",
                                 elem_id=PAGE["overview"], min_width=360)
            v.detail = gr.Plot(label="Close-up: rows attend to columns · focused: ← → ↑ ↓ · click a row: inside the "
                               "head", elem_id=PAGE["detail"], min_width=360)
        with gr.Row(), gr.Column(min_width=300):
            v.lines_head = gr.Radio(decoding.lines_head_choices(cfg.n_heads), value=0, elem_id="lines-head",
                                    label="Alignment view: a line per pair, opacity = weight; hover or click a "
                                    "token for its lines only. Heads:")
            v.lines = gr.Plot(show_label=False, elem_id=PAGE["lines"])  # titled figure: no badge, no 100 px
        v.tile_click, v.row_click = click_box(PAGE["tileClick"]), click_box(PAGE["rowClick"])  # row: "Inside a head"
        v.lines_request = click_box(PAGE["linesRequest"])  # the page script: the alignment view is on screen
        v.measured = gr.State(measures.WEIGHTS)  # weights or contributions (Inside a head); the API sends none: weights
        export_section(v)
        how_to_read("attention")
    attention_listeners(page, v)
    classroom_listeners(page, v)
    return v


def choices_column(cfg, v: AttentionView) -> None:
    """The Attention tab's choices: kind (the decoder's shift beside it), layer, head, colours, measure, and the
    close-up's focus for long sentences (``viz.views.focus``: a token range; <s> and </s> hidden)."""
    with gr.Column(scale=0, min_width=250, elem_id="choices"):
        v.kind = gr.Radio(attention.KIND_CHOICES, value=share.DEFAULT_KIND, label="Kind of attention", elem_id="kind")
        v.shift = gr.Markdown(context.shift_note(share.DEFAULT_KIND), elem_id="shift-note")  # §3.1's shift
        v.layer = layer_slider(cfg, elem_id="layer")
        v.head = gr.Radio(attention.head_choices(cfg.n_heads), value=MEAN, label="Head", elem_id="head")
        v.colour = gr.Radio(projector.COLOUR_CHOICES, value=projector.COLOUR_MODES[0], label="Close-up colours",
                            elem_id="colour")
        v.measure = gr.Radio(measures.CHOICES, value=measures.WEIGHTS, label="Colour shows", elem_id="measure")
        with gr.Accordion("Long sentence? Focus the close-up", open=False, elem_id="focus"):
            v.focus = [gr.Slider(1, MAX_TOKENS, value=1, step=1, label="From token", elem_id="focus-first"),
                       gr.Slider(1, MAX_TOKENS, value=MAX_TOKENS, step=1, label="To token",
                                 elem_id="focus-last"),
                       gr.Checkbox(False, label="Hide <s> and </s> (rows renormalised)", elem_id="hide-special")]


def export_section(v: AttentionView) -> None:
    with gr.Accordion("Export", open=False):
        gr.Markdown("The attention maps as npz or JSON (same content as `python -m model.translate`), "
                    "and the figures as PNG or SVG.")
        v.export_btn = gr.Button("Prepare npz + JSON", elem_id="export")
        v.export_out = gr.File(label="Downloads", file_count="multiple", elem_id="export-files")
        with gr.Row():
            for plot_id, name in (("overview", "Overview"), ("detail", "Detail"), (PAGE["lines"], "Alignment")):
                for fmt in ("png", "svg"):  # client-side, by the page script (no server round trip)
                    gr.Button(f"{name} as {fmt.upper()}", size="sm").click(
                        None, js=f"() => window.attnDownload('{plot_id}', '{fmt}')")


def attention_listeners(page: Page, v: AttentionView) -> None:
    """A run (/visualise), and what follows it; a choice redraws from the session's maps, never running the model
    again (/render_views, /render_detail); exports (/export)."""
    cfg, runs = page.runs.cfg, page.runs
    v.copy_btn.click(None, js="() => window.attnCopyLink()")  # the page script: the URL to the clipboard
    v.view_inputs = [page.result, v.kind, v.layer, v.head, v.present, v.colour, v.measured, *v.focus]  # closeup's
    v.shown = [v.translation, v.status, v.overview, v.detail, page.result]  # attention.Visualised
    v.run_events = [v.run_btn.click, v.source.submit, v.target.submit]
    then_lines(page, v, page_and_api(v.run_events, attention.visualise, runs, gr.Warning, inputs=[v.source, v.target,
               v.kind, v.layer, v.head, v.present, v.colour, *v.focus], outputs=v.shown, notice=v.notice,
               api_name="visualise", preprocess=False))
    v.kind.change(context.shift_note, v.kind, v.shift, queue=False, **PRIVATE)
    # Typed but not yet run: the figures still show the last run, and say so (in the browser, no round trip).
    gr.on([v.source.input, v.target.input], None, None, v.notice, js=f"() => {json.dumps(context.EDITED)}")
    v.example.input(lambda: "", None, v.notice, queue=False, **PRIVATE)  # an example runs: not stale
    gr.on([v.kind.change, v.present.change], listener(closeup.views, cfg, runs.contributions), v.view_inputs,
          [v.overview, v.detail], api_name="render_views", preprocess=False)
    gr.on([v.layer.change, v.head.change, v.colour.change, *(c.change for c in v.focus)],
          listener(closeup.detail_plot, cfg, runs.contributions), v.view_inputs, v.detail, api_name="render_detail",
          preprocess=False)
    v.measure.change(listener(closeup.toggled, cfg, runs.contributions), [*v.view_inputs[:6], v.measure, *v.focus],
                     [v.overview, v.detail, v.measured], preprocess=False, **PRIVATE)
    v.tile_click.change(listener(attention.open_tile, cfg), v.tile_click, [v.layer, v.head], **PRIVATE)
    # The alignment view (up to 90 line traces) is drawn when it is on screen, not with every run (LINES_STALE)
    gr.on([v.kind.change, v.layer.change, v.lines_head.change], None, js=LINES_STALE)
    v.lines_request.change(listener(decoding.alignment_plot), [page.result, v.kind, v.layer, v.lines_head], v.lines,
                           **PRIVATE)
    # Exports go inside Gradio's cache (served without a copy of its own), at most MAX_EXPORTS / MAX_BYTES.
    v.export_btn.click(listener(attention.export_files, ExportFolder(page.demo.GRADIO_CACHE)), page.result,
                       v.export_out, api_name="export")


def then_lines(page: Page, v: AttentionView, event) -> None:
    """What follows every run: the model's own translation (a given one's token probabilities beside it), the
    contributions if they are the chosen measure, and the alignment view (once it is on screen)."""
    runs = page.runs
    event.success(listener(teacher.given_outputs, runs.trained, runs.token_probs), page.result,
                  [v.translation, v.given, v.given_plot], show_progress="hidden", **PRIVATE)
    event.success(listener(closeup.after_run, runs.cfg, runs.contributions), v.view_inputs, [v.overview, v.detail],
                  show_progress="minimal", **PRIVATE)  # the contributions' figures may still be coming
    event.success(None, js=LINES_STALE)


def classroom_listeners(page: Page, v: AttentionView) -> None:
    """The classroom (``viz.views.classroom``): a link opens its view, an example opens its view with its caption."""
    controls = [v.source, v.target, v.kind, v.layer, v.head, v.present, v.colour]  # classroom.CONTROLS

    def open_link(request: gr.Request):  # the view the page's URL asks for
        tabs = [tab.id for tab in page.tabs.children if isinstance(tab, gr.Tab)]
        return classroom.open_link(page.runs, gr.Warning, tabs, dict(request.query_params))

    then_lines(page, v, page.demo.load(listener(open_link), None, [*controls, v.guide, *v.shown, page.tabs],
                                       **PRIVATE))
    then_lines(page, v, v.example.input(listener(classroom.pick_example, page.runs, gr.Warning), [v.example,
               v.present, v.colour, *v.focus], [*controls, v.guide, *v.shown], preprocess=False, **PRIVATE))
    # the user's own sentence: the caption goes, and the menu can open the same example again
    gr.on(v.run_events, lambda: (gr.Markdown(visible=False), examples.PROMPT), None, [v.guide, v.example], queue=False,
          show_progress="hidden", **PRIVATE)


def decoding_tab(page: Page) -> None:
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
            head = gr.Radio(attention.head_choices(cfg.n_heads), value=MEAN, label="Head", scale=2,
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
    prev_btn.click(None, step, step, js="(s) => Math.max(1, s - 1)")
    next_btn.click(None, step, step, js="(s) => Math.min(Number(document.querySelector("
                   "'#decode-step input[type=range]').max), s + 1)")


def scaling_tab(page: Page) -> None:
    device = page.runs.toy_device
    with gr.Tab("Why 1/√d_k", id="scaling") as tab:
        gr.Markdown(PAPER_QUOTE)
        how_to_read("scaling")
        with gr.Row():
            log2_dk = gr.Slider(0, 10, value=9, step=1, label="log₂ d_k (d_k = 1 … 1024)", elem_id="log2-dk")
            n_keys = gr.Slider(2, 64, value=16, step=1, label="number of keys", elem_id="n-keys")
            alpha = gr.Slider(0, 1, value=1, step=0.05, elem_id="alpha",
                              label="scale factor: 0 = × 1/√d_k (paper) … 1 = × 1 (no scaling)")
            seed = gr.Number(0, precision=0, label="seed", minimum=0, maximum=2**31 - 1, elem_id="seed")
        gr.Markdown("### 1 · Dot products grow with d_k")
        with gr.Row():
            var_plot = gr.Plot(label="Variance of q·k", elem_id="variance")
            hist_plot = gr.Plot(label="Distribution of q·k", elem_id="histogram")
        var_text = gr.Markdown()
        gr.Markdown("### 2 · Large logits saturate the softmax and its gradient vanishes")
        with gr.Row():
            weights_plot = gr.Plot(label="Softmax weights for one query", elem_id="softmax-weights")
            curves_plot = gr.Plot(label="Against d_k", elem_id="curves")
        sat_text = gr.Markdown()
        trained_model_section(page, tab, alpha)
    gr.on([log2_dk.change, seed.change, page.demo.load], listener(scaling.variance_checked, device=device),
          [log2_dk, seed], [var_plot, hist_plot, var_text], api_name="scaling_variance", preprocess=False)
    gr.on([log2_dk.change, n_keys.change, alpha.change, seed.change, page.demo.load],
          listener(scaling.saturation_checked, device=device), [log2_dk, n_keys, alpha, seed],
          [weights_plot, curves_plot, sat_text], api_name="scaling_saturation", preprocess=False)


def trained_model_section(page: Page, tab: gr.Tab, alpha: gr.Slider) -> None:
    """Section 3 of the "Why" tab: the trained model with its 1/√d_k replaced by the factor ``alpha`` picks."""
    runs, cfg = page.runs, page.runs.cfg
    gr.Markdown(scaling.trained_intro(cfg))
    with gr.Row():
        text = sentence_box("English sentence", scale=3)
        kind = gr.Dropdown(attention.KIND_CHOICES, value="encoder_self", label="Kind", scale=2)
        layer = layer_slider(cfg, scale=2)
        run_btn = gr.Button("Run the model", variant="primary", scale=1, elem_id="live-run")
    live_notice = gr.Markdown(elem_id="live-notice")
    text.input(None, None, live_notice, js=f"() => {json.dumps(context.EDITED_LIVE)}")
    with gr.Row():
        normal = gr.Plot(label="As trained", elem_id="live-normal")
        changed = gr.Plot(label="With the chosen scale", elem_id="live-changed")
    entropy = gr.Plot(label="Mean attention entropy per head", elem_id="live-entropy")
    summary = gr.Markdown(elem_id="live-summary")
    page.alpha, page.to_inside = alpha, gr.Button("Inside one head with this scale factor →", elem_id="to-inside")
    # Every control that changes what these maps mean redraws them (the slider sits far above: never a stale picture).
    page_and_api([run_btn.click, text.submit, tab.select, alpha.change, kind.change, layer.change],
                 scaling.live_checked, cfg, runs.attention, runs.trained, inputs=[text, alpha, kind, layer],
                 outputs=[normal, changed, entropy, summary], notice=live_notice, api_name="scaling_live",
                 preprocess=False, trigger_mode="always_last")


def inside_head_tab(page: Page) -> None:
    """One head for one query, step by step (viz.views.inside_head), on the Attention tab's sentence and view. A
    click on a row of its close-up opens this tab on that query; the scale factor links with the Why tab."""
    runs, cfg, view = page.runs, page.runs.cfg, page.view
    with gr.Tab("Inside a head", id="inside") as tab:
        gr.Markdown(inside_view.INTRO)
        how_to_read("inside")
        with gr.Row():
            kind = gr.Dropdown(attention.KIND_CHOICES, value="encoder_self", label="Kind of attention", scale=3,
                               elem_id="in-kind")
            layer = layer_slider(cfg, scale=2, elem_id="in-layer")
            head = gr.Radio(inside_view.head_choices(cfg.n_heads), value=1, label="Head", scale=4, elem_id="in-head")
            factor = gr.Textbox("", label="Scale (empty = 1/√d_k, 1 = none; Enter)", scale=2, elem_id="in-factor")
            with gr.Column(scale=1, min_width=160):
                take = gr.Button("Why tab's factor", size="sm", elem_id="in-take-factor")
                to_why = gr.Button("Why 1/√d_k? →", size="sm", elem_id="in-to-why")
        query = gr.Radio([], label="Query token", elem_id="in-query")

        def plot(name: str) -> gr.Plot:
            return gr.Plot(label=inside_view.PLOT_LABELS[name], elem_id=f"in-{name}")

        with gr.Row():
            scores, steps = plot("scores"), gr.Markdown(elem_id="in-steps")
        figure2 = plot("figure2")  # wide: Figure 2 reads bottom to top with its shapes beside the arrows
        with gr.Row():
            projections, head_output = plot("projections"), plot("head_output")
        with gr.Row():
            contributions = plot("contributions")
            with gr.Column():
                footnote4_text, footnote4 = gr.Markdown(elem_id="in-footnote4-text"), plot("footnote4")
    shown = [steps, footnote4_text, scores, figure2, projections, head_output, footnote4, contributions]  # their order
    draw = {"fn": listener(inside_view.present, runs.inside_head, cfg), "inputs": [page.result, kind, layer, head,
            query, factor], "outputs": shown, "preprocess": False, **PRIVATE}
    taken, chosen = [view.kind, view.layer, view.head], [kind, layer, head, query]  # the Attention tab's; this tab's
    tab.select(listener(inside_view.take_over, cfg), [page.result, *taken, query], chosen, **PRIVATE).then(**draw)
    # the tab opened by the page draws (tab.select) with the query set here
    view.row_click.change(listener(inside_view.row_clicked, cfg), [view.row_click, page.result, *taken],
                          [*chosen, page.tabs], **PRIVATE)
    kind.input(listener(inside_view.take_over, cfg), [page.result, *chosen], chosen, **PRIVATE).then(**draw)
    gr.on([query.input, layer.release, head.input, factor.submit], **draw)
    take.click(listener(inside_view.factor_from_alpha, cfg.d_k), page.alpha, factor, **PRIVATE).then(**draw)
    to_why.click(lambda: gr.Tabs(selected="scaling"), None, page.tabs, show_progress_on=to_why, **PRIVATE)
    page.to_inside.click(listener(inside_view.factor_from_alpha, cfg.d_k), page.alpha, factor, **PRIVATE).then(
        lambda: gr.Tabs(selected="inside"), None, page.tabs, show_progress_on=factor, **PRIVATE)


def head_analysis_tab(page: Page) -> None:
    """Head analysis (viz.views.head_analysis): every head's statistics and role, for the session's sentence or the
    shipped sample (a click on a cell opens that head on the Attention tab); heads switched off for one request,
    with the sample's BLEU/chrF before and after; the shipped ranking; raw attention beside its rollout.
    Ablations run one at a time (``ABLATIONS``), beside everything else."""
    runs, cfg, view = page.runs, page.runs.cfg, page.view
    ranking = load_ranking()
    with gr.Tab("Head analysis", id="heads") as tab:
        gr.Markdown(heads_view.INTRO)
        how_to_read("heads")
        with gr.Row(equal_height=True):
            scope = gr.Radio(heads_view.SCOPE_CHOICES, value="sentence", label="Statistics of", elem_id="heads-scope")
            stat = gr.Dropdown(heads_view.STAT_CHOICES, value="spread", label="Colour shows", elem_id="heads-stat")
        with gr.Row():
            grid = gr.Plot(label="Layers × heads per kind: click a cell", elem_id=PAGE["cellGrid"], min_width=420)
            rules = gr.Markdown(elem_id="heads-rules")
        cell = click_box(PAGE["cellClick"])
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
                kind = gr.Radio(attention.KIND_CHOICES, value="cross", label="Maps without them",
                                elem_id="ablated-kind")
                ablated = gr.Plot(label="This sentence without them (tiles of the heads off say so)", elem_id="ablated")
        last = gr.State(None)  # (sentence, heads off) of the last ablation: its result stays in runs' cache
        gr.Markdown(heads_view.ROLLOUT_NOTE)
        layer = layer_slider(cfg, cfg.n_layers, elem_id="rollout-layer")
        rollout = []
        for pair in (("enc-raw", "enc"), ("cross-raw", "cross")):  # raw | rollout, the encoder then cross-attention
            with gr.Row():
                rollout += [gr.Plot(elem_id=f"rollout-{name}", show_label=False, min_width=300) for name in pair]
    stats = listener(heads_view.stats_view, runs.sample_stats)
    gr.on([tab.select, scope.change, stat.change], stats, [page.result, scope, stat], [grid, rules], **PRIVATE)
    gr.on([tab.select, layer.change], listener(heads_view.rollout_plots), [page.result, layer], rollout, **PRIVATE)

    def run_ablation(result, heads_, kind_, progress=gr.Progress()):  # noqa: B008 (Gradio's progress bar)
        return heads_view.ablation_for(runs.ablate, result, heads_, kind_, progress)

    cell.change(listener(heads_view.open_cell, cfg.n_layers, cfg.n_heads), cell,
                [view.kind, view.layer, view.head, page.tabs], **PRIVATE)
    top.click(listener(heads_view.top_heads, ranking), None, heads, **PRIVATE)
    go.click(listener(run_ablation), [page.result, heads, kind], [ablation, ablated, last], show_progress_on=ablated,
             **PRIVATE, **ABLATIONS)
    kind.change(listener(heads_view.ablation_again, runs.ablate), [last, kind], [ablation, ablated], **PRIVATE,
                **ABLATIONS)


def architecture_tab(page: Page) -> None:
    cfg, view = page.runs.cfg, page.view
    with gr.Tab("Architecture", id="architecture") as tab:
        gr.Markdown(architecture.INTRO)
        how_to_read("architecture")
        figure1 = gr.HTML(figure1_svg(cfg), js_on_load=None, elem_id=PAGE["figure1"])
        block_click = click_box(PAGE["blockClick"])
        with gr.Row():
            kind = gr.Dropdown(attention.KIND_CHOICES, value="cross", label="Attention", scale=2)
            layer = layer_slider(cfg, 3, scale=2)
            go = gr.Button("Show these heatmaps", scale=1, elem_id="arch-go")
        gr.HTML(figure2_svg(cfg), js_on_load=None, elem_id="figure2")
    # Figure 1 is drawn with the session's shapes when the tab opens: ~20 KB that need not travel with every run.
    tab.select(listener(architecture.figure1_for, cfg), page.result, figure1, api_name="figure1",
               api_visibility="undocumented")
    block_click.change(listener(architecture.open_block), block_click, [view.kind, page.tabs], **PRIVATE)
    go.click(listener(architecture.show, cfg), [kind, layer], [view.kind, view.layer, page.tabs], preprocess=False,
             **PRIVATE)


def model_card_tab(page: Page) -> None:
    with gr.Tab("Model card", id="model-card"):
        how_to_read("model-card")
        gr.Markdown(model_card(page.runs.translator.folder, page.runs.translator.device_label))


def api_endpoints(runs: Runs) -> None:
    """The endpoints without a page, for scripts (``viz.views.api``); an ablation waits for the one running."""
    gr.api(listener(api.translate, runs), api_name="translate")
    gr.api(listener(api.attention_maps, runs), api_name="attention")
    gr.api(listener(api.decode_steps, runs), api_name="decode_steps")
    gr.api(listener(api.inside_head, runs), api_name="inside_head")
    gr.api(listener(api.head_stats, runs), api_name="head_stats")
    gr.api(listener(api.ablate, runs), api_name="ablate", **ABLATIONS)


# --------------------------------------------------------------------------------------------- the whole app
def create_app(translator: Translator, serving: bool = False) -> gr.Blocks:
    """The app for one loaded model: every tab, listener and endpoint. Nothing is served yet (see ``launch``).
    ``serving``: the app will be served now, so the model process of the batched path (``model.serving.worker``) starts
    loading at once, while Gradio starts (otherwise it starts with the first batch)."""
    runs = Runs(translator, gpu=ZEROGPU)
    if serving and runs.batched is not None:
        runs.batched.start()
    # delete_cache: Gradio removes the files it holds for this app (exports, anything uploaded) after an hour.
    with gr.Blocks(title="Attention Is All You Need — attention visualiser", analytics_enabled=False,
                   delete_cache=(CACHE_AGE_S, CACHE_AGE_S)) as demo:
        result = gr.State(None)
        gr.Markdown(header(translator.cfg), elem_id="header")
        with gr.Tabs() as tabs:
            page = Page(runs, demo, tabs, result)
            page.view = attention_tab(page)
            for tab in (decoding_tab, scaling_tab, inside_head_tab, head_analysis_tab, architecture_tab,
                        model_card_tab):
                tab(page)
        api_endpoints(runs)
    progress_on_components(demo)
    return demo


def progress_on_components(demo: gr.Blocks) -> None:
    """No layout block with children (the tabs, a column) is where an event shows its progress: its components are.

    On every status change of any event, Gradio's page refreshes the loading status of every progress target of
    every event, and for a layout block it reads back (and deep-copies) every component inside it: with the tabs
    an output of six events (a link, a tile or a button opens a tab), that was all ~225 components, several times
    per click. ``python -m bench --sections browser`` counts ``structuredClone`` calls per click on "Translate and
    show attention": 26,260 before, 9,792 after. An event whose outputs are all layout blocks names its
    ``show_progress_on`` itself."""
    for fn in demo.fns.values():
        if fn.show_progress_on is not None:
            continue
        parts = [o for o in fn.outputs if getattr(o, "children", None)]  # gr.HTML is a BlockContext without any
        if parts:
            components = [o for o in fn.outputs if o not in parts]
            if not components:
                raise ValueError(f"the event {fn.name!r} updates only layout blocks: give it a show_progress_on")
            fn.show_progress_on = components


class LeanSessionState(state_holder.SessionState):
    """Gradio 6 gives every session (each page load, and each raw API call that names no session) a ``SessionState``
    that copies every component's configuration (~330 KB and tens of milliseconds for this app's ~225 blocks), then
    keeps each input and output value the session sees (~2 MB of plot JSON at 100 tokens a side), only for its
    /gradio_api/deep_link route, which this app offers no button for. This one keeps only the gr.State values and the
    components an event updated (``launch`` makes new sessions these; ``SESSION_CAPACITY`` bounds their number).
    tests/test_memory.py fails should a Gradio upgrade change this."""

    def __init__(self, blocks: Any):  # SessionState.__init__, less the config copy
        self.blocks_config = copy(blocks.default_config)
        self.config_values: dict = {}
        self.state_data: dict[int, Any] = {}
        self._state_ttl: dict = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

    def __setitem__(self, key: int, value: Any) -> None:
        block = self.blocks_config.blocks.get(key)
        if isinstance(block, gr.State):
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            self.blocks_config.blocks[key] = value

    def _update_config(self, *args) -> None:  # there is no copy to update (nor in _update_value_in_config)
        pass

    _update_value_in_config = _update_config


def launch(demo: gr.Blocks, **kwargs):
    """Serve ``demo`` as the Space does (``kwargs`` go to ``demo.launch``). A classroom of 30 waits its turn
    instead of getting errors: up to ``ATTN_MAX_BATCH`` requests at a time, whose model runs are decoded as one
    batch in the app's model process (``model.serving.batching``, ``model.serving.worker``; with ``ATTN_BATCH=0``,
    two at a time for two cores, here), and api_open=False sends even raw HTTP calls through the queue. Sessions are
    small (``LeanSessionState``), at most ``SESSION_CAPACITY``.
    Binds 127.0.0.1 unless GRADIO_SERVER_NAME says otherwise; never opens a share link.
    The app takes no uploads: Gradio's upload route refuses any file that is not empty (``max_file_size``)."""
    batching = BatchSettings.from_env()
    workers = batching.max_batch_size if batching.enabled and ZEROGPU is None else 2
    demo.queue(default_concurrency_limit=workers, max_size=256, api_open=False)
    state_holder.SessionState = LeanSessionState  # new sessions keep no copy of every component and value
    fixed_mmap_threshold()  # freed maps go back to the OS (model/serving/cache.py)
    return demo.launch(share=False, css_paths=[WEB / "app.css"], js=page_script(), show_error=False,
                       max_file_size=0, state_session_capacity=SESSION_CAPACITY, **kwargs)


def load_translator(folder: str | Path = MODEL_DIR) -> Translator:
    """The model as served. On a 2-core CPU one intra-op thread per request (and two requests at once, see
    ``launch``) beats two requests fighting over two threads each: this sets torch's threads for the process."""
    translator = Translator(folder)
    if translator.device.type == "cpu":
        torch.set_num_threads(1)
    return translator


def main() -> int:
    """Load the model and serve. A missing or corrupt model folder ends the app with one line on stderr (the
    file, the fault, what to do) and exit code 2, no traceback."""
    try:
        translator = load_translator()
    except USER_ERRORS as exc:
        return fail(f"{exc} (the app's model folder is {MODEL_DIR}; ATTN_MODEL_DIR sets another)")
    launch(create_app(translator, serving=True))
    return 0


def __getattr__(name: str):
    """``app.demo``, Gradio's convention (``gradio app.py``): built with the served model on first use only."""
    if name == "demo":
        globals()["demo"] = demo = create_app(load_translator(), serving=True)
        return demo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
