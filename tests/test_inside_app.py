"""Inside a head, in the app: Runs' on-demand pieces, the "Inside a head" and "contributions" presenters, and the
named endpoint /inside_head over raw HTTP (the tiny model; test_inside_head.py checks the numbers themselves).

/inside_head must return exactly the pieces of the head /attention shows: its weights are /attention's row.
Contributions are computed only when asked for, never by /visualise.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers.plotly import array
from helpers.raw_api import RawClient, api_info, arguments

from model.probes.inside import contribution_maps
from model.probes.replay import prepare, sentence_of
from model.serving.cache import ByteLRU
from model.serving.runs import Runs
from viz.views import inside_head as inside_view
from viz.views.attention import closeup
from viz.views.attention import contributions as measures
from viz.views.attention import maps as attention

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SOURCE = "a big dog runs in the park near the water."
TARGET = "ein großer hund rennt in dem park."
DOCUMENTED_KEYS = {"query_token", "key_tokens", "q", "k", "v", "scores", "scale", "masked", "weights", "output",
              "head_outputs", "sublayer_output", "layer_output", "contributions"}


@pytest.fixture(scope="module")
def runs(translator) -> Runs:
    return Runs(translator, cache=ByteLRU(64 << 20))


# ------------------------------------------------------------------------------------- the model's side
def test_encode_input_reads_a_sentence_as_attention_does(translator):
    text, ids, warnings = translator.encode_input("  a big\x00dog  ")
    assert text == "a big dog" and ids[-1] == translator.cfg.eos_id and warnings == []
    assert ids[:-1] == translator.tokenizer.encode("a big dog")
    _, ids, warnings = translator.encode_input("dog " * 300, "given translation")
    assert len(ids) == translator.max_tokens and "given translation was cut" in warnings[0]
    with pytest.raises(ValueError, match="The source sentence is empty"):
        translator.encode_input(" \t ")


@pytest.mark.parametrize("target", [None, TARGET])
def test_a_sentence_of_a_result_has_its_tokens_and_ids(translator, target):
    result = translator.attention(SOURCE, target)
    s = sentence_of(translator, result)
    assert (list(s.source_tokens), list(s.target_tokens)) == (result.source_tokens, result.target_tokens)
    assert len(s.src_ids) == len(s.source_tokens) and len(s.tgt_in_ids) == len(s.target_tokens)
    assert s.tgt_in_ids[0] == translator.cfg.bos_id and s.teacher_forced == (target is not None)
    assert s == prepare(translator, SOURCE, target) and hash(s) == hash(prepare(translator, SOURCE, target))


def test_runs_compute_contributions_on_demand_cached_and_read_only(runs, translator):
    runs.session(SOURCE)  # what /visualise runs
    assert not [k for k in runs.cache._entries if k[0] == "contributions"]
    result = runs.attention(SOURCE)
    maps = runs.contributions(result, "decoder_self")
    assert maps is runs.contributions(runs.attention(SOURCE), "decoder_self")  # cached per sentence and kind
    assert not maps.flags.writeable
    np.testing.assert_array_equal(maps, contribution_maps(translator, prepare(translator, SOURCE), "decoder_self"))
    hi = runs.inside_head(result, "cross", 2, 3, 1)
    np.testing.assert_allclose(hi.weights, result.cross[1, 2, 1], atol=1e-6)


# --------------------------------------------------------------------------------- the contributions toggle
def test_the_toggle_draws_contributions_in_place_of_weights(runs, translator):
    cfg, result = translator.cfg, runs.attention(SOURCE, TARGET)
    calls = []

    def contributions(res, kind):
        calls.append(kind)
        return runs.contributions(res, kind)

    weights = closeup.views(cfg, contributions, result, "cross", 2, 3)
    assert calls == [] and weights == attention.views(cfg, result, "cross", 2, 3)  # weights: no extra work
    overview, detail = closeup.views(cfg, contributions, result, "cross", 2, 3, False, "fixed",
                                      measures.CONTRIBUTIONS)
    expected = runs.contributions(result, "cross")  # (L, H, Q, K)
    np.testing.assert_allclose(array(detail["data"][0]["z"]), expected[1, 2], atol=1e-6)
    z = array(overview["data"][0]["z"])  # whole percent per cell (uint8), tiles apart
    assert sorted(z[z <= 100].tolist()) == sorted(np.rint(expected * 100).astype(int).ravel().tolist())
    assert calls == ["cross"]
    assert detail["data"][0]["colorbar"]["title"]["text"] == "contribution"
    assert "contribution %{z}%" in overview["data"][0]["hovertemplate"]
    assert detail["layout"]["title"]["text"].endswith(measures.TITLE_NOTE)
    assert detail["config"]["toImageButtonOptions"]["filename"].endswith("_contributions")
    assert weights[1]["data"][0]["colorbar"]["title"]["text"] == "weight"  # the weights' figure is untouched
    *_, kept = closeup.toggled(cfg, contributions, result, "cross", 2, 3, False, "fixed", measures.WEIGHTS)
    assert kept == measures.WEIGHTS
    with pytest.raises(ValueError, match="got null"):  # the toggle always sends its value: none is a bad call
        closeup.toggled(cfg, contributions, result, "cross", 2, 3, False, "fixed", None)
    with pytest.raises(ValueError, match="The colour shows weights or contributions"):
        closeup.detail_plot(cfg, contributions, result, "cross", 2, 3, False, "fixed", "both")
    with pytest.raises(ValueError, match="Unknown attention kind"):
        closeup.views(cfg, contributions, result, "both", 2, 3, False, "fixed", measures.CONTRIBUTIONS)


def test_contribution_rows_sum_to_one_and_masked_keys_get_none(runs):
    maps = runs.contributions(runs.attention(SOURCE), "decoder_self")  # (L, H, T, T)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(np.ones(maps.shape[-2:], bool), 1) <= (maps == 0))  # keys after the query: 0


# ------------------------------------------------------------------------------------ the tab's choices
def test_the_tab_follows_the_attention_tabs_view(runs, translator):
    cfg, result = translator.cfg, runs.attention(SOURCE)
    kind, layer, head, chips, query = inside_view.follow(cfg, result, "decoder_self", 2, 0, 3)
    assert (kind, layer, head, query) == ("decoder_self", 2, 1, 3)  # the mean -> head 1; the query kept
    assert [v for _, v in chips] == list(range(len(result.target_tokens)))
    assert inside_view.follow(cfg, result, "cross", 1, 2, 999)[-1] == 0  # not in this sentence: the first
    with pytest.raises(ValueError, match="Visualise a sentence"):
        inside_view.follow(cfg, None, "cross", 1, 2, 0)
    assert inside_view.row_from_click("4,1712345") == 4
    assert inside_view.row_from_click("x,1") is None and inside_view.row_from_click("") is None
    assert inside_view.factor_from_slider(64, 0.125) == "" and inside_view.factor_from_slider(64, 1) == "1"  # own: ""
    assert inside_view.factor_from_slider(24, 0.2041) == "" and inside_view.factor_from_slider(24, 0.5) == "0.5"
    assert inside_view.factor_from_text("") is None and inside_view.factor_from_text(" 2 ") == 2.0


# ------------------------------------------------------------------------------------ /inside_head, served
@pytest.fixture(scope="module")
def client(serve, request):
    counted = []
    real = Runs.contributions
    Runs.contributions = lambda self, *a: counted.append(a) or real(self, *a)  # counts them app-wide
    request.addfinalizer(lambda: setattr(Runs, "contributions", real))
    url = serve("tiny").url
    client = RawClient(url)
    client.contributions_computed, client.endpoints = counted, api_info(url)
    yield client
    client.close()


def call(client, **given) -> dict | str:
    args = {"text": SOURCE, "target": "", "kind": "encoder_self", "layer": 1, "head": 1, "query": 0, "factor": None}
    args.update(given)
    answer = client.call("inside_head", list(args.values()))
    return answer.data[0] if answer.event == "complete" else answer.message


@pytest.mark.parametrize("target", ["", TARGET])
def test_inside_head_has_the_documented_keys_and_attentions_row(client, target):
    maps = client.call("attention", [SOURCE, target, None]).data[0]
    for kind, layer, head in (("encoder_self", 1, 2), ("decoder_self", 2, 4), ("cross", 2, 1)):
        n_q = len(maps["source_tokens" if kind == "encoder_self" else "target_tokens"])
        for query in (0, n_q - 1):
            data = call(client, target=target, kind=kind, layer=layer, head=head, query=query)
            assert isinstance(data, dict) and DOCUMENTED_KEYS <= set(data), data
            np.testing.assert_allclose(data["weights"], maps[kind][layer - 1][head - 1][query], atol=2e-5)
            assert data["key_tokens"] == maps["target_tokens" if kind == "decoder_self" else "source_tokens"]
            assert data["masked"] == [kind == "decoder_self" and j > query for j in range(len(data["key_tokens"]))]
    assert math.isclose(call(client, factor=1)["scale"], 1.0)
    assert math.isclose(call(client)["scale"], maps["scale"], rel_tol=1e-4)


def test_inside_head_bad_inputs_get_messages(client):
    for given, words in [
        ({"kind": "both"}, "Unknown attention kind 'both': choose one of encoder_self"),
        ({"layer": 0}, "layer must be between 1 and 2 (a whole number); got 0."),
        ({"head": 0}, "head must be between 1 and 4"),
        ({"head": 1.5}, "got 1.5"),
        ({"query": 99}, "query must be between 0 and"),
        ({"query": "abc"}, 'got "abc", send a number'),
        ({"factor": -1}, "factor must be a positive number up to 100"),
        ({"factor": math.inf}, "got Infinity"),
        ({"text": ""}, "The source sentence is empty"),
        ({"text": None}, "The source sentence is empty"),
        ({"target": 12}, "The given translation must be text"),
    ]:
        message = call(client, **given)
        assert isinstance(message, str) and words in message, (given, message)


def test_visualise_computes_no_contributions(client):
    for name, given in (("visualise", dict(kind="cross", layer=1, head=0)),
                        ("render_views", dict(kind="decoder_self", layer=2, head=1)),
                        ("render_detail", dict(kind="decoder_self", layer=2, head=1))):
        answer = client.call(name, arguments(client.endpoints[name], SOURCE, **given))
        assert answer.event == "complete", (name, answer.data)
    assert client.contributions_computed == []
    assert json.dumps(call(client))  # and /inside_head needs none either
    assert client.contributions_computed == []
