"""The Attention tab: a run (/visualise) and its views — the overview of every layer × head, the close-up, the
alignment view, exports — and the classroom (a link or an example opens a view). Its components, returned by
``build_attention``, are what the other tabs follow (``AttentionView``)."""

from __future__ import annotations

import gradio as gr

from model.terms import MAX_TOKENS
from viz.ui.wiring import (
    LINES_STALE,
    PRIVATE,
    AttentionView,
    Page,
    click_box,
    how_to_read,
    in_browser,
    layer_slider,
    listener,
    page_and_api,
    sentence_box,
    warn,
)
from viz.views import lecture
from viz.views.attention import (
    alignment,
    classroom,
    closeup,
    context,
    domain,
    examples,
    maps,
    projector,
    share,
    teacher,
)
from viz.views.attention import contributions as measures
from viz.views.exports import ExportFolder
from viz.views.outputs import SKIP
from viz.views.page import PAGE
from viz.vocab import MAX_CHARS, MEAN


def build_attention(page: Page) -> AttentionView:
    """The tab's layout, then its listeners and the classroom's; returns its components."""
    cfg, v = page.runs.cfg, AttentionView()
    with gr.Tab("Attention", id="attention", elem_id="attention-tab"):
        # One screen at 1280×720 (a projector): sentence and translation, actions, then choices | overview | close-up.
        # The Tab order: the sentences, the actions (one stop: PAGE["toolbars"]), the overview, the close-up, then the
        # choices that refine them (drawn left of the figures: app.css), the alignment view.
        with gr.Row(elem_id="sentence-row"):
            v.source = sentence_box("English sentence", lines=1, scale=4, elem_id="source")
            v.target = gr.Textbox(label="Your own German translation (optional)", lines=1, scale=3,
                                  max_length=MAX_CHARS, elem_id="target")
            with gr.Column(scale=4, min_width=200):  # the translation, and beside it how far the sentence is from
                v.translation = gr.Textbox(label="German translation (the model's own)", interactive=False,  # captions
                                           elem_id="translation")
                v.domain = gr.Markdown(visible=False, elem_id="domain-notice")  # viz.views.attention.domain
        with gr.Row(equal_height=True, elem_id="action-row"):
            v.run_btn = gr.Button("Translate and show attention", variant="primary", elem_id="run", scale=0,
                                  min_width=300)
            v.example = gr.Dropdown(examples.CHOICES, value=examples.PROMPT, label="Examples that teach",
                                    show_label=False, container=False, scale=3, elem_id="example",
                                    filterable=False)  # a list: the row's arrow keys move on (stops.js)
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
            v.overview = gr.Plot(label="All layers (rows of tiles) × heads (columns) — click a tile",
                                 elem_id=PAGE["overview"], min_width=360)
            v.detail = gr.Plot(label="Close-up: rows attend to columns · click a row (or Enter on it): inside the "
                               "head", elem_id=PAGE["detail"], min_width=360)
            choices_column(cfg, v, classroom.first_choice(page.runs) or (1, MEAN))
        with gr.Row(), gr.Column(min_width=300):
            v.lines_head = gr.Radio(alignment.lines_head_choices(cfg.n_heads), value=0, elem_id="lines-head",
                                    label="Alignment view: a line per pair, opacity = weight; hover or click a "
                                    "token for its lines only. Heads:")
            v.lines = gr.Plot(show_label=False, elem_id=PAGE["lines"])  # titled figure: no badge, no 100 px
        v.tile_click, v.row_click = click_box(PAGE["tileClick"]), click_box(PAGE["rowClick"])  # row: "Inside a head"
        v.lines_request = click_box(PAGE["linesRequest"])  # the page script: the alignment view is on screen
        page.link = gr.State(None)  # the parsed link (share.View) for the other tabs' parts (wiring.on_link)
        page.lecture_go = click_box("lecture-go")  # the lecture's next stop, its query (assets/web/lecture.js)
        v.drawn = gr.State(None)  # what a lecture's move last drew in the overview and close-up (after_move)
        v.measured = gr.State(measures.WEIGHTS)  # weights or contributions (Inside a head); the API sends none: weights
        export_section(v)
        how_to_read("attention")
    attention_listeners(page, v)
    classroom_listeners(page, v)
    return v


def choices_column(cfg, v: AttentionView, first: tuple[int, int]) -> None:
    """The Attention tab's choices: kind (the decoder's shift beside it), layer, head (``first``: their first
    values), colours, measure, and the close-up's focus for long sentences (``viz.views.attention.focus``: a token
    range; <s> and </s> hidden)."""
    with gr.Column(scale=0, min_width=250, elem_id="choices"):
        v.kind = gr.Radio(maps.KIND_CHOICES, value=share.DEFAULT_KIND, label="Kind of attention", elem_id="kind")
        v.shift = gr.Markdown(context.shift_note(share.DEFAULT_KIND), elem_id="shift-note")  # §3.1's shift
        # buttons=[]: no reset button (Gradio 6.31.0's page shows one where the list is None, its documented default
        # being none): the close-up redraws on the visitor's input, and a reset sends none (attention_listeners).
        v.layer = layer_slider(cfg, value=first[0], buttons=[], elem_id="layer")
        v.head = gr.Radio(maps.head_choices(cfg.n_heads), value=first[1], label="Head", elem_id="head")
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
                        None, js=in_browser("download", plot_id, fmt))


