"""Attention Is All You Need — an attention visualiser (Gradio app).

This file only composes: ``create_app(translator)`` builds one tab per view, and each tab's builder holds
that tab's layout AND its listeners. What a view shows comes from its presenter, ``viz/views/<view>.py``
(no gradio, unit-tested); the page's script and style are ``assets/web/``. Only ``main()`` loads the model
and serves: importing this module loads nothing and changes no global state.

    python app.py        # serves on http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT)

A new tab: a presenter ``viz/views/<view>.py``; here a ``<view>_tab(page)`` that opens its ``gr.Tab``, takes
what tabs share from ``page`` (``Page``), passes every function through ``listener`` (figures -> plots,
ValueError -> a message), uses ``gr.on`` for several triggers and names each endpoint (``api_name``);
then one line in ``create_app``.
"""

from __future__ import annotations

import os

from viz.vocab import set_offline_env

set_offline_env()  # before gradio is imported

import functools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import gradio as gr  # noqa: E402
import torch  # noqa: E402
from gradio.components.plot import PlotData  # noqa: E402

from gradio_sessions import lean_sessions  # noqa: E402
from model.ablation import all_heads, load_ranking  # noqa: E402
from model.analysis import head_stats_payload  # noqa: E402
from model.batching import BatchSettings  # noqa: E402
from model.cache import fixed_mmap_threshold  # noqa: E402
from model.cli import USER_ERRORS, fail  # noqa: E402
from model.inference import ASSETS, Translator  # noqa: E402
from viz.architecture import figure1_svg, figure2_svg  # noqa: E402
from viz.heatmaps import HEAD_LABEL, LAYER_LABEL  # noqa: E402
from viz.lines import LINE_META, TOKEN_META  # noqa: E402
from viz.scaling import PAPER_QUOTE  # noqa: E402
from viz.views import (  # noqa: E402
    architecture,
    attention,
    closeup,
    context,
    examples,
    inputs,
    projector,
    reading,
    scaling,
    share,
    teacher,
)
from viz.views import contributions as measures  # noqa: E402
from viz.views import decode_steps as decoding  # noqa: E402
from viz.views import head_analysis as heads_view  # noqa: E402
from viz.views import inside_head as inside_view  # noqa: E402
from viz.views.exports import ExportFolder  # noqa: E402
from viz.views.figure import Figure  # noqa: E402
from viz.views.model_card import model_card  # noqa: E402
from viz.views.runs import Runs, SessionResult  # noqa: E402

try:  # ZeroGPU hardware on Hugging Face Spaces: GPU work must run inside spaces.GPU.
    from spaces import GPU as ZEROGPU
except ImportError:
    ZEROGPU = None


MODEL_DIR = Path(os.environ.get("ATTN_MODEL_DIR", ASSETS))
WEB = Path(__file__).resolve().parent / "assets" / "web"
SESSION_CAPACITY = 2000  # sessions whose state Gradio keeps (least recently used go first): ~50 KB each, see README
CACHE_AGE_S = 3600  # Gradio deletes the app's cached files (exports) this old, checking as often
# A head ablation decodes the shipped sample (~3 CPU-seconds): one at a time, in a queue of its own, so that it never
# takes more than one of the workers the other requests share (its page events and /ablate share the queue).
ABLATIONS = {"concurrency_id": "ablate", "concurrency_limit": 1}
# The contract with the page script (assets/web/app.js gets it as its argument): written once, here.
PAGE = {"overview": "overview", "tileClick": "tile-click", "figure1": "figure1", "blockClick": "arch-click",
        "layerLabel": LAYER_LABEL, "headLabel": HEAD_LABEL,
        "lines": "lines", "lineMeta": LINE_META, "tokenMeta": TOKEN_META,  # the alignment view (viz.lines)
        "stepPrev": "step-prev", "stepNext": "step-next",  # the Decoding tab's buttons (and the arrow keys)
        # the view in the URL (viz.views.share): query parameter -> element id; the close-up; the Copy link button
        "view": {"text": "source", "target": "target", "kind": "kind", "layer": "layer", "head": "head",
                 "present": "present", "colour": "colour"}, "detail": "detail", "copyLink": "copy-link",
        "rowClick": "row-click",  # a click on a row of the close-up sends "row,time" here: "Inside a head" opens
        "cellGrid": "heads-grid", "cellClick": "heads-cell-click"}  # Head analysis: a grid cell opens its head


@dataclass
class Page:
    """What the tab builders share. ``view`` is the Attention tab's controls (set by ``attention_tab``, which
    comes first), so that other tabs can follow its sentence and choices or switch to it."""

    runs: Runs
    demo: gr.Blocks
    tabs: gr.Tabs  # select a tab by id: gr.Tabs(selected="attention")
    result: gr.State  # the session's SessionResult (a key; listener hands presenters its AttentionResult), or None
    view: AttentionView | None = None
    alpha: gr.Slider | None = None  # the Why tab's scale factor (0 = × 1/√d_k … 1 = × 1): "Inside a head" takes it
    to_inside: gr.Button | None = None  # the Why tab's button that opens "Inside a head" with that factor


