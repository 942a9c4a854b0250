"""The alignment (head) view, viz.lines: line opacities are the weights, per the documented encoding."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from model.network.inference import Translator
from viz.encode import plotly_dict, plotly_json
from viz.lines import (
    ALL_HEADS,
    HEAD_COLORS,
    HEAD_DASHES,
    LEVELS,
    LINE_META,
    THRESHOLD,
    TOKEN_META,
    head_color,
    head_dash,
    lines_spec,
)


def softmax_maps(shape: tuple[int, ...], sharpness: float = 3.0, seed: int = 0) -> np.ndarray:
    """Random attention maps (..., Q, K) whose rows sum to 1, some peaked, some spread."""
    z = np.random.default_rng(seed).normal(size=shape) * sharpness
    e = np.exp(z - z.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def line_traces(spec: dict) -> list[dict]:
    return [tr for tr in spec["data"] if "attnLines" in (tr.get("meta") or {})]


def drawn(spec: dict) -> dict[tuple[int, int, int], float]:
    """(head, q, k) -> the opacity its line is drawn with; checks each trace's segments against its meta."""
    out = {}
    for tr in line_traces(spec):
        m = tr["meta"]["attnLines"]
        assert "opacity" not in tr  # the line colour's alpha (a trace opacity darkens a dark page in Chromium)
        assert tr["line"]["color"] == head_color(m["head"], m["level"] / LEVELS)
        opacity = float(tr["line"]["color"].rsplit(",", 1)[1].rstrip(")"))
        assert opacity == m["level"] / LEVELS
        assert tr["x"] == [0, 1, None] * len(m["q"])
        assert tr["y"][0::3] == m["q"] and tr["y"][1::3] == m["k"] and set(tr["y"][2::3]) == {None}
        for q, k in zip(m["q"], m["k"]):
            assert (m["head"], q, k) not in out  # each pair drawn once
            out[m["head"], q, k] = opacity
    return out


@pytest.mark.parametrize("head", [ALL_HEADS, 1, 4])
def test_line_opacity_is_the_weight(head):
    w = softmax_maps((2, 4, 7, 9))  # (L, H, Q, K)
    layer = 2
    spec = lines_spec(w, [f"q{i}" for i in range(7)], [f"k{j}" for j in range(9)], layer, head)
    lines = drawn(spec)
    heads = range(1, 5) if head == ALL_HEADS else [head]
    want = {(h, q, k) for h in heads for q in range(7) for k in range(9) if w[layer - 1, h - 1, q, k] >= THRESHOLD}
    assert set(lines) == want  # every weight >= 0.05 has its line, no other pair does
    for (h, q, k), opacity in lines.items():
        weight = w[layer - 1, h - 1, q, k]
        assert abs(opacity - weight) <= 0.5 / LEVELS + 1e-6
        assert opacity == round(float(weight) * LEVELS) / LEVELS
    assert len(lines) > 10
    # the colour is the head's, in both views
    for tr in line_traces(spec):
        m = tr["meta"]["attnLines"]
        assert tr["line"]["color"] == head_color(m["head"], m["level"] / LEVELS)


def test_all_heads_have_distinct_colours_and_a_legend_each():
    w = softmax_maps((1, 8, 5, 5), sharpness=0.3)  # spread: every head draws lines
    spec = lines_spec(w, list("abcde"), list("vwxyz"), 1, ALL_HEADS)
    assert len(set(HEAD_COLORS)) == len(HEAD_COLORS) == 8
    colours = {(tr["meta"]["attnLines"]["head"], tr["line"]["color"].rsplit(",", 1)[0]) for tr in line_traces(spec)}
    assert sorted(h for h, _ in colours) == list(range(1, 9)) and len({c for _, c in colours}) == 8  # rgb, not alpha
    legend = [tr["name"] for tr in spec["data"] if tr.get("showlegend")]
    assert legend == [str(h) for h in range(1, 9)] and spec["layout"]["legend"]["title"]["text"] == "heads"
    # … and a line style each (colour is not the only channel), the legend's sample drawn in its head's
    styles = {(tr["meta"]["attnLines"]["head"], tr["line"]["dash"]) for tr in line_traces(spec)}
    assert sorted(styles) == [(h, head_dash(h)) for h in range(1, 9)] and len(set(HEAD_DASHES)) == 8
    assert [(tr["line"]["color"], tr["line"]["dash"]) for tr in spec["data"] if tr.get("showlegend")] == [
        (HEAD_COLORS[h - 1], HEAD_DASHES[h - 1]) for h in range(1, 9)]
    one = lines_spec(w, list("abcde"), list("vwxyz"), 1, 3)
    assert {tr["line"]["dash"] for tr in line_traces(one)} == {"solid"}  # one head: plain lines
    assert not one["layout"]["showlegend"] and not any(tr.get("showlegend") for tr in one["data"])
    assert all(tr["legendgroup"] == f"head {tr['meta']['attnLines']['head']}" for tr in line_traces(spec))


