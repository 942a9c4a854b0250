"""Made for the classroom, without a browser: a view as a link (viz.views.attention.share), the curated
examples (viz.views.attention.examples), the projector's figures (viz.views.attention.projector) and "How to read
this" on every tab (viz.views.reading, viz.ui.wiring.how_to_read). The tiny model's results; the examples' claims
about the shipped model are tests/test_examples_shipped.py, the page itself tests/test_browser_classroom.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers.plotly import array

from model.network.inference import AttentionResult, Translator
from model.terms import KINDS
from viz.views import reading
from viz.views.attention import examples, projector, share
from viz.views.attention import maps as attention
from viz.views.page import PAGE

TEXT = "a big dog runs in the park."
TABS = ("attention", "decoding", "scaling")
CHOICES = {"stat": ("entropy", "spread"), "scope": ("sentence", "sample"), "runs": ("h8", "h8-unscaled"),
           "show": ("query", "matrix")}
HOSTILE = ("<script>window.__xss=1</script>", "javascript:alert(1)", '"><img src=x onerror=alert(1)>')


@pytest.fixture(scope="module")
def result(translator) -> AttentionResult:
    return translator.attention(TEXT)


def parse(query: dict, cfg) -> tuple[share.View, list[str]]:
    return share.parse(query, cfg, TABS, "Default sentence.", CHOICES)


def heatmap(fig: dict) -> dict:
    return next(t for t in fig["data"] if t["type"] == "heatmap")


def z_of(trace: dict) -> np.ndarray:
    return array(trace["z"])


# ------------------------------------------------------------------------------------------- links (share)
def test_a_link_round_trips_every_parameter(translator):
    view = share.View("A dog & a cat?", "Ein Hund", "decoder_self", 2, 0, "scaling", True, "row", 7, 3, "spread",
                      "sample", ("h8-unscaled", "h8"), "matrix")
    assert parse(view.query_params(), translator.cfg) == (view, [])
    assert set(view.query_params()) == set(share.PARAMS)
    none = share.View("x", runs=())  # no run at all is a choice too (the Lab's curves), written as "runs="
    assert view.query_params()["runs"] == "h8-unscaled,h8" and parse({"runs": ""}, translator.cfg)[0].runs == ()
    assert none.query_params()["runs"] == ""


def test_a_bare_link_is_the_default_view_without_notices(translator):
    view, notes = parse({"__theme": "dark", "unrelated": "x"}, translator.cfg)
    assert view == share.View("Default sentence.") and notes == []
    assert (view.kind, view.layer, view.head, view.tab, view.present, view.colour) == ("cross", None, None,
                                                                                      "attention", False, "fixed")
    assert (view.step, view.query, view.stat, view.scope, view.runs, view.show) == (None,) * 6  # each tab's own


@pytest.mark.parametrize("payload", HOSTILE)
@pytest.mark.parametrize("param", share.PARAMS)
def test_hostile_values_fall_back_and_the_notice_never_repeats_them(translator, param, payload):
    view, notes = parse({param: payload}, translator.cfg)
    if param in ("text", "target"):  # a sentence may hold anything: it is shown as text, never run
        assert getattr(view, param) == payload and notes == []
        return
    default = share.View("Default sentence.")
    assert getattr(view, param) == getattr(default, param)
    assert notes and f"The link's {param} " in notes[0] and notes[-1].endswith("left at their defaults.")
    for note in notes:
        assert not re.search(r"[<>\"]|javascript|alert|xss|img", note), note


@pytest.mark.parametrize(("param", "value"), [("layer", "0"), ("layer", "3"), ("layer", "2.5"), ("layer", "-1"),
                                              ("layer", "１"), ("layer", ""), ("layer", "99999999999"), ("head", "5"),
                                              ("head", "1e1"), ("kind", "CROSS"), ("present", "2"),
                                              ("colour", "auto "), ("tab", "model-card"), ("step", "0"),
                                              ("step", "1000"), ("query", "100"), ("stat", "Entropy"),
                                              ("scope", "all"), ("runs", "h8,h2"), ("runs", "h8;h8-unscaled"),
                                              ("show", "Matrix"), ("show", "api")])
def test_values_out_of_range_fall_back(translator, param, value):
    view, notes = parse({param: value}, translator.cfg)  # the tiny model: 2 layers, 4 heads
    if (param, value) == ("colour", "auto "):  # surrounding spaces are forgiven
        assert view.colour == "auto" and notes == []
        return
    assert getattr(view, param) == getattr(share.View("Default sentence."), param) and len(notes) == 2


def test_long_or_empty_text_falls_back(translator):
    for text in ("x" * (share.MAX_CHARS + 1), "   ", "a\x00b"):
        view, notes = parse({"text": text}, translator.cfg)
        assert view.text == "Default sentence." and "text" in notes[0]


def test_the_sharp_default_is_the_most_confident_head():
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(5), size=(3, 4, 6))  # (L, H, Q, K): diffuse
    maps[1, 2] = np.eye(6, 5) * 0.9 + 0.02  # layer 2, head 3: sharp
    assert share.sharpest_head(maps) == (2, 3)
    confidence = maps.max(-1).mean(-1)  # the statistic, recomputed
    assert confidence[1, 2] == confidence.max()
    view = share.View("x")
    assert share.complete(view, maps) == (2, 3)
    assert share.complete(share.View("x", layer=1), maps) == (1, int(confidence[0].argmax()) + 1)
    assert share.complete(share.View("x", head=3), maps) == (2, 3)
    assert share.complete(share.View("x", layer=3, head=0), maps) == (3, 0)


# ---------------------------------------------------------------------------------- projector figures
def test_colour_scales_change_the_colours_never_the_hover(translator, result):
    cfg = translator.cfg
    weights = result.cross[1, 0]  # layer 2, head 1: (Q, K)
    fixed = heatmap(attention.detail_plot(cfg, result, "cross", 2, 1, colour="fixed"))
    assert (fixed["zmin"], fixed["zmax"]) == (0, 1)
    np.testing.assert_array_equal(z_of(fixed), weights)

    auto = heatmap(attention.detail_plot(cfg, result, "cross", 2, 1, colour="auto"))
    np.testing.assert_array_equal(z_of(auto), weights)
    assert auto["zmin"] == 0 and auto["zmax"] == pytest.approx(float(weights.max()))
    assert auto["colorbar"]["tickvals"][-1] == pytest.approx(float(weights.max()))

    row = heatmap(attention.detail_plot(cfg, result, "cross", 2, 1, colour="row"))
    np.testing.assert_allclose(z_of(row), weights / weights.max(axis=1, keepdims=True), rtol=1e-6)
    assert (row["zmin"], row["zmax"]) == (0, 1)
    column = int(re.search(r": %\{customdata\[(\d+)\]\}", row["hovertemplate"]).group(1))  # was %{z:.3f}
    assert "%{z" not in row["hovertemplate"]  # the hover shows the weight itself, not the row-scaled colour
    shown = np.array([[float(cell[column]) for cell in line] for line in row["customdata"]])
    np.testing.assert_allclose(shown, weights, atol=5e-4)
    with pytest.raises(ValueError, match="Colour scale must be one of fixed, auto, row"):
        attention.detail_plot(cfg, result, "cross", 2, 1, colour="rainbow")


def font_sizes(layout: dict, trace: dict) -> dict:
    return {
        "title": layout["title"]["font"]["size"] if "title" in layout else None,
        "font": layout["font"]["size"],
        "xticks": layout["xaxis"]["tickfont"]["size"], "yticks": layout["yaxis"]["tickfont"]["size"],
        "colorbar": trace["colorbar"]["tickfont"]["size"],
    }


def test_presentation_mode_makes_every_text_large_and_prints_the_weights(translator, result):
    cfg = translator.cfg
    plain = attention.detail_plot(cfg, result, "encoder_self", 1, 2)
    assert plain["layout"]["font"]["size"] < projector.PRESENT_PX and "text" not in heatmap(plain)
    fig = attention.detail_plot(cfg, result, "encoder_self", 1, 2, present=True, colour="row")
    trace, layout = heatmap(fig), fig["layout"]
    sizes = font_sizes(layout, trace)
    assert sizes.pop("title") == projector.TITLE_PX and min(sizes.values()) >= projector.PRESENT_PX
    assert layout["xaxis"]["title"]["font"]["size"] >= projector.PRESENT_PX
    weights = result.encoder_self[0, 1]  # (Q, K): the cells print the weights, not the row-scaled colours
    assert max(weights.shape) <= projector.CELL_TOKENS
    expected = [["" if w < projector.CELL_MIN else f"{w:.2f}".removeprefix("0").replace("1.00", "1") for w in line]
                for line in weights]
    assert trace["text"] == expected and trace["texttemplate"] == "%{text}"
    assert projector.cell_text(0.97) == ".97" and projector.cell_text(0.999) == "1" and projector.cell_text(0.05) == ""


def test_the_overview_fits_beside_the_close_up_with_layer_and_head_ticks(result):
    for present in (False, True):
        fig = attention.overview_plot(result, "cross", present=present)
        layout, trace = fig["layout"], heatmap(fig)
        assert layout["height"] == projector.OVERVIEW_PX
        assert not any(re.fullmatch(r"L\d+ H\d+", a["text"]) for a in layout.get("annotations", []))
        n_layers, n_heads = result.cross.shape[:2]
        assert layout["yaxis"]["ticktext"] == [f"L{i}" for i in range(1, n_layers + 1)]
        assert layout["xaxis"]["ticktext"] == [f"H{i}" for i in range(1, n_heads + 1)]
        for value, text in zip(layout["yaxis"]["tickvals"], layout["yaxis"]["ticktext"]):
            assert value in trace["y"] and value.startswith(f"{text} query ")  # a row of that layer's tiles
        for value, text in zip(layout["xaxis"]["tickvals"], layout["xaxis"]["ticktext"]):
            assert value in trace["x"] and value.startswith(f"{text} key ")
        if present:
            sizes = font_sizes(layout, trace)
            sizes.pop("title")
            assert min(sizes.values()) >= projector.PRESENT_PX


# ------------------------------------------------------------------------------------------- examples
def test_six_to_ten_examples_each_a_whole_view_with_a_one_line_caption():
    assert 6 <= len(examples.EXAMPLES) <= 10
    assert len({e.label for e in examples.EXAMPLES}) == len(examples.EXAMPLES)
    for e in examples.EXAMPLES:
        assert e.kind in KINDS and 1 <= e.layer <= 6 and 0 <= e.head <= 8  # the shipped model's shape
        assert bool(e.writes) == (e.kind != "encoder_self")  # a decoder row writes a token; an encoder row none
        assert "\n" not in e.caption and e.caption.endswith(".")
        quoted = set(re.findall(r"“([^”]*)”", e.caption))  # every token the caption names is a checked one
        assert quoted == {e.row, e.column} | ({e.writes} if e.writes else set()), e.caption
        assert f"layer {e.layer}, head {e.head}" in e.caption


def fake_result(kind_weights: np.ndarray) -> AttentionResult:
    """A result for "Two dogs." → "Zwei Hunde." whose cross-attention layer 1, head 1 is ``kind_weights``."""
    src, tgt = ["▁Two", "▁dogs", ".", "</s>"], ["<s>", "▁Zwei", "▁Hunde", "."]
    cross = np.full((1, 1, 4, 4), 0.25, dtype=np.float32)
    cross[0, 0] = kind_weights
    square = lambda n: np.full((1, 1, n, n), 1 / n, dtype=np.float32)  # noqa: E731
    return AttentionResult("Two dogs.", "Zwei Hunde.", src, tgt, square(4), square(4), cross,
                           target_ids=[10, 11, 12])


def test_a_claim_is_checked_and_a_false_one_says_what_the_model_does():
    weights = np.full((4, 4), 0.1, dtype=np.float32)
    weights[1, 1] = 0.7  # the row fed "Zwei" (it writes "Hunde") looks at "dogs"
    weights[3, 3] = 0.7  # the row fed "." writes </s> and looks at </s>
    claim = examples.Example("t", "Two dogs.", "Lesson.", "cross", 1, 1, row="Zwei", writes="Hunde", column="dogs")
    assert examples.check(claim, fake_result(weights)) == "cross layer 1 head 1: “Zwei” → “dogs” 0.70"
    end = examples.Example("t", "Two dogs.", "Lesson.", "cross", 1, 1, row=".", writes="</s>", column="</s>")
    examples.check(end, fake_result(weights))
    wrong = [(dict(column="Two"), "looks most at “dogs” \\(0.70\\), not at “Two” \\(0.10\\)"),
             (dict(writes="Katzen"), "now writes “Hunde”, not “Katzen”"),
             (dict(row="Katze"), "the query side has no token “Katze”"),
             (dict(sentence="Three dogs."), "not 'Three dogs.'")]
    for change, message in wrong:
        fields = {**claim.__dict__, **change}
        with pytest.raises(ValueError, match=message):
            examples.check(examples.Example(**fields), fake_result(weights))


def test_menu_indices_and_links_find_their_example():
    first = examples.EXAMPLES[0]
    assert examples.example_at(0) is first and examples.example_at("0") is first
    for bad in (examples.PROMPT, "-1", len(examples.EXAMPLES), "1.0", "x", None, True, [0]):
        assert examples.example_at(bad) is None, bad
    # the menu's own values open an example or nothing (the prompt); anything else is an error that says so
    assert examples.check_example(examples.PROMPT) is None and examples.check_example("0") is first
    for bad in ("x", "1.0", None, True, [0], len(examples.EXAMPLES)):
        with pytest.raises(ValueError, match="The example must be one of the menu's: -1 \\(the prompt\\) or 0 …"):
            examples.check_example(bad)
    assert examples.find(first.sentence + " ", first.kind, first.layer, first.head) is first
    assert examples.find(first.sentence, first.kind, first.layer, (first.head % 8) + 1) is None
    assert examples.CHOICES[0][1] == examples.PROMPT
    assert examples.markdown(["writes “</s>” *now*"]) == r"writes “&lt;/s&gt;” \*now\*"


# ------------------------------------------------------------------------------------ reading, and the app
def test_every_tab_of_the_app_folds_a_how_to_read_note(tiny_model_dir):
    import gradio as gr

    import app

    demo = app.create_app(Translator(tiny_model_dir, device="cpu"))
    tabs = [block for block in demo.blocks.values() if isinstance(block, gr.Tab)]
    assert {tab.id for tab in tabs} >= {"attention", "scaling", "architecture", "model-card"}
    (row,) = [block for block in demo.blocks.values() if isinstance(block, gr.Tabs)]
    assert row.children == tabs  # anything else between the tabs (a State) gives a tab another's button on the page

    def notes(block) -> list:
        found = [block] if isinstance(block, gr.Accordion) and block.label == reading.TITLE else []
        for child in getattr(block, "children", []):
            found += notes(child)
        return found

    for tab in tabs:
        (note,) = notes(tab)
        assert note.open is False, tab.id
        (text,) = [c.value for c in note.children if isinstance(c, gr.Markdown)]
        assert text == reading.HOW_TO_READ[tab.id]
    attention_note = reading.HOW_TO_READ["attention"]
    for phrase in ("Rows attend to columns", "fed token *i*", "predicts token *i + 1*", "*per row*", "←/→"):
        assert phrase in attention_note
    # the contract with the page script names the elements that hold the view
    ids = {block.elem_id for block in demo.blocks.values()}
    own = {param for view in PAGE["views"].values() for param in view}  # each other tab's view in the link
    assert set(PAGE["view"]) | own == set(share.PARAMS) - {"tab"} and set(PAGE["views"]) <= {t.id for t in tabs}
    elements = {i for view in PAGE["views"].values() for i in view.values()}
    assert set(PAGE["view"].values()) | elements | {PAGE["detail"], PAGE["copyLink"]} <= ids
