"""The presenters of viz/views/ without a server: the tiny model's results in, finished figures and text out.

Every number a figure shows is checked against the model's own maps, recomputed here.
"""

from __future__ import annotations

import functools
import html
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go
import pytest
from helpers.plotly import array

from model.network.inference import ASSETS, Translator
from model.serving.runs import Runs
from model.terms import KINDS
from viz.architecture import figure1_svg
from viz.heatmaps import COLORSCALE, HEAD_LABEL, LAYER_LABEL, WEIGHT_TICKS, weight_bar_html
from viz.views import architecture, scaling
from viz.views.attention import maps as attention
from viz.views.exports import ExportFolder
from viz.views.model_card import model_card
from viz.views.outputs import Figure, finish_figure
from viz.vocab import AXIS_LABELS, KIND_LABELS

TEXT = "a big dog runs in the park."


@pytest.fixture(scope="module")
def translator(tiny_model_dir) -> Translator:
    return Translator(tiny_model_dir, device="cpu")


@pytest.fixture(scope="module")
def result(translator):
    return translator.attention(TEXT)


def heatmaps(fig: Figure) -> list[dict]:
    return [t for t in fig["data"] if t["type"] == "heatmap"]


def entropy(maps: np.ndarray) -> np.ndarray:
    """Mean entropy (nats) of each head's rows: (L, H, Q, K) -> (L, H)."""
    w = maps.astype(np.float64)
    return -(w * np.log(np.where(w > 0, w, 1.0))).sum(-1).mean(-1)


def test_the_views_speak_the_models_kinds():
    assert set(KIND_LABELS) == set(AXIS_LABELS) == set(KINDS)
    assert [kind for _, kind in attention.KIND_CHOICES] == list(KINDS)


def test_check_view_accepts_the_choices_and_names_the_ranges(translator):
    cfg = translator.cfg  # tiny: 2 layers, 4 heads
    assert attention.check_view(cfg, "cross", 2, 4) == ("cross", 2, 4)
    assert attention.check_view(cfg, "cross", 2.0, None) == ("cross", 2, attention.MEAN)
    with pytest.raises(ValueError, match="Unknown attention kind 'both'"):
        attention.check_view(cfg, "both", 1, 0)
    for layer, head in ((3, 0), (-1, 1), (1, 5), (1, -1), ("abc", 0), (float("nan"), 0), (1, float("inf"))):
        with pytest.raises(ValueError, match="Layer must be 1–2 and head 0–4"):
            attention.check_view(cfg, "encoder_self", layer, head)
    assert attention.head_choices(4) == [("mean", 0), ("1", 1), ("2", 2), ("3", 3), ("4", 4)]


@pytest.mark.parametrize("kind", KINDS)
def test_overview_shows_every_weight_of_the_model_in_whole_percent(result, kind):
    fig = attention.overview_plot(result, kind)
    (trace,) = heatmaps(fig)
    z = array(trace["z"])
    maps = result.maps(kind)  # (L, H, Q, K)
    q_tokens, k_tokens = result.tokens(kind)
    rows = {i: m for i, label in enumerate(trace["y"]) if (m := re.match(LAYER_LABEL + r"(\d+)", label))}
    cols = {j: m for j, label in enumerate(trace["x"]) if (m := re.match(HEAD_LABEL + r"(\d+)", label))}
    assert len(rows) == maps.shape[0] * len(q_tokens) and len(cols) == maps.shape[1] * len(k_tokens)
    for i, row in rows.items():
        layer, query = int(row[1]), int(row[2])
        for j, col in cols.items():
            head, key = int(col[1]), int(col[2])
            assert z[i, j] == round(float(maps[layer - 1, head - 1, query, key]) * 100)
    assert "title" not in fig["layout"] and fig["layout"]["margin"]["t"] >= 30
    assert fig["config"]["toImageButtonOptions"]["filename"] == f"{kind}_all_heads"


