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
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import gradio as gr  # noqa: E402
import torch  # noqa: E402
from gradio.components.plot import PlotData  # noqa: E402

from model.inference import ASSETS, Translator  # noqa: E402
from viz.architecture import figure1_svg, figure2_svg  # noqa: E402
from viz.heatmaps import HEAD_LABEL, LAYER_LABEL  # noqa: E402
from viz.scaling import PAPER_QUOTE  # noqa: E402
from viz.views import architecture, attention, scaling  # noqa: E402
from viz.views.figure import Figure  # noqa: E402
from viz.views.model_card import model_card  # noqa: E402
from viz.views.runs import Runs  # noqa: E402

try:  # ZeroGPU hardware on Hugging Face Spaces: GPU work must run inside spaces.GPU.
    from spaces import GPU as ZEROGPU
except ImportError:
    ZEROGPU = None


MODEL_DIR = Path(os.environ.get("ATTN_MODEL_DIR", ASSETS))
WEB = Path(__file__).resolve().parent / "assets" / "web"
# The contract with the page script (assets/web/app.js gets it as its argument): written once, here.
PAGE = {"overview": "overview", "tileClick": "tile-click", "figure1": "figure1", "blockClick": "arch-click",
        "layerLabel": LAYER_LABEL, "headLabel": HEAD_LABEL}


@dataclass
class Page:
    """What the tab builders share. ``view`` is the Attention tab's controls (set by ``attention_tab``, which
    comes first), so that other tabs can follow its sentence and choices or switch to it."""

    runs: Runs
    demo: gr.Blocks
    tabs: gr.Tabs  # select a tab by id: gr.Tabs(selected="attention")
    result: gr.State  # the session's AttentionResult, None before its first run
    view: AttentionView | None = None


@dataclass
class AttentionView:
    source: gr.Textbox
    target: gr.Textbox
    kind: gr.Radio
    layer: gr.Slider
    head: gr.Radio


def listener(present, *args, **kwargs):
    """``present`` as a Gradio listener, with ``args``/``kwargs`` bound first (like functools.partial): the
    ``Figure``s it returns become gr.Plot values, and a ValueError (bad input, an empty sentence) reaches the
    user as its message, never as a traceback. Every listener that can raise goes through here."""
    fn = functools.partial(present, *args, **kwargs) if args or kwargs else present

    def run(*inputs):
        try:
            out = fn(*inputs)
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return tuple(map(_shown, out)) if isinstance(out, tuple) else _shown(out)

    functools.update_wrapper(run, present)  # its name and docstring (the API page shows them)
    run.__wrapped__ = fn  # the signature Gradio reads: present's, without the bound arguments
    return run


def _shown(value):
    """A presenter's output as Gradio takes it: a Figure as gr.Plot's value, anything else as it is."""
    if isinstance(value, Figure):
        return PlotData(type="plotly", plot=json.dumps(value, separators=(",", ":")))
    return value


