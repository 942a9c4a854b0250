"""Attention Is All You Need — an attention visualiser (Gradio app).

Pure functions first, then the layout, then the wiring; every event has an ``api_name``.
``model/`` computes, ``viz/`` draws, this file only lays out and wires.

    python app.py        # serves on http://127.0.0.1:7860 (GRADIO_SERVER_NAME / GRADIO_SERVER_PORT)
"""

from __future__ import annotations

import os

# Offline and quiet: set before gradio is imported.
for _key, _value in (("GRADIO_ANALYTICS_ENABLED", "False"), ("HF_HUB_OFFLINE", "1"), ("HF_HUB_DISABLE_TELEMETRY", "1")):
    os.environ.setdefault(_key, _value)

import json  # noqa: E402
import math  # noqa: E402
import tempfile  # noqa: E402
from functools import lru_cache  # noqa: E402
from pathlib import Path  # noqa: E402

import gradio as gr  # noqa: E402
import torch  # noqa: E402
from gradio.components.plot import PlotData  # noqa: E402

from model import scaling as toy  # noqa: E402
from model.inference import ASSETS, KINDS, AttentionResult, Translator  # noqa: E402
from viz import scaling as vs  # noqa: E402
from viz.architecture import figure1_svg, figure2_svg  # noqa: E402
from viz.encode import plotly_dict  # noqa: E402
from viz.heatmaps import detail_spec, overview_spec  # noqa: E402

try:  # ZeroGPU hardware on Hugging Face Spaces: GPU work must run inside spaces.GPU.
    import spaces

    gpu, ZEROGPU = spaces.GPU, True
except ImportError:
    ZEROGPU = False

    def gpu(fn):
        return fn


MODEL_DIR = Path(os.environ.get("ATTN_MODEL_DIR", ASSETS))
KIND_LABELS = {
    "encoder_self": "Encoder self-attention",
    "decoder_self": "Decoder self-attention (masked)",
    "cross": "Encoder–decoder attention",
}
AXIS_LABELS = {  # (rows, columns) of each kind's maps
    "encoder_self": ("source token (query)", "source token (key)"),
    "decoder_self": ("decoder position: input token (query)", "decoder position (key)"),
    "cross": ("decoder position: input token (query)", "source token (key)"),
}
EXAMPLES = [
    ["Two dogs are running through the snow."],
    ["A little girl in a pink dress is climbing a wooden fence."],
    ["A man in a blue shirt is playing the guitar on the street."],
    ["A group of people are standing in front of a large building."],
    ["The cat sat on the mat."],
    ["I would like a cup of coffee, please."],
]
DEFAULT_SOURCE = EXAMPLES[0][0]
MEAN = 0  # the head selector's "mean over heads"

# One model serves everyone; forward passes keep no state on it. On a 2-core CPU one intra-op thread per
# request (and two requests at once, see the queue below) beats two requests fighting over two threads each.
TRANSLATOR = Translator(MODEL_DIR)
if TRANSLATOR.device.type == "cpu":
    torch.set_num_threads(1)
CFG = TRANSLATOR.cfg
# The footnote-4 demo computes with torch where the model runs (on ZeroGPU the GPU exists only inside spaces.GPU).
TOY_DEVICE = torch.device("cpu") if ZEROGPU else TRANSLATOR.device
CARD_PATH = MODEL_DIR / "MODEL_CARD.md"
MODEL_CARD = CARD_PATH.read_text(encoding="utf-8") if CARD_PATH.is_file() else "No model card was shipped."


# --------------------------------------------------------------------------------------------- pure functions
def plot(fig, filename: str) -> PlotData:
    """A plotly figure (or a figure spec dict) for gr.Plot, with a config: the camera button downloads a
    PNG named after the view. Heatmaps come as specs: no `go.Figure` validation on the hot path."""
    data = plotly_dict(fig) if isinstance(fig, dict) else json.loads(fig.to_json())
    if not (data["layout"].get("title") or {}).get("text"):
        data["layout"].pop("title", None)  # Gradio reserves 100 px of top margin for any layout title
        margin = data["layout"].setdefault("margin", {})
        margin["t"] = max(margin.get("t", 0), 30)  # clear of Gradio's label badge
    data["config"] = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2}}
    return PlotData(type="plotly", plot=json.dumps(data, separators=(",", ":")))