def attention_listeners(page: Page, v: AttentionView) -> None:
    """A run (/visualise), and what follows it; a choice redraws from the session's maps, never running the model
    again (/render_views, /render_detail); exports (/export)."""
    cfg, runs = page.runs.cfg, page.runs
    v.copy_btn.click(None, js=in_browser("copyLink"))  # the page script: the URL to the clipboard
    v.view_inputs = [page.result, v.kind, v.layer, v.head, v.present, v.colour, v.measured, *v.focus]  # closeup's
    v.shown = [v.translation, v.status, v.overview, v.detail, page.result]  # maps.Visualised
    v.run_events = [v.run_btn.click, v.source.submit, v.target.submit]
    # (its progress on the translation and the overview: each target costs the page status work on every later event;
    # on all four texts and figures a new sentence → overview drawn took 156 ms against 135, training beside it:
    # ``python -m bench.side_by_side overview BEFORE AFTER --runs 12``)
    then_lines(page, v, page_and_api(v.run_events, maps.visualise, runs, warn, inputs=[v.source, v.target,
               v.kind, v.layer, v.head, v.present, v.colour, *v.focus], outputs=v.shown, notice=v.notice,
               api_name="visualise", preprocess=False, show_progress_on=[v.translation, v.overview]))
    v.kind.change(context.shift_note, v.kind, v.shift, queue=False, **PRIVATE)
    # Typed but not yet run: the figures still show the last run, and say so (in the browser, no round trip).
    gr.on([v.source.input, v.target.input], None, None, v.notice, js=in_browser("show", context.EDITED))
    v.example.select(lambda: "", None, v.notice, queue=False, **PRIVATE)  # an example runs: not stale
    # A choice the visitor makes redraws (``input``: a click, a drag, a number typed; the layer slider has no reset
    # button, which would send none; the focus is only ever the visitor's, so its ``change``). A run that sets the
    # choices (a link, an example) draws its figures itself: their change draws nothing a second time. A click that
    # sets them (a tile, an arrow key on the close-up, a cell or block of another tab) redraws after it
    # (``v.redraw``).
    views = listener(closeup.views, cfg, runs.contributions)
    detail = listener(closeup.detail_plot, cfg, runs.contributions)
    gr.on([v.kind.input, v.present.input], views, v.view_inputs, [v.overview, v.detail], api_name="render_views",
          preprocess=False)
    gr.on([v.layer.input, v.head.input, v.colour.input, *(c.change for c in v.focus)], detail, v.view_inputs,
          v.detail, api_name="render_detail", preprocess=False)

    def redraw(event, *, overview: bool = True):
        """After ``event`` has set the tab's choices: the overview and close-up drawn again (the close-up only,
        ``overview=False``)."""
        event.success(views if overview else detail, v.view_inputs, [v.overview, v.detail] if overview else v.detail,
                      preprocess=False, **PRIVATE)

    v.redraw = redraw
    v.measure.change(listener(closeup.toggled, cfg, runs.contributions), [*v.view_inputs[:6], v.measure, *v.focus],
                     [v.overview, v.detail, v.measured], preprocess=False, **PRIVATE)
    redraw(v.tile_click.change(listener(maps.open_tile, cfg), v.tile_click, [v.layer, v.head], **PRIVATE),
           overview=False)
    # The alignment view (up to 90 line traces) is drawn when it is on screen, not with every run (LINES_STALE)
    gr.on([v.kind.change, v.layer.change, v.lines_head.change], None, js=LINES_STALE)
    v.lines_request.change(listener(alignment.alignment_plot), [page.result, v.kind, v.layer, v.lines_head], v.lines,
                           **PRIVATE)
    # Exports go inside Gradio's cache (served without a copy of its own), at most MAX_EXPORTS / MAX_BYTES.
    v.export_btn.click(listener(maps.export_files, ExportFolder(page.demo.GRADIO_CACHE)), page.result,
                       v.export_out, api_name="export")


def then_lines(page: Page, v: AttentionView, event) -> None:
    """What follows every run: the model's own translation (a given one's token probabilities beside it) and the
    notice for a sentence far from the captions, the contributions if they are the chosen measure, and the alignment
    view (once it is on screen)."""
    runs = page.runs
    event.success(listener(beside_translation, runs), page.result, [v.translation, v.given, v.given_plot, v.domain],
                  show_progress="hidden", **PRIVATE)
    event.success(listener(closeup.after_run, runs.cfg, runs.contributions), v.view_inputs, [v.overview, v.detail],
                  show_progress="minimal", **PRIVATE)  # the contributions' figures may still be coming
    event.success(None, js=LINES_STALE)


