"""The Architecture tab: the paper's Figures 1 and 2 drawn with this model's shapes; a block of Figure 1, or a
kind and layer chosen here, opens its heatmaps on the Attention tab."""

from __future__ import annotations

import gradio as gr

from viz.architecture import figure1_svg, figure2_svg
from viz.ui.wiring import PRIVATE, AttentionView, Page, click_box, how_to_read, layer_slider, listener, on_link
from viz.views import architecture
from viz.views.attention import maps
from viz.views.page import PAGE


def build_architecture(page: Page, view: AttentionView) -> None:
    """The tab; a block clicked, or "Show these heatmaps", sets the Attention tab's (``view``) kind and layer."""
    cfg = page.runs.cfg
    with gr.Tab("Architecture", id="architecture") as tab:
        # Figure 1 first, whole on a wide screen's first screen at a legible size (assets/web/figure1.js: ~1.33× its
        # size at 1280×720), what it is and how to read it under it
        # js_on_load=None: by default Gradio 6.31.0 gives a gr.HTML a script that makes each click on it a click event;
        # a click on Figure 1 is the page script's (assets/web/figure1.js: block_click).
        figure1 = gr.HTML(figure1_svg(cfg), js_on_load=None, elem_id=PAGE["figure1"])
        gr.Markdown(architecture.INTRO)
        how_to_read("architecture")
        block_click = click_box(PAGE["blockClick"])
        with gr.Row():
            kind = gr.Dropdown(maps.KIND_CHOICES, value="cross", label="Attention", scale=2, elem_id="arch-kind")
            layer = layer_slider(cfg, 3, scale=2, elem_id="arch-layer")
            go = gr.Button("Show these heatmaps", scale=1, elem_id="arch-go")
        gr.HTML(figure2_svg(cfg), js_on_load=None, elem_id="figure2")
    # Figure 1 is drawn with the session's shapes when the tab opens: ~20 KB that need not travel with every run.
    tab.select(listener(architecture.figure1_for, cfg), page.result, figure1, api_name="figure1",
               api_visibility="undocumented")
    view.redraw(block_click.change(listener(architecture.open_block), block_click, [view.kind, page.tabs], **PRIVATE))
    view.redraw(go.click(listener(architecture.show, cfg), [kind, layer], [view.kind, view.layer, page.tabs],
                         preprocess=False, **PRIVATE))
    on_link(page, "architecture", architecture.open_link, inputs=[view.kind, view.layer], outputs=[kind, layer])
