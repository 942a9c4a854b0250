"""Attention Is All You Need — an attention visualiser (Gradio app). ``python app.py`` serves it on
http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT).

This file is the table of contents: ``create_app(translator)`` lists the tabs in the page's order, and passes each
the components of other tabs it links to. A tab's layout and listeners are ``viz/ui/tabs/<tab>.py``; what it shows
comes from its gradio-free presenter in ``viz/views/``, through ``viz.ui.wiring.listener``; where the app works
around Gradio's internals is ``viz/ui/patches.py``; the page's script and style are ``assets/web/``.
Importing this module loads no model and changes no global state (``main()`` does both).

A new tab: a presenter, a ``viz/ui/tabs/<tab>.py`` with its ``build_<tab>(page, …)``, then one line in ``create_app``.
"""

from __future__ import annotations

# ruff: noqa: E402 (the offline settings are made before gradio is imported)
import os

from viz.offline import set_offline_env

set_offline_env()

import sys
from pathlib import Path

import gradio as gr
import torch

from model.cli import USER_ERRORS, fail
from model.network.inference import ASSETS, Translator
from model.serving.batching import BatchSettings
from model.serving.cache import budget_from_env, fixed_mmap_threshold, trim_freed_memory
from model.serving.runs import Runs
from viz.ui.endpoints import build_endpoints
from viz.ui.guards import guarded
from viz.ui.lecture import build_lecture
from viz.ui.limits import fair_queue, raw_json_answers
from viz.ui.logs import bounded_logs
from viz.ui.patches import (
    answer_every_value,
    error_messages,
    latest_choice_wins,
    lean_sessions,
    progress_on_components,
    quiet_queue,
)
from viz.ui.server import limited_server
from viz.ui.shares import PLACES
from viz.ui.tabs.architecture import build_architecture
from viz.ui.tabs.attention import build_attention
from viz.ui.tabs.decoding import build_decoding
from viz.ui.tabs.head_analysis import build_head_analysis
from viz.ui.tabs.inside_head import build_inside_head
from viz.ui.tabs.lab import build_lab
from viz.ui.tabs.model_card import build_model_card
from viz.ui.tabs.scaling import build_scaling
from viz.ui.wiring import Page, open_linked_tabs
from viz.ui.zerogpu import lent_gpu
from viz.views.model_card import header
from viz.views.page import WEB, page_script

MODEL_DIR = Path(os.environ.get("ATTN_MODEL_DIR", ASSETS))
SESSION_CAPACITY = 2000  # sessions Gradio keeps (least recently used go first): ~50 KB each, model/serving/README.md
CACHE_AGE_S = 3600  # Gradio deletes the files it holds for the app (exports, uploads) this old, checking as often


def create_app(translator: Translator, serving: bool = False) -> gr.Blocks:
    """The app for one loaded model: every tab, listener and endpoint. Nothing is served yet (see ``launch``).
    ``serving``: the app will be served now, so the model process of the batched path (``model.serving.worker``) starts
    loading at once, while Gradio starts (otherwise it starts with the first batch). On a ZeroGPU Space the head
    ablation's sample is scored on a lent GPU (``lent_gpu``: ``model.serving.zerogpu``), all else as anywhere."""
    runs = Runs(translator, gpu=lent_gpu())
    if serving and runs.batched is not None:
        runs.batched.start()
    with gr.Blocks(title="Attention Is All You Need — attention visualiser", analytics_enabled=False,
                   delete_cache=(CACHE_AGE_S, CACHE_AGE_S)) as demo:
        result = gr.State(None)  # the session's run, which every tab reads (a key into runs' cache)
        gr.Markdown(header(translator.cfg), elem_id="header")
        with gr.Tabs(overflow_behavior="wrap") as tabs:  # every tab one tap away, on a phone too
            page = Page(runs, demo, tabs, result)
            # The cross-tab links: the Attention tab's sentence and choices are followed, and opened, by the tabs
            # after it; the Why tab's scale factor goes into "Inside a head" (by a button on either tab), and its
            # "the same, in training" into the Lab.
            attention = build_attention(page)
            build_decoding(page)
            why_factor, to_inside, to_lab = build_scaling(page)
            build_inside_head(page, attention, why_factor, to_inside)  # a row clicked in the close-up opens its query
            build_head_analysis(page, attention)  # a cell clicked opens its head on the Attention tab
            build_architecture(page, attention)  # a block clicked opens its kind on the Attention tab
            build_lab(page, to_lab)  # the Why tab's "the same, in training" opens it
            build_model_card(page)
            open_linked_tabs(page)  # a link's view, on the tab it names (each tab's part: viz.ui.wiring.on_link)
        build_lecture(page)  # ?lecture=1&stop=N: a stop's view (a link), its caption bar and its mark
        build_endpoints(runs)
    progress_on_components(demo)
    latest_choice_wins(demo)  # a choice made while a figure is drawn is drawn next, never dropped
    answer_every_value(demo)  # too few, too many or unusable values: a message (viz.ui.patches)
    return demo