# ------------------------------------------------------------------------------------------------- the tabs
def attention_tab(page: Page) -> AttentionView:
    cfg, runs = page.runs.cfg, page.runs
    with gr.Tab("Attention", id="attention"):
        with gr.Row():
            with gr.Column(scale=3):
                source = gr.Textbox(label="English sentence", value=attention.DEFAULT_SOURCE, lines=2, max_length=2000,
                                    elem_id="source")
                target = gr.Textbox(label="Your own German translation (optional: shows the attention for it)",
                                    lines=1, max_length=2000, elem_id="target")
                run_btn = gr.Button("Translate and show attention", variant="primary", elem_id="run")
                gr.Examples(examples=attention.EXAMPLES, inputs=[source], label="Examples (captions like the training "
                            "data, then everyday sentences it has rarely seen)")
            with gr.Column(scale=2):
                translation = gr.Textbox(label="German translation", interactive=False, elem_id="translation")
                status = gr.Markdown(elem_id="status")
        kind = gr.Radio(attention.KIND_CHOICES, value="encoder_self", label="Kind of attention", elem_id="kind")
        overview = gr.Plot(label=f"All layers × heads (rows: layers 1–{cfg.n_layers}, columns: heads 1–{cfg.n_heads})"
                           " — click a tile", elem_id=PAGE["overview"])
        with gr.Row():
            layer = gr.Slider(1, cfg.n_layers, value=1, step=1, label="Layer", elem_id="layer")
            head = gr.Radio(attention.head_choices(cfg.n_heads), value=attention.MEAN, label="Head", elem_id="head")
        detail = gr.Plot(label="One head up close (rows attend to columns)", elem_id="detail")
        tile_click = gr.Textbox(visible="hidden", elem_id=PAGE["tileClick"])
        export_btn, export_out = export_section()

    def visualise(text: str, target_text: str, kind_: str, layer_, head_):
        """Translate (or force ``target_text``), then draw the overview and the detail. Runs the model once."""
        kind_, layer_, head_ = attention.check_view(cfg, kind_, layer_, head_)
        result = runs.attention(text, target_text)
        for warning in result.warnings:
            gr.Warning(warning)
        status = attention.status_text(result, runs.translator.device_label)
        return result.translation, status, *attention.views(cfg, result, kind_, layer_, head_), result

    def tile_clicked(message: str):
        picked = attention.tile_from_click(cfg, message)
        return picked if picked else (gr.skip(), gr.skip())

    view_inputs = [page.result, kind, layer, head]
    gr.on([run_btn.click, source.submit, target.submit, page.demo.load], listener(visualise),
          [source, target, kind, layer, head], [translation, status, overview, detail, page.result],
          api_name="visualise")
    kind.change(listener(attention.views, cfg), view_inputs, [overview, detail], api_name="render_views")
    gr.on([layer.change, head.change], listener(attention.detail_plot, cfg), view_inputs, detail,
          api_name="render_detail")
    # .change, not .input: Gradio 6 fires .input only on a keypress, never for a value set by the page script.
    tile_click.change(tile_clicked, tile_click, [layer, head], api_visibility="private")
    export_btn.click(listener(attention.export_files), page.result, export_out, api_name="export")
    return AttentionView(source, target, kind, layer, head)


def export_section() -> tuple[gr.Button, gr.File]:
    with gr.Accordion("Export", open=False):
        gr.Markdown("The attention maps as npz or JSON (same content as `python -m model.translate`), "
                    "and the figures as PNG or SVG.")
        export_btn = gr.Button("Prepare npz + JSON", elem_id="export")
        export_out = gr.File(label="Downloads", file_count="multiple", elem_id="export-files")
        with gr.Row():
            for plot_id in ("overview", "detail"):
                for fmt in ("png", "svg"):  # client-side, by the page script (no server round trip)
                    gr.Button(f"{plot_id.title()} as {fmt.upper()}", size="sm").click(
                        None, js=f"() => window.attnDownload('{plot_id}', '{fmt}')")
    return export_btn, export_out


def scaling_tab(page: Page) -> None:
    device = page.runs.toy_device
    with gr.Tab("Why 1/√d_k", id="scaling") as tab:
        gr.Markdown(PAPER_QUOTE)
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

    gr.on([log2_dk.change, seed.change, page.demo.load], listener(scaling.variance_view, device=device),
          [log2_dk, seed], [var_plot, hist_plot, var_text], api_name="scaling_variance")
    gr.on([log2_dk.change, n_keys.change, alpha.change, seed.change, page.demo.load],
          listener(scaling.saturation_view, device=device), [log2_dk, n_keys, alpha, seed],
          [weights_plot, curves_plot, sat_text], api_name="scaling_saturation")


def trained_model_section(page: Page, tab: gr.Tab, alpha: gr.Slider) -> None:
    """Section 3 of the "Why" tab: the trained model with its 1/√d_k replaced by the factor ``alpha`` picks."""
    runs, cfg = page.runs, page.runs.cfg
    gr.Markdown(f"### 3 · Inside the trained model (d_k = {cfg.d_k})\nThe same slider replaces the model's "
                f"1/√{cfg.d_k} = {cfg.scale:.3f}: at 0 you see the model as trained, at 1 without scaling.")
    with gr.Row():
        text = gr.Textbox(label="English sentence", value=attention.DEFAULT_SOURCE, scale=3, max_length=2000)
        kind = gr.Dropdown(attention.KIND_CHOICES, value="encoder_self", label="Kind", scale=2)
        layer = gr.Slider(1, cfg.n_layers, value=1, step=1, label="Layer", scale=2)
        run_btn = gr.Button("Run the model", variant="primary", scale=1, elem_id="live-run")
    with gr.Row():
        normal = gr.Plot(label="As trained", elem_id="live-normal")
        changed = gr.Plot(label="With the chosen scale", elem_id="live-changed")
    entropy = gr.Plot(label="Mean attention entropy per head", elem_id="live-entropy")
    summary = gr.Markdown(elem_id="live-summary")
    gr.on([run_btn.click, text.submit, tab.select], listener(scaling.live_view, cfg, runs.attention, runs.trained),
          [text, alpha, kind, layer], [normal, changed, entropy, summary], api_name="scaling_live")


