"""Equation (1) as whole matrices (model.probes.matrices, viz.matrices, viz.views.inside_matrices): every matrix is the
model's own — the forward pass's weights and sub-layer output, for the three kinds, greedy and teacher-forced — and
each row is the one-query view's row; the footnote-4 pick is the largest trained-vs-unscaled difference; the figures
and the tab's choices (where it opens, a clicked row).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import plotly.graph_objects as go
import pytest
from helpers.plotly import apply_changes
from test_inside_head import NASTY, SOURCE, TARGET, forward_truth, sublayer_owner

from model.network.inference import ASSETS, Translator
from model.probes.inside import inside_head
from model.probes.matrices import footnote4_pick, head_matrices
from model.probes.replay import layer_inputs, prepare
from model.terms import BOS_PIECE, EOS_PIECE, KINDS
from viz import inside as figs_inside
from viz import matrices as figs
from viz.encode import plotly_dict, plotly_json
from viz.heatmaps import MASKED_COLOR
from viz.views import inside_matrices as mv
from viz.views.attention.share import sharpest_head
from viz.views.outputs import SKIP, Update
from viz.vocab import MEAN

RTOL, ATOL = 1e-4, 1e-5


@pytest.mark.parametrize("target", [None, TARGET], ids=["greedy", "teacher_forced"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_matrices_are_the_forward_pass(translator, kind, target):
    """For every layer and head: A is the Attention tab's map, Concat · W^O + b the sub-layer's own output (every
    query), and each matrix recomposes from the one before it."""
    cfg, model, sentence = translator.cfg, translator.model, prepare(translator, SOURCE, target)
    dk = cfg.d_k
    for layer in range(1, cfg.n_layers + 1):
        result, rows = forward_truth(translator, kind, layer, target)
        mha = sublayer_owner(model, kind, layer)
        inputs = layer_inputs(translator, sentence, kind)
        for head in range(1, cfg.n_heads + 1):
            hm = head_matrices(translator, sentence, None, kind, layer, head, inputs=inputs)
            n_q, n = len(result.tokens(kind)[0]), len(result.tokens(kind)[1])
            assert hm.weights.shape == (n_q, n) and hm.concat.shape == (n_q, cfg.d_model)
            np.testing.assert_allclose(hm.weights, result.maps(kind)[layer - 1, head - 1], atol=1e-6)
            np.testing.assert_allclose(hm.x_q, np.stack([r[0] for r in rows]), rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(hm.sublayer_output, np.stack([r[1] for r in rows]), rtol=RTOL, atol=ATOL)
            sl = slice((head - 1) * dk, head * dk)
            for name, proj, src in (("q", mha.w_q, hm.x_q), ("k", mha.w_k, hm.x_kv), ("v", mha.w_v, hm.x_kv)):
                expected = src @ proj.weight.detach().numpy()[sl].T + proj.bias.detach().numpy()[sl]
                np.testing.assert_allclose(getattr(hm, name), expected, rtol=RTOL, atol=ATOL, err_msg=name)
            np.testing.assert_allclose(hm.scores, hm.q @ hm.k.T, rtol=RTOL, atol=ATOL)
            np.testing.assert_array_equal(hm.masked, np.triu(np.ones((n_q, n), bool), 1) if kind == "decoder_self"
                                          else np.zeros((n_q, n), bool))
            assert (hm.weights[hm.masked] == 0).all()
            np.testing.assert_allclose(hm.weights.sum(-1), 1.0, atol=1e-5)  # rows sum to 1
            np.testing.assert_allclose(hm.output, hm.weights @ hm.v, rtol=RTOL, atol=ATOL)
            np.testing.assert_array_equal(hm.concat[:, sl], hm.output)
            w_o = mha.w_o
            np.testing.assert_allclose(hm.concat @ w_o.weight.detach().numpy().T + w_o.bias.detach().numpy(),
                                       hm.sublayer_output, rtol=RTOL, atol=ATOL)
        for query in sorted({0, n_q - 1}):  # a row of the matrices is the one-query view
            hi = inside_head(translator, sentence, None, kind, layer, 2, query, inputs=inputs)
            hm = head_matrices(translator, sentence, None, kind, layer, 2, inputs=inputs)
            for row, one in ((hm.q[query], hi.q), (hm.scores[query], hi.scores), (hm.weights[query], hi.weights),
                             (hm.output[query], hi.output), (hm.concat[query], hi.head_outputs.reshape(-1)),
                             (hm.sublayer_output[query], hi.sublayer_output), (hm.masked[query], hi.masked)):
                np.testing.assert_allclose(row, one, rtol=RTOL, atol=ATOL)


def test_a_factor_changes_the_softmax_only(translator):
    trained = head_matrices(translator, SOURCE, TARGET, "decoder_self", 2, 3)
    unscaled = head_matrices(translator, SOURCE, TARGET, "decoder_self", 2, 3, factor="1")
    for name in ("x_q", "x_kv", "q", "k", "v", "scores"):
        np.testing.assert_array_equal(getattr(trained, name), getattr(unscaled, name), err_msg=name)
    assert trained.scaled_as_trained and not unscaled.scaled_as_trained and unscaled.scale == 1.0
    s = np.where(unscaled.masked, -np.inf, unscaled.scores.astype(np.float64))
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(unscaled.weights, e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(trained.scaled, trained.scores * translator.cfg.scale, rtol=1e-6)
    with pytest.raises(ValueError, match="factor must be"):
        head_matrices(translator, SOURCE, None, "cross", 1, 1, factor=0)
    with pytest.raises(ValueError, match="head must be"):
        head_matrices(translator, SOURCE, None, "cross", 1, 9)


# --------------------------------------------------------------------------------------------- footnote 4's pick
def total_variation(a, b) -> float:
    return 0.5 * float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).sum())


@pytest.mark.parametrize("target", [None, TARGET], ids=["greedy", "teacher_forced"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_pick_is_the_largest_trained_vs_unscaled_difference(translator, kind, target):
    """Checked against the one-query view's own footnote-4 cases, for every layer, head and query: the sentence's
    own pieces, or every query where there are none (the tiny model's greedy output may be <s> and </s> only)."""
    sentence = prepare(translator, SOURCE, target)
    inputs = layer_inputs(translator, sentence, kind)
    pick = footnote4_pick(translator, sentence, None, kind, inputs)
    q_tokens = sentence.tokens(kind)[0]
    special = [t in (BOS_PIECE, EOS_PIECE) for t in q_tokens]
    best, where = -1.0, None
    for layer in range(1, translator.cfg.n_layers + 1):
        for head in range(1, translator.cfg.n_heads + 1):
            for query in range(len(q_tokens)):
                if special[query] and not all(special):
                    continue
                cases = inside_head(translator, sentence, None, kind, layer, head, query, inputs=inputs).scale_cases
                d = total_variation(cases[0].weights, cases[1].weights)
                if d > best + 1e-6:
                    best, where = d, (layer, head, query)
    assert (pick.layer, pick.head, pick.query) == where and pick.kind == kind
    assert pick.distance == pytest.approx(best, abs=1e-5)
    assert not special[pick.query] or all(special)


def test_on_the_shipped_model_the_pick_shows_footnote_4():
    """The view the tab opens on: the trained and the unscaled softmax visibly differ (the largest weight moves by
    at least 0.3, the distance is over 0.4), on the sentence the app opens with."""
    shipped = Translator(ASSETS, device="cpu")
    sentence = prepare(shipped, "Two dogs are running through the snow.")
    for kind in KINDS:
        pick = footnote4_pick(shipped, sentence, None, kind)
        trained, unscaled, third = inside_head(shipped, sentence, None, kind, pick.layer, pick.head,
                                               pick.query).scale_cases
        assert pick.distance > 0.4 and unscaled.max_weight - trained.max_weight > 0.3, (kind, pick)
        assert third.scale == pytest.approx(shipped.cfg.scale ** 2) and third.entropy > trained.entropy


# ------------------------------------------------------------------------------------------------- the figures
@pytest.mark.parametrize("kind", KINDS)
def test_the_figures_show_every_matrix_with_its_shape_and_the_mask(translator, kind):
    hm = head_matrices(translator, SOURCE, TARGET, kind, 2, 2)
    nasty = dataclasses.replace(hm, query_tokens=[NASTY[j % len(NASTY)] for j in range(len(hm.query_tokens))],
                                key_tokens=[NASTY[j % len(NASTY)] for j in range(len(hm.key_tokens))])
    n_q, n, d, dk = len(hm.query_tokens), len(hm.key_tokens), hm.d_model, hm.d_k
    specs = {stage: figs.stage_spec(nasty, stage, 1) for stage in figs.STAGES}
    specs["projections"], specs["output"] = figs.projections_spec(nasty, 1), figs.output_spec(nasty, 1)
    for name, spec in specs.items():
        text = plotly_json(spec)
        go.Figure(plotly_dict(spec))  # plotly's own schema accepts every property
        assert "<b>bold" not in text and "&lt;b&gt;bold&lt;/b&gt;" in text, name
        assert all("hovertemplate" in t and "%{z" in t["hovertemplate"] for t in spec["data"]), name
    bound = figs.score_bound(hm)
    for stage in figs.STAGES:
        heat = specs[stage]["data"][0]
        assert heat["meta"] == figs.QUERY_ROWS and np.shape(heat["z"]) == (n_q, n)
        assert (heat["zmin"], heat["zmax"]) == ((0, 1) if stage == "weights" else (-bound, bound))  # one range
        masked_shapes = [s for s in specs[stage]["layout"].get("shapes", []) if s.get("fillcolor") == MASKED_COLOR]
        expect_mask = kind == "decoder_self" and stage in ("masked", "weights")
        assert bool(masked_shapes) == expect_mask and specs[stage]["layout"]["showlegend"] == expect_mask, stage
    np.testing.assert_allclose(specs["scores"]["data"][0]["z"], hm.scores)
    np.testing.assert_allclose(specs["scaled"]["data"][0]["z"], hm.scores * hm.scale, rtol=1e-6)
    masked_z = np.asarray(specs["masked"]["data"][0]["z"])
    assert np.isnan(masked_z[hm.masked]).all() and not np.isnan(masked_z[~hm.masked]).any()
    np.testing.assert_array_equal(specs["weights"]["data"][0]["z"], hm.weights)
    titles = {name: " ".join(a["text"] for a in spec["layout"]["annotations"]) for name, spec in specs.items()}
    assert f"{n_q} × {n}: queries × keys" in titles["scores"] and "1/√" in titles["scaled"]
    assert "each row sums to 1" in titles["weights"] and "M" not in titles["scores"]
    assert ("−∞ on each key after its query" if kind == "decoder_self" else "nothing masked") in titles["masked"]
    for needle in (f"{n_q} × {d}", f"{n_q} × {dk}", f"{n} × {dk}"):
        assert needle in titles["projections"], needle
    assert f"{n_q} × {hm.n_heads * dk}" in titles["output"] and "W<sup>O</sup>" in titles["output"]
    shapes = {tuple(np.shape(t["z"])) for t in specs["output"]["data"]}
    assert shapes == {(n_q, dk), (n_q, d)}
    rows = [t for t in specs["projections"]["data"] if t.get("meta") == figs.QUERY_ROWS]  # clickable: query rows
    assert {tuple(np.shape(t["z"])) for t in rows} == ({(n_q, d), (n_q, dk)} if kind == "cross" else
                                                      {(n_q, d), (n_q, dk), (n, dk)})


def test_the_hatch_stays_inside_the_masked_cells():
    for n in (2, 3, 7):
        strokes = figs._hatch(n).split("M")[1:]
        assert strokes
        for stroke in strokes:
            (x0, y0), (x1, y1) = (tuple(map(float, p.split(","))) for p in stroke.split("L"))
            for t in np.linspace(0, 1, 21):  # every point of a stroke is in a cell with key > query
                x, y = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
                assert x - y >= 1 - 1e-9 and -0.5 - 1e-9 <= y and x <= n - 0.5 + 1e-9


# ------------------------------------------------------------------------------------------ the tab's choices
def test_the_tab_draws_one_view_and_leaves_the_other(translator):
    result = translator.attention(SOURCE)
    calls = []

    def inside(*args):
        calls.append(("query", args[1:]))
        return inside_head(translator, prepare(translator, SOURCE), None, *args[1:])

    def matrices(*args):
        calls.append(("matrix", args[1:]))
        return head_matrices(translator, prepare(translator, SOURCE), None, *args[1:])

    out = mv.show(inside, matrices, translator.cfg, result, "matrix", "cross", "2", 1, 3, "")
    assert calls == [("matrix", ("cross", 2, 1, None))]
    assert len(out) == mv.N_QUERY_OUTPUTS + mv.N_MATRIX_OUTPUTS + 2
    assert all(o is SKIP for o in out[:mv.N_QUERY_OUTPUTS])
    view = mv.MatrixView(*out[mv.N_QUERY_OUTPUTS:-2])
    assert view.markdown.startswith("**Encoder–decoder attention, layer 2, head 1")
    hm = head_matrices(translator, prepare(translator, SOURCE), None, "cross", 2, 1)
    std = float(hm.scores.astype(np.float64).std())  # cross-attention: nothing masked
    assert f"| ① `S = Q Kᵀ` | {len(hm.query_tokens)} × {len(hm.key_tokens)} | std {std:.3g}" in view.table
    assert f"std {std * translator.cfg.scale:.3g}" in view.table and "rows sum to 1" in view.table
    assert json.loads(json.dumps(view.weights))["config"]["toImageButtonOptions"]["filename"] == \
        "cross_layer2_head1_weights"
    # the one-query view hidden but kept in the page (drawn as it was), the matrices shown
    assert out[-2].props == {"visible": "hidden", "elem_classes": [mv.HIDDEN_VIEW]}
    assert out[-1].props == {"visible": True, "elem_classes": []}
    boxes = [s for s in view.scores["layout"]["shapes"] if s.get("y0") == 2.5]  # query 3 outlined
    assert boxes
    again = mv.show(inside, matrices, translator.cfg, result, "matrix", "cross", 2, "1", 3, "")  # a hall's next page
    assert again is out and len(calls) == 1  # the view kept, not drawn again (viz.views.memo)
    out = mv.show(inside, matrices, translator.cfg, result, "query", "cross", 2, 1, 3, "0.5")
    assert calls[-1] == ("query", ("cross", 2, 1, 3, 0.5)) and all(o is SKIP for o in out[8:15])
    assert out[-2] == mv.view_shown(True) and out[-1] == mv.view_shown(False)
    with pytest.raises(ValueError, match="view must be"):
        mv.show(inside, matrices, translator.cfg, result, "both", "cross", 2, 1, 3, "")
    with pytest.raises(ValueError, match="Visualise a sentence"):
        mv.show(inside, matrices, translator.cfg, None, "query", "cross", 2, 1, 3, "")


def test_a_new_query_sends_its_figures_for_the_page_to_draw_in_place(translator):
    """In the one-query view a new query's six figures go as JSON (the page draws them in the figures shown), its
    texts as ever, nothing else changes; in the whole-matrix view it is ``show`` (the figures for the Plots)."""
    result = translator.attention(SOURCE)

    def inside(*args):
        return inside_head(translator, prepare(translator, SOURCE), None, *args[1:])

    def matrices(*args):
        return head_matrices(translator, prepare(translator, SOURCE), None, *args[1:])

    shown = mv.show(inside, matrices, translator.cfg, result, "query", "cross", 2, 1, 3, "0.5")
    out = mv.show_query(inside, matrices, translator.cfg, result, "query", "cross", 2, 1, 3, "0.5")
    assert len(out) == len(shown) + 1
    assert out[:2] == shown[:2] and "head 1, query 3 " in out[0]  # the steps and footnote 4's text
    assert all(o is SKIP for o in out[2:-1])  # the Plots keep their values; the views stay as they are
    frames = json.loads(out[-1])
    fields = mv.InsideHeadView._fields[2:]
    assert list(frames["figures"]) == [f"in-{field}" for field in fields]
    for field, figure in zip(fields, shown[2:mv.N_QUERY_OUTPUTS], strict=True):
        assert frames["figures"][f"in-{field}"] == json.loads(json.dumps(figure)), field
    assert json.loads(mv.show_query(inside, matrices, translator.cfg, result, "query", "cross", 2, 1, 3, "0.5")[-1]) \
        ["answer"] != frames["answer"]  # each answer drawn, the same figures again too
    whole = mv.show_query(inside, matrices, translator.cfg, result, "matrix", "cross", 2, 1, 3, "")
    assert whole[-1] is SKIP and len(whole) == len(shown) + 1
    assert whole[:-1] == mv.show(inside, matrices, translator.cfg, result, "matrix", "cross", 2, 1, 3, "")


def test_the_tab_opens_on_footnote_4_unless_a_head_or_a_row_was_chosen(translator):
    cfg, result = translator.cfg, translator.attention(SOURCE)
    picks = []

    def pick(res, kind):
        picks.append(kind)
        return footnote4_pick(translator, prepare(translator, SOURCE), None, kind)

    expected = footnote4_pick(translator, prepare(translator, SOURCE), None, "cross")
    default = sharpest_head(result.maps("cross"))  # the head the Attention tab opens on
    for shown in (default, (1, MEAN)):  # the Attention tab's own default, or the mean: footnote 4's pick
        kind, layer, head, chips, seen, note = mv.opening(cfg, pick, result, None, "cross", *shown)
        assert (kind, layer, head, chips.props["value"]) == ("cross", expected.layer, expected.head, expected.query)
        assert len(chips.props["choices"]) == len(result.target_tokens)
        assert seen == mv.seen_key(result, "cross", *shown) and note == ""  # a new view: an earlier note goes
        # opened again on the same Attention view: the tab stays as it is (the user's own choices)
        assert mv.opening(cfg, pick, result, seen, "cross", *shown) == (SKIP,) * 6
    assert picks == ["cross", "cross"]
    other = next((layer, head) for layer in (1, 2) for head in (1, 2) if (layer, head) != default)
    kind, layer, head, chips, seen, note = mv.opening(cfg, pick, result, None, "cross", *other)
    assert (kind, layer, head, chips.props["value"]) == ("cross", *other, 0) and picks == ["cross", "cross"]
    with pytest.raises(ValueError, match="Visualise a sentence"):
        mv.opening(cfg, pick, None, None, "cross", 1, 1)
    # a row clicked on the close-up: that query, and the view seen, so that opening the tab keeps it
    out = mv.close_up_row(cfg, "4,123", result, "cross", *default)
    assert out[3].props["value"] == 4 and out[4] == Update(selected="inside")
    assert mv.opening(cfg, pick, result, out[-1], "cross", *default) == (SKIP,) * 6
    assert mv.close_up_row(cfg, "", result, "cross", 2, MEAN) == (SKIP,) * 6
    assert mv.row_opened(result, "cross", "2,99") == ("query", 2)
    assert mv.row_opened(result, "cross", "99,1") == (SKIP, SKIP)
    assert mv.row_opened(None, "cross", "1,1") == (SKIP, SKIP)


def test_the_footnote4_figure_always_shows_three_series(translator):
    for factor in (None, 0.5):
        hi = inside_head(translator, SOURCE, TARGET, "decoder_self", 2, 1, 3, factor=factor)
        series = figs_inside.footnote4_spec(hi)["data"]
        assert len(series) == 3 and len({t["marker"]["color"] for t in series}) == 3
        assert [t["marker"]["pattern"]["shape"] for t in series] == ["", "/", "."]  # hatched: not colour alone
        assert ("factor: × 0.5" if factor else "scaled twice: × 1/d_k") in series[2]["name"]


def test_the_page_holds_every_querys_figures_of_the_head_shown(translator, monkeypatch):
    """``held_queries``: every query's six figures, each exactly what a new query's answer sends (``show_query``), as
    changes from query 0's, with the choices they were computed for; nothing in the whole-matrix view, beyond
    HELD_QUERIES query tokens, or for choices the view refuses."""
    result = translator.attention(SOURCE)

    def inside(*args):
        return inside_head(translator, prepare(translator, SOURCE), None, *args[1:])

    def matrices(*args):
        return head_matrices(translator, prepare(translator, SOURCE), None, *args[1:])

    for kind, factor in (("cross", "0.5"), ("decoder_self", "")):
        held = json.loads(mv.held_queries(inside, translator.cfg, result, "query", kind, 2, 1, 0, factor))
        n = len(result.tokens(kind)[0])
        assert held["view"] == ["query", kind, 2, 1, factor] and held["queries"] == n == len(held["changes"])
        assert held["changes"][0] == []
        for query in range(n):
            sent = json.loads(mv.show_query(inside, matrices, translator.cfg, result, "query", kind, 2, 1, query,
                                            factor)[-1])["figures"]
            assert apply_changes(held["base"], held["changes"][query]) == sent, (kind, query)
        sizes = [len(json.dumps(c)) for c in held["changes"][1:]]
        assert max(sizes) < len(json.dumps(held["base"])) / 2  # only what differs from query 0 is sent
    assert mv.held_queries(inside, translator.cfg, result, "matrix", "cross", 2, 1, 0, "") == ""
    for bad, message in ((dict(layer=99), "layer must be between"), (dict(factor_text="x"), "scale factor must be a"),
                         (dict(factor_text=12), "scale factor is the text of its box"), (dict(query=99), "query must")):
        choices = dict(mode="query", kind="cross", layer=2, head=1, query=0, factor_text="") | bad
        with pytest.raises(ValueError, match=message):  # as the view's own call answers them
            mv.held_queries(inside, translator.cfg, result, **choices)
    assert mv.held_queries(inside, translator.cfg, None, "query", "cross", 2, 1, 0, "") == ""
    monkeypatch.setattr(mv, "HELD_QUERIES", len(result.tokens("cross")[0]) - 1)
    assert mv.held_queries(inside, translator.cfg, result, "query", "cross", 2, 1, 0, "") == ""


def test_a_link_brings_its_view_drawn_and_the_tabs_opening_draws_it_not_again(translator):
    """A link that names the tab (a page load's, a lecture's move) draws its view in its own answer, with the key of
    what the figures then show; the tab's opening, which follows, draws nothing for those choices, and draws anew for
    any other (another query, or after the tab drew another view itself: ``brought`` gone). The same link again,
    the tab's choices still the link's, draws nothing."""
    from viz.views.attention.share import View

    result, cfg = translator.attention(SOURCE), translator.cfg
    drawn = []

    def matrices(*args):
        drawn.append(args[1:])
        return head_matrices(translator, prepare(translator, SOURCE), None, *args[1:])

    def inside(*args):
        drawn.append(args[1:])
        return inside_head(translator, prepare(translator, SOURCE), None, *args[1:])

    link = View(SOURCE, kind="encoder_self", layer=2, head=3, tab="inside", query=1, show="matrix")
    out = mv.open_link_drawn(inside, matrices, cfg, link, result, "encoder_self", 2, 3, "query", "")
    kind, layer, head, chips, _, mode, key, *shown, tab = out
    assert (kind, layer, head, chips.props["value"], mode) == ("encoder_self", 2, 3, 1, "matrix")
    assert len(shown) == mv.N_SHOW and drawn == [("encoder_self", 2, 3, None)] and tab is not SKIP
    assert key == mv.drawn_key(cfg, result, "matrix", "encoder_self", "2", "3", "1")  # (the page's values as text)
    opened = mv.show_opened(inside, matrices, cfg, key, result, "matrix", "encoder_self", 2, 3, 1, "")
    assert all(o is SKIP for o in opened) and len(drawn) == 1
    assert mv.held_opened(inside, cfg, key, result, "matrix", "encoder_self", 2, 3, 1, "") is SKIP
    again = mv.open_link_drawn(inside, matrices, cfg, link, result, "encoder_self", 2, 3, "matrix", "", key,
                               "encoder_self", 2, 3, 1)
    assert all(o is SKIP for o in again[6:-1]) and again[-1] is not SKIP and len(drawn) == 1
    moved = mv.open_link_drawn(inside, matrices, cfg, link, result, "encoder_self", 2, 3, "matrix", "", key,
                               "encoder_self", 2, 3, 2)  # the visitor's query since: drawn again
    assert moved[6] == key and not all(o is SKIP for o in moved[7:-1])  # sent again ...
    assert len(drawn) == 1  # ... from the view kept for this run and these choices (viz.views.memo)
    *figures, brought = mv.show_opened(inside, matrices, cfg, key, result, "query", "encoder_self", 2, 3, 1, "")
    assert brought is None and not all(o is SKIP for o in figures) and drawn[-1] == ("encoder_self", 2, 3, 1, None)
    other = View(SOURCE, tab="attention")
    assert all(o is SKIP for o in mv.open_link_drawn(inside, matrices, cfg, other, result, "cross", 1, 1, "query", ""))
