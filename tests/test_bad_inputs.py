"""Every input of every event, public and page-only, sent wrong through the raw HTTP API.

Every event the app runs comes from its own description (``/config``'s dependencies; ``tests/helpers/bad_values``),
so an event added later is probed too: too few and too many values, then one input at a time replaced by each value
of a bad-value corpus (null, NaN, ±Infinity, strings for numbers, out of range, fractional, wrong types, values
no checkbox or menu sends, overlong or hostile text) while the others stay valid. Each public endpoint is also
called by name (``/gradio_api/call/<name>``, ``/gradio_api/info``'s parameters). The answer must be a normal one
(for a value the page could send) or a message that says what to change: never an error without a message (Gradio's
``{"error": null}``), never traceback text or a bare Python exception message, never HTML.

Also the routes around the events (v2 calls by parameter name, uploads, removed exports) and a broken model folder
at start: ``python app.py`` ends with one line, no traceback, exit code 2.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import brotli
import pytest
from helpers import bad_values
from helpers.raw_api import RawClient, api_info, arguments, valid

from bench.common import ROOT
from viz.offline import OFFLINE_ENV
from viz.ui.guards import HEAD_SCRIPT, CompressedAssets

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "a big dog runs in the park."
NAN, INF = math.nan, math.inf
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


def test_every_public_endpoint_by_name_answers_bad_values_with_a_message(client, endpoints):
    """Each endpoint of /gradio_api/info (and the undocumented /figure1), called by name (/gradio_api/call/<name>):
    the first values of each parameter's corpus (``helpers.bad_values``: its type as the API describes it), and
    extra values where the app holds the inputs itself. The corpus over every event: the test below."""
    assert set(ENDPOINTS) <= set(endpoints), sorted(endpoints)
    failures = []
    for name, params in endpoints.items():
        good = [valid(p, SENTENCE) for p in params]
        for i, param in enumerate(params):
            for bad in bad_values.corpus(bad_values.Input(param["parameter_name"], "api", {}, param))[0][:4]:
                why = bad_values.problem(client.call(name, good[:i] + [bad] + good[i + 1:]), refused=True)
                if why:
                    failures.append(f"/{name} {param['parameter_name']}={json.dumps(bad)[:30]}: {why}")
        for extra in ([NAN, "x"], [None, None]) if not params else ():  # the app holds its inputs: more are refused
            why = bad_values.problem(client.call(name, extra), refused=True)
            if why:
                failures.append(f"/{name} {extra}: {why}")
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
        ("scaling_live", {"factor": NAN}, "scale factor must be between 0"),
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


# ------------------------------------------------------------------------------ every event, page-only ones too
def visualised(url: str):
    """A session's first step: a sentence visualised (so that every view has maps to use)."""
    params = api_info(url)["visualise"]

    def prepare(client: RawClient) -> None:
        assert client.call("visualise", arguments(params, SENTENCE)).event == "complete"

    return prepare


def test_every_event_answers_every_bad_value_with_a_message(url):
    """The corpus over every event the app runs (``helpers.bad_values``): its totals are printed (``-s``)."""
    totals = bad_values.probe_all(url, visualised(url))
    print(f"\n{totals.line()}")
    assert not totals.failures, "\n".join(totals.failures)
    config = json.loads(RawClient(url).request("GET", "/config")[1])
    assert totals.events == sum(1 for d in config["dependencies"] if d.get("backend_fn")) >= 60
    assert totals.messages > 10 * totals.events  # refused values: a message each


def event(url: str, name: str) -> bad_values.Event:
    return next(e for e in bad_values.events(url) if e.name == name)


def page_event(url: str, *labels: str) -> bad_values.Event:
    """The first page-only event with inputs labelled ``labels`` (a page event's name may change, its inputs not)."""
    found = [e for e in bad_values.events(url)
             if not e.public and set(labels) <= {i.props.get("label") for i in e.inputs}]
    assert found, labels
    return found[0]


def index_of(event: bad_values.Event, label_start: str) -> int:
    return next(i for i, inp in enumerate(event.inputs) if (inp.props.get("label") or "").startswith(label_start))