def launch(demo: gr.Blocks, **kwargs):
    """Serve ``demo`` as the Space does (``kwargs`` go to ``demo.launch``). A classroom of 30 waits its turn
    instead of getting errors: up to ``ATTN_MAX_BATCH`` requests at a time, whose model runs are decoded as one
    batch in the app's model process (``model.serving.batching``, ``model.serving.worker``; with ``ATTN_BATCH=0``,
    two at a time for two cores, here), and api_open=False sends even raw HTTP calls through the queue. Sessions are
    small (``viz.ui.patches.lean_sessions``), at most ``SESSION_CAPACITY``. Visitors share the queue's places and
    take turns (``viz.ui.shares``), unread answers are dropped (``viz.ui.limits``); bodies, headers and connections
    are bounded by the server (``viz.ui.server``), and so are the logs (``viz.ui.logs``): model/serving/README.md.
    Binds 127.0.0.1 unless GRADIO_SERVER_NAME says otherwise; never opens a share link.
    The app takes no uploads: every upload is refused (``viz.ui.guards``; ``max_file_size`` too)."""
    batching = BatchSettings.from_env()
    workers = batching.max_batch_size if batching.enabled else 2
    fair_queue()  # fair shares of the queue's places and turns; unread answers are dropped (viz.ui.limits)
    demo.queue(default_concurrency_limit=workers, max_size=PLACES, api_open=False)
    quiet_queue(demo)  # no summary of every past event after each one; an idle queue waits (viz.ui.patches)
    raw_json_answers()  # an answer written as JSON once is sent as it is (viz.ui.limits)
    limited_server()  # bounded bodies, headers and connections (viz.ui.server)
    bounded_logs()  # a bad input is one line, a fault a cut traceback (viz.ui.logs)
    error_messages()  # every error answered with a message, its quoted values cut (viz.ui.patches)
    lean_sessions()  # new sessions keep no copy of every component and value (viz.ui.patches)
    fixed_mmap_threshold()  # freed maps go back to the OS (model/serving/cache.py)
    trim_freed_memory()  # and so do the heap's freed pages, every few seconds (model/serving/cache.py)
    # app_kwargs: routes Gradio answers badly (v2 calls, uploads, removed exports) are answered first (viz.ui.guards)
    # run_history=False: Gradio would keep each public run, figures too, in the visitor's localStorage (test_memory)
    # enable_monitoring=False: Gradio's GET /monitoring printed its dashboard's secret URL into the log
    return demo.launch(share=False, css_paths=[WEB / "app.css", WEB / "a11y.css"], js=page_script(), show_error=False,
                       run_history=False, max_file_size=0, state_session_capacity=SESSION_CAPACITY,
                       app_kwargs=guarded(demo), enable_monitoring=False, **kwargs)


def load_translator(folder: str | Path = MODEL_DIR) -> Translator:
    """The model as served. On a 2-core CPU one intra-op thread per request (and two requests at once, see
    ``launch``) beats two requests fighting over two threads each: this sets torch's threads for the process.
    On a ZeroGPU Space ``spaces`` is imported first, before anything touches CUDA, and this model is the CPU's."""
    translator = Translator(folder, "cpu" if lent_gpu() else None)
    if translator.device.type == "cpu":
        torch.set_num_threads(1)
    return translator


def check_settings() -> None:
    """Every ``ATTN_*`` setting the server reads at start (batching, the cache), read once: a ValueError naming a bad
    one, before the model loads."""
    BatchSettings.from_env()
    budget_from_env()


def main() -> int:
    """Load the model and serve. A bad ``ATTN_*`` setting, or a missing or corrupt model folder, ends the app with
    one line on stderr (the setting or file, the fault, what to do) and exit code 2, no traceback."""
    try:
        check_settings()
    except ValueError as exc:
        return fail(exc)
    try:
        translator = load_translator(MODEL_DIR)
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
