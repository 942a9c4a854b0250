"""The lecture (viz.views.lecture): every stop's claim is a fact about the SHIPPED model (assets/model), and its mark
is computed from the model's run, not written as positions.

Each stop's pointer — the cell, row, key or block its caption talks about — is computed from the run of the sentence
shown; its words on the lecture's own sentence are written beside the stop (``claim``) and checked here. A retrained
model that no longer does this fails by the stop's title: rewrite the claim from the new model, never the test.
"""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from helpers.plotly import array

from model.network.inference import ASSETS, Translator
from model.probes.ablation import load_ranking
from model.probes.inside import inside_head
from model.probes.steps import decode_steps
from model.serving.lab import Lab
from model.terms import KINDS
from viz.lab import legend_name
from viz.views import lab as lab_view
from viz.views import lecture
from viz.views.attention import share
from viz.views.attention.examples import EXAMPLES, shown_token

OTHER = "A man in a blue shirt is playing the guitar on the street."  # a visitor's own sentence


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator(ASSETS, device="cpu")


@pytest.fixture(scope="module")
def runs(shipped):
    return {text: shipped.attention(text) for text in (lecture.SENTENCE, OTHER)}


@pytest.fixture(scope="module")
def lab() -> dict:
    return Lab().runs_payload()  # the shipped records (assets/lab)


def _mark(shipped, runs, n, text=lecture.SENTENCE):
    return lecture.point(n, shipped.cfg, runs[text], load_ranking(), Lab().runs_payload())


STOP_IDS = [f"{i}-{s.title}" for i, s in enumerate(lecture.STOPS, start=1)]


@pytest.mark.parametrize("n", range(1, len(lecture.STOPS) + 1), ids=STOP_IDS)
def test_every_caption_claim_is_what_the_shipped_model_does(shipped, runs, n):
    stop = lecture.STOPS[n - 1]
    found = _mark(shipped, runs, n).words
    if found != stop.claim:
        pytest.fail(f"Stop {n} “{stop.title}” is no longer true of the shipped model.\n  claim: {stop.claim}\n"
                    f"  model: {found}", pytrace=False)


def test_the_lecture_has_about_ten_stops_on_tabs_that_exist():
    assert 9 <= len(lecture.STOPS) <= 12
    tabs = {"attention", "decoding", "scaling", "inside", "heads", "architecture", "lab", "model-card"}
    assert {s.tab for s in lecture.STOPS} <= tabs
    assert len({s.title for s in lecture.STOPS}) == len(lecture.STOPS)


def _weights(result, kind, layer, head):
    maps = result.maps(kind)[layer - 1]
    return maps.mean(axis=0) if head == 0 else maps[head - 1]


@pytest.mark.parametrize("text", [lecture.SENTENCE, OTHER])
def test_cell_marks_are_each_rows_largest_weight_on_any_sentence(shipped, runs, text):
    """The attention stops mark the key the marked row weighs most — recomputed on the visitor's sentence."""
    result = runs[text]
    for n, stop in enumerate(lecture.STOPS, start=1):
        mark = _mark(shipped, runs, n, text)
        if stop.tab not in ("attention", "inside") or mark.col is None:
            continue
        kind, layer, head = stop.view["kind"], int(stop.view["layer"]), int(stop.view["head"])
        w = _weights(result, kind, layer, head)
        row = mark.row if mark.row is not None else next(
            i for i, t in enumerate(result.tokens(kind)[0]) if re.search(f"query “{re.escape(shown_token(t))}”",
                                                                        mark.words))
        assert mark.col == int(w[row].argmax()), (n, mark)
        assert f"{w[row, mark.col]:.2f}" in mark.words
        assert f"“{shown_token(result.tokens(kind)[1][mark.col])}”" in mark.words


def test_marks_follow_the_sentence(shipped, runs):
    """Not positions written down: another sentence moves the marks and renames what they point at."""
    moved = [n for n in range(1, len(lecture.STOPS) + 1)
             if _mark(shipped, runs, n).spec() != _mark(shipped, runs, n, OTHER).spec()
             or _mark(shipped, runs, n).words != _mark(shipped, runs, n, OTHER).words]
    model_wide = [n for n, s in enumerate(lecture.STOPS, start=1) if s.tab in ("architecture", "heads", "lab")]
    assert sorted(moved + model_wide) == list(range(1, len(lecture.STOPS) + 1))


