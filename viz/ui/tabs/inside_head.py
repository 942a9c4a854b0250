"""The "Inside a head" tab: one head for one query, step by step (``viz.views.inside_head``)."""

from __future__ import annotations

import gradio as gr

from viz.ui.wiring import PRIVATE, AttentionView, Page, how_to_read, layer_slider, listener
from viz.views import inside_head as inside_view
from viz.views.attention import maps


def build_inside_head(page: Page, view: AttentionView, alpha: gr.Slider, to_inside: gr.Button) -> None:
    """One head for one query, step by step (viz.views.inside_head), on the sentence and view of the Attention tab
    (``view``): a click on a row of its close-up opens this tab on that query. The Why tab's scale factor ``alpha``
    comes in by this tab's button, or by the Why tab's ``to_inside``, which opens this tab with it."""
    runs, cfg = page.runs, page.runs.cfg
    with gr.Tab("Inside a head", id="inside") as tab:
        gr.Markdown(inside_view.INTRO)
        how_to_read("inside")
        with gr.Row():
            kind = gr.Dropdown(maps.KIND_CHOICES, value="encoder_self", label="Kind of attention", scale=3,
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
    take.click(listener(inside_view.factor_from_alpha, cfg.d_k), alpha, factor, **PRIVATE).then(**draw)
    to_why.click(lambda: gr.Tabs(selected="scaling"), None, page.tabs, show_progress_on=to_why, **PRIVATE)
    to_inside.click(listener(inside_view.factor_from_alpha, cfg.d_k), alpha, factor, **PRIVATE).then(
        lambda: gr.Tabs(selected="inside"), None, page.tabs, show_progress_on=factor, **PRIVATE)
