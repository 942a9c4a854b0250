"""Long sentences stay readable, without a browser: the close-up's focus and its tick labels.

- ``focus_map``: a token range keeps the model's weights and the tokens' own positions; hiding <s>/</s>
  renormalises every row over the keys that remain (recomputed here); the title says what changed.
- ``thin_ticks``: beyond 30 tokens the labels left are at least one label height apart for the figure's
  height and the narrowest plot (tests/test_browser_long.py measures them in Chromium).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.plotly import array

from model.network.inference import Translator
from viz.heatmaps import detail_spec
from viz.views.attention import maps as attention
from viz.views.attention.focus import (
    LINE_HEIGHT,
    LONG_TOKENS,
    MIN_AXIS_PX,
    Focus,
    check_focus,
    focus_map,
    thin_ticks,
)

SENTENCE = "a big dog runs in the park near the water and a small child plays in the street."


@pytest.fixture(scope="module")
def result(tiny_model_dir):
    translator = Translator(tiny_model_dir, device="cpu")
    target = "ein großer hund rennt in dem park nahe dem wasser und ein kleiner kind spielt in dem straße."
    return translator.attention(SENTENCE, target)


@pytest.fixture(scope="module")
def cfg(tiny_model_dir):
    return Translator(tiny_model_dir, device="cpu").cfg


def test_check_focus_reads_the_controls_and_names_mistakes():
    assert check_focus() == Focus() == check_focus(1, 100, False) == check_focus(None, None, False)
    assert check_focus("3", 20.0, True) == Focus(3, 20, True)
    for first, last, words in ((0, 10, "first token must be between 1 and 100"), (2.5, 10, "got 2.5"),
                               (12, 10, "comes before its first"), (1, float("nan"), "last token")):
        with pytest.raises(ValueError, match=words):
            check_focus(first, last)
    for hide in ("yes", None, 1):  # a checkbox: true or false, nothing else
        with pytest.raises(ValueError, match="true or false"):
            check_focus(1, 10, hide)


def test_a_token_range_is_a_window_with_the_models_weights_and_positions(result):
    weights = result.cross[1, 2]  # (T, S)
    shown = focus_map(weights, result.target_tokens, result.source_tokens, Focus(3, 8))
    np.testing.assert_array_equal(shown.weights, weights[2:8, 2:8])
    assert shown.query_tokens == result.target_tokens[2:8] and shown.key_tokens == result.source_tokens[2:8]
    assert (shown.query_start, shown.key_start) == (2, 2) and shown.note == "tokens 3–8"


def test_hiding_special_tokens_renormalises_every_row(result):
    for kind in ("encoder_self", "cross", "decoder_self"):
        weights = result.maps(kind)[0].mean(axis=0)  # (Q, K)
        q_tokens, k_tokens = result.tokens(kind)
        shown = focus_map(weights, q_tokens, k_tokens, Focus(hide_special=True))
        assert "<s>" not in shown.query_tokens + shown.key_tokens and "</s>" not in shown.key_tokens
        rows = [i for i, t in enumerate(q_tokens) if t not in ("<s>", "</s>")]
        cols = [j for j, t in enumerate(k_tokens) if t not in ("<s>", "</s>")]
        expected = weights[np.ix_(rows, cols)].astype(np.float64)
        expected /= expected.sum(axis=1, keepdims=True)  # recomputed: each row over the keys that remain
        np.testing.assert_allclose(shown.weights, expected, rtol=1e-5, atol=1e-6)
        assert (shown.query_start, shown.key_start) == (rows[0], cols[0])
        assert shown.note == "<s> and </s> hidden, rows renormalised"


def test_a_range_past_the_sentence_is_a_clear_error(result):
    with pytest.raises(ValueError, match="past this side's"):
        focus_map(result.cross[0, 0], result.target_tokens, result.source_tokens, Focus(90, 100))


def test_the_close_up_keeps_positions_and_says_what_it_shows(cfg, result):
    fig = attention.detail_plot(cfg, result, "decoder_self", 2, 0, False, "fixed", 4, 9, True)
    title = fig["layout"]["title"]
    assert title["text"].endswith("layer 2 · mean of 4 heads")  # and below it, smaller, what the focus changed:
    assert title["subtitle"]["text"] == "tokens 4–9 · &lt;s&gt; and &lt;/s&gt; hidden, rows renormalised"
    trace = next(t for t in fig["data"] if t["type"] == "heatmap")
    assert array(trace["y"]).tolist() == list(range(3, 9)) == fig["layout"]["yaxis"]["tickvals"]  # 4…9, 0-based
    assert [int(row[0][2]) for row in trace["customdata"]] == list(range(3, 9))  # the hover's query positions
    shape = fig["layout"]["shapes"][0]["path"]  # the causal mask moves with the window
    assert shape.startswith("M3.5,2.5")
    whole = attention.detail_plot(cfg, result, "decoder_self", 2, 0)
    whole_trace = next(t for t in whole["data"] if t["type"] == "heatmap")
    assert "subtitle" not in whole["layout"]["title"]
    assert array(whole_trace["y"]).tolist() == list(range(len(result.target_tokens)))


def long_spec(n: int, font_px: int = 12) -> dict:
    tokens = [f"\u2581word{i}" for i in range(n)]
    weights = np.full((n, n), 1.0 / n, dtype=np.float32)
    spec = detail_spec(weights, tokens, tokens, "t")
    for axis in ("xaxis", "yaxis"):
        spec["layout"][axis]["tickfont"] = {"size": font_px}
    return spec


@pytest.mark.parametrize("n, font_px", [(20, 12), (31, 12), (60, 12), (100, 12), (100, 16)])
def test_long_axes_keep_labels_at_least_a_line_apart(n, font_px):
    layout = thin_ticks(long_spec(n, font_px))["layout"]
    x, y = layout["xaxis"], layout["yaxis"]
    if n <= LONG_TOKENS:
        assert x["tickvals"] == list(range(n)) and "tickangle" not in x
        return
    assert x["tickangle"] == -90
    for axis, length_px in ((x, MIN_AXIS_PX), (y, layout["height"] - 200)):
        step = axis["tickvals"][1] - axis["tickvals"][0]
        assert step * length_px / n >= LINE_HEIGHT * font_px  # neighbours at least a label height apart
        assert axis["ticktext"] == [f"word{i}" for i in axis["tickvals"]]  # each label still at its position
        assert len(axis["tickvals"]) >= math.floor(n / step)


def test_a_long_sentence_gets_upright_thinned_labels_and_a_focus_shows_them_all(tiny_model_dir, cfg):
    translator = Translator(tiny_model_dir, device="cpu")
    long = translator.attention(" ".join([SENTENCE] * 8), " ".join(["ein hund rennt."] * 40))
    assert len(long.source_tokens) == len(long.target_tokens) == translator.max_tokens == 100  # the input limit
    fig = attention.detail_plot(cfg, long, "cross", 1, 0)
    x, y = fig["layout"]["xaxis"], fig["layout"]["yaxis"]
    assert x["tickangle"] == -90 and 5 <= len(x["tickvals"]) < 50 and 5 <= len(y["tickvals"]) < 100
    focused = attention.detail_plot(cfg, long, "cross", 1, 0, False, "fixed", 41, 60)
    assert focused["layout"]["xaxis"]["tickvals"] == list(range(40, 60))  # 20 tokens: every label