def test_the_masked_row_sees_nothing_later_and_writes_the_next_token(shipped, runs):
    result = runs[lecture.SENTENCE]
    n = next(i for i, s in enumerate(lecture.STOPS, start=1) if s.view.get("kind") == "decoder_self")
    mark = _mark(shipped, runs, n)
    w = _weights(result, "decoder_self", 6, 3)
    assert np.all(w[mark.row, mark.row + 1:] == 0)  # the mask: exactly 0
    assert shown_token(result.target_tokens[mark.row + 1]) in mark.words  # the shift: it writes the next token


def test_one_query_stops_match_the_inside_probe(shipped, runs):
    """Panel (b)'s highlighted bar and footnote 4's "× 1" series: the probe's own numbers (forward pass), not only
    the maps the marks are computed from."""
    n_query = next(i for i, s in enumerate(lecture.STOPS, start=1) if s.point.__qualname__.startswith("query_"))
    n_f4 = next(i for i, s in enumerate(lecture.STOPS, start=1) if s.point.__qualname__.startswith("footnote4_"))
    stop = lecture.STOPS[n_query - 1]
    kind, layer, head, query = (stop.view[k] for k in ("kind", "layer", "head", "query"))
    hi = inside_head(shipped, lecture.SENTENCE, None, kind, int(layer), int(head), int(query))
    assert f"query “{shown_token(hi.key_tokens[int(query)])}”" in _mark(shipped, runs, n_query).words  # the link's
    assert _mark(shipped, runs, n_query).col == int(np.argmax(hi.weights))
    unscaled = next(c for c in hi.scale_cases if c.scale == 1)
    assert f"without it, {unscaled.max_weight:.2f}" in _mark(shipped, runs, n_f4).words
    np.testing.assert_allclose(lecture.unscaled(_weights(runs[lecture.SENTENCE], kind, int(layer), int(head))
                                                [int(query)], shipped.cfg.d_k), unscaled.weights, atol=2e-3)


def test_the_decoding_stop_marks_what_the_decoding_tab_shows(shipped, runs):
    n = next(i for i, s in enumerate(lecture.STOPS, start=1) if s.tab == "decoding")
    step, layer = int(lecture.STOPS[n - 1].view["step"]), int(lecture.STOPS[n - 1].view["layer"])
    steps = decode_steps(shipped, lecture.SENTENCE)
    assert _mark(shipped, runs, n).col == int(steps.cross[layer - 1].mean(axis=0)[step - 1].argmax())


def test_the_lab_stop_marks_the_curves_the_lab_tab_draws(shipped, runs, lab):
    """Footnote 4 in training: the marked points are the two runs' last validation-loss points in the Lab tab's own
    figure for the stop's link (its default kind and layer), their values the caption's; the best validation BLEU is
    the records' largest over the epochs. Without the runs shipped, the caption says so and marks nothing."""
    n = next(i for i, s in enumerate(lecture.STOPS, start=1) if s.tab == "lab")
    names = lecture.STOPS[n - 1].view["runs"].split(",")
    mark = _mark(shipped, runs, n)
    fig, _ = lab_view.curves_plot(Lab(), "encoder_self", 0, names)
    entries = {r["name"]: r for r in lab["runs"]}
    assert len(mark.points) == len(names) == 2
    for (trace, point), name in zip(mark.points, names, strict=True):
        line = fig["data"][trace]
        seed = f" · seed {entries[name]['seeds'][0]}"  # every line names its seed (its line style)
        assert line["name"] == legend_name(entries[name]["label"]) + seed
        assert line["yaxis"] in (None, "y")  # the top panel: validation loss
        ys = array(line["y"])
        assert point == len(ys) - 1 and f"validation loss on the sample {ys[point]:.2f}" in mark.words
        best = max(e["val_bleu"] for e in entries[name]["epochs"][0])
        assert f"best validation BLEU {best:.1f}" in mark.words
    assert mark.words.index(f"{array(fig['data'][mark.points[0][0]]['y'])[-1]:.2f}") < mark.words.index("without it")
    ends = [array(fig["data"][trace]["y"])[-1] for trace, _ in mark.points]
    upper = f"{max(ends):.2f} (the upper line)"
    assert mark.words.count("(the upper line)") == 1 and upper in mark.words, mark.words  # the higher end, named
    none = lecture.point(n, shipped.cfg, runs[lecture.SENTENCE], None, {"runs": []})
    assert none.points == () and "not shipped" in none.words