@dataclass
class AttentionView:
    source: gr.Textbox
    target: gr.Textbox
    kind: gr.Radio
    layer: gr.Slider
    head: gr.Radio
    present: gr.Checkbox | None = None  # presentation mode
    colour: gr.Radio | None = None  # the close-up's colour scale
    row_click: gr.Textbox | None = None  # the page script writes "row,time" on a click on a row of the close-up


def listener(present, *args, **kwargs):
    """``present`` as a Gradio listener, with ``args``/``kwargs`` bound first (like functools.partial): the
    ``Figure``s it returns become gr.Plot values, and a ValueError (bad input, an empty sentence) reaches the
    user as its message, never as a traceback. Every listener that can raise goes through here."""
    fn = functools.partial(present, *args, **kwargs) if args or kwargs else present

    def run(*inputs):
        try:
            out = fn(*map(_given, inputs))
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return tuple(map(_shown, out)) if isinstance(out, tuple) else _shown(out)

    functools.update_wrapper(run, present)  # its name and docstring (the API page shows them)
    run.__wrapped__ = fn  # the signature Gradio reads: present's, without the bound arguments
    return run


def _given(value):
    """A listener's input as the presenter takes it: the session's gr.State keeps a ``SessionResult`` (a key into
    the server's byte-bounded cache, not megabytes of maps per session); presenters get its AttentionResult."""
    return value.get() if isinstance(value, SessionResult) else value


def _shown(value):
    """A presenter's output as Gradio takes it: a Figure as gr.Plot's value, anything else as it is."""
    if isinstance(value, Figure):
        return PlotData(type="plotly", plot=json.dumps(value, separators=(",", ":")))
    return value


def keep_view(present, *args, n_outputs: int, **kwargs):
    """``listener(present, *args, **kwargs)`` for the page's own events, with one more output at the end: a notice
    beside the figures. A bad input (a ValueError: an empty sentence, …) leaves the other ``n_outputs`` outputs
    as they are — the last good view stays, with no red "Error" badges over it — and the notice says what to
    change; a good run clears it. Scripts keep ``listener``'s errors (see ``page_and_api``)."""
    run = listener(present, *args, **kwargs)

    def on_page(*inputs):
        try:
            out = run(*inputs)
        except gr.Error as exc:
            return (*(gr.skip(),) * n_outputs, f"⚠️ {exc.message} *The figures still show the last good run.*")
        return (*(out if isinstance(out, tuple) else (out,)), "")

    functools.update_wrapper(on_page, run)
    return on_page


def page_and_api(triggers: list, present, *args, inputs: list, outputs: list, notice: gr.Markdown, api_name: str,
                 **event):
    """Wire ``present`` (``args`` bound first) twice: for the page's ``triggers`` through ``keep_view`` (bad input
    keeps the view, its message goes to ``notice``) and as the endpoint ``api_name`` for scripts through
    ``listener`` (bad input is an error with its message), an event with no trigger on the page (as ``gr.api``'s
    are). Both share one queue. Returns the page's event (to chain on)."""
    gr.on([], listener(present, *args), inputs, outputs, api_name=api_name, concurrency_id=api_name, **event)
    return gr.on(triggers, keep_view(present, *args, n_outputs=len(outputs)), inputs, [*outputs, notice],
                 api_visibility="private", concurrency_id=api_name, **event)


