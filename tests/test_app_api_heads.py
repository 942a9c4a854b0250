"""Head analysis through the app's API: /head_stats and /ablate, served in-process and spoken to over raw HTTP.

The tiny model (tests/conftest.py) stands in for the shipped one; the sample is the shipped 200 sentences.
Numbers are checked against a recomputation with the model (statistics, maps, sample scores), the messages
for bad heads against what they must say, and the queue: an ablation in flight leaves other requests
answered while a second ablation waits its turn; the shared weights never change.
"""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from helpers.raw_api import RawClient

import model.probes.ablation
from model.probes.ablation import ablate, baseline_score, load_sample
from model.probes.analysis import NO_DATA, ROLES, STATS, applies, sample_head_stats, sentence_stats
from model.terms import KINDS

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "a big dog runs in the park."


@pytest.fixture(scope="module")
def app(serve):
    """The app as ``app.launch`` serves it (its queue, api_open=False) on the tiny model: the Blocks."""
    return serve("tiny").demo


@pytest.fixture
def client(app):
    client = RawClient(app.local_url, timeout=300)
    yield client
    client.close()


def _digest(m: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, t in sorted(m.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------ /head_stats
def test_head_stats_gives_every_kinds_layers_by_heads_and_roles(client, translator):
    answer = client.call("head_stats", [SENTENCE])
    assert answer.event == "complete", answer.data
    out = answer.data[0]
    cfg = translator.cfg
    result = translator.attention(SENTENCE)
    assert out["translation"] == result.translation and out["source_tokens"] == result.source_tokens
    expected = {"sentence": sentence_stats(result), "sample": sample_head_stats(translator)}
    assert out["sample"]["sentences"] == len(load_sample().sources) == 200
    for scope, stats in expected.items():
        got = out[scope]
        assert (got["layers"], got["heads"]) == (cfg.n_layers, cfg.n_heads)
        for kind in KINDS:
            roles = got["roles"][kind]
            assert len(roles) == cfg.n_layers and all(len(row) == cfg.n_heads for row in roles)
            assert {r for row in roles for r in row} <= set(ROLES) | {NO_DATA}
            for stat in STATS:
                values = got["stats"][kind][stat]
                assert np.shape(values) == (cfg.n_layers, cfg.n_heads), (scope, kind, stat)
                if not applies(kind, stat):
                    assert all(v is None for row in values for v in row), (kind, stat)
                    continue
                mean = stats.mean(kind, stat)
                shown = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
                np.testing.assert_allclose(shown, mean, atol=6e-5, equal_nan=True, err_msg=f"{scope} {kind} {stat}")
        assert got["thresholds"]["eos_sink"] > 0


def test_head_stats_of_an_empty_sentence_is_a_message(client):
    answer = client.call("head_stats", ["   "])
    assert answer.event == "error" and "empty" in answer.message.lower(), answer.data


# ------------------------------------------------------------------------------------------------- /ablate
def test_ablating_no_head_leaves_everything_identical(client, translator):
    answer = client.call("ablate", [SENTENCE, []])
    assert answer.event == "complete", answer.data
    out = answer.data[0]
    result = translator.attention(SENTENCE)  # greedy, every head on
    assert out["heads_off"] == [] and out["translation"] == out["translation_before"] == result.translation
    assert out["target_tokens"] == result.target_tokens
    for kind in KINDS:
        assert out["shapes"][kind] == list(result.maps(kind).shape)
        np.testing.assert_allclose(np.array(out[kind]), result.maps(kind), atol=6e-5)
    base = baseline_score(translator, load_sample())
    assert out["sample"]["before"] == out["sample"]["after"] == base.to_json_dict()
    assert out["sample"]["bleu_signature"].startswith("nrefs:1|case:mixed")


def test_ablating_heads_gives_the_models_own_translation_maps_and_scores(client, translator):
    heads = ["cross:2:3", "encoder_self:1:1"]
    before = _digest(translator.model)
    answer = client.call("ablate", [SENTENCE, heads])
    assert answer.event == "complete", answer.data
    out = answer.data[0]
    again = ablate(translator, SENTENCE, heads)  # the same request, straight to the model
    assert out["heads_off"] == ["encoder_self:1:1", "cross:2:3"]  # sorted, as the mask is built
    assert out["translation"] == again.attention.translation
    assert out["translation_before"] == translator.attention(SENTENCE).translation
    for kind in KINDS:
        np.testing.assert_allclose(np.array(out[kind]), again.attention.maps(kind), atol=6e-5)
    assert out["sample"]["after"] == again.after.to_json_dict()
    assert out["sample"]["before"] == again.before.to_json_dict()
    # switched off for that request only: the maps of a plain request are the model's, and so are its weights
    plain = client.call("attention", [SENTENCE, "", None]).data[0]
    np.testing.assert_allclose(np.array(plain["cross"]), translator.attention(SENTENCE).cross, atol=6e-6)
    assert _digest(translator.model) == before


@pytest.mark.parametrize(
    ("heads", "words"),
    [
        (["cross:3:1"], "layers run 1–2 and heads 1–4"),
        (["cross:0:1"], "layers run 1–2"),
        (["attn:1:1"], "unknown kind 'attn'"),
        (["cross:1"], "is not 'kind:layer:head'"),
        (["cross:1.5:1"], "whole numbers"),
        ([1], "a head must be a string"),
        (12, "heads must be a list"),
        ({"cross": 1}, "heads must be a list"),
        (["x" * 3000], "is not 'kind:layer:head'"),
    ],
)
def test_bad_heads_get_a_message_that_says_what_to_send(client, heads, words):
    answer = client.call("ablate", [SENTENCE, heads])
    assert answer.event == "error" and words in answer.message, answer.data
    assert len(answer.message) < 300


def test_heads_may_come_as_one_string_and_an_empty_sentence_is_a_message(client, translator):
    answer = client.call("ablate", [SENTENCE, "cross:1:1, cross:1:2"])
    assert answer.event == "complete" and answer.data[0]["heads_off"] == ["cross:1:1", "cross:1:2"], answer.data
    answer = client.call("ablate", ["", ["cross:1:1"]])
    assert answer.event == "error" and "empty" in answer.message.lower(), answer.data


# -------------------------------------------------------------------------------------------------- the queue
def test_ablations_run_one_at_a_time_and_never_hold_up_other_requests(app, translator, monkeypatch):
    """The page's ablation events and /ablate share one queue of their own, limited to one at a time."""
    ablation_events = [fn for fn in app.fns.values() if fn.concurrency_id == "ablate"]
    assert len(ablation_events) >= 3 and {fn.concurrency_limit for fn in ablation_events} == {1}
    assert "ablate" in {fn.api_name for fn in ablation_events}

    baseline_score(translator, load_sample())  # cached: below, only the ablated sample is decoded
    release, inside = threading.Event(), []
    scored = model.probes.ablation.score_sample

    def held(*args, **kwargs):  # an ablation's sample decoding, held until the test lets it go
        inside.append(args)
        assert release.wait(300), "never released"
        return scored(*args, **kwargs)

    monkeypatch.setattr(model.probes.ablation, "score_sample", held)
    weights = _digest(translator.model)
    clients = [RawClient(app.local_url, timeout=300) for _ in range(4)]
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            first = pool.submit(clients[0].call, "ablate", [SENTENCE, ["cross:1:4"]])
            _wait_for(lambda: len(inside) == 1)
            second = pool.submit(clients[1].call, "ablate", ["a red house.", ["cross:2:4"]])
            # answered while the first ablation is held: they never wait for it (else they would time out)
            assert clients[2].call("translate", [SENTENCE, 2]).event == "complete"
            assert clients[3].call("head_stats", [SENTENCE]).event == "complete"
            time.sleep(0.5)  # room for the second ablation to start, were it let in (it must not be)
            assert len(inside) == 1 and not first.done() and not second.done()  # the second waits its turn
            release.set()
            assert first.result(300).event == "complete" and second.result(300).event == "complete"
    finally:
        release.set()
        for c in clients:
            c.close()
    assert len(inside) == 2
    assert _digest(translator.model) == weights


def _wait_for(condition, timeout: float = 300.0) -> None:
    end = time.perf_counter() + timeout
    while not condition():
        assert time.perf_counter() < end, "timed out"
        time.sleep(0.02)