@gpu
def compute(text: str, target: str | None = None, scale: float | None = None) -> AttentionResult:
    return TRANSLATOR.attention(text, target=target or None, scale=scale)


def check_view(kind: str, layer, head) -> tuple[str, int, int]:
    if kind not in KINDS:
        raise gr.Error(f"Unknown attention kind {kind!r}: choose one of {', '.join(KINDS)}.")
    layer, head = int(layer or 1), int(head or 0)
    if not 1 <= layer <= CFG.n_layers or not 0 <= head <= CFG.n_heads:
        raise gr.Error(f"Layer must be 1–{CFG.n_layers} and head 0–{CFG.n_heads} (0 = mean over heads).")
    return kind, layer, head


def detail_fig(result: AttentionResult, kind: str, layer: int, head: int, prefix: str, filename: str):
    """One head (or the mean of a layer's heads, head 0) up close, tokens on the axes by position."""
    maps = result.maps(kind)[layer - 1]  # (H, Q, K)
    weights = maps.mean(axis=0) if head == MEAN else maps[head - 1]
    which = f"mean of {CFG.n_heads} heads" if head == MEAN else f"head {head}"
    q_label, k_label = AXIS_LABELS[kind]
    fig = detail_spec(weights, *result.tokens(kind), f"{prefix} · layer {layer} · {which}",
                        query_label=q_label, key_label=k_label)
    return plot(fig, filename)


def detail_plot(result: AttentionResult | None, kind: str, layer, head):
    if result is None:
        return None
    kind, layer, head = check_view(kind, layer, head)
    return detail_fig(result, kind, layer, head, KIND_LABELS[kind],
                      f"{kind}_layer{layer}_{'mean' if head == MEAN else f'head{head}'}")


def overview_plot(result: AttentionResult | None, kind: str):
    if result is None:
        return None
    q_tokens, k_tokens = result.tokens(kind)
    return plot(overview_spec(result.maps(kind), q_tokens, k_tokens), f"{kind}_all_heads")


def status_text(result: AttentionResult) -> str:
    mode = "the translation you gave (teacher forcing)" if result.teacher_forced else "the model's greedy translation"
    lines = [
        f"Showing {mode}: {len(result.source_tokens)} source tokens, {len(result.target_tokens)} decoder positions. "
        f"Model on **{TRANSLATOR.device_label}**."
    ]
    lines += [f"⚠️ {w}" for w in result.warnings]
    return "\n\n".join(lines)


def visualise(text: str, target: str, kind: str, layer, head):
    """Translate (or force ``target``), then draw the overview and the detail. Runs the model once."""
    kind, layer, head = check_view(kind, layer, head)
    try:
        result = compute(text, target)
    except ValueError as exc:  # empty input and the like: a message, never a traceback
        raise gr.Error(str(exc)) from None
    for warning in result.warnings:
        gr.Warning(warning)
    views = overview_plot(result, kind), detail_plot(result, kind, layer, head)
    return result.translation, status_text(result), *views, result


def architecture_svg(result: AttentionResult | None) -> str:
    """Figure 1 with the shapes of the session's sentence; drawn when the Architecture tab opens, so that
    the ~20 KB of SVG does not travel with every visualisation."""
    if result is None:
        return figure1_svg(CFG)
    return figure1_svg(CFG, len(result.source_tokens), len(result.target_tokens))


def render_views(result: AttentionResult | None, kind: str, layer, head):
    """A new kind: both figures, from the session's cached maps (the model does not run)."""
    return overview_plot(result, kind), detail_plot(result, kind, layer, head)