def test_token_columns_carry_the_index_for_the_page_script():
    spec = lines_spec(softmax_maps((1, 2, 3, 4)), list("abc"), list("wxyz"), 1, 2)
    q_col, k_col = spec["data"][-2:]
    assert q_col["meta"] == {TOKEN_META: "q"} and q_col["customdata"] == [0, 1, 2] and q_col["x"] == [0] * 3
    assert k_col["meta"] == {TOKEN_META: "k"} and k_col["customdata"] == [0, 1, 2, 3] and k_col["x"] == [1] * 4
    assert k_col["yaxis"] == "y2" and spec["layout"]["yaxis2"]["range"] == spec["layout"]["yaxis"]["range"]
    assert (LINE_META, TOKEN_META) == ("attnLines", "attnTokens")


def test_tokens_are_escaped():
    tokens = ["▁<b>bold</b>", "<a href='x'>", "$x$"]
    spec = plotly_dict(lines_spec(softmax_maps((1, 1, 3, 3)), tokens, tokens, 1, 1, title="<i>t</i>"))
    text = json.dumps([spec["layout"][ax]["ticktext"] for ax in ("yaxis", "yaxis2")]
                      + [tr.get("text") for tr in spec["data"]] + [spec["layout"]["title"]["text"]])
    for raw in ("<b>", "<a ", "$x$", "<i>"):
        assert raw not in text
    assert "&lt;b&gt;bold&lt;/b&gt;" in spec["layout"]["yaxis"]["ticktext"][0]


def test_projector_and_dark_mode_friendly():
    spec = lines_spec(softmax_maps((1, 2, 3, 3)), list("abc"), list("xyz"), 1, ALL_HEADS)
    layout = spec["layout"]
    assert layout["paper_bgcolor"] == layout["plot_bgcolor"] == "rgba(0,0,0,0)"
    assert layout["font"]["size"] >= 14 and layout["yaxis"]["tickfont"]["size"] >= 14
    go.Figure(spec)  # a valid plotly figure (plotly validates every property)


def test_sixty_tokens_a_side_is_bounded():
    w = softmax_maps((6, 8, 60, 60), sharpness=2.0)
    tokens = [f"▁word{i}" for i in range(60)]
    spec = lines_spec(w, tokens, tokens, 3, ALL_HEADS)
    size = len(plotly_json(spec))
    assert len(spec["data"]) <= 8 * LEVELS + 8 + 2
    n_lines = sum(len(tr["meta"]["attnLines"]["q"]) for tr in line_traces(spec))
    assert n_lines <= 8 * 60 / THRESHOLD  # at most 20 weights >= 0.05 per softmax row
    assert size < 400_000


@pytest.mark.parametrize("layer, head, match", [(0, 0, "layer must be"), (3, 0, "layer must be"),
                                                (1, 5, "head must be"), (1, -1, "head must be"),
                                                (1.5, 0, "layer must be"), (1, "2", "head must be")])
def test_bad_choices_are_value_errors(layer, head, match):
    with pytest.raises(ValueError, match=match):
        lines_spec(softmax_maps((2, 4, 3, 3)), list("abc"), list("xyz"), layer, head)


def test_bad_maps_are_value_errors():
    with pytest.raises(ValueError, match="shape"):
        lines_spec(softmax_maps((4, 3, 3)), list("abc"), list("xyz"))
    with pytest.raises(ValueError, match="key_tokens"):
        lines_spec(softmax_maps((1, 4, 3, 3)), list("abc"), list("xy"))


def test_model_maps_draw_as_the_word_alignment(tiny_model_dir):
    r = Translator(tiny_model_dir, device="cpu").attention("a red dog runs in the park.")
    for kind in ("cross", "decoder_self", "encoder_self"):
        maps = r.maps(kind)
        spec = lines_spec(maps, *r.tokens(kind), 2, ALL_HEADS)
        for (h, q, k), opacity in drawn(spec).items():
            assert opacity == round(float(maps[1, h - 1, q, k]) * LEVELS) / LEVELS
            assert kind != "decoder_self" or k <= q  # the causal mask: no line to a later position
