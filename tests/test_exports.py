"""Exports and JSON answers of a public app stay bounded.

- ``ExportFolder`` keeps the newest exports within a count and a byte bound; 30 exports through the raw
  HTTP API leave at most ``MAX_EXPORTS`` exports on disk, written once (inside Gradio's cache, no copy).
- The JSON of ``/attention`` and of the export holds numbers really rounded to 5 decimals (float64 first).
- The upload route refuses files (the app takes none).
- The shipped model's /attention answer at 100 tokens a side stays under 16 MB, rounded (``python -m bench
  --sections server`` measures it at 20 and 100 tokens: the numbers in bench/RESULTS.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers.raw_api import RawClient, api_info, arguments

from bench.common import SENTENCES
from model.network.inference import JSON_DECIMALS, Translator
from model.terms import MAX_TOKENS
from viz.views.attention import maps as attention
from viz.views.exports import MAX_BYTES, MAX_EXPORTS, ExportFolder

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "a big dog runs in the park."
LONG_DECIMALS = re.compile(rb"\d\.\d{%d,}" % (JSON_DECIMALS + 1))  # a number with more than 5 decimals
SCALE = re.compile(rb'"scale": ?[-+.0-9eE]+')  # the model's 1/sqrt(d_k) itself is not a rounded weight


def long_numbers(json_text: bytes) -> list[bytes]:
    """The attention weights in a JSON text written with more than 5 decimals."""
    return LONG_DECIMALS.findall(SCALE.sub(b"", json_text))


# ------------------------------------------------------------------------------------ the folder alone
def test_the_newest_exports_stay_within_the_count(tmp_path):
    exports = ExportFolder(tmp_path, max_exports=3)
    paths = [exports.write({"a.bin": bytes([i]) * 10, "b.txt": b"x"}) for i in range(10)]
    assert exports.usage() == (6, 3 * 11)
    kept = [Path(p) for batch in paths[-3:] for p in batch]
    assert all(p.exists() for p in kept) and not any(Path(p).exists() for p in paths[0])
    assert Path(paths[-1][0]).read_bytes() == bytes([9]) * 10


def test_the_newest_exports_stay_within_the_bytes_and_the_newest_always(tmp_path):
    exports = ExportFolder(tmp_path, max_exports=100, max_bytes=2500)
    for _ in range(5):
        exports.write({"a.bin": b"x" * 1000})
    assert exports.usage() == (2, 2000)
    big = exports.write({"big.bin": b"y" * 5000})  # over the bound alone: it stays, all older ones go
    assert exports.usage() == (1, 5000) and Path(big[0]).exists()


def test_export_files_writes_the_sessions_maps(tmp_path, tiny_model_dir):
    result = Translator(tiny_model_dir, device="cpu").attention(SENTENCE)
    npz, js = map(Path, attention.export_files(ExportFolder(tmp_path), result))
    with np.load(npz) as data:
        np.testing.assert_array_equal(data["cross"], result.cross)
    data = json.loads(js.read_bytes())
    np.testing.assert_allclose(data["cross"], result.cross, atol=0.5 * 10**-JSON_DECIMALS + 1e-9)
    assert not long_numbers(js.read_bytes())
    with pytest.raises(ValueError, match="Nothing to export yet"):
        attention.export_files(ExportFolder(tmp_path), None)


def test_json_numbers_are_rounded_as_written(tiny_model_dir):
    """float32 0.01687 rounded in float32 prints as 0.01686999946832657; the JSON holds 0.01687."""
    result = Translator(tiny_model_dir, device="cpu").attention(SENTENCE)
    result.cross[0, 0, 0, :2] = np.float32(0.01687), np.float32(0.98313)
    text = result.to_json().encode()
    assert b"0.01687," in text and not long_numbers(text)


# ------------------------------------------------------------------------------------ through the app
@pytest.fixture(scope="module")
def app_url(serve) -> tuple[str, Path]:
    """The app on the tiny model, and its own Gradio cache folder (nothing else writes there)."""
    app = serve("tiny")
    return app.url, app.temp_dir


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_30_exports_leave_at_most_the_bound_on_disk(app_url):
    url, cache = app_url
    client = RawClient(url)
    assert client.call("visualise", arguments(api_info(url)["visualise"], SENTENCE)).event == "complete"
    answers = []
    for _ in range(MAX_EXPORTS + 10):
        answer = client.call("export", [])
        assert answer.event == "complete", answer.data
        answers.append(answer.data[0])
    on_disk = files_under(cache)
    assert len(on_disk) <= 2 * MAX_EXPORTS and sum(p.stat().st_size for p in on_disk) <= MAX_BYTES
    newest = [Path(f["path"]) for f in answers[-1]]
    # written once: Gradio serves the export where it lies (inside its cache), it made no copy of its own
    assert {p.name for p in newest} == {"attention.npz", "attention.json"} and set(newest) <= set(on_disk)
    assert len(on_disk) == 2 * MAX_EXPORTS  # the 10 oldest exports are gone, the 20 newest stay
    status, body = client.request("GET", f"/gradio_api/file={newest[1]}")
    assert status == 200 and json.loads(body)["source_tokens"][-1] == "</s>" and not long_numbers(body)
    status, body = client.request("GET", f"/gradio_api/file={answers[0][0]['path']}")
    assert status == 404 and b"export again" in body, (status, body)  # the oldest export was removed: its link is gone
    # any other path that is not there is refused as Gradio refuses it: nothing tells it apart from a forbidden one
    status, _ = client.request("GET", f"/gradio_api/file={Path(answers[0][0]['path']).parents[2] / 'nowhere.json'}")
    assert status == 403


def test_attention_answer_has_rounded_numbers(app_url):
    client = RawClient(app_url[0])
    answer = client.call("attention", [SENTENCE, "", None])
    assert answer.event == "complete" and np.asarray(answer.data[0]["cross"]).ndim == 4
    assert not long_numbers(answer.raw)


def test_the_upload_route_takes_no_files(app_url):
    url, cache = app_url
    client = RawClient(url)
    boundary = "----bound"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.bin\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n")
    # 64 KB: under the server's body bound (a larger body gets its 413 first: tests/test_server_limits.py)
    body = head.encode() + b"\0" * 2**16 + f"\r\n--{boundary}--\r\n".encode()
    status, answer = client.request("POST", "/gradio_api/upload", body,
                                    {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert status == 413 and b"This app takes no files" in answer, (status, answer[:200])  # viz.ui.guards
    assert not [p for p in files_under(cache) if p.name == "big.bin"]


# ------------------------------------------------------------------------------ the shipped model's answer
def test_the_shipped_models_attention_answer_at_100_tokens_a_side_is_rounded_and_under_16_mb(serve):
    """The SSE event's bytes, the same text forced as the translation (27.8 MB at 60 + 60 before the rounding);
    ``python -m bench --sections server`` measures them at 20 and 100 tokens (``bench.server.attention_sent``)."""
    text = " ".join(SENTENCES)  # ~140 words: cut to the app's 100 tokens
    client = RawClient(serve("shipped").url, timeout=600)
    answer = client.call("attention", [text, text, None])
    client.close()
    data = answer.data[0]
    assert (len(data["source_tokens"]), len(data["target_tokens"])) == (100, 100)
    assert len(answer.raw) < 16 * 2**20 and not long_numbers(answer.raw)


def test_the_largest_attention_answer_is_bounded(serve):
    """The largest answer /attention can give: 100 source tokens and the model's own translation at its length
    limit, ``MAX_TOKENS`` (it was 1.5 × 100 + 10 = 160 tokens: 19.7 MB); 1.44 million weights of at most 8 bytes
    each (0.12345,) plus the tokens: under 11.6 MB, what the README promises."""
    client = RawClient(serve("shipped").url, timeout=600)
    answer = client.call("attention", ["dog " * 500, "", None])  # the shipped model repeats itself to the limit
    client.close()
    data = answer.data[0]
    assert (len(data["source_tokens"]), len(data["target_tokens"])) == (MAX_TOKENS, MAX_TOKENS)
    assert len(answer.raw) < 11.6e6 and not long_numbers(answer.raw)