# ------------------------------------------------------------------------------------------------- the tabs
def attention_tab(page: Page) -> AttentionView:
    cfg, runs = page.runs.cfg, page.runs
    with gr.Tab("Attention", id="attention", elem_id="attention-tab"):
        # One screen at 1280×720 (a projector): sentence and translation, actions, then choices | overview | close-up.
        with gr.Row(elem_id="sentence-row"):
            source = gr.Textbox(label="English sentence", value=attention.DEFAULT_SOURCE, lines=1, scale=4,
                                max_length=inputs.MAX_CHARS, elem_id="source")
            target = gr.Textbox(label="Your own German translation (optional)", lines=1, scale=3,
                                max_length=inputs.MAX_CHARS, elem_id="target")
            translation = gr.Textbox(label="German translation (the model's own)", interactive=False, scale=4,
                                     elem_id="translation")
        with gr.Row(equal_height=True, elem_id="action-row"):
            run_btn = gr.Button("Translate and show attention", variant="primary", elem_id="run", scale=0,
                                min_width=300)
            example = gr.Dropdown(examples.CHOICES, value=examples.PROMPT, label="Examples that teach",
                                  show_label=False, container=False, scale=3, elem_id="example")
            copy_btn = gr.Button("Copy link to this view", size="md", elem_id=PAGE["copyLink"], scale=0,
                                 min_width=200)
            present = gr.Checkbox(False, label="Presentation mode", container=False, scale=0, min_width=190,
                                  elem_id="present")
        status = gr.Markdown(elem_id="status")
        notice = gr.Markdown(elem_id="notice")  # a bad input's message; the last good view stays (keep_view)
        guide = gr.Markdown(visible=False, elem_id="guide")  # a link's notice, an example's caption
        with gr.Column(visible=False, elem_id="given") as given:  # a translation of one's own (teacher forcing)
            given_plot = gr.Plot(label=teacher.LABEL, elem_id="given-probs")
        with gr.Row(elem_id="plots-row"):
            with gr.Column(scale=0, min_width=250, elem_id="choices"):
                kind = gr.Radio(attention.KIND_CHOICES, value=share.DEFAULT_KIND, label="Kind of attention",
                                elem_id="kind")
                shift = gr.Markdown(context.shift_note(share.DEFAULT_KIND), elem_id="shift-note")  # §3.1's shift
                layer = gr.Slider(1, cfg.n_layers, value=1, step=1, label="Layer", elem_id="layer")
                head = gr.Radio(attention.head_choices(cfg.n_heads), value=attention.MEAN, label="Head", elem_id="head")
                colour = gr.Radio(projector.COLOUR_CHOICES, value=projector.COLOUR_MODES[0], label="Close-up colours",
                                  elem_id="colour")
                measure = gr.Radio(measures.CHOICES, value=measures.WEIGHTS, label="Colour shows", elem_id="measure")
                focus = focus_controls()
            overview = gr.Plot(label="All layers (rows of tiles) × heads (columns) — click a tile",
                               elem_id=PAGE["overview"], min_width=360)
            detail = gr.Plot(label="Close-up: rows attend to columns · focused: ← → ↑ ↓ · click a row: inside the head",
                             elem_id=PAGE["detail"], min_width=360)
        with gr.Row():
            with gr.Column(min_width=300):
                lines_head = gr.Radio(decoding.lines_head_choices(cfg.n_heads), value=0, elem_id="lines-head",
                                      label="Alignment view: a line per pair, opacity = weight; hover or click a "
                                      "token for its lines only. Heads:")
                lines = gr.Plot(show_label=False, elem_id=PAGE["lines"])  # titled figure: no badge, no 100 px
        tile_click = gr.Textbox(visible="hidden", elem_id=PAGE["tileClick"])
        row_click = gr.Textbox(visible="hidden", elem_id=PAGE["rowClick"])  # "Inside a head" listens (inside_head_tab)
        measured = gr.State(measures.WEIGHTS)  # weights or contributions (issue #13); the API sends none: weights
        export_btn, export_out = export_section()
        how_to_read("attention")
    copy_btn.click(None, js="() => window.attnCopyLink()")  # the page script: the URL to the clipboard

    def visualise(text: str, target_text: str, kind_: str, layer_, head_, present_=False, colour_="fixed",
                  first=1, last=None, hide_special=False):
        """Translate (or force ``target_text``), then draw the overview and the detail (``first`` … ``last``: the
        tokens it shows, ``hide_special``: without <s> and </s>, rows renormalised). Runs the model once."""
        kind_, layer_, head_ = attention.check_view(cfg, kind_, layer_, head_)
        focus_ = (first, last, hide_special)
        closeup.check_focus(*focus_)
        # The state keeps only the key (session); the maps stay in runs.cache, shared and bounded in bytes.
        session, result = runs.session(inputs.check_text(text), inputs.check_text(target_text, "given translation"))
        for warning in result.warnings:
            gr.Warning(warning)
        status = attention.status_text(result, runs.translator.device_label)
        return (result.translation, status,
                *attention.views(cfg, result, kind_, layer_, head_, present_, colour_, *focus_), session)

    def tile_clicked(message: str):
        picked = attention.tile_from_click(cfg, message)
        return picked if picked else (gr.skip(), gr.skip())

    view_inputs = [page.result, kind, layer, head, present, colour, measured, *focus]  # closeup's arguments
    lines_inputs = [page.result, kind, layer, lines_head]
    shown = [translation, status, overview, detail, page.result]  # what visualise returns

    def contributions_after_run(*choices):  # /visualise draws the weights; contributions follow, if chosen
        if measures.check_measure(choices[6]) == measures.WEIGHTS:  # choices: view_inputs
            return gr.skip(), gr.skip()
        return closeup.views(cfg, runs.contributions, *choices)

    def given_view(result):  # the model's own translation in its box; a given one's token probabilities
        out = teacher.given_view(result, runs.trained, runs.token_probs)
        return (gr.skip(),) * 3 if out is None else (out.translation, gr.Column(visible=out.shown), out.plot)

    def then_lines(event):  # the alignment view follows every run, and so does what is shown beside the maps
        event.success(listener(given_view), page.result, [translation, given, given_plot], api_visibility="private")
        event.success(listener(contributions_after_run), view_inputs, [overview, detail], api_visibility="private")
        return event.success(listener(decoding.alignment_plot), lines_inputs, lines, api_visibility="private")

    then_lines(page_and_api([run_btn.click, source.submit, target.submit], visualise,
                            inputs=[source, target, kind, layer, head, present, colour, *focus], outputs=shown,
                            notice=notice, api_name="visualise", preprocess=False))
    kind.change(context.shift_note, kind, shift, queue=False, api_visibility="private")
    # Typed but not yet run: the figures still show the last run, and say so (in the browser, no round trip).
    gr.on([source.input, target.input], None, None, notice, js=f"() => {json.dumps(context.EDITED)}")
    example.input(lambda: "", None, notice, queue=False, api_visibility="private")  # an example runs: not stale
    gr.on([kind.change, present.change], listener(closeup.views, cfg, runs.contributions), view_inputs,
          [overview, detail], api_name="render_views", preprocess=False)
    gr.on([layer.change, head.change, colour.change, *(c.change for c in focus)],
          listener(closeup.detail_plot, cfg, runs.contributions), view_inputs, detail, api_name="render_detail",
          preprocess=False)
    measure.change(listener(closeup.toggled, cfg, runs.contributions), [*view_inputs[:6], measure, *focus],
                   [overview, detail, measured], api_visibility="private", preprocess=False)
    # .change, not .input: Gradio 6 fires .input only on a keypress, never for a value set by the page script.
    tile_click.change(tile_clicked, tile_click, [layer, head], api_visibility="private")
    gr.on([kind.change, layer.change, lines_head.change], listener(decoding.alignment_plot), lines_inputs, lines,
          api_visibility="private")
    # Exports go inside Gradio's cache (served without a copy of its own), at most MAX_EXPORTS / MAX_BYTES.
    exports = ExportFolder(page.demo.GRADIO_CACHE)
    export_btn.click(listener(attention.export_files, exports), page.result, export_out, api_name="export")
    view = AttentionView(source, target, kind, layer, head, present, colour, row_click)
    classroom_events(page, view, visualise, shown, then_lines, example=example, guide=guide, focus=focus,
                     runs=[run_btn.click, source.submit, target.submit])
    return view