def test_detail_is_one_head_or_the_mean_of_the_layers_heads(translator, result):
    cfg = translator.cfg
    fig = attention.detail_plot(cfg, result, "cross", 2, attention.MEAN)
    np.testing.assert_allclose(array(heatmaps(fig)[0]["z"]), result.cross[1].mean(axis=0), atol=1e-6)
    assert fig["layout"]["title"]["text"] == "Encoder–decoder attention · layer 2 · mean of 4 heads"
    assert fig["config"]["toImageButtonOptions"]["filename"] == "cross_layer2_mean"
    assert fig["layout"]["yaxis"]["title"]["text"] == "decoder position: input token (query)"

    fig = attention.detail_plot(cfg, result, "decoder_self", "1", "3")
    np.testing.assert_array_equal(array(heatmaps(fig)[0]["z"]), result.decoder_self[0, 2])
    assert fig["layout"]["title"]["text"].endswith("layer 1 · head 3")
    assert fig["config"]["toImageButtonOptions"]["filename"] == "decoder_self_layer1_head3"

    assert attention.detail_plot(cfg, None, "cross", 9, 9) is None  # nothing to draw yet: no complaint
    assert attention.views(cfg, None, "cross", 1, 0) == (None, None)
    with pytest.raises(ValueError, match="Layer must be"):
        attention.views(cfg, result, "cross", 3, 0)


def test_status_text_counts_the_tokens_and_says_what_is_shown(translator, result):
    text = attention.status_text(result, "CPU (float32)")
    assert f"{len(result.source_tokens)} source tokens, {len(result.target_tokens)} decoder positions" in text
    assert "the model's greedy translation" in text and "**CPU (float32)**" in text
    forced = translator.attention(TEXT, target="ein hund.")
    forced.warnings.append("cut short")
    text = attention.status_text(forced, "CPU")
    assert "teacher forcing" in text and text.endswith("⚠️ cut short")


def test_the_status_line_says_what_the_dot_of_a_word_piece_means_with_a_word_of_the_sentence():
    """"eine ·m", "·ing": the figures mark a piece that continues a word with "·"; the status line says so where
    the sentence has such a piece, and names one ("eine ·m = einem"); a sentence of whole words needs no note."""
    from types import SimpleNamespace

    from viz.text import PIECE_NOTE, piece_example

    assert piece_example(["<s>", "▁Eine", "▁Frau", "▁mit", "▁eine", "m", "▁Hut", "."]) == "eine ·m = einem"
    assert piece_example(["▁A", "▁juggle", "r", "▁perform", "s", "."]) == "juggle ·r = juggler"
    assert piece_example(["▁half", "p", "i", "pe"]) == "half ·p ·i ·pe = halfpipe"
    assert piece_example(["▁A", "▁dog", ".", "</s>", "<s>", "▁Ein"]) is None  # whole words, punctuation, specials
    def shown(source, target):  # what status_text reads of a result
        return SimpleNamespace(teacher_forced=False, source_tokens=source, target_tokens=target, warnings=[])

    text = attention.status_text(shown(["▁A", "▁juggle", "r", "</s>"], ["<s>", "▁Ein"]), "CPU")
    assert f"{PIECE_NOTE}: juggle ·r = juggler." in text
    assert "·" not in attention.status_text(shown(["▁A", "▁dog", "</s>"], ["<s>", "▁Ein"]), "CPU")


def test_how_to_read_explains_the_word_piece_dot_on_every_tab_that_shows_pieces():
    from viz.views.reading import HOW_TO_READ

    for tab in ("attention", "decoding", "inside", "heads", "scaling", "lab"):
        assert "“·”" in HOW_TO_READ[tab] and "continues the word before it" in HOW_TO_READ[tab], tab


def test_clicks_from_the_page_script(translator):
    cfg = translator.cfg
    assert attention.tile_from_click(cfg, "2,4,1712345678901") == (2, 4)
    for message in ("3,1,1", "1,5,1", "x,1,1", "1", "", None):
        assert attention.tile_from_click(cfg, message) is None
    assert architecture.kind_from_click("decoder_self|1712345678901") == "decoder_self"
    assert architecture.kind_from_click("<b>|1") is None and architecture.kind_from_click(None) is None


