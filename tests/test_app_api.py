"""The app through its API: `app.create_app` launched in-process as `app.launch` serves it, driven by gradio_client.

Every named endpoint is called the way a script would call it and checked against what it promises:
a translation and status text, plot payloads whose heatmaps match the token counts, attention arrays of
the documented shapes, a clear message (never a traceback) for an empty sentence, and a queue that
serves a classroom of 30 simultaneous requests.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from gradio_client import Client
from helpers.plotly import array, figure
from helpers.raw_api import RawClient

from viz.architecture import figure1_svg

# gradio's own queue code trips pandas deprecation warnings; they are not this app's.
pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "A man in a blue shirt is playing the guitar on the street."
# gradio_client's requests use httpx's default timeout (5 s): too short on a busy machine
SLOW_MACHINE = {"timeout": 300}


@pytest.fixture(scope="module")
def app_module(serve):
    """The served app (``demo``) and its model (``translator``): the shipped model, in this process."""
    return serve("shipped")


@pytest.fixture(scope="module")
def client(app_module) -> Client:
    # gradio_client ignores GRADIO_ANALYTICS_ENABLED: it must be told directly.
    return Client(app_module.demo.local_url, analytics_enabled=False, verbose=False, httpx_kwargs=SLOW_MACHINE)


def new_client(app_module) -> Client:
    """A client with its own session (its own gr.State)."""
    return Client(app_module.demo.local_url, analytics_enabled=False, verbose=False, httpx_kwargs=SLOW_MACHINE)


# ------------------------------------------------------------------------------------------------ helpers
def heatmap(fig: dict) -> dict:
    traces = [t for t in fig["data"] if t.get("type") == "heatmap"]
    assert len(traces) == 1, [t.get("type") for t in fig["data"]]
    return traces[0]


def check_overview(payload: dict, n_q: int, n_k: int, n_layers: int = 6, n_heads: int = 8) -> None:
    fig = figure(payload)
    trace = heatmap(fig)
    # one tick label per layer on the left and per head along the bottom: L×H = 48 tiles
    assert fig["layout"]["yaxis"]["ticktext"] == [f"L{l_}" for l_ in range(1, n_layers + 1)]
    assert fig["layout"]["xaxis"]["ticktext"] == [f"H{h}" for h in range(1, n_heads + 1)]
    z = array(trace["z"])
    x, y = trace["x"], trace["y"]
    assert z.shape == (len(y), len(x))
    # every tile has Q query rows and K key columns (the rest of the grid is gap cells)
    for layer in range(1, n_layers + 1):
        assert sum(label.startswith(f"L{layer} query ") for label in y) == n_q
    for head in range(1, n_heads + 1):
        assert sum(label.startswith(f"H{head} key ") for label in x) == n_k
    gap = np.array([label.startswith("(gap)") for label in y])[:, None] | np.array(
        [label.startswith("(gap)") for label in x]
    )[None, :]
    cells = z[~gap]
    assert cells.size == n_layers * n_heads * n_q * n_k
    assert cells.min() >= 0 and cells.max() <= 100  # whole percent


def check_detail(payload: dict, n_q: int, n_k: int) -> tuple[dict, np.ndarray]:
    fig = figure(payload)
    z = array(heatmap(fig)["z"]).astype(np.float64)
    assert z.shape == (n_q, n_k)
    assert np.all(z >= 0) and np.allclose(z.sum(axis=1), 1.0, atol=1e-3)  # rows are softmax distributions
    assert len(fig["layout"]["yaxis"]["ticktext"]) == n_q and len(fig["layout"]["xaxis"]["ticktext"]) == n_k
    return fig, z


def entropy(weights: np.ndarray) -> float:
    """Mean attention entropy (nats) over every row of (L, H, Q, K) maps."""
    w = np.asarray(weights, dtype=np.float64)
    return float(np.mean(-np.sum(np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0), axis=-1)))


# -------------------------------------------------------------------------------------------------- tests
def test_visualise_and_the_views_that_reuse_its_maps(app_module):
    c = new_client(app_module)
    translation, status, overview, detail = c.predict(SENTENCE, "", "encoder_self", 1, 0, api_name="/visualise")
    assert isinstance(translation, str) and translation.strip()
    assert app_module.translator.device_label in status and ("CPU" in status or "GPU" in status)
    # the status counts the tokens: the plots must match them
    n_src = int(status.split(" source tokens")[0].split()[-1])
    n_tgt = int(status.split(" decoder positions")[0].split()[-1])
    assert n_src >= len(SENTENCE.split()) and n_tgt >= 2
    check_overview(overview, n_src, n_src)
    fig, _ = check_detail(detail, n_src, n_src)
    assert "layer 1" in fig["layout"]["title"]["text"] and "mean of 8 heads" in fig["layout"]["title"]["text"]
    # Opening the Architecture tab draws Figure 1 with this session's shapes.
    svg = c.predict(api_name="/figure1")
    assert svg.lstrip().startswith("<svg")
    assert svg == figure1_svg(app_module.translator.cfg, n_src, n_tgt)
    assert new_client(app_module).predict(api_name="/figure1") == figure1_svg(app_module.translator.cfg)  # none yet

    # The same session's cached maps: other kinds, another layer and head, without running the model.
    overview, detail = c.predict("cross", 3, 2, api_name="/render_views")
    check_overview(overview, n_tgt, n_src)
    fig, cross = check_detail(detail, n_tgt, n_src)
    assert "layer 3" in fig["layout"]["title"]["text"] and "head 2" in fig["layout"]["title"]["text"]
    fig, masked = check_detail(c.predict("decoder_self", 2, 5, api_name="/render_detail"), n_tgt, n_tgt)
    assert "layer 2 · head 5" in fig["layout"]["title"]["text"]
    assert np.allclose(np.triu(masked, k=1), 0.0, atol=1e-6)  # §3.1: no attention to later positions

    # The export: npz + JSON with the same maps.
    files = c.predict(api_name="/export")
    names = sorted(Path(f).name for f in files)
    assert names == ["attention.json", "attention.npz"]
    data = json.loads(Path(next(f for f in files if f.endswith(".json"))).read_text(encoding="utf-8"))
    assert data["translation"] == translation
    assert data["shapes"]["cross"] == [6, 8, n_tgt, n_src]
    with np.load(next(f for f in files if f.endswith(".npz"))) as npz:
        assert npz["encoder_self"].shape == (6, 8, n_src, n_src)
        assert np.allclose(npz["cross"][2, 1], cross, atol=1e-5)  # layer 3, head 2 as drawn


def test_teacher_forcing_through_visualise(client):
    translation, status, _, detail = client.predict(
        "Two dogs are running through the snow.", "Zwei Hunde laufen durch den Schnee.", "cross", 6, 8,
        api_name="/visualise")
    assert translation == "Zwei Hunde laufen durch den Schnee."
    assert "teacher forcing" in status
    title = figure(detail)["layout"]["title"]["text"]
    assert "Encoder–decoder" in title and "layer 6 · head 8" in title


def test_export_before_visualise_is_a_clear_error(app_module):
    with pytest.raises(Exception, match="Nothing to export yet") as info:
        new_client(app_module).predict(api_name="/export")
    assert "Traceback" not in str(info.value)


def test_translate_returns_a_string(client):
    out = client.predict("Two dogs are running through the snow.", api_name="/translate")
    assert isinstance(out, str) and out.strip()
    greedy = client.predict("Two dogs are running through the snow.", 1, api_name="/translate")
    assert isinstance(greedy, str) and greedy.strip()


def test_attention_returns_every_map(client):
    data = client.predict(SENTENCE, api_name="/attention")
    assert isinstance(data, dict)
    src, tgt = data["source_tokens"], data["target_tokens"]
    assert src[-1] == "</s>" and tgt[0] == "<s>" and isinstance(data["translation"], str)
    s, t = len(src), len(tgt)
    for kind, shape in (("encoder_self", (6, 8, s, s)), ("decoder_self", (6, 8, t, t)), ("cross", (6, 8, t, s))):
        arr = np.asarray(data[kind], dtype=np.float64)
        assert arr.shape == shape, kind
        assert data["shapes"][kind] == list(shape)
        assert np.allclose(arr.sum(axis=-1), 1.0, atol=1e-3), kind


@pytest.mark.parametrize(
    "endpoint, args",
    [
        ("/visualise", ("   ", "", "encoder_self", 1, 0)),
        ("/translate", ("",)),
        ("/attention", ("\t \n",)),
        ("/scaling_live", ("", 1, "encoder_self", 1)),
    ],
)
def test_empty_sentence_is_a_clear_error(client, endpoint, args):
    with pytest.raises(Exception, match="empty") as info:
        client.predict(*args, api_name=endpoint)
    assert "Traceback" not in str(info.value) and 'File "' not in str(info.value)


def test_bad_arguments_are_clear_errors(client):
    with pytest.raises(Exception, match="Beam size"):
        client.predict("A dog.", 99, api_name="/translate")
    with pytest.raises(Exception, match="scale must be a positive number"):
        client.predict("A dog.", "", -1.0, api_name="/attention")


def test_scaling_endpoints_return_plots_and_text(client):
    var_plot, hist_plot, text = client.predict(9, 0, api_name="/scaling_variance")
    for payload in (var_plot, hist_plot):
        assert figure(payload)["data"]
    assert isinstance(text, str) and text.strip()

    weights_plot, curves_plot, text = client.predict(9, 16, 1, 0, api_name="/scaling_saturation")
    for payload in (weights_plot, curves_plot):
        assert figure(payload)["data"]
    assert isinstance(text, str) and text.strip()

    normal, changed, entropy_plot, summary = client.predict(SENTENCE, 1, "encoder_self", 2, api_name="/scaling_live")
    z_normal = array(heatmap(figure(normal))["z"])
    z_changed = array(heatmap(figure(changed))["z"])
    assert z_normal.shape == z_changed.shape and z_normal.shape[0] == z_normal.shape[1] >= len(SENTENCE.split())
    assert not np.allclose(z_normal, z_changed)  # the scale really changed the maps
    assert figure(entropy_plot)["data"]
    assert "Translation with" in summary and "Translation as trained" in summary


def test_no_scaling_lowers_the_mean_entropy(client):
    """Why 1/√d_k: multiplying QKᵀ by 1 instead of 1/√d_k sharpens the softmax (the paper's footnote 4)."""
    trained = client.predict(SENTENCE, api_name="/attention")
    # the same forced target for both, so every kind of map lines up
    unscaled = client.predict(SENTENCE, trained["translation"], 1.0, api_name="/attention")
    assert unscaled["scale"] == pytest.approx(1.0) and trained["scale"] < 1.0
    for kind in ("encoder_self", "cross"):
        assert entropy(unscaled[kind]) < entropy(trained[kind]), kind


def test_a_classroom_of_30_concurrent_translations(app_module):
    """30 people press the button at the same moment: each waits its turn in the queue, none gets an error. (Over the
    REST API, a session each: 30 gradio_client Clients would cost ~8 s of CPU reading the app's description.)"""
    sentences = [f"{n} dogs are running through the snow." for n in range(1, 31)]
    clients = [RawClient(app_module.url) for _ in sentences]  # 30 sessions
    start = threading.Barrier(len(sentences))

    def call(i: int) -> str:
        start.wait(timeout=30)
        answer = clients[i].call("translate", [sentences[i], 4])  # beam 4, as a student gets it
        assert answer.event == "complete", answer.data
        return answer.data[0]

    try:
        with ThreadPoolExecutor(max_workers=len(sentences)) as pool:
            results = list(pool.map(call, range(len(sentences))))  # raises the first error, if any
    finally:
        for client in clients:
            client.close()
    assert len(results) == 30 and all(isinstance(r, str) and r.strip() for r in results)