def classroom_events(page: Page, view: AttentionView, visualise, shown: list, then, *, example: gr.Dropdown,
                     guide: gr.Markdown, focus: list, runs: list) -> None:
    """Issue #19: a link opens its view (``viz.views.share``), an example opens its view with its caption
    (``viz.views.examples``); both run ``visualise`` in the same event, so no figure shows an older sentence.
    ``focus``: the close-up's other choices, passed on to ``visualise`` as they are."""
    cfg, controls = page.runs.cfg, [view.source, view.target, view.kind, view.layer, view.head, view.present,
                                    view.colour]

    def show(v: share.View, notes: list[str], *focus_) -> tuple:
        result = page.runs.attention(v.text, v.target)  # cached: visualise below reuses it
        layer, head = share.complete(v, result.maps(v.kind))
        picked = examples.find(v.text, v.kind, layer, head) if not v.target else None
        lines = ([" ".join(notes)] if notes else []) + ([picked.caption] if picked else [])  # notices, caption
        note = gr.Markdown(examples.markdown(lines), visible=bool(lines))
        return (v.text, v.target, v.kind, layer, head, v.present, v.colour, note,
                *visualise(v.text, v.target, v.kind, layer, head, v.present, v.colour, *focus_))

    def open_link(request: gr.Request):
        """The view the page's URL asks for; anything unusable in it falls back, with a notice."""
        tabs = [tab.id for tab in page.tabs.children if isinstance(tab, gr.Tab)]
        v, notes = share.parse(dict(request.query_params), cfg, tabs, attention.DEFAULT_SOURCE)
        try:
            shown_ = show(v, notes)
        except ValueError:  # a sentence the model refuses: the default one, said so
            notes = [*notes, "The link's sentence could not be shown; this is the default one."]
            shown_ = show(share.View(attention.DEFAULT_SOURCE, kind=v.kind, tab=v.tab, present=v.present,
                                     colour=v.colour), notes)
        if notes:
            gr.Warning(" ".join(notes))
        return *shown_, gr.Tabs(selected=v.tab)

    def pick_example(index, present_, colour_, *focus_):
        picked = examples.example_at(index)
        if picked is None:
            return (gr.skip(),) * (len(controls) + 1 + len(shown))
        return show(share.View(picked.sentence, "", picked.kind, picked.layer, picked.head, present=present_ is True,
                               colour=projector.check_colour(colour_)), [], *focus_)

    then(page.demo.load(listener(open_link), None, [*controls, guide, *shown, page.tabs], api_visibility="private"))
    then(example.input(listener(pick_example), [example, view.present, view.colour, *focus], [*controls, guide, *shown],
                       api_visibility="private", preprocess=False))
    # the user's own sentence: the caption goes, and the menu can open the same example again
    gr.on(runs, lambda: (gr.Markdown(visible=False), examples.PROMPT), None, [guide, example], queue=False,
          api_visibility="private")


def how_to_read(tab_id: str) -> None:
    """The tab's folded "How to read this" (``viz.views.reading``)."""
    with gr.Accordion(reading.TITLE, open=False, elem_classes="how-to-read"):
        gr.Markdown(reading.HOW_TO_READ[tab_id])


def focus_controls() -> tuple[gr.Slider, gr.Slider, gr.Checkbox]:
    """The close-up's focus for long sentences (``viz.views.focus``): a token range, and <s>/</s> hidden."""
    with gr.Accordion("Long sentence? Focus the close-up", open=False, elem_id="focus"):
        first = gr.Slider(1, inputs.MAX_TOKENS, value=1, step=1, label="From token", elem_id="focus-first")
        last = gr.Slider(1, inputs.MAX_TOKENS, value=inputs.MAX_TOKENS, step=1, label="To token", elem_id="focus-last")
        hide = gr.Checkbox(False, label="Hide <s> and </s> (rows renormalised)", elem_id="hide-special")
    return first, last, hide


