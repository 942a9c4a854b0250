"""The "Inside a head" tab: one head for one query, step by step (``viz.views.inside_head``)."""

from __future__ import annotations

import functools

import gradio as gr

from viz.ui.wiring import (
    PRIVATE,
    WHILE_MOVING,
    AttentionView,
    Page,
    click_box,
    hidden_box,
    how_to_read,
    in_browser,
    layer_slider,
    listener,
    on_link,
    unless_moving,
)
from viz.views import inside_head as inside_view
from viz.views import inside_matrices as matrix_view
from viz.views.attention import maps
from viz.views.page import PAGE


def build_inside_head(page: Page, view: AttentionView, why_factor: gr.Slider, to_inside: gr.Button) -> None:
    """One head for one query, step by step (viz.views.inside_head), on the sentence and view of the Attention tab
    (``view``): a click on a row of its close-up opens this tab on that query. The Why tab's scale factor ``why_factor``
    comes in by this tab's button, or by the Why tab's ``to_inside``, which opens this tab with it."""
    runs, cfg = page.runs, page.runs.cfg
    # On a wide screen the head, the query and the view sit right of panel (a), above the steps' table (app.css): the
    # panel starts under the tab's introduction, whole on a 1280×720 first screen; stacked on a phone
    with gr.Tab("Inside a head", id="inside", elem_id="inside-tab") as tab:
        gr.Markdown(inside_view.INTRO)
        how_to_read("inside")
        # The head comes from the Attention tab (a row of its close-up): its choices folded under a button that names
        # it (PAGE["folds"]: shown by the page, kept in it for the link), so that the query and the figures are a few
        # Tab presses from the tab's start
        which = gr.Button(inside_view.which_label("encoder_self", 1, 1, ""), size="sm", elem_id="in-which")
        with gr.Row(elem_id="in-choices", elem_classes="attn-folded"):
            kind = gr.Dropdown(maps.KIND_CHOICES, value="encoder_self", label="Kind of attention", scale=3,
                               elem_id="in-kind")
            layer = layer_slider(cfg, scale=2, elem_id="in-layer")
            head = gr.Radio(inside_view.head_choices(cfg.n_heads), value=1, label="Head", scale=4,
                            elem_id="in-head")
            factor = gr.Textbox("", label="Scale (empty = 1/√d_k, 1 = none; Enter)", scale=2, elem_id="in-factor")
            with gr.Column(scale=1, min_width=160):
                take = gr.Button("Use the Why tab's scale factor", size="sm", elem_id="in-take-factor")
                to_why = gr.Button("Why 1/√d_k? →", size="sm", elem_id="in-to-why")
        with gr.Row(equal_height=True, elem_id="in-query-row"):  # the query and the view side by side
            query = gr.Radio([], label="Query token", elem_id="in-query", scale=3)
            mode = gr.Radio(matrix_view.VIEWS, value=matrix_view.QUERY, label="View", elem_id="in-view", scale=1,
                            min_width=300)
        note = gr.Markdown(elem_id="in-note")  # which head a click on a row of the mean's close-up opened

        def plot(name: str) -> gr.Plot:
            return gr.Plot(label=inside_view.PLOT_LABELS[name], elem_id=f"in-{name}")

        with gr.Column(elem_id="in-one-query") as one_query:  # panels in reading order (a) → (d), footnote 4 by (b)
            with gr.Row(elem_id="in-first-row"):
                projections, steps = plot("projections"), gr.Markdown(elem_id="in-steps")
            with gr.Row(elem_id="in-scores-row"):
                scores = plot("scores")
                with gr.Column():
                    footnote4_text, footnote4 = gr.Markdown(elem_id="in-footnote4-text"), plot("footnote4")
            with gr.Row():
                head_output, contributions = plot("head_output"), plot("contributions")
            figure2 = plot("figure2")  # wide: Figure 2 reads bottom to top with its shapes beside the arrows
        with gr.Column(visible=False, elem_id="in-matrices") as whole:  # Equation (1) as whole matrices
            def matrix_plot(name: str, **kwargs) -> gr.Plot:
                return gr.Plot(label=matrix_view.PLOT_LABELS[name], elem_id=f"in-m-{name}", **kwargs)

            matrix_head = gr.Markdown(elem_id="in-matrix-head")
            m_projections = matrix_plot("projections")
            with gr.Row(elem_id="in-m-stages"):
                stages = [matrix_plot(stage, min_width=270) for stage in ("scores", "scaled", "masked", "weights")]
            m_output = matrix_plot("output")
            matrix_steps = gr.Markdown(elem_id="in-matrix-steps")
        matrix_row = click_box(PAGE["matrixRowClick"])  # a click on a row of a whole-matrix figure
        frames = hidden_box("in-frames")  # a new query's figures (show_query)
        held = hidden_box("in-held")  # every query's figures of the head shown
        seen = gr.State(None)  # the Attention tab's view when this tab last opened (viz.views.inside_matrices)
        brought = gr.State(None)  # the view a link drew with its answer (inside_matrices.drawn_key)
    shown = [steps, footnote4_text, scores, figure2, projections, head_output, footnote4, contributions,  # their order
             matrix_head, m_projections, *stages, m_output, matrix_steps, one_query, whole]
    draw = {"fn": listener(matrix_view.show, runs.inside_head, runs.inside_matrices, cfg),
            "inputs": [page.result, mode, kind, layer, head, query, factor], "outputs": shown, "preprocess": False,
            **PRIVATE}
    # once a view is drawn, every query's panels of its head (held_queries): a new query is then drawn by the page alone
    hold = {"fn": listener(matrix_view.held_queries, runs.inside_head, cfg), "inputs": draw["inputs"],
            "outputs": held, "preprocess": False, "show_progress": "hidden", **PRIVATE}
    taken, chosen = [view.kind, view.layer, view.head], [kind, layer, head, query]  # the Attention tab's; this tab's
    gr.on([kind.change, layer.change, head.change, factor.change], inside_view.which_label,
          [kind, layer, head, factor], which, queue=False, show_progress="hidden", **PRIVATE)
    tab.select(None, None, None, js=in_browser("insideHold", ""))  # nothing held (the sentence may have changed)
    # (a link's view, drawn with the link's answer, is not drawn again: a lecture's move brings it)
    # (nor while a lecture's move is on its way: the move brings its view, ``unless_moving``)
    show_opened = functools.partial(matrix_view.show_opened, runs.inside_head, runs.inside_matrices, cfg)
    draw_opened = {**draw, "fn": listener(unless_moving(show_opened, len(shown) + 1)),
                   "inputs": [page.lecture_go, brought, *draw["inputs"]], "outputs": [*shown, brought],
                   "js": WHILE_MOVING}
    hold_opened = {**hold, "fn": listener(matrix_view.held_opened, runs.inside_head, cfg),
                   "inputs": [brought, *draw["inputs"]]}
    # (a chain, not one event: the draw reads the choices the opening set, and those a row clicked on the close-up
    # set as it opened the tab, which land while the opening is on its way)
    opening = functools.partial(matrix_view.opening, cfg, runs.footnote4_pick)
    tab.select(listener(unless_moving(opening, len(chosen) + 2)), [page.lecture_go, page.result, seen, *taken],
               [*chosen, seen, note], js=WHILE_MOVING, **PRIVATE).then(**draw_opened).success(**hold_opened)
    # the tab opened by the page draws (tab.select) with the query set here
    clicked = view.row_click.change(listener(matrix_view.close_up_row, cfg), [view.row_click, page.result, *taken],
                                    [*chosen, page.tabs, seen], **PRIVATE)
    clicked.then(listener(inside_view.mean_note, cfg.n_heads), [view.layer, view.head, head], note, **PRIVATE)
    # the note goes with the tab's own choices (and with a new view when the tab opens: ``opening``)
    # (a menu's ``select``: Gradio 6.31.0's dropdown also sends ``input`` each time it loses the focus)
    gr.on([kind.select, layer.release, head.input, query.input], None, None, note, js=in_browser("show", ""))
    kind.select(listener(inside_view.take_over, cfg), [page.result, *chosen], chosen, **PRIVATE).then(
        **draw).success(**hold)
    gr.on([layer.release, head.input, factor.submit, mode.input], **draw).success(**hold)
    # a new query: drawn first from the panels the page holds, if it holds them for the view shown (the js, before the
    # call is sent); the call's texts, and its figures drawn in those shown, only what changed (assets/web/inside.js)
    query.input(listener(matrix_view.show_query, runs.inside_head, runs.inside_matrices, cfg), draw["inputs"],
                [*shown, frames], js=in_browser("insideHeld"), preprocess=False, show_progress="hidden", **PRIVATE)
    held.change(None, held, None, js=in_browser("insideHold"))
    frames.change(None, frames, None, js=in_browser("insideQuery"))
    matrix_row.change(listener(matrix_view.row_opened), [page.result, kind, matrix_row], [mode, query],
                      **PRIVATE).then(**draw).success(**hold)
    take.click(listener(inside_view.factor_from_slider, cfg.d_k), why_factor, factor, **PRIVATE).then(
        **draw).success(**hold)
    to_why.click(lambda: gr.Tabs(selected="scaling"), None, page.tabs, show_progress_on=to_why, **PRIVATE)
    to_inside.click(listener(inside_view.factor_from_slider, cfg.d_k), why_factor, factor, **PRIVATE).then(
        lambda: gr.Tabs(selected="inside"), None, page.tabs, show_progress_on=factor, **PRIVATE)
    on_link(page, "inside", matrix_view.open_link_drawn, runs.inside_head, runs.inside_matrices, cfg,
            inputs=[page.result, *taken, mode, factor, brought, *chosen],
            outputs=[*chosen, seen, mode, brought, *shown],
            show=[value for _, value in matrix_view.VIEWS])