def architecture_tab(page: Page) -> None:
    cfg, view = page.runs.cfg, page.view
    with gr.Tab("Architecture", id="architecture") as tab:
        gr.Markdown("Figure 1 and Figure 2 of the paper, drawn from the running model's configuration. Hover a "
                    "block for its size; click an attention block to see its heatmaps.")
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
    go.click(listener(show), [kind, layer], [view.kind, view.layer, page.tabs], api_visibility="private")


def model_card_tab(page: Page) -> None:
    with gr.Tab("Model card", id="model-card"):
        gr.Markdown(model_card(page.runs.translator.folder, page.runs.translator.device_label))


def api_endpoints(runs: Runs) -> None:
    """Endpoints without a UI, for scripts: /translate and /attention."""

    def translate(text: str, beam: float = 4) -> str:
        """Plain translation (beam search, §6.1)."""
        return runs.translate(text, attention.check_beam(beam))

    def attention_maps(text: str, target: str = "", scale: float | None = None) -> dict:
        """Every attention map as JSON: the same content as `python -m model.translate --json`."""
        return runs.attention(text, target, attention.check_scale(scale)).to_json_dict()

    gr.api(listener(translate), api_name="translate")
    gr.api(listener(attention_maps), api_name="attention")


# --------------------------------------------------------------------------------------------- the whole app
def create_app(translator: Translator) -> gr.Blocks:
    """The app for one loaded model: every tab, listener and endpoint. Nothing is served yet (see ``launch``)."""
    runs = Runs(translator, gpu=ZEROGPU)
    cfg = translator.cfg
    with gr.Blocks(title="Attention Is All You Need — attention visualiser", analytics_enabled=False) as demo:
        result = gr.State(None)
        gr.Markdown(
            "# Attention Is All You Need — see how a Transformer attends\n"
            f"A {cfg.n_layers}-layer, {cfg.n_heads}-head Transformer (d_model = {cfg.d_model}) written from scratch "
            "and trained on Multi30k English→German. Type a sentence and look at every head of every layer."
        )
        with gr.Tabs() as tabs:
            page = Page(runs, demo, tabs, result)
            page.view = attention_tab(page)
            scaling_tab(page)
            architecture_tab(page)
            model_card_tab(page)
        api_endpoints(runs)
    return demo


def page_script() -> str:
    """assets/web/app.js, called with ``PAGE`` (Gradio runs the expression when the page has loaded)."""
    return f"({(WEB / 'app.js').read_text(encoding='utf-8')})({json.dumps(PAGE)})"


def launch(demo: gr.Blocks, **kwargs):
    """Serve ``demo`` as the Space does (``kwargs`` go to ``demo.launch``). A classroom of 30 waits its turn
    instead of getting errors: two requests at a time (two cores), and api_open=False sends even raw HTTP calls
    through the queue. Binds 127.0.0.1 unless GRADIO_SERVER_NAME says otherwise; never opens a share link."""
    demo.queue(default_concurrency_limit=2, max_size=256, api_open=False)
    return demo.launch(share=False, css_paths=[WEB / "app.css"], js=page_script(), show_error=False, **kwargs)


def load_translator(folder: str | Path = MODEL_DIR) -> Translator:
    """The model as served. On a 2-core CPU one intra-op thread per request (and two requests at once, see
    ``launch``) beats two requests fighting over two threads each: this sets torch's threads for the process."""
    translator = Translator(folder)
    if translator.device.type == "cpu":
        torch.set_num_threads(1)
    return translator


def main() -> None:
    launch(create_app(load_translator()))


def __getattr__(name: str):
    """``app.demo``, Gradio's convention (``gradio app.py``): built with the served model on first use only."""
    if name == "demo":
        globals()["demo"] = demo = create_app(load_translator())
        return demo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