def test_too_few_or_too_many_values_name_the_inputs(client, endpoints):
    """Gradio 6.31.0 answered too few values with {"error": null} and too many silently."""
    for data, got in (([SENTENCE], 1), ([SENTENCE, 4, 4], 3), ([], 0)):
        answer = client.call("translate", data)
        assert answer.message == f"/translate takes 2 values (text, beam); got {got}.", answer.data
    good = args(endpoints, "render_views")  # 8 values; the session's result and measure may be sent as null too
    assert client.call("render_views", good).event == "complete"
    assert client.call("render_views", [None, *good[:5], None, *good[5:]]).event == "complete"
    answer = client.call("render_views", good[:-1])
    assert answer.event == "error" and "takes 8 values (kind, layer, head, present, colour, first, last, " \
        "hide_special), or 10 with null for what the session holds (result, measure)" in answer.message, answer.data


def test_page_only_events_answer_with_messages(url, client):
    """The decoding tab's start, called as the page calls it with four strings: Gradio 6.31.0 said {"error": null}."""
    start = page_event(url, "English sentence (the Attention tab's, or your own)")
    answer = client.join(start.fn_index, ["abc", "abc", "abc", "abc"])
    assert answer.event == "error" and "must be a whole number from 1 to 2; got \"abc\"." in answer.message, answer.data
    answer = client.join(start.fn_index, ["abc"])
    assert answer.event == "error" and answer.message.endswith("takes 4 values (text, layer, head, predict); got 1.")


@pytest.mark.parametrize("bad", [None, "yes", [], NAN, 1, "true"])
def test_a_checkbox_takes_only_true_or_false(client, endpoints, bad):
    """`present` (presentation mode) and every other checkbox: no value but true or false is taken for one."""
    answer = client.call("visualise", args(endpoints, "visualise", present=bad))
    assert answer.event == "error", answer.data
    assert answer.message.startswith("Presentation mode (present) must be true or false; got "), answer.message
    answer = client.call("render_detail", args(endpoints, "render_detail", hide_special=bad))
    assert answer.event == "error" and "must be true or false" in answer.message, answer.data


def test_a_menu_or_radio_takes_only_its_choices(url, client):
    """A page event's radio: Gradio 6.31.0 answered with Python's words ("(type: <class 'str'>)") or no message."""
    stats = page_event(url, "Statistics of")
    for bad, shown in (("abc", '"abc"'), (None, "null"), ([], "[]"), (NAN, "NaN")):
        data = stats.good()
        data[index_of(stats, "Statistics of")] = bad
        answer = client.join(stats.fn_index, data)
        assert answer.message == f'Statistics of (scope) must be one of "sentence", "sample"; got {shown}.', answer.data


# ----------------------------------------------------------------------------------------- text, never HTML
LINK = '<a href="https://evil.example/">EVIL</a>'


def test_a_message_quotes_a_value_as_text(url, client, endpoints):
    """Gradio shows a message as HTML: a value quoted back is escaped (the popup shows the typed text, no link)."""
    answer = client.call("attention", [SENTENCE, "", LINK])
    assert answer.event == "error" and '"&lt;a href=\\"https://evil.example/\\"&gt;' in answer.message, answer.data
    inside = page_event(url, "Query token", "Scale (empty = 1/√d_k, 1 = none; Enter)")  # Inside a head's view
    data = inside.good()
    data[index_of(inside, "Query token")], data[index_of(inside, "Scale")] = 0, LINK
    answer = client.join(inside.fn_index, data)
    assert answer.event == "error" and "&lt;a href" in answer.message and "<" not in answer.message, answer.data


def test_a_notice_quotes_a_value_as_text(url, client):
    """The Attention tab's notice (Markdown) says what to change, the typed value as text: no link, no HTML."""
    run = page_event(url, "English sentence", "Your own German translation (optional)", "Kind of attention")
    data = run.good()
    data[index_of(run, "Kind of attention")] = f"[EVIL](https://evil.example) {LINK}"
    answer = client.join(run.fn_index, data)
    notice = next(v for v in answer.data if isinstance(v, str) and v.startswith("⚠️"))
    assert "Unknown attention kind" in notice and "<a" not in notice and "](" not in notice, notice
    assert r"&lt;a href" in notice and r"\[EVIL\]" in notice, notice