def export_files(result: AttentionResult | None) -> list[str]:
    if result is None:
        raise gr.Error("Nothing to export yet: visualise a sentence first.")
    folder = Path(tempfile.mkdtemp(prefix="attention-"))
    (folder / "attention.npz").write_bytes(result.to_npz_bytes())
    (folder / "attention.json").write_text(result.to_json(), encoding="utf-8")
    return [str(folder / "attention.npz"), str(folder / "attention.json")]


def tile_clicked(message: str):
    """'layer,head,nonce' from a click on an overview tile -> the layer and head selectors."""
    try:
        layer, head = (int(v) for v in message.split(",")[:2])
        check_view("encoder_self", layer, head)
    except (ValueError, gr.Error):
        return gr.skip(), gr.skip()
    return layer, head


def architecture_clicked(message: str):
    """'kind|nonce' from a click on an attention block of Figure 1 -> that kind, on the Attention tab."""
    kind = (message or "").split("|")[0]
    if kind not in KINDS:
        return gr.skip(), gr.skip()
    return kind, gr.Tabs(selected="attention")


def go_to_heatmaps(kind: str, layer):
    kind, layer, _ = check_view(kind, layer, 0)
    return kind, layer, gr.Tabs(selected="attention")


# ---- "Why 1/√d_k" (paper footnote 4)
def factor_for(d_k: int, alpha: float) -> float:
    """alpha 0 -> the paper's 1/sqrt(d_k), alpha 1 -> 1 (no scaling), geometric in between."""
    return float(d_k ** (-(1.0 - float(alpha)) / 2.0))


@lru_cache(maxsize=16)
def _variance(seed: int) -> dict:
    return toy.dot_product_variance(seed=seed, device=TOY_DEVICE)


@lru_cache(maxsize=16)
def _curves(n_keys: int, seed: int) -> dict:
    return toy.saturation_curves(n_keys=n_keys, seed=seed, device=TOY_DEVICE)


def toy_variance(log2_dk, seed):
    d_k, seed = 2 ** int(log2_dk), int(seed)
    var = _variance(seed)
    samples = toy.dot_product_samples(d_k, seed=seed, device=TOY_DEVICE)
    text = vs.variance_text(var, d_k) + "\n\n" + vs.histogram_text(samples, d_k)
    return plot(vs.variance_figure(var, d_k), "variance"), plot(vs.histogram_figure(samples, d_k), "histogram"), text


def toy_saturation(log2_dk, n_keys, alpha, seed):
    d_k, n_keys, seed = 2 ** int(log2_dk), int(n_keys), int(seed)
    example = toy.saturation_example(d_k, factor=factor_for(d_k, alpha), n_keys=n_keys, seed=seed, device=TOY_DEVICE)
    curves = _curves(n_keys, seed)
    text = vs.weights_text(example) + "\n\n" + vs.curves_text(curves, d_k)
    return plot(vs.weights_figure(example), "softmax_weights"), plot(vs.curves_figure(curves, d_k), "curves"), text


@lru_cache(maxsize=64)
def trained_attention(text: str) -> AttentionResult:
    """The model as trained, per sentence: moving the factor slider re-runs only the changed model."""
    return compute(text)


