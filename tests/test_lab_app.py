"""The Lab through the app's API: /lab_runs, /lab_attention and /timelapse over raw HTTP, on a tiny exported lab
(tests/conftest.py's ``tiny_lab``) and on an app with no lab shipped yet. Values are checked against the files
and against the sibling's own forward pass; bad values get a message naming the allowed ones."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.raw_api import RawClient

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")


@pytest.fixture(scope="module")
def client(serve, tiny_lab):
    _, out, _, _ = tiny_lab
    client = RawClient(serve("tiny", env={"ATTN_LAB_DIR": str(out)}).url, timeout=300)
    yield client
    client.close()


def test_lab_runs_lists_every_shipped_run_with_its_curves_and_bleu(client, tiny_lab):
    _, out, _, records = tiny_lab
    answer = client.call("lab_runs", [])
    assert answer.event == "complete", answer.data
    runs = answer.data[0]["runs"]
    assert [r["name"] for r in runs] == [r["name"] for r in records]
    for run, record in zip(runs, records):
        assert run["config"] == record["config"] and run["seeds"] == [record["seed"]]
        assert run["bleu"] == [record["bleu"]] and run["curves"] == [record["curves"]]
        assert run["bleu"] == [json.loads((out / f"{record['name']}.json").read_text())["bleu"]]


def test_lab_attention_is_the_siblings_own_run_with_attentions_keys(client, tiny_lab, serve):
    _, out, _, _ = tiny_lab
    answer = client.call("lab_attention", ["the dog runs .", "h1-unscaled"])
    assert answer.event == "complete", answer.data
    maps = answer.data[0]
    plain = client.call("attention", ["the dog runs .", "", None]).data[0]
    assert set(maps) == set(plain) | {"run"} and maps["run"] == "h1-unscaled"
    from model.network.inference import Translator

    own = Translator(out / "h1-unscaled", "cpu").attention("the dog runs .")
    assert maps["translation"] == own.translation
    np.testing.assert_allclose(np.array(maps["cross"]), own.cross, atol=1e-5)
    assert np.array(maps["encoder_self"]).shape[1] == 1  # one head
    shipped = client.call("lab_attention", ["the dog runs .", "shipped"]).data[0]
    assert shipped["cross"] == plain["cross"] and shipped["run"] == "shipped"


@pytest.mark.parametrize(("endpoint", "data", "words"), [
    ("lab_attention", ["the dog runs .", "h2"], "unknown run 'h2'; choose one of: shipped, h8, h1, h1-unscaled"),
    ("lab_attention", ["   ", "h1"], "empty"),
    ("timelapse", ["9", "cross"], "unknown example '9'; choose one of: 0: Two dogs are running"),
    ("timelapse", ["0", "cross-attention"], "unknown kind 'cross-attention'; choose one of: encoder_self"),
])
def test_bad_lab_values_get_a_message_naming_the_allowed_ones(client, endpoint, data, words):
    answer = client.call(endpoint, data)
    assert answer.event == "error" and words.lower() in (answer.message or "").lower(), answer.data


def test_timelapse_gives_steps_by_layers_by_heads_by_queries_by_keys(client, tiny_lab):
    _, out, _, records = tiny_lab
    answer = client.call("timelapse", ["A woman is putting on a coat.", "decoder_self"])
    assert answer.event == "complete", answer.data
    tl = answer.data[0]
    reference = records[0]
    assert tl["steps"] == reference["timelapse"]["steps"] and tl["run"] == reference["name"]
    maps = np.array(tl["maps"])
    assert maps.shape[:3] == (len(tl["steps"]), reference["config"]["n_layers"], reference["config"]["n_heads"])
    assert maps.shape[3:] == (len(tl["query_tokens"]), len(tl["key_tokens"]))
    with np.load(out / reference["timelapse"]["maps"]) as z:
        np.testing.assert_allclose(maps, z["2.decoder_self"] / 255, atol=5e-4)
    assert np.allclose(np.triu(maps[-1, 0, 0], 1), 0)  # masked: no weight on a later position


def test_an_app_with_no_lab_shipped_says_so(serve, tmp_path_factory):
    empty = tmp_path_factory.mktemp("no_lab")
    client = RawClient(serve("tiny", env={"ATTN_LAB_DIR": str(empty)}).url, timeout=300)
    try:
        assert client.call("lab_runs", []).data[0] == {"runs": []}
        answer = client.call("timelapse", ["0", "cross"])
        assert answer.event == "error" and "no lab run is shipped yet" in answer.message
    finally:
        client.close()