# ------------------------------------------------------------------------------- the routes around the events
@pytest.mark.parametrize(
    "body, status, words",
    [
        (b'{"bogus": 1}', 422, 'it has no parameter "bogus"'),
        (b'{"data": {"text": "a dog."}}', 422, 'it has no parameter "data"'),
        (b'{"data": ["a dog."]}', 422, 'it has no parameter "data"'),
        (b'["a dog."]', 422, "got a list"),
        (b"{not json", 422, "the body is not JSON"),
        (b'{"beam": 3}', 422, "missing: text"),
    ],
)
def test_v2_calls_by_name_say_what_to_send(url, body, status, words):
    """Gradio 6.31.0 answered these with 500 "Internal Server Error" (and a traceback in the log)."""
    client = RawClient(url)
    got, answer = client.request("POST", "/gradio_api/call/v2/translate", body, {"Content-Type": "application/json"})
    detail = json.loads(answer)["detail"]
    assert got == status and detail.startswith("/translate takes a JSON object of its parameters by name: text, beam "
                                               "(text required)") and words in detail, (got, answer)


def test_v2_calls_of_an_unknown_endpoint_or_with_good_bodies(url):
    client = RawClient(url)
    got, answer = client.request("POST", "/gradio_api/call/v2/nosuch", b"{}", {"Content-Type": "application/json"})
    assert got == 404 and "There is no endpoint /nosuch: the app's endpoints are /ablate" in answer.decode(), answer
    got, answer = client.request("POST", "/gradio_api/call/v2/translate", b'{"text": "a dog.", "beam": "abc"}',
                                 {"Content-Type": "application/json"})
    assert got == 200, answer
    got, raw = client.request("GET", f"/gradio_api/call/v2/translate/{json.loads(answer)['event_id']}")
    assert got == 200 and b"event: error" in raw and b"Beam size must be between 1 and 8" in raw, raw