def test_figure1_has_the_sessions_shapes_once_it_has_a_sentence(translator, result):
    assert architecture.figure1_for(translator.cfg, None) == figure1_svg(translator.cfg)
    svg = architecture.figure1_for(translator.cfg, result)
    assert svg == figure1_svg(translator.cfg, len(result.source_tokens), len(result.target_tokens))
    assert f"(1, {len(result.source_tokens)}) token ids" in svg


def test_export_files_hold_the_maps(result, tmp_path):
    exports = ExportFolder(tmp_path)
    npz, js = map(Path, attention.export_files(exports, result))
    assert (npz.name, js.name) == ("attention.npz", "attention.json")
    with np.load(npz) as data:
        np.testing.assert_array_equal(data["cross"], result.cross)
    assert json.loads(js.read_text(encoding="utf-8"))["translation"] == result.translation
    with pytest.raises(ValueError, match="Nothing to export yet"):
        attention.export_files(exports, None)


def test_api_checks():
    assert attention.check_beam(4) == 4 and attention.check_beam("1") == 1
    for beam in (0, 9, "abc", None, float("nan")):
        with pytest.raises(ValueError, match="Beam size must be between 1 and 8"):
            attention.check_beam(beam)
    assert attention.check_scale(None) is None and attention.check_scale(0.5) == 0.5
    for scale in (0, -1.0, 101, float("inf"), "0.5", [1]):
        with pytest.raises(ValueError, match="scale must be a positive number"):
            attention.check_scale(scale)


def test_finish_figure_keeps_a_title_and_clears_gradios_badge_without_one():
    spec = {"data": [{"type": "bar", "y": np.arange(3, dtype=np.float32)}], "layout": {"title": {"text": ""}}}
    fig = finish_figure(spec, "bars")
    assert isinstance(fig, Figure) and "title" not in fig["layout"] and fig["layout"]["margin"] == {"t": 30}
    assert fig["config"] == {"displaylogo": False,
                             "toImageButtonOptions": {"format": "png", "filename": "bars", "scale": 2}}
    titled = finish_figure(go.Figure(layout=dict(title=dict(text="T"), margin=dict(t=80))), "t")
    assert titled["layout"]["title"]["text"] == "T" and titled["layout"]["margin"]["t"] == 80
    json.dumps(fig)  # plain JSON


def test_model_card(tmp_path):
    assert model_card(tmp_path, "CPU") == "Model running on **CPU**.\n\nNo model card was shipped."
    (tmp_path / "MODEL_CARD.md").write_text("# Card", encoding="utf-8")
    assert model_card(tmp_path, "GPU").endswith("\n\n# Card")


# ---- the "Why 1/√d_k" tab
def test_the_factor_says_what_it_multiplies_by_with_one_meaning_on_every_part():
    assert scaling.factor_label(24 ** -0.5, 24) == "× 1/√24 = × 0.204 (the model's own 1/√d_k)"
    assert scaling.factor_label(0.2041, 24) == "× 1/√24 = × 0.204 (the model's own 1/√d_k)"  # the slider's value
    assert scaling.factor_label(1.0, 24) == "× 1 (no scaling)" and scaling.factor_label(0.5, 24) == "× 0.5 = × 1/√4"
    assert scaling.factor_label(0.0, 24) == "× 0 (every key the same weight)"
    assert scaling.factor_label(1 / 8, 64, "the paper's") == "× 1/√64 = × 0.125 (the paper's 1/√d_k)"
    assert scaling.snapped(0.2043, 24) == pytest.approx(24 ** -0.5, rel=1e-12) and scaling.snapped(0.21, 24) == 0.21
    cfg = SimpleNamespace(d_k=24, scale=24 ** -0.5)
    note = scaling.factor_note(cfg, 0.5, 9)  # the same 0.5 for the random vectors (d_k = 512) and the model
    assert note.startswith("**Every q·k on this tab × 0.5** (= × 1/√4)")
    assert "× 1/√512 = × 0.0442 for the random vectors" in note and "× 1/√24 = × 0.204 for the model" in note
    assert "(no scaling)" in scaling.factor_note(cfg, 1, 4) and "× 0.2041**" in scaling.factor_note(cfg, 0.2041, 4)
    with pytest.raises(ValueError, match="between 0 and 1"):
        scaling.factor_note(cfg, 1.5, 4)