def export_section() -> tuple[gr.Button, gr.File]:
    with gr.Accordion("Export", open=False):
        gr.Markdown("The attention maps as npz or JSON (same content as `python -m model.translate`), "
                    "and the figures as PNG or SVG.")
        export_btn = gr.Button("Prepare npz + JSON", elem_id="export")
        export_out = gr.File(label="Downloads", file_count="multiple", elem_id="export-files")
        with gr.Row():
            for plot_id, name in (("overview", "Overview"), ("detail", "Detail"), (PAGE["lines"], "Alignment")):
                for fmt in ("png", "svg"):  # client-side, by the page script (no server round trip)
                    gr.Button(f"{name} as {fmt.upper()}", size="sm").click(
                        None, js=f"() => window.attnDownload('{plot_id}', '{fmt}')")
    return export_btn, export_out


def decoding_tab(page: Page) -> None:
    """The greedy translation one step at a time (viz.views.decode_steps); it follows the Attention tab's sentence.
    Sessions keep only the sentence: its DecodeSteps stay in ``runs.steps``' bounded cache."""
    cfg, runs = page.runs.cfg, page.runs
    with gr.Tab("Decoding, step by step", id="decoding") as tab:
        decoded, followed, revealed = gr.State(""), gr.State(""), gr.State(False)  # the sentence shown, taken over
        with gr.Row():
            source = gr.Textbox(label="English sentence (the Attention tab's, or your own)", scale=4,
                                value=attention.DEFAULT_SOURCE, max_length=inputs.MAX_CHARS, elem_id="decode-source")
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
            layer = gr.Slider(1, cfg.n_layers, value=cfg.n_layers, step=1, label="Layer", elem_id="decode-layer",
                              min_width=240)
            head = gr.Radio(attention.head_choices(cfg.n_heads), value=attention.MEAN, label="Head", scale=2,
                            elem_id="decode-head")
        with gr.Row():
            self_row = gr.Plot(show_label=False, elem_id="decode-self", min_width=320)
            cross_row = gr.Plot(show_label=False, elem_id="decode-cross", min_width=320)
        how_to_read("decoding")
    view = [status, top5, self_row, cross_row]

    def step_view(text: str, step_, layer_, head_, reveal: bool):
        """The view of one step, or no change before the tab has a sentence."""
        if not text:
            return (gr.skip(),) * len(view)
        return decoding.decode_step_view(runs.steps(text), step_, layer_, head_, reveal=reveal)

    def start(text: str, layer_, head_, predict_: bool):
        steps = runs.steps(inputs.check_text(text))  # a ValueError (an empty sentence) becomes a message
        return text, gr.Slider(maximum=steps.n_steps, value=1), False, *step_view(text, 1, layer_, head_, not predict_)

    def follow(result, followed_: str, layer_, head_, predict_: bool):
        text = decoding.sentence_to_follow(result, followed_)
        if text is None:
            return (gr.skip(),) * (5 + len(view))
        return text, text, *start(text, layer_, head_, predict_)

    def show_step(text: str, step_, layer_, head_, predict_: bool):  # a new step starts hidden again
        return False, *step_view(text, step_, layer_, head_, not predict_)

    def toggle_predict(text: str, step_, layer_, head_, predict_: bool):
        reveal_btn_ = gr.Button(interactive=predict_, variant="primary" if predict_ else "secondary")  # the room's cue
        return False, reveal_btn_, *step_view(text, step_, layer_, head_, not predict_)

    def redraw(text: str, step_, layer_, head_, predict_: bool, revealed_: bool):  # a reveal holds
        return step_view(text, step_, layer_, head_, not predict_ or revealed_)

    def reveal(text: str, step_, layer_, head_, _predict: bool):
        return True, *step_view(text, step_, layer_, head_, True)

    choices, private = [decoded, step, layer, head, predict], {"api_visibility": "private"}
    tab.select(listener(follow), [page.result, followed, layer, head, predict],
               [source, followed, decoded, step, revealed, *view], **private)
    gr.on([run_btn.click, source.submit], listener(start), [source, layer, head, predict],
          [decoded, step, revealed, *view], **private)
    step.change(listener(show_step), choices, [revealed, *view], trigger_mode="always_last", **private)
    predict.change(listener(toggle_predict), choices, [revealed, reveal_btn, *view], **private)
    gr.on([layer.change, head.change], listener(redraw), [*choices, revealed], view, **private)
    reveal_btn.click(listener(reveal), choices, [revealed, *view], **private)
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

    variance = inputs.checked(scaling.variance_view, log2_dk=inputs.check_log2_dk, seed=inputs.check_seed)
    saturation = inputs.checked(scaling.saturation_view, log2_dk=inputs.check_log2_dk, n_keys=inputs.check_n_keys,
                                alpha=inputs.check_alpha, seed=inputs.check_seed)
    gr.on([log2_dk.change, seed.change, page.demo.load], listener(variance, device=device),
          [log2_dk, seed], [var_plot, hist_plot, var_text], api_name="scaling_variance", preprocess=False)
    gr.on([log2_dk.change, n_keys.change, alpha.change, seed.change, page.demo.load],
          listener(saturation, device=device), [log2_dk, n_keys, alpha, seed],
          [weights_plot, curves_plot, sat_text], api_name="scaling_saturation", preprocess=False)