@pytest.mark.parametrize("content", [b"", b"x"])
def test_every_upload_is_refused_empty_ones_too(url, content):
    """The app takes no files; Gradio 6.31.0's limit (max_file_size=0) took an empty one (300 in 0.11 s)."""
    client = RawClient(url)
    boundary = "b0undary"
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="a.txt"\r\n'
            f"Content-Type: text/plain\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    got, answer = client.request("POST", "/gradio_api/upload", body,
                                 {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert got == 413 and json.loads(answer)["detail"] == "This app takes no files: every upload is refused (empty " \
        "ones too).", (got, answer)


def test_the_page_has_the_script_that_calms_gradios_frame_loop_first_and_only_the_page(url):
    """The page (``GET /``, with a query too) has assets/web/frames.js as the first thing of its head, before Gradio's
    own script, and its length told anew, plain or in Brotli (the same page); no other answer is changed
    (viz.ui.guards)."""
    for path in ("", "?tab=inside&layer=2"):
        with urllib.request.urlopen(url + path, timeout=60) as answer:
            body, length = answer.read(), int(answer.headers["Content-Length"])
        assert body.split(b"<head>", 1)[1].startswith(HEAD_SCRIPT), path
        assert body.index(HEAD_SCRIPT) < body.index(b'<script type="module"'), path
        assert body.count(HEAD_SCRIPT) == 1 and length == len(body) and body.rstrip().endswith(b"</html>"), path
        packed = urllib.request.Request(url + path, headers={"Accept-Encoding": "gzip, br"})  # kept (page_cache)
        with urllib.request.urlopen(packed, timeout=60) as answer:
            assert answer.headers["Content-Encoding"] == "br" and brotli.decompress(answer.read()) == body, path
    with urllib.request.urlopen(url + "config", timeout=60) as answer:
        assert HEAD_SCRIPT not in answer.read()


def test_the_page_assets_are_compressed_once_and_kept_and_a_part_of_one_is_gradios(url):
    """GET /assets/<file> with Brotli: Gradio's bytes, compressed, their length told; Range goes on to Gradio."""
    with urllib.request.urlopen(url, timeout=60) as answer:
        script = re.search(rb'src="\./(assets/index-[^"]+\.js)"', answer.read()).group(1).decode()
    identity = urllib.request.Request(url + script, headers={"Accept-Encoding": "identity"})
    with urllib.request.urlopen(identity, timeout=60) as answer:
        plain = answer.read()
    for _ in range(2):  # compressed, then kept
        asked = urllib.request.Request(url + script, headers={"Accept-Encoding": "gzip, br"})
        with urllib.request.urlopen(asked, timeout=60) as answer:
            body, headers = answer.read(), answer.headers
        assert headers["Content-Encoding"] == "br" and int(headers["Content-Length"]) == len(body) < len(plain)
        assert brotli.decompress(body) == plain and headers["Vary"] == "Accept-Encoding" and headers["ETag"]
    part = urllib.request.Request(url + script, headers={"Accept-Encoding": "br", "Range": "bytes=0-99"})
    with urllib.request.urlopen(part, timeout=60) as answer:
        assert answer.status == 206 and answer.headers["Content-Range"].startswith("bytes 0-99/")


def test_kept_assets_are_answered_without_gradio_and_stay_within_their_bound():
    """CompressedAssets: the app behind is asked once a file; the oldest used file goes past ``limit``; an answer
    that is not a whole script or style (a 404 here) goes out as it came, and is not kept."""
    asked = []

    async def app(scope, receive, send):
        asked.append(scope["path"])
        found = scope["path"] != "/assets/none.js"
        await send({"type": "http.response.start", "status": 200 if found else 404,
                    "headers": [(b"content-type", b"text/javascript; charset=utf-8" if found else b"text/plain")]})
        await send({"type": "http.response.body", "body": (scope["path"] * 400).encode()})

    sizes = [len(brotli.compress((f"/assets/{name}.js" * 400).encode(), quality=4)) for name in "abc"]
    assets = CompressedAssets(app, limit=2 * max(sizes))  # two files, not three
    assert sum(sizes) > assets.limit

    def get(path: str) -> tuple[int, bytes]:
        sent = []

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "path": path, "headers": [(b"accept-encoding", b"br")]}
        with ThreadPoolExecutor(1) as thread:  # (a loop of its own: Playwright's may run in this thread)
            thread.submit(anyio.run, assets.answer, scope, None, send, path).result()
        body = sent[1]["body"]
        return sent[0]["status"], brotli.decompress(body) if sent[0]["status"] == 200 else body

    for path in ("/assets/a.js", "/assets/b.js", "/assets/a.js", "/assets/c.js", "/assets/a.js", "/assets/b.js"):
        assert get(path) == (200, (path * 400).encode())
    assert asked == ["/assets/a.js", "/assets/b.js", "/assets/c.js", "/assets/b.js"]  # b, the oldest used, went
    assert assets.size <= assets.limit and list(assets.kept) == ["/assets/a.js", "/assets/b.js"]
    assert get("/assets/none.js") == (404, ("/assets/none.js" * 400).encode()) and "/assets/none.js" not in assets.kept


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
    [("config.json", b'{"d_model": 192,'), ("model.safetensors", b"\0" * 100), ("tokenizer.model", None),
     ("config.json", "max_len: 2")],
)
def test_a_broken_model_stops_the_app_with_one_line(tiny_model_dir, tmp_path, monkeypatch, capfd, name, data):
    """``app.main()``, what ``python app.py`` runs, in this process (a process of its own is the missing folder's
    test below: nothing else reaches its stderr)."""
    import app

    if data == "max_len: 2":  # a config the model reads, too small for the app's inputs (one-word translations)
        data = json.dumps(json.loads((tiny_model_dir / name).read_text()) | {"max_len": 2}).encode()
    folder = broken_copy(tiny_model_dir, tmp_path, name, data)
    monkeypatch.setattr(app, "MODEL_DIR", folder)  # (what ATTN_MODEL_DIR sets)

    def launch(*args, **kwargs):
        raise AssertionError("the app started on a broken model")

    monkeypatch.setattr(app, "launch", launch)
    capfd.readouterr()
    code = app.main()
    out, err = capfd.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, (code, out, err)
    assert lines[0].startswith("error: ") and str(folder / name) in lines[0] and "ATTN_MODEL_DIR" in lines[0], lines
    assert "Traceback" not in err


def test_a_missing_model_folder_stops_the_app_with_one_line(tmp_path):
    """``python app.py`` as a user starts it: one line on stderr, nothing on stdout, exit code 2."""
    env = {**os.environ, **OFFLINE_ENV, "ATTN_MODEL_DIR": str(tmp_path / "nowhere")}
    run = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 2 and run.stdout == "" and run.stderr.count("\n") == 1, (run.stdout, run.stderr)
    assert str(tmp_path / "nowhere") in run.stderr and "Traceback" not in run.stderr
