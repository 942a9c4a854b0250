"""Every input of every public endpoint, sent wrong through the raw HTTP API.

Each endpoint's parameters come from the running app's own API description (``/gradio_api/info``, plus the
undocumented ``/figure1``), so an endpoint added later is probed too. One parameter at a time is replaced
by each value of a bad-input corpus (null, NaN, ±Infinity, strings for numbers, out of range, fractional,
wrong types, overlong or hostile text) while the others stay valid. The answer must be a normal one or an
error whose message says what to change: never an error without a message (Gradio's ``{"error": null}``),
never traceback text or a bare Python exception message.

Also a broken model folder at start: ``python app.py`` ends with one line, no traceback, exit code 2.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.raw_api import Answer, RawClient, api_info, arguments, valid

from bench.common import ROOT, free_port
from viz.offline import OFFLINE_ENV

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "a big dog runs in the park."
NAN, INF = math.nan, math.inf
NUMBER_BAD = [None, NAN, INF, -INF, "abc", "", "3", "2.5", 2.5, -1, 10**9, 1e300, True, [1], {"a": 1}]
CHOICE_BAD = [None, "", "nope", 3, NAN, True, [1], {"a": 1}]
TEXT_BAD = [None, 12, 2.5, NAN, True, [1], {"a": 1}, "", " \t\n", "x" * 3000,
            '<b>bold</b><script>alert(1)</script>\x00\u202e$x$', "Ünïcödé 🙂 中文 ½"]
# What a message must not be: traceback text, or a Python exception's own words (they say nothing to a user).
PYTHON_WORDS = ("Traceback", 'File "', "invalid literal", "NoneType", "not supported between", "unhashable",
                "object has no attribute", "could not convert", "cannot convert", "<class ", "argument must be")
ENDPOINTS = ("visualise", "render_views", "render_detail", "export", "figure1", "scaling_live", "scaling_variance",
             "scaling_saturation", "translate", "attention")


@pytest.fixture(scope="module")
def url(serve) -> str:
    return serve("tiny").url


@pytest.fixture(scope="module")
def endpoints(url) -> dict[str, list[dict]]:
    """name -> its parameters as the app describes them (name, type, default), /figure1 (undocumented) added."""
    found = api_info(url)
    found.setdefault("figure1", [])
    return found


@pytest.fixture
def client(url, endpoints):
    """A fresh session that has visualised a sentence (so the views and the export have maps to use)."""
    client = RawClient(url)
    assert client.call("visualise", args(endpoints, "visualise")).event == "complete"
    yield client
    client.close()


def args(endpoints: dict, name: str, **given) -> list:
    return arguments(endpoints[name], SENTENCE, **given)


def corpus(param: dict) -> list:
    """The bad values for one parameter, by the type the app declares for it."""
    kind = param.get("type") or {}
    if "enum" in kind:
        numeric = all(isinstance(v, int) for v in kind["enum"])
        return NUMBER_BAD + ["nope"] if numeric else CHOICE_BAD
    types = {kind.get("type")} | {t.get("type") for t in kind.get("oneOf", [])}
    return NUMBER_BAD if types & {"number", "integer"} else TEXT_BAD


def problem(answer: Answer) -> str | None:
    """Why an answer is not acceptable, or None."""
    if answer.event == "complete":
        return None
    message = answer.message
    if not isinstance(message, str) or not message.strip():
        return f"error without a message: {answer.data!r}"
    bad = [w for w in PYTHON_WORDS if w in message]
    return f"message with {bad}: {message!r}" if bad else None


def probe(client: RawClient, name: str, params: list[dict]) -> list[str]:
    """Every bad value in every parameter of one endpoint; the unacceptable answers, described."""
    good = [valid(p, SENTENCE) for p in params]
    failures = []
    for i, param in enumerate(params):
        for bad in corpus(param):
            args = good[:i] + [bad] + good[i + 1:]
            why = problem(client.call(name, args))
            if why:
                failures.append(f"/{name} {param['parameter_name']}={json.dumps(bad)[:30]}: {why}")
    if not params:  # inputs the app holds itself (the session's maps): extra arguments must not hurt
        for extra in ([], [NAN, "x"], [None]):
            why = problem(client.call(name, extra))
            if why:
                failures.append(f"/{name} {extra}: {why}")
    return failures


@pytest.mark.parametrize("name", ENDPOINTS)
def test_every_bad_input_gets_an_answer_or_a_message(client, endpoints, name):
    assert name in endpoints, f"/{name} is gone from the app's API"
    failures = probe(client, name, endpoints[name])
    assert not failures, "\n".join(failures)


def test_endpoints_added_later_are_probed_too(client, endpoints):
    """Whatever else the app serves publicly (e.g. /decode_steps) meets the same corpus."""
    failures = [f for name in sorted(set(endpoints) - set(ENDPOINTS)) for f in probe(client, name, endpoints[name])]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "name, given, word",
    [
        ("visualise", {"layer": 1.5}, "layer 1.5"),
        ("render_detail", {"kind": "cross", "head": 2.5}, "head 2.5"),
        ("scaling_live", {"layer": 1.5}, "layer 1.5"),
        ("translate", {"beam": 2.5}, "got 2.5"),
        ("scaling_variance", {"log2_dk": 3.5}, "got 3.5"),
        ("scaling_saturation", {"seed": 0.5}, "got 0.5"),
    ],
)
def test_a_fractional_layer_head_beam_or_count_is_an_error_not_rounded(client, endpoints, name, given, word):
    answer = client.call(name, args(endpoints, name, **given))
    assert answer.event == "error" and "whole number" in answer.message and word in answer.message, answer.data


def test_messages_say_what_to_send(client, endpoints):
    """The message names the input, the allowed values and what was sent."""
    expected = [
        ("translate", {"beam": "abc"}, "Beam size must be between 1 and 8 (a whole number; 1 = greedy"),
        ("translate", {"beam": None}, "got null, send a number"),
        ("attention", {"scale": "0.5"}, "scale must be a positive number up to 100"),
        ("attention", {"scale": INF}, "got Infinity"),
        ("visualise", {"layer": NAN}, "Layer must be 1–2 and head 0–4"),
        ("scaling_live", {"alpha": NAN}, "scale factor must be between 0"),
        ("visualise", {"kind": "both"}, "choose one of encoder_self, decoder_self, cross"),
        ("attention", {"text": [SENTENCE]}, "The sentence must be text (a string); got ["),
        ("translate", {"text": "x" * 2001}, "shorten it to 2,000"),
    ]
    for name, given, words in expected:
        answer = client.call(name, args(endpoints, name, **given))
        assert answer.event == "error" and words in answer.message, (name, given, answer.data)


def test_whole_numbers_as_digits_and_null_head_are_normal_answers(client, endpoints):
    assert client.call("translate", args(endpoints, "translate", beam="3")).event == "complete"
    null_head = args(endpoints, "render_detail", kind="cross", layer=2.0, head=None)
    assert client.call("render_detail", null_head).event == "complete"  # null head = the mean
    detail = client.call("visualise", args(endpoints, "visualise", kind="cross", layer="2", head=None)).data[3]
    assert "layer 2 · mean of 4 heads" in json.loads(detail["plot"])["layout"]["title"]["text"]


# ---------------------------------------------------------------------------- a broken model at app start
def broken_copy(tiny_model_dir: Path, tmp_path: Path, name: str, data: bytes | None) -> Path:
    """A copy of the tiny model folder with ``name`` replaced by ``data`` (None: removed)."""
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    if data is None:
        (folder / name).unlink()
    else:
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize(
    "name, data",
    [("config.json", b'{"d_model": 192,'), ("model.safetensors", b"\0" * 100), ("tokenizer.model", None)],
)
def test_a_broken_model_stops_the_app_with_one_line(tiny_model_dir, tmp_path, name, data):
    folder = broken_copy(tiny_model_dir, tmp_path, name, data)
    env = {**os.environ, **OFFLINE_ENV, "ATTN_MODEL_DIR": str(folder), "GRADIO_SERVER_PORT": str(free_port())}
    run = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and run.stdout == "" and len(lines) == 1, (run.returncode, run.stdout, run.stderr)
    assert lines[0].startswith("error: ") and str(folder / name) in lines[0] and "ATTN_MODEL_DIR" in lines[0], lines
    assert "Traceback" not in run.stderr


def test_a_missing_model_folder_stops_the_app_with_one_line(tmp_path):
    env = {**os.environ, **OFFLINE_ENV, "ATTN_MODEL_DIR": str(tmp_path / "nowhere")}
    run = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and str(tmp_path / "nowhere") in run.stderr, run.stderr