def live_scaling(text: str, alpha, kind: str, layer):
    """The trained model with 1/sqrt(d_k) replaced: heatmaps, per-head entropy and its own translation."""
    kind, layer, _ = check_view(kind, layer, 0)
    factor = factor_for(CFG.d_k, alpha)
    try:
        normal = trained_attention(text)
        # The same target for both, so the maps line up; then the changed model's own translation.
        forced = compute(text, normal.translation or None, scale=factor)
        changed_translation = compute(text, scale=factor).translation
    except ValueError as exc:
        raise gr.Error(str(exc)) from None
    label = f"× {factor:.3g}" + (" (the paper's 1/√d_k)" if alpha == 0 else " (no scaling)" if alpha == 1 else "")
    figs = [detail_fig(normal, kind, layer, MEAN, f"trained: × 1/√{CFG.d_k} = {CFG.scale:.3g}", "scale_trained"),
            detail_fig(forced, kind, layer, MEAN, f"changed: {label}", "scale_changed")]
    ent_normal = toy.attention_entropy(normal.maps(kind))
    ent_changed = toy.attention_entropy(forced.maps(kind))
    labels = (f"× 1/√d_k = {CFG.scale:.3g}", label)
    entropy_fig = plot(vs.entropy_comparison_figure(ent_normal, ent_changed, labels), "entropy_per_head")
    summary = (f"**Translation with {label}:** {changed_translation or '(empty)'}\n\n"
               f"**Translation as trained:** {normal.translation or '(empty)'}\n\n"
               + vs.entropy_comparison_text(ent_normal, ent_changed))
    return figs[0], figs[1], entropy_fig, summary


def translate_api(text: str, beam: float = 4) -> str:
    """Plain translation (beam search, §6.1)."""
    beam = int(beam)
    if not 1 <= beam <= 8:
        raise gr.Error("Beam size must be between 1 and 8.")
    try:
        return gpu(TRANSLATOR.translate)(text, beam=beam)
    except ValueError as exc:
        raise gr.Error(str(exc)) from None


def attention_api(text: str, target: str = "", scale: float | None = None) -> dict:
    """Every attention map as JSON: the same content as `python -m model.translate --json`."""
    if scale is not None and not (math.isfinite(scale) and 0 < scale <= 100):
        raise gr.Error("scale must be a positive number (the model's own is 1/sqrt(d_k)).")
    try:
        return compute(text, target, scale).to_json_dict()
    except ValueError as exc:
        raise gr.Error(str(exc)) from None


# ---------------------------------------------------------------------------------------------------- layout
HEAD_CHOICES = [("mean", MEAN)] + [(str(h), h) for h in range(1, CFG.n_heads + 1)]
KIND_CHOICES = [(label, kind) for kind, label in KIND_LABELS.items()]

JS = """
() => {
  // Tell a hidden Gradio textbox something (a click on a plot tile or an SVG block).
  window.attnSend = (id, value) => {
    const box = document.querySelector(`#${id} textarea, #${id} input`);
    if (!box) return;
    box.value = value;
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };
  // Client-side downloads of a plot as PNG or SVG, through plotly's own camera button.
  window.attnDownload = (id, format) => {
    const gd = document.querySelector(`#${id} .js-plotly-plot`);
    const btn = gd && gd.querySelector('.modebar-btn[data-title^="Download plot"]');
    if (!btn) return;
    const old = gd._context.toImageButtonOptions;
    gd._context.toImageButtonOptions = {...old, format: format};
    btn.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    gd._context.toImageButtonOptions = old;
  };
  const hook = () => {
    const gd = document.querySelector('#overview .js-plotly-plot');
    if (gd && gd.on && !gd.attnHooked) {
      gd.attnHooked = true;
      gd.on('plotly_click', (ev) => {
        const p = ev.points && ev.points[0];
        const layer = p && /^L(\\d+)/.exec(String(p.y)), head = p && /^H(\\d+)/.exec(String(p.x));
        if (layer && head) window.attnSend('tile-click', `${layer[1]},${head[1]},${Date.now()}`);
      });
    }
  };
  new MutationObserver(hook).observe(document.body, {childList: true, subtree: true});
}
"""
ARCH_JS = """
const open = (ev) => {
  const block = ev.target.closest('[data-attention]');
  if (block && window.attnSend) window.attnSend('arch-click', `${block.dataset.attention}|${Date.now()}`);
};
element.addEventListener('click', open);
element.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(ev); }
});
"""
CSS = """
h1, h2, h3 { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
#overview, #detail { min-height: 200px; }
.tf-block[data-attention] { cursor: pointer; }
"""