def test_variance_and_saturation_views():
    var_fig, hist_fig, text = scaling.variance_view(9, 0, device="cpu")
    assert var_fig["config"]["toImageButtonOptions"]["filename"] == "variance" and hist_fig["data"]
    assert "at d_k = 512 the variance of q·k" in text and "between" in text
    weights_fig, curves_fig, text = scaling.saturation_view(4, 8, 1, 0, device="cpu")
    assert [t["type"] for t in weights_fig["data"]] == ["bar", "bar"]
    assert all(array(t["y"]).shape == (8,) for t in weights_fig["data"]) and curves_fig["data"]
    assert "One random query meets 8 random keys with d_k = 16" in text


def test_live_view_runs_the_trained_model_with_the_chosen_factor(translator):
    cfg, runs = translator.cfg, []

    def attention_run(text, target=None, scale=None):
        runs.append((target, scale))
        return translator.attention(text, target=target, scale=scale)

    def trained(text):
        runs.append("trained")
        return translator.attention(text)

    normal, changed, entropies, summary = scaling.live_view(cfg, attention_run, trained, TEXT, 1, "encoder_self", 2)
    as_trained = translator.attention(TEXT)
    forced = translator.attention(TEXT, target=as_trained.translation or None, scale=1.0)
    # encoder self-attention reads the source alone: the changed model's own run gives the forced run's maps
    assert runs == ["trained", (None, 1.0)]
    np.testing.assert_allclose(array(heatmaps(normal)[0]["z"]), as_trained.encoder_self[1].mean(0), atol=1e-6)
    np.testing.assert_allclose(array(heatmaps(changed)[0]["z"]), forced.encoder_self[1].mean(0), atol=1e-6)
    title = changed["layout"]["title"]  # the layer and head on a second line: one line was cut on a phone
    assert title["text"] == "changed: × 1 (no scaling)"
    assert title["subtitle"]["text"] == "layer 2 · mean of 4 heads · colour: weight"  # its colour bar has no title
    assert all(plot["data"][0]["colorbar"]["title"]["text"] == "" for plot in (normal, changed))
    (rows,) = (array(t["z"]) for t in heatmaps(entropies))  # the changed model's layers, two empty rows, the trained's
    ent_changed, ent_trained = rows[:cfg.n_layers], rows[cfg.n_layers + 2:]
    np.testing.assert_allclose(ent_trained, entropy(as_trained.encoder_self), atol=1e-4)
    np.testing.assert_allclose(ent_changed, entropy(forced.encoder_self), atol=1e-4)
    unscaled = translator.attention(TEXT, scale=1.0).translation
    assert f"**Translation with × 1 (no scaling):** {unscaled or '(empty)'}" in summary
    assert f"**Translation as trained:** {as_trained.translation or '(empty)'}" in summary

    # the slider at the model's own 1/√d_k (to its step): the changed model is the trained one; cross-attention
    # reads the target: the changed model runs on the trained model's translation
    normal, changed, *_ = scaling.live_view(cfg, attention_run, trained, TEXT, scaling.slider_value(cfg.scale),
                                            "cross", 1)
    target, scale = runs[-1]
    assert target == (as_trained.translation or None) and scale == pytest.approx(cfg.scale)
    np.testing.assert_allclose(array(heatmaps(changed)[0]["z"]), array(heatmaps(normal)[0]["z"]), atol=1e-6)
    assert "changed: × 1/√8 = × 0.354 (the model&#39;s own 1/√d_k)" in changed["layout"]["title"]["text"]
    # one meaning: the same factor in part 2 (random vectors) and part 3 (the model)
    scaling.live_view(cfg, attention_run, trained, TEXT, 0.5, "cross", 1)
    assert runs[-1] == (None, 0.5)
    *_, text = scaling.saturation_view(9, 8, 0.5, 0, device="cpu")
    assert "Multiplied by 0.5 instead" in text
    with pytest.raises(ValueError, match="Unknown attention kind"):
        scaling.live_view(cfg, attention_run, trained, TEXT, 0, "all", 1)