def trained_model_section(page: Page, tab: gr.Tab, alpha: gr.Slider) -> None:
    """Section 3 of the "Why" tab: the trained model with its 1/√d_k replaced by the factor ``alpha`` picks."""
    runs, cfg = page.runs, page.runs.cfg
    gr.Markdown(f"### 3 · Inside the trained model (d_k = {cfg.d_k})\nThe same slider replaces the model's "
                f"1/√{cfg.d_k} = {cfg.scale:.3f}: at 0 you see the model as trained, at 1 without scaling.")
    with gr.Row():
        text = gr.Textbox(label="English sentence", value=attention.DEFAULT_SOURCE, scale=3,
                          max_length=inputs.MAX_CHARS)
        kind = gr.Dropdown(attention.KIND_CHOICES, value="encoder_self", label="Kind", scale=2)
        layer = gr.Slider(1, cfg.n_layers, value=1, step=1, label="Layer", scale=2)
        run_btn = gr.Button("Run the model", variant="primary", scale=1, elem_id="live-run")
    live_notice = gr.Markdown(elem_id="live-notice")
    text.input(None, None, live_notice, js=f"() => {json.dumps(context.EDITED_LIVE)}")
    with gr.Row():
        normal = gr.Plot(label="As trained", elem_id="live-normal")
        changed = gr.Plot(label="With the chosen scale", elem_id="live-changed")
    entropy = gr.Plot(label="Mean attention entropy per head", elem_id="live-entropy")
    summary = gr.Markdown(elem_id="live-summary")
    page.alpha, page.to_inside = alpha, gr.Button("Inside one head with this scale factor →", elem_id="to-inside")
    live = inputs.checked(scaling.live_view, text=inputs.check_text, alpha=inputs.check_alpha)
    # Every control that changes what these maps mean redraws them (the slider sits far above: issue #20).
    page_and_api([run_btn.click, text.submit, tab.select, alpha.change, kind.change, layer.change], live, cfg,
                 runs.attention, runs.trained, inputs=[text, alpha, kind, layer],
                 outputs=[normal, changed, entropy, summary], notice=live_notice, api_name="scaling_live",
                 preprocess=False, trigger_mode="always_last")


def inside_head_tab(page: Page) -> None:
    """One head for one query, step by step (viz.views.inside_head), on the Attention tab's sentence and view. A
    click on a row of its close-up opens this tab on that query; the scale factor links with the Why tab."""
    runs, cfg, view, private = page.runs, page.runs.cfg, page.view, {"api_visibility": "private"}
    with gr.Tab("Inside a head", id="inside") as tab:
        gr.Markdown(inside_view.INTRO)
        how_to_read("inside")
        with gr.Row():
            kind = gr.Dropdown(attention.KIND_CHOICES, value="encoder_self", label="Kind of attention", scale=3,
                               elem_id="in-kind")
            layer = gr.Slider(1, cfg.n_layers, value=1, step=1, label="Layer", scale=2, elem_id="in-layer")
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
    # in the order of inside_view.InsideHeadView
    shown = [steps, footnote4_text, scores, figure2, projections, head_output, footnote4, contributions]
    draw = {"fn": listener(inside_view.present, runs.inside_head, cfg), "inputs": [page.result, kind, layer, head,
            query, factor], "outputs": shown, "preprocess": False, **private}

    def follow(result, kind_, layer_, head_, query_):  # the query chips of this kind; the query kept if it can be
        *picked, chips, query_ = inside_view.follow(cfg, result, kind_, layer_, head_, query_)
        return *picked, gr.Radio(chips, value=query_)

    def row_clicked(message: str, result, kind_, layer_, head_):
        row = inside_view.row_from_click(message)
        return (*follow(result, kind_, layer_, head_, row), gr.Tabs(selected="inside")) if row is not None else \
            (gr.skip(),) * 5

    taken = [view.kind, view.layer, view.head]  # the Attention tab's view
    tab.select(listener(follow), [page.result, *taken, query], [kind, layer, head, query], **private).then(**draw)
    # the tab opened by the page draws (tab.select) with the query set here
    view.row_click.change(listener(row_clicked), [view.row_click, page.result, *taken],
                          [kind, layer, head, query, page.tabs], **private)
    kind.input(listener(follow), [page.result, kind, layer, head, query], [kind, layer, head, query],
               **private).then(**draw)
    gr.on([query.input, layer.release, head.input, factor.submit], **draw)
    take.click(listener(inside_view.factor_from_alpha, cfg.d_k), page.alpha, factor, **private).then(**draw)
    to_why.click(lambda: gr.Tabs(selected="scaling"), None, page.tabs, **private)
    page.to_inside.click(listener(inside_view.factor_from_alpha, cfg.d_k), page.alpha, factor, **private).then(
        lambda: gr.Tabs(selected="inside"), None, page.tabs, **private)