def test_the_head_analysis_stop_marks_the_rankings_first_head(shipped, runs):
    ranking = load_ranking()
    n = next(i for i, s in enumerate(lecture.STOPS, start=1) if s.tab == "heads")
    mark = _mark(shipped, runs, n)
    kind, layer, head = ranking["heads"][0]["head"].split(":")
    assert (mark.kind, mark.row + 1, mark.col + 1) == (kind, int(layer), int(head))
    assert max(r["bleu_loss"] for r in ranking["heads"]) == ranking["heads"][0]["bleu_loss"]


# ------------------------------------------------------------------------------------------------- the link
def test_a_stop_link_opens_its_view_in_presentation_mode(shipped):
    tabs = ["attention", "decoding", "scaling", "inside", "heads", "architecture", "lab", "model-card"]
    choices = {"stat": ["spread"], "scope": ["sentence", "sample"], "show": ["query", "matrix"],
               "runs": [r["name"] for r in Lab().runs_payload()["runs"]]}
    for n, stop in enumerate(lecture.STOPS, start=1):
        query = lecture.link_query({"lecture": "1", "stop": str(n), "__theme": "dark"})
        view, notices = share.parse(query, shipped.cfg, tabs, "default", choices)
        assert not notices, (n, notices)
        assert (view.tab, view.present, view.text, query["__theme"]) == (stop.tab, True, lecture.SENTENCE, "dark")
        assert {k: v for k, v in view.query_params().items() if k in stop.view} == stop.view


def test_the_link_keeps_the_visitors_sentence_and_checks_the_stop():
    own = lecture.link_query({"lecture": "1", "stop": "2", "text": OTHER, "kind": "cross", "tab": "lab"})
    assert (own["text"], own["kind"], own["tab"]) == (OTHER, "encoder_self", "attention")
    for bad in ("0", "99", "x", "-1", "١"):
        assert lecture.stop_number({"lecture": "1", "stop": bad}) == 1
    assert lecture.stop_number({"stop": "3"}) is None
    assert lecture.link_query({"tab": "lab", "text": "x"}) == {"tab": "lab", "text": "x"}


def test_the_caption_bar(shipped, runs):
    assert lecture.caption_bar({}, shipped.cfg, runs[lecture.SENTENCE]) == ""
    last = len(lecture.STOPS)
    for n in (1, 5, last):
        bar = lecture.caption_bar({"lecture": "1", "stop": str(n)}, shipped.cfg, runs[lecture.SENTENCE],
                                  load_ranking())
        stop = lecture.STOPS[n - 1]
        data = json.loads(re.search(r'data-lecture="([^"]*)"', bar).group(1).replace("&quot;", '"'))
        assert data["stop"] == n and data["stops"] == last and data["text"] == lecture.SENTENCE
        assert data["mark"] == _mark(shipped, runs, n).spec()
        assert f"{n} / {last}" in bar and "Ask:" in bar
        assert ('id="lecture-back" disabled' in bar) == (n == 1)
        assert ('id="lecture-next" disabled' in bar) == (n == last)
        assert html.escape(stop.claim) in bar  # "</s>" and quotes arrive as text
    assert "<s>" not in lecture.caption_bar({"lecture": "1", "stop": "8"}, shipped.cfg, runs[OTHER])


def test_a_mark_on_the_first_row_or_key_keeps_its_zero():
    assert lecture.Mark("detail", "w", row=0, col=0, query=0).spec() == {"plot": "detail", "row": 0, "col": 0,
                                                                          "query": 0}