def test_the_page_shows_a_runs_maps_with_their_captions_and_one_colour_bar_for_both(translator):
    """viz.views.scaling.live_frames / page_map: each map's title becomes its caption (plain text: the page writes it
    above the map), the maps go without their colour bars (one for both: weight_bar_html, the same colours on 0…1),
    and get them back when saved; all else as the endpoint answers. The entropy figure as it is."""
    cfg = translator.cfg
    out = scaling.live_view(cfg, translator.attention, translator.attention, TEXT, scaling.slider_value(cfg.scale),
                            "cross", 1)
    sent = json.loads(scaling.live_frames(out)[0])
    assert sent["figures"]["live-entropy"] == json.loads(json.dumps(out[2]))
    bar = weight_bar_html()
    for plot_id, answered in zip(scaling.LIVE_PLOTS[:2], out[:2]):
        api, shown = json.loads(json.dumps(answered)), sent["figures"][plot_id]
        title = api["layout"].pop("title")
        assert sent["captions"][f"{plot_id}-caption"] == [html.unescape(title["text"]),
                                                          html.unescape(title["subtitle"]["text"])]
        assert "title" not in shown["layout"] and shown["data"][0].pop("showscale") is False
        assert shown["layout"]["meta"]["export"].pop("showscale") is True
        top, right = scaling.CAPTION_TOP, scaling.BAR_RIGHT  # no title above, no bar beside
        assert shown["layout"].pop("margin") == {**api["layout"].pop("margin"), "t": top, "r": right}
        assert shown["layout"]["meta"].pop("margins") == {**api["layout"]["meta"].pop("margins"), "r": right}
        assert shown == api, plot_id  # all else as answered
        heatmap = shown["data"][0]  # the shared bar's colours and range
        assert (heatmap["zmin"], heatmap["zmax"]) == (0, 1)
        assert heatmap["colorscale"] == [list(stop) for stop in COLORSCALE]
    assert "the model's own" in sent["captions"]["live-changed-caption"][0]  # plain text: the page writes it as such
    ramp = re.search(r"linear-gradient\(to right, ([^)]*)\)", bar).group(1)
    assert ramp == ", ".join(f"{colour} {at * 100:g}%" for at, colour in COLORSCALE)
    assert re.findall(r'left: ([\d.]+)%">([\d.]+)<', bar) == [(f"{v * 100:g}", f"{v:g}") for v in WEIGHT_TICKS]


def test_the_pages_run_sends_its_maps_before_the_decodes_and_ends_where_the_endpoint_does(translator):
    """viz.views.scaling.live_stream: for encoder self-attention a run not cached comes in two answers — the three
    figures from the encoder alone (what the endpoint's live_view draws, number for number), the translations still
    "decoding…" — then the summary as the endpoint's, and each map's export title (it names the translation). A
    cached run, or a kind that reads the translation, is one answer, live_frames(live_view(…)) as it was."""
    cfg, runs = translator.cfg, Runs(translator)
    ran = []

    def source(text, scale):
        ran.append(("source", scale))
        return runs.source_attention(text, scale)

    stream = functools.partial(scaling.live_stream, cfg, runs.attention, runs.trained, both=runs.trained_and_scaled,
                               source=source, cached=runs.has_attention)
    first, last = stream(TEXT, 0.5, "encoder_self", 2)
    endpoint = scaling.live_view(cfg, runs.attention, runs.trained, TEXT, 0.5, "encoder_self", 2)
    assert ran == [("source", 0.5)]  # as trained and changed, one batch
    sent, whole = json.loads(first[0]), json.loads(scaling.live_frames(endpoint)[0])
    assert list(sent["figures"]) == list(scaling.LIVE_PLOTS) and sent["captions"] == whole["captions"]
    for plot_id in scaling.LIVE_PLOTS:
        a, b = sent["figures"][plot_id], whole["figures"][plot_id]
        np.testing.assert_allclose(array(a["data"][0]["z"]), array(b["data"][0]["z"]), atol=1e-6)
        assert a["data"][0]["y"] == b["data"][0]["y"], plot_id
    assert first[1].count(scaling.DECODING) == 2 and "Translation as trained" in first[1]
    done = json.loads(last[0])
    assert "figures" not in done and last[1] == endpoint[3]
    assert done["exports"] == {plot_id: whole["figures"][plot_id]["layout"]["meta"]["export"]["title"]
                               for plot_id in scaling.LIVE_PLOTS[:2]}
    translation = runs.trained(TEXT).translation
    assert html.escape(translation or "(empty)") in done["exports"]["live-normal"]
    # now cached (and any kind that reads the translation): one answer, the maps with the translations
    for kind in ("encoder_self", "cross"):
        ran.clear()
        (only,) = stream(TEXT, 0.5, kind, 1)
        assert ran == [] and only[1] == scaling.live_view(cfg, runs.attention, runs.trained, TEXT, 0.5, kind, 1)[3]
        assert set(json.loads(only[0])["figures"]) == set(scaling.LIVE_PLOTS)
    with pytest.raises(ValueError, match="Unknown attention kind"):
        next(stream(TEXT, 0.5, "all", 1))


