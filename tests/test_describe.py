"""What every figure says without sight (viz.describe): each summary against the numbers recomputed here by hand, each
table against the values the figure draws; no browser (tests/test_browser_a11y.py checks the page gives them)."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from model.network.inference import Translator
from model.probes.analysis import sentence_stats
from model.terms import BOS_PIECE, EOS_PIECE
from viz import describe
from viz.views import head_analysis
from viz.views.attention import contributions as measures
from viz.views.attention import maps as attention
from viz.views.outputs import finish_figure
from viz.vocab import GERMAN_SIDES, KIND_LABELS

TEXT = "a big dog runs in the park."


@pytest.fixture(scope="module")
def result(tiny_model_dir):
    return Translator(tiny_model_dir, device="cpu").attention(TEXT)


def softmax_rows(rng, shape) -> np.ndarray:
    x = np.exp(rng.normal(size=shape) * 2)
    return x / x.sum(-1, keepdims=True)


def by_hand_pairs(w, q, k, n=3) -> list[str]:
    cells = sorted((-w[i][j], i, j) for i in range(len(q)) for j in range(len(k)) if w[i][j] == w[i][j])
    return [f"'{q[i]}' → '{k[j]}' {-v:.2f}" for v, i, j in cells[:n]]


def test_one_map_names_its_strongest_pairs_and_the_mean_of_its_rows_largest_weight():
    rng = np.random.default_rng(0)
    w = softmax_rows(rng, (4, 5))
    q, k = ["▁Two", "▁dogs", "▁run", "."], ["▁Zwei", "▁Hund", "e", "▁rennen", "</s>"]
    said = describe.attention_map("Cross, layer 1, head 2", w, q, k)
    shown_q, shown_k = ["Two", "dogs", "run", "."], ["Zwei", "Hund", "·e", "rennen", "</s>"]
    mean_max = sum(max(row) for row in w.tolist()) / 4
    assert said.name == "Cross, layer 1, head 2, 4 queries × 5 keys"
    assert said.summary == (f"Strongest: {', '.join(by_hand_pairs(w, shown_q, shown_k))}; "
                            f"the mean of each row's largest weight {mean_max:.2f}.")
    assert (said.table.rows, said.table.columns) == (shown_q, shown_k)
    assert said.table.values == [[round(float(v), 3) for v in row] for row in w]  # what the hover shows (.3f)
    block = said.grid["blocks"][0]
    assert block["x"][0] == [-0.5, 0.5] and block["y"][3] == [2.5, 3.5] and block["labels"] is None


def test_a_masked_map_says_masked_where_the_figure_is_grey_and_never_counts_those_cells():
    w = np.tril(np.full((3, 3), 0.2)) + np.eye(3) * 0.5  # masked cells hold 0 (and would be the smallest anyway)
    masked = np.triu(np.ones((3, 3), dtype=bool), 1)
    said = describe.attention_map("Decoder", w, ["<s>", "▁a", "▁b"], ["<s>", "▁a", "▁b"], masked=masked,
                                  query_start=4, key_start=4, send_rows=["4", "5", "6"])
    assert said.table.values[0] == [0.7, "masked", "masked"] and said.table.values[2][1] == 0.2
    assert said.grid["blocks"][0]["x"][0] == [3.5, 4.5] and said.grid["blocks"][0]["send"] == ["4", "5", "6"]


def test_the_overview_names_sharp_diffuse_and_sink_heads_from_the_maps():
    rng = np.random.default_rng(1)
    maps = softmax_rows(rng, (2, 3, 4, 5))
    maps[1, 2] = 0.02
    maps[1, 2, :, 4] = 0.92  # layer 2, head 3 sinks on </s>
    keys = ["▁a", "▁b", "▁c", ".", EOS_PIECE]
    said = describe.overview("Encoder self-attention", maps, ["▁a", "▁b", "▁c", "."], keys)
    sharp = {(layer, head): maps[layer, head].max(-1).mean() for layer in range(2) for head in range(3)}
    order = sorted(sharp, key=lambda lh: (-sharp[lh], lh))
    top = ", ".join(f"L{la + 1} H{h + 1} {sharp[la, h]:.2f}" for la, h in order[:3])
    low = ", ".join(f"L{la + 1} H{h + 1} {sharp[la, h]:.2f}" for la, h in order[::-1][:3])
    assert said.summary == (f"Sharpest heads (mean of each row's largest weight): {top}; most diffuse: {low}; "
                            f"1 of 6 heads put half their weight or more on </s>: L2 H3 0.92.")
    assert said.name == "Encoder self-attention: all 2 layers × 3 heads, 4 queries × 5 keys"
    assert said.table.columns == ["mean largest weight", "on </s>", "strongest pair"]
    assert said.table.rows[5] == "layer 2, head 3" and said.table.values[5][:2] == [0.92, 0.92]


def test_the_overview_of_the_decoder_says_its_sink_on_the_start_token(result):
    maps = result.maps("decoder_self")
    q, k = result.tokens("decoder_self")
    said = describe.overview(KIND_LABELS["decoder_self"], maps, q, k)
    start = maps[..., [j for j, t in enumerate(k) if t == BOS_PIECE]].sum(-1).mean(-1)  # (L, H)
    assert said.table.columns[1] == "on <s>"
    assert [row[1] for row in said.table.values] == [round(float(v), 3) for v in start.ravel()]
    assert f"{int((start >= describe.SINK).sum())} of {start.size} heads put half their weight" in said.summary


def test_the_figures_carry_their_description_and_the_grids_place_their_tiles(result, translator_cfg):
    overview, detail = attention.views(translator_cfg, result, "cross", 2, 3)
    said = describe.of(overview)
    trace = overview["data"][0]
    for layer, (y0, y1) in enumerate(said["grid"]["blocks"][0]["y"], 1):  # the tile's rows, by their labels
        rows = [i for i, label in enumerate(trace["y"]) if label.startswith(f"L{layer} query ")]
        assert (y0, y1) == (rows[0] - 0.5, rows[-1] + 0.5)
    assert said["grid"]["blocks"][0]["send"][1][2] == "2,3"
    close = describe.of(detail)
    q, k = result.tokens("cross")
    w = result.maps("cross")[1, 2]
    assert close["name"].startswith("Encoder–decoder attention, layer 2, head 3")
    assert close["table"]["values"] == [[round(float(v), 3) for v in row] for row in w]
    assert close["table"]["rows"] == describe.tokens(q) and close["table"]["columns"] == describe.tokens(k)
    json.dumps(overview)  # plain JSON, as the page gets it


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_the_attention_figures_mark_their_german(result, translator_cfg, kind):
    """The target's tokens are German (queries of the decoder's maps, and its self-attention's keys): the close-up's
    table headers and tick labels where they are, and the words its summary and table quote — the target's, less those
    the English side also has and the special tokens. The overview's rows and ticks are heads: only its words."""
    overview, detail = attention.views(translator_cfg, result, kind, 1, 1)
    rows_de, columns_de = GERMAN_SIDES[kind]
    q, k = (describe.tokens(t) for t in result.tokens(kind))
    english = {*(q if not rows_de else ()), *(k if not columns_de else ())}
    words = {t for t in (*(q if rows_de else ()), *(k if columns_de else ())) if t not in english
             and not t.startswith("<") and any(c.isalpha() for c in t)}
    de = lambda on: "de" if on else None  # noqa: E731
    if kind == "encoder_self":
        assert "lang" not in describe.of(detail) and "lang" not in describe.of(overview)
        return
    lang = describe.of(detail)["lang"]
    assert {key: lang[key] for key in ("rows", "columns", "y", "x")} == {
        "rows": de(rows_de), "columns": de(columns_de), "y": de(rows_de), "x": de(columns_de)}
    assert set(lang["words"]) == words and len(lang["words"]) == len(words)
    assert describe.of(overview).get("lang") == ({"rows": None, "columns": None, "y": None, "x": None,
                                                  "words": lang["words"]} if words else None)