def beside_translation(runs, result) -> tuple:
    """Beside the model's translation after a run: a given translation's token probabilities and the notice for a
    sentence far from the captions (one answer for both: each event costs the page status work on every output)."""
    return (*teacher.given_outputs(runs.trained, runs.token_probs, result),
            domain.domain_notice(runs.domain, runs.calibration, result))


def after_move(page: Page, v: AttentionView) -> tuple[list, list, object]:
    """What ``then_lines`` does after a run, for the lecture's moves in place, in the move's own answer (each event
    costs the page its status work on every figure and text it ever updated, ~30 ms on the 2-core machine, and a
    round trip), and the overview and close-up left as they are where they show the stop's view already (drawing
    both again took ~0.1 s a move). Returns its inputs, its outputs and its function ``follow(shown, received)``:
    ``shown``, the view's values by component id; ``received``, the inputs' values as the page sent them (before the
    move); it returns the outputs' values by id (those of ``shown`` it changes, and the rest)."""
    runs, cfg = page.runs, page.runs.cfg
    drawn = v.drawn  # what the last move drew in the overview and close-up (closeup.drawn_keys)
    now = [page.result, v.kind, v.layer, v.head, v.present, v.colour, v.measured, *v.focus]  # the page's, as sent

    def follow(shown: dict, received: dict) -> dict:
        result = shown[id(page.result)]
        result = result.get() if result is not None else None
        chosen = [shown[id(c)] for c in (v.kind, v.layer, v.head, v.present, v.colour)]
        measured, focus = received[id(v.measured)], [received[id(c)] for c in v.focus]
        beside = zip(map(id, (v.translation, v.given, v.given_plot, v.domain)), beside_translation(runs, result))
        out = {key: value for key, value in beside if value is not SKIP or key not in shown}  # (the view's own kept)
        figures = closeup.after_run(cfg, runs.contributions, result, *chosen, measured, *focus)
        if figures[0] is not SKIP:  # the contributions, as the visitor chose them: drawn
            out.update({id(v.overview): figures[0], id(v.detail): figures[1], id(drawn): None})
            return out
        new = closeup.drawn_keys(cfg, result, *chosen)  # (the view's own focus: the whole sentence)
        before = closeup.drawn_keys(cfg, *(received[id(c)] for c in now)) or {}
        for name, plot in (("overview", v.overview), ("detail", v.detail)):
            if new is not None and new[name] == before.get(name) == (received[id(drawn)] or {}).get(name):
                out[id(plot)] = SKIP  # drawn by the last move, and the page's choices still its
        out[id(drawn)] = new
        return out

    return [*now, drawn], [v.translation, v.given, v.given_plot, v.domain, v.overview, v.detail, drawn], follow


def classroom_listeners(page: Page, v: AttentionView) -> None:
    """The classroom (``viz.views.attention.classroom``): a link opens its view, an example opens its view with its
    caption."""
    controls = [v.source, v.target, v.kind, v.layer, v.head, v.present, v.colour]  # classroom.CONTROLS

    def open_link(request: gr.Request, asked: str = ""):  # the view the page's URL asks for (or ``asked``, a URL's
        # query the page sends: the lecture's moves in place); the tabs after this one take their part
        tabs = [tab.id for tab in page.tabs.children if isinstance(tab, gr.Tab)]
        query = lecture.link_query(lecture.asked_query(asked) if asked else request.query_params)  # a lecture's stop
        *shown, result, tab, view = classroom.open_link(page.runs, warn, tabs, query, page.link_choices, page.linked)
        return *shown, result, tab, lecture.follow_mark(query, view, result, page.runs.cfg)

    outputs = [*controls, v.guide, *v.shown, page.tabs, page.link]
    page.opened = page.demo.load(listener(open_link), None, outputs, **PRIVATE)
    then_lines(page, v, page.opened)
    # the lecture's Back / Next: the page sends the next stop's query (assets/web/lecture.js), opened in place, with
    # what follows a run, the other tabs' parts and the caption in one event (viz.ui.lecture)
    page.open_view = (open_link, outputs, after_move(page, v))
    # (``select``: Gradio 6.31.0's dropdown also sends ``input`` each time it loses the focus, which would run it again)
    then_lines(page, v, v.example.select(listener(classroom.pick_example, page.runs, warn), [v.example,
               v.present, v.colour, *v.focus], [*controls, v.guide, *v.shown], preprocess=False, **PRIVATE))
    # the user's own sentence: the caption goes, and the menu can open the same example again
    gr.on(v.run_events, lambda: (gr.Markdown(visible=False), examples.PROMPT), None, [v.guide, v.example], queue=False,
          show_progress="hidden", **PRIVATE)


