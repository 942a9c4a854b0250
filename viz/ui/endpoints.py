"""The endpoints without a page, for scripts (``viz.views.api``); the page's own endpoints are wired by its tabs."""

from __future__ import annotations

import gradio as gr

from model.serving.runs import Runs
from viz.ui.wiring import ABLATIONS, listener
from viz.views import api


def build_endpoints(runs: Runs) -> None:
    """/translate, /attention, /decode_steps, /inside_head, /head_stats, /ablate (an ablation waits for the one
    running), and the Lab's /lab_runs, /lab_attention, /timelapse."""
    gr.api(listener(api.translate, runs), api_name="translate")
    gr.api(listener(api.attention_maps, runs), api_name="attention")
    gr.api(listener(api.decode_steps, runs), api_name="decode_steps")
    gr.api(listener(api.inside_head, runs), api_name="inside_head")
    gr.api(listener(api.head_stats, runs), api_name="head_stats")
    gr.api(listener(api.ablate, runs), api_name="ablate", **ABLATIONS)
    gr.api(listener(api.lab_runs, runs), api_name="lab_runs")
    gr.api(listener(api.lab_attention, runs), api_name="lab_attention", concurrency_id="lab_attention")
    gr.api(listener(api.timelapse, runs), api_name="timelapse")