def test_a_description_s_german_words_are_its_german_side_s_alone_longest_first():
    table = describe.Table("t", "q \\ k", ["a", "dog", "in", "."], ["ein", "Hund", "in", ".", "</s>", "Hunde"], [])
    said = describe.Description("n", "s", table).in_german(True, False)
    assert said.lang == {"rows": "de", "columns": None, "y": "de", "x": None, "words": ["Hunde", "Hund", "ein"]}
    bars = describe.Description("n", "s", table).in_german(True, False, y=False, x=True, words=["Zwei", "<s>"])
    assert (bars.lang["y"], bars.lang["x"], bars.lang["words"]) == (None, "de", ["Zwei"])
    assert describe.Description("n", "s", table).in_german(False, False).lang is None


def test_the_close_up_of_contributions_says_contribution(result, translator_cfg):
    figure = attention.detail_plot(translator_cfg, result, "encoder_self", 1, 1)
    figure = measures.relabel(figure, measures.CONTRIBUTIONS)  # (a copy: the drawn one may be kept, viz.views.memo)
    said = describe.of(figure)
    assert "largest contribution" in said["summary"] and "weight" not in said["summary"]
    assert "contribution of each query" in said["table"]["caption"]


def test_head_analysis_names_highest_lowest_and_roles(result):
    stats = sentence_stats(result)
    figure = head_analysis.stats_grid_plot(stats, "entropy")
    said = describe.of(figure)
    kind = "encoder_self"
    v = stats.mean(kind, "entropy")
    order = sorted((-v[la, h], la, h) for la in range(v.shape[0]) for h in range(v.shape[1]))
    top = ", ".join(f"L{la + 1} H{h + 1} {-x:.2f}" for x, la, h in order[:3])
    assert f"{KIND_LABELS[kind]}: highest {top}; lowest" in said["summary"]
    roles = stats.roles()[kind]
    assert said["table"]["values"][1] == [round(float(v[0, 1]), 3), roles[0][1]]
    blocks = said["grid"]["blocks"]
    assert [b["xaxis"] for b in blocks] == ["x", "x2", "x3"] and blocks[1]["send"][0][0] == "decoder_self,1,1"