with gr.Blocks(title="Attention Is All You Need — attention visualiser", analytics_enabled=False) as demo:
    result_state = gr.State(None)
    gr.Markdown(
        "# Attention Is All You Need — see how a Transformer attends\n"
        f"A {CFG.n_layers}-layer, {CFG.n_heads}-head Transformer (d_model = {CFG.d_model}) written from scratch and "
        "trained on Multi30k English→German. Type a sentence and look at every head of every layer."
    )
    with gr.Tabs() as tabs:
        with gr.Tab("Attention", id="attention"):
            with gr.Row():
                with gr.Column(scale=3):
                    source = gr.Textbox(label="English sentence", value=DEFAULT_SOURCE, lines=2, max_length=2000,
                                        elem_id="source")
                    target = gr.Textbox(label="Your own German translation (optional: shows the attention for it)",
                                        lines=1, max_length=2000, elem_id="target")
                    run_btn = gr.Button("Translate and show attention", variant="primary", elem_id="run")
                    gr.Examples(examples=EXAMPLES, inputs=[source], label="Examples (captions like the training data, "
                                "then everyday sentences it has rarely seen)")
                with gr.Column(scale=2):
                    translation = gr.Textbox(label="German translation", interactive=False, elem_id="translation")
                    status = gr.Markdown(elem_id="status")
            kind = gr.Radio(KIND_CHOICES, value="encoder_self", label="Kind of attention", elem_id="kind")
            overview = gr.Plot(label="All layers × heads (rows: layers 1–6, columns: heads 1–8) — click a tile",
                               elem_id="overview")
            with gr.Row():
                layer = gr.Slider(1, CFG.n_layers, value=1, step=1, label="Layer", elem_id="layer")
                head = gr.Radio(HEAD_CHOICES, value=MEAN, label="Head", elem_id="head")
            detail = gr.Plot(label="One head up close (rows attend to columns)", elem_id="detail")
            tile_click = gr.Textbox(visible="hidden", elem_id="tile-click")
            with gr.Accordion("Export", open=False):
                gr.Markdown("The attention maps as npz or JSON (same content as `python -m model.translate`), "
                            "and the figures as PNG or SVG.")
                export_btn = gr.Button("Prepare npz + JSON", elem_id="export")
                export_out = gr.File(label="Downloads", file_count="multiple", elem_id="export-files")
                with gr.Row():
                    for plot_id in ("overview", "detail"):
                        for fmt in ("png", "svg"):
                            gr.Button(f"{plot_id.title()} as {fmt.upper()}", size="sm").click(
                                None, js=f"() => window.attnDownload('{plot_id}', '{fmt}')")

        with gr.Tab("Why 1/√d_k", id="scaling") as scaling_tab:
            gr.Markdown(vs.PAPER_QUOTE)
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
            gr.Markdown(f"### 3 · Inside the trained model (d_k = {CFG.d_k})\nThe same slider replaces the model's "
                        f"1/√{CFG.d_k} = {CFG.scale:.3f}: at 0 you see the model as trained, at 1 without scaling.")
            with gr.Row():
                live_text = gr.Textbox(label="English sentence", value=DEFAULT_SOURCE, scale=3, max_length=2000)
                live_kind = gr.Dropdown(KIND_CHOICES, value="encoder_self", label="Kind", scale=2)
                live_layer = gr.Slider(1, CFG.n_layers, value=1, step=1, label="Layer", scale=2)
                live_btn = gr.Button("Run the model", variant="primary", scale=1, elem_id="live-run")
            with gr.Row():
                live_normal = gr.Plot(label="As trained", elem_id="live-normal")
                live_changed = gr.Plot(label="With the chosen scale", elem_id="live-changed")
            live_entropy = gr.Plot(label="Mean attention entropy per head", elem_id="live-entropy")
            live_summary = gr.Markdown(elem_id="live-summary")

        with gr.Tab("Architecture", id="architecture") as arch_tab:
            gr.Markdown("Figure 1 and Figure 2 of the paper, drawn from the running model's configuration. Hover a "
                        "block for its size; click an attention block to see its heatmaps.")
            arch_svg = gr.HTML(figure1_svg(CFG), js_on_load=ARCH_JS, elem_id="figure1")
            arch_click = gr.Textbox(visible="hidden", elem_id="arch-click")
            with gr.Row():
                arch_kind = gr.Dropdown(KIND_CHOICES, value="cross", label="Attention", scale=2)
                arch_layer = gr.Slider(1, CFG.n_layers, value=3, step=1, label="Layer", scale=2)
                arch_go = gr.Button("Show these heatmaps", scale=1, elem_id="arch-go")
            gr.HTML(figure2_svg(CFG), js_on_load=None, elem_id="figure2")

        with gr.Tab("Model card", id="model-card"):
            gr.Markdown(f"Model running on **{TRANSLATOR.device_label}**.\n\n" + MODEL_CARD)

    # ------------------------------------------------------------------------------------------------ wiring
    view_inputs = [result_state, kind, layer, head]
    run_outputs = [translation, status, overview, detail, result_state]
    run_btn.click(visualise, [source, target, kind, layer, head], run_outputs, api_name="visualise")
    source.submit(visualise, [source, target, kind, layer, head], run_outputs, api_visibility="undocumented")
    target.submit(visualise, [source, target, kind, layer, head], run_outputs, api_visibility="undocumented")
    demo.load(visualise, [source, target, kind, layer, head], run_outputs, api_visibility="undocumented")
    kind.change(render_views, view_inputs, [overview, detail], api_name="render_views")
    layer.change(detail_plot, view_inputs, detail, api_name="render_detail")
    head.change(detail_plot, view_inputs, detail, api_visibility="undocumented")
    # .change, not .input: Gradio 6 fires .input only on a keypress, never for a value set by attnSend (JS).
    tile_click.change(tile_clicked, tile_click, [layer, head], api_visibility="private")
    export_btn.click(export_files, result_state, export_out, api_name="export")
    arch_tab.select(architecture_svg, result_state, arch_svg, api_name="figure1", api_visibility="undocumented")
    arch_click.change(architecture_clicked, arch_click, [kind, tabs], api_visibility="private")
    arch_go.click(go_to_heatmaps, [arch_kind, arch_layer], [kind, layer, tabs], api_visibility="private")

    var_inputs, sat_inputs = [log2_dk, seed], [log2_dk, n_keys, alpha, seed]
    var_outputs, sat_outputs = [var_plot, hist_plot, var_text], [weights_plot, curves_plot, sat_text]
    for control in (log2_dk, seed):
        control.change(toy_variance, var_inputs, var_outputs, api_visibility="undocumented")
    for control in (log2_dk, n_keys, alpha, seed):
        control.change(toy_saturation, sat_inputs, sat_outputs, api_visibility="undocumented")
    live_inputs = [live_text, alpha, live_kind, live_layer]
    live_outputs = [live_normal, live_changed, live_entropy, live_summary]
    live_btn.click(live_scaling, live_inputs, live_outputs, api_name="scaling_live")
    live_text.submit(live_scaling, live_inputs, live_outputs, api_visibility="undocumented")
    scaling_tab.select(live_scaling, live_inputs, live_outputs, api_visibility="undocumented")
    demo.load(toy_variance, var_inputs, var_outputs, api_name="scaling_variance")
    demo.load(toy_saturation, sat_inputs, sat_outputs, api_name="scaling_saturation")

    gr.api(translate_api, api_name="translate")
    gr.api(attention_api, api_name="attention")

# A classroom: 30 people clicking at once wait their turn instead of getting errors. Two requests run at a
# time (two cores); api_open=False sends even raw HTTP calls through the queue.
demo.queue(default_concurrency_limit=2, max_size=256, api_open=False)

if __name__ == "__main__":
    # Binds 127.0.0.1 unless GRADIO_SERVER_NAME says otherwise; never opens a share link on its own.
    demo.launch(share=False, css=CSS, js=JS, show_error=False)