# ------------------------------------------------------------------------------------- true for any sentence
SENTENCES = (*dict.fromkeys(e.sentence for e in EXAMPLES), "Dogs run.", "A little girl climbs into a wooden playhouse.",
             "Several men in hard hats are operating a giant pulley system while two women in orange vests watch "
             "from the sidewalk near a parked truck.")


class _Held:
    """A session's result as the served app holds it (``SessionResult.get``)."""

    def __init__(self, result):
        self.result = result

    def get(self):
        return self.result


def _row_named(mark, tokens) -> int:
    """The row a pointer's words name: the one token (whole word, as ``said`` names it) the words call the row."""
    named = [i for i in range(len(tokens))
             if re.search(rf"(row of|row fed|query) {re.escape(lecture.said(tokens, i))}", mark.words)]
    assert len(named) == 1 or len({lecture.said(tokens, i) for i in named}) == 1, (mark.words, named)
    return named[0]


@pytest.mark.parametrize("text", SENTENCES)
def test_outline_mark_and_caption_name_one_row_on_any_sentence(shipped, text):
    """Every stop that points at a row of a head: the row the page outlines (Inside a head's query, which the link
    opens: ``follow_mark``), the row marked and the row the caption names are one, and it is the row recomputed
    here (the stop's word when the sentence has it once, else the row the head is surest about); the key named is
    that row's largest weight; words, never bare pieces."""
    result = shipped.attention(text)
    for n, stop in enumerate(lecture.STOPS, start=1):
        if "head" not in stop.view or stop.tab not in ("attention", "inside") or stop.view["head"] == "0":
            continue
        mark = lecture.point(n, shipped.cfg, result)
        kind, layer, head = stop.view["kind"], int(stop.view["layer"]), int(stop.view["head"])
        tokens, keys = result.tokens(kind)
        w = _weights(result, kind, layer, head)
        word = stop.point.__closure__ and next(c.cell_contents for c in stop.point.__closure__
                                               if isinstance(c.cell_contents, str) and c.cell_contents not in KINDS
                                               and c.cell_contents != mark.plot)
        hits = [i for i, t in enumerate(tokens) if shown_token(t) == word]
        surest = w.copy()
        if kind == "decoder_self":
            surest[0] = 0
        expected = hits[0] if len(hits) == 1 else int(surest.max(axis=-1).argmax())
        row = mark.row if mark.row is not None else mark.query
        assert row == expected == _row_named(mark, tokens), (n, text, mark)
        if mark.query is not None:  # Inside a head opens the query the pointer is about
            query = lecture.link_query({"lecture": "1", "stop": str(n), "text": text})
            view = share.View(text, query=1, tab="inside")  # (the stop's link: query 1)
            assert lecture.follow_mark(query, view, _Held(result), shipped.cfg).query == mark.query == row
        col = int(w[row].argmax())
        assert f"{w[row, col]:.2f}" in mark.words and lecture.said(keys, col) in mark.words, (n, mark.words)
        assert all(lecture.whole_word(tokens, i) == shown_token(tokens[i]) or f"its piece “{shown_token(tokens[i])}”"
                   in lecture.said(tokens, i) for i in range(len(tokens)))


def test_captions_name_whole_words():
    pieces = ["<s>", "▁Ein", "▁M", "ann", "▁spielt", "▁Gitarre", ".", "</s>"]
    assert [lecture.whole_word(pieces, i) for i in range(len(pieces))] == [
        "<s>", "Ein", "Mann", "Mann", "spielt", "Gitarre", ".", "</s>"]
    assert lecture.said(pieces, 3) == "“Mann” (its piece “ann”)" and lecture.said(pieces, 1) == "“Ein”"


def test_titles_and_questions_read_as_sentences(shipped):
    bar = lecture.caption_bar({"lecture": "1", "stop": str(len(lecture.STOPS))}, shipped.cfg,
                              shipped.attention(lecture.SENTENCE), load_ranking())
    assert "<strong>What does a head do?</strong>" in bar and "?." not in bar
    for stop in lecture.STOPS:
        assert stop.question.endswith("?") or stop.question.endswith("Reveal."), stop.question