def test_any_other_figure_is_read_from_its_own_traces():
    fig = go.Figure([go.Scatter(x=[0, 100, 200, 300], y=[5.0, 2.5, 3.0, 2.8], name="h8 <b>loss</b>"),
                     go.Scatter(x=[0, 200], y=[6.0, 1.0], name="h1"),
                     go.Bar(x=[0, 1], y=[0.9, 0.1], xaxis="x2", yaxis="y2")])
    fig.update_layout(title="Training curves", xaxis_title="step", yaxis2=dict(title="probability"),
                      xaxis2=dict(tickvals=[0, 1], ticktext=["Haus", "&lt;b&gt;"]))
    said = describe.of(finish_figure(fig, "lab_curves"))
    assert said["name"] == "Training curves"
    assert said["summary"] == ("h8 loss: 5 at 0 to 2.8 at 300, highest 5 at 0, lowest 2.5 at 100; h1: 0 6, 200 1; "
                               "probability: Haus 0.9, <b> 0.1.")  # (three points or fewer: each one)
    table = said["table"]
    assert table["corner"] == "step" and table["columns"] == ["h8 loss", "h1", "probability"]
    assert table["rows"] == ["0", "100", "200", "300", "Haus", "<b>"]  # every x drawn, one column per trace
    assert table["values"] == [[5.0, 6.0, None], [2.5, None, None], [3.0, 1.0, None], [2.8, None, None],
                               [None, None, 0.9], [None, None, 0.1]]


def test_a_large_heatmap_s_table_is_its_trace_as_drawn():
    z = np.arange(80 * 60, dtype=np.float32).reshape(80, 60) / 4800
    said = describe.of(finish_figure(go.Figure(go.Heatmap(z=z)), "big"))  # typed array (bdata) in the JSON
    assert said["table"]["values"] == {"trace": 0} and len(said["table"]["rows"]) == 80
    assert said["summary"].startswith("80 rows × 60 columns, from 0 to 1; largest: 79 → 59 1, 79 → 58 1")


def test_figure_text_is_plain_text():
    assert describe.plain("a<br>b <sub>k</sub> &lt;s&gt; <b>x</b>") == "a · b _k <s> x"


@pytest.fixture(scope="module")
def translator_cfg(tiny_model_dir):
    return Translator(tiny_model_dir, device="cpu").cfg


def test_the_alignment_view_says_how_many_lines_and_each_heads_strongest_pairs(result):
    from viz.views.attention.alignment import alignment_plot

    w = result.maps("cross")[0]  # (H, Q, K)
    q, k = (describe.tokens(t) for t in result.tokens("cross"))
    said = describe.of(alignment_plot(result, "cross", 1, 0))
    assert said["summary"].startswith(f"{int((w >= 0.05).sum())} lines (weights of 0.05 or more). Strongest per "
                                      f"head: head 1: {', '.join(by_hand_pairs(w[0], q, k, 2))}; head 2:")
    assert said["table"]["rows"][len(q)] == f"head 2: {q[0]}"
    assert said["table"]["values"][len(q)] == [round(float(v), 3) for v in w[1, 0]]
    one = describe.of(alignment_plot(result, "cross", 1, 2))
    assert one["name"] == f"Alignment view: {KIND_LABELS['cross']}, layer 1, head 2, {len(q)} queries × {len(k)} keys"


def test_hatched_bars_are_said_masked_never_as_values():
    fig = go.Figure([go.Bar(x=[0, 1], y=[0.7, 0.3], name="weight"),
                     go.Bar(x=[2, 3], y=[1, 1], marker=dict(pattern=dict(shape="/")), name="weight")])
    said = describe.of(finish_figure(fig, "step"))
    assert said["summary"] == "weight: 0 0.7, 1 0.3; 2 masked (hatched)."
    assert said["table"]["columns"] == ["weight", "masked"] and said["table"]["values"][2] == [None, None]
