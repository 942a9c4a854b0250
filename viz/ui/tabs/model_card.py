"""The Model card tab: what the served model is, how it was trained and how well it translates."""

from __future__ import annotations

import gradio as gr

from viz.ui.wiring import Page, how_to_read
from viz.views.model_card import model_card


def build_model_card(page: Page) -> None:
    with gr.Tab("Model card", id="model-card"):
        how_to_read("model-card")
        gr.Markdown(model_card(page.runs.translator.folder, page.runs.translator.device_label),
                    elem_id="model-card-text")