def head_analysis_tab(page: Page) -> None:
    """Issue #15 (viz.views.head_analysis): every head's statistics and role, for the session's sentence or the
    shipped sample (a click on a cell opens that head on the Attention tab); heads switched off for one request,
    with the sample's BLEU/chrF before and after; the shipped ranking; raw attention beside its rollout. Also the
    endpoints (``head_analysis_api``). Ablations run one at a time (``ABLATIONS``), beside everything else."""
    runs, cfg, view, private = page.runs, page.runs.cfg, page.view, {"api_visibility": "private"}
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
        cell = gr.Textbox(visible="hidden", elem_id=PAGE["cellClick"])
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
        layer = gr.Slider(1, cfg.n_layers, value=cfg.n_layers, step=1, label="Layer", elem_id="rollout-layer")
        rollout = []
        for pair in (("enc-raw", "enc"), ("cross-raw", "cross")):  # raw | rollout, the encoder then cross-attention
            with gr.Row():
                rollout += [gr.Plot(elem_id=f"rollout-{name}", show_label=False, min_width=300) for name in pair]
    stats = listener(heads_view.stats_view, runs.sample_stats)
    gr.on([tab.select, scope.change, stat.change], stats, [page.result, scope, stat], [grid, rules], **private)
    gr.on([tab.select, layer.change], listener(heads_view.rollout_plots), [page.result, layer], rollout, **private)

    def cell_clicked(message: str):  # "kind,layer,head,time" from the page script: that head, on the Attention tab
        picked = heads_view.cell_from_click(cfg.n_layers, cfg.n_heads, message)
        return (*picked, gr.Tabs(selected="attention")) if picked else (gr.skip(),) * 4

    def run_ablation(result, heads_, kind_, progress=gr.Progress()):  # noqa: B008 (Gradio's progress bar)
        return heads_view.ablation_for(runs.ablate, result, heads_, kind_, progress)

    cell.change(cell_clicked, cell, [view.kind, view.layer, view.head, page.tabs], **private)
    top.click(lambda: heads_view.top_heads(ranking), None, heads, **private)
    go.click(listener(run_ablation), [page.result, heads, kind], [ablation, ablated, last], show_progress_on=ablated,
             **private, **ABLATIONS)
    kind.change(listener(heads_view.ablation_again, runs.ablate), [last, kind], [ablation, ablated], **private,
                **ABLATIONS)


def head_analysis_api(runs: Runs) -> None:
    """/head_stats and /ablate (issue #15), for scripts; an ablation waits for the one running (``ABLATIONS``)."""

    def head_stats(text: str) -> dict:
        """Per kind of attention, a layers × heads array per statistic (entropy, spread, confidence, eos,
        punctuation, previous, self, next, offset, sharpness; null where one does not apply) and the heads' role
        labels with their thresholds: for this sentence ("sentence") and for the shipped sample ("sample")."""
        return head_stats_payload(runs.attention(inputs.check_text(text)), runs.sample_stats())

    def ablate(text: str, heads: list[str] | None = None) -> dict:
        """The sentence (greedy) with ``heads`` ("kind:layer:head", 1-based, e.g. "cross:4:2") switched off for
        this request only: its translation before and after, its maps (as /attention's), and the shipped
        sample's cased sacreBLEU BLEU and chrF with every head ("before") and without these ("after")."""
        return runs.ablate(inputs.check_text(text), heads).to_json_dict()

    gr.api(listener(head_stats), api_name="head_stats")
    gr.api(listener(ablate), api_name="ablate", **ABLATIONS)


def architecture_tab(page: Page) -> None:
    cfg, view = page.runs.cfg, page.view
    with gr.Tab("Architecture", id="architecture") as tab:
        gr.Markdown("Figure 1 and Figure 2 of the paper, drawn from the running model's configuration. Hover a "
                    "block for its size; click an attention block to see its heatmaps.")
        how_to_read("architecture")
        figure1 = gr.HTML(figure1_svg(cfg), js_on_load=None, elem_id=PAGE["figure1"])
        block_click = gr.Textbox(visible="hidden", elem_id=PAGE["blockClick"])
        with gr.Row():
            kind = gr.Dropdown(attention.KIND_CHOICES, value="cross", label="Attention", scale=2)
            layer = gr.Slider(1, cfg.n_layers, value=3, step=1, label="Layer", scale=2)
            go = gr.Button("Show these heatmaps", scale=1, elem_id="arch-go")
        gr.HTML(figure2_svg(cfg), js_on_load=None, elem_id="figure2")

    def block_clicked(message: str):
        picked = architecture.kind_from_click(message)
        return (picked, gr.Tabs(selected="attention")) if picked else (gr.skip(), gr.skip())

    def show(kind_: str, layer_):
        kind_, layer_, _ = attention.check_view(cfg, kind_, layer_)
        return kind_, layer_, gr.Tabs(selected="attention")

    # Figure 1 is drawn with the session's shapes when the tab opens: ~20 KB that need not travel with every run.
    tab.select(listener(architecture.figure1_for, cfg), page.result, figure1, api_name="figure1",
               api_visibility="undocumented")
    block_click.change(block_clicked, block_click, [view.kind, page.tabs], api_visibility="private")
    go.click(listener(show), [kind, layer], [view.kind, view.layer, page.tabs], api_visibility="private",
             preprocess=False)