def test_runs_cache_the_trained_model(translator):
    """(On a ZeroGPU Space only the ablation's sample is lent a GPU: tests/test_zerogpu.py.)"""
    runs = Runs(translator)
    assert runs.toy_device == translator.device
    forced = runs.attention(TEXT, "", 1.0)  # an empty target means the model's own translation
    assert not forced.teacher_forced and forced.scale == 1.0
    assert runs.translate(TEXT, 1) == translator.translate(TEXT, beam=1)
    assert runs.trained(TEXT) is runs.trained(TEXT)  # computed once per sentence


def test_where_the_changed_model_translates_the_same_the_page_points_at_the_maps():
    note = scaling.same_translation_note(1.0, 0.2, "Ein Hund.", "Ein Hund.", np.array([2.0, 1.0]), np.array([1.0, 0.5]))
    assert note.startswith("**The same translation**") and "sharper (mean attention entropy 1.50 → 0.75 nats)" in note
    assert "flatter" in scaling.same_translation_note(0.1, 0.2, "a", "a", np.array([1.0]), np.array([2.0]))
    assert scaling.same_translation_note(1.0, 0.2, "Ein Hund.", "Zwei Hunde.", np.ones(2), np.ones(2)) == ""
    assert scaling.same_translation_note(0.2, 0.2, "a", "a", np.ones(2), np.ones(2)) == ""  # nothing changed
    # the shipped model on the tab's first sentence: unscaled, the same words, sharper maps (the page says so)
    shipped = Translator(ASSETS, device="cpu")
    *_, summary = scaling.live_view(shipped.cfg, shipped.attention, shipped.attention, attention.DEFAULT_SOURCE, 1,
                                    "encoder_self", 1)
    assert "**The same translation**" in summary and "the heads are sharper" in summary
    assert shipped.attention(attention.DEFAULT_SOURCE, scale=1.0).translation == \
        shipped.attention(attention.DEFAULT_SOURCE).translation


def test_the_encoder_alone_gives_the_maps_a_whole_run_gives(translator):
    """Translator.source_attention: encoder self-attention at several scales in one batch, each row as
    attention(text, scale=…) gives it; no translation, no decoder rows. Runs caches the pair read-only."""
    normal, changed = translator.source_attention(TEXT, (None, 0.5))
    for result, scale in ((normal, None), (changed, 0.5)):
        whole = translator.attention(TEXT, scale=scale)
        np.testing.assert_allclose(result.encoder_self, whole.encoder_self, atol=1e-6)
        assert result.source_tokens == whole.source_tokens and result.scale == whole.scale
        assert result.translation == "" and result.target_tokens == [] and result.cross.shape[2] == 0
    pair = Runs(translator).source_attention(TEXT, 0.5)
    assert all(not result.encoder_self.flags.writeable for result in pair)