def model_card_tab(page: Page) -> None:
    with gr.Tab("Model card", id="model-card"):
        how_to_read("model-card")
        gr.Markdown(model_card(page.runs.translator.folder, page.runs.translator.device_label))


def api_endpoints(runs: Runs) -> None:
    """Endpoints without a UI, for scripts: /translate and /attention."""

    def translate(text: str, beam: float = 4) -> str:
        """Plain translation (beam search, §6.1)."""
        return runs.translate(inputs.check_text(text), inputs.check_beam(beam))

    def attention_maps(text: str, target: str = "", scale: float | None = None) -> dict:
        """Every attention map as JSON: the same content as `python -m model.translate --json`."""
        text, target = inputs.check_text(text), inputs.check_text(target, "given translation")
        return runs.attention(text, target, inputs.check_scale(scale)).to_json_dict()

    def decode_steps(text: str) -> dict:
        """Greedy decoding step by step: {"steps": [...]}, per step the prefix, the 5 most likely next tokens and
        their probabilities, the chosen token, and the step's cross (layers × heads × source) and decoder_self
        (layers × heads × step+1) rows, the rows of /attention's maps (with the sentence's tokens beside)."""
        return runs.steps(inputs.check_text(text)).to_json_dict()

    gr.api(listener(translate), api_name="translate")
    gr.api(listener(attention_maps), api_name="attention")
    def inside_head(text: str, target: str = "", kind: str = "encoder_self", layer: float = 1, head: float = 1,
                    query: float = 0, factor: float | None = None) -> dict:
        """One head (layer, head from 1) for one query (0-based, on the query side), step by step: q, k, v, the raw
        scores, the scale (factor, null = the model's 1/√d_k), masked, weights, output, head_outputs, the sub-layer
        and layer outputs, contributions; the sentence is /attention's (the same tokens, the same weights)."""
        text, target = inputs.check_text(text), inputs.check_text(target, "given translation")
        return inside_view.inside_json(runs.inside_head, runs.attention, runs.cfg, text, target, kind, layer, head,
                                       query, factor)

    gr.api(listener(decode_steps), api_name="decode_steps")
    gr.api(listener(inside_head), api_name="inside_head")


# --------------------------------------------------------------------------------------------- the whole app
def create_app(translator: Translator) -> gr.Blocks:
    """The app for one loaded model: every tab, listener and endpoint. Nothing is served yet (see ``launch``)."""
    runs = Runs(translator, gpu=ZEROGPU)
    cfg = translator.cfg
    # delete_cache: Gradio removes the files it holds for this app (exports, anything uploaded) after an hour.
    with gr.Blocks(title="Attention Is All You Need — attention visualiser", analytics_enabled=False,
                   delete_cache=(CACHE_AGE_S, CACHE_AGE_S)) as demo:
        result = gr.State(None)
        gr.Markdown(
            "# Attention Is All You Need — see how a Transformer attends\n"
            f"A {cfg.n_layers}-layer, {cfg.n_heads}-head Transformer (d_model = {cfg.d_model}) written from scratch "
            "and trained on Multi30k English→German. Type a sentence and look at every head of every layer.",
            elem_id="header",
        )
        with gr.Tabs() as tabs:
            page = Page(runs, demo, tabs, result)
            page.view = attention_tab(page)
            decoding_tab(page)
            scaling_tab(page)
            inside_head_tab(page)
            head_analysis_tab(page)
            architecture_tab(page)
            model_card_tab(page)
        api_endpoints(runs)
        head_analysis_api(runs)
    return demo


def page_script() -> str:
    """assets/web/app.js, called with ``PAGE`` (Gradio runs the expression when the page has loaded)."""
    return f"({(WEB / 'app.js').read_text(encoding='utf-8')})({json.dumps(PAGE)})"


def launch(demo: gr.Blocks, **kwargs):
    """Serve ``demo`` as the Space does (``kwargs`` go to ``demo.launch``). A classroom of 30 waits its turn
    instead of getting errors: up to ``ATTN_MAX_BATCH`` requests at a time, whose model runs are decoded as one
    batch (``model.batching``; with ``ATTN_BATCH=0``, two at a time for two cores), and api_open=False sends even
    raw HTTP calls through the queue. Sessions are small (``gradio_sessions``); ``SESSION_CAPACITY`` bounds the count.
    Binds 127.0.0.1 unless GRADIO_SERVER_NAME says otherwise; never opens a share link.
    The app takes no uploads: Gradio's upload route refuses any file that is not empty (``max_file_size``)."""
    batching = BatchSettings.from_env()
    workers = batching.max_batch_size if batching.enabled and ZEROGPU is None else 2
    demo.queue(default_concurrency_limit=workers, max_size=256, api_open=False)
    lean_sessions()  # Gradio's per-session copy of every component and value: not kept (gradio_sessions.py)
    fixed_mmap_threshold()  # freed maps go back to the OS (model/cache.py)
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
    launch(create_app(translator))
    return 0


def __getattr__(name: str):
    """``app.demo``, Gradio's convention (``gradio app.py``): built with the served model on first use only."""
    if name == "demo":
        globals()["demo"] = demo = create_app(load_translator())
        return demo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
