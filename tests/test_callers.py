"""Every way into an event, and what surrounds one, called wrong over raw HTTP (``viz.ui.callers``, ``viz.ui.guards``,
``viz.ui.patches.error_messages``), against the app as served in-process on the tiny model.

- Each event the page knows (``/config``'s dependencies), joined by its ``fn_index`` and run directly, with no
  values: a message every time; none answers ``{"error": null}`` or a 500 (the count is printed, ``-s``). An event
  that runs in the page only, an index or a name the app does not have, an answer or a session the queue does not
  hold: a 4xx and a message, and no traceback in the log.
- A fault of the server is answered with a message that says so, never ``{"error": null}``; a 1,000,000-character
  value quoted by an error is cut, for every endpoint.
- The views without a run say so; a heartbeat whose session the app does not know ends; only the app's exports are
  served from Gradio's temp folder; /monitoring writes nothing to the log.
"""

from __future__ import annotations

import http.client
import json
import time

import pytest
from helpers.raw_api import RawClient, api_info, arguments

import viz.ui.callers as callers
import viz.ui.logs as logs
from model.serving.runs import Runs
from viz.ui.patches import FAULT, MESSAGE_MAX, bounded_message

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "a big dog runs in the park."
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def app(serve):
    return serve("tiny")


@pytest.fixture(scope="module")
def config(app) -> dict:
    status, raw = RawClient(app.url).request("GET", "/config")
    assert status == 200
    return json.loads(raw)


@pytest.fixture
def client(app):
    client = RawClient(app.url)
    yield client
    client.close()


@pytest.fixture
def quiet_log(monkeypatch, capfd):
    """The log from here on (a fresh window of the log budget: earlier lines must not silence these)."""
    monkeypatch.setattr(logs, "_BUDGET", logs._Budget())
    capfd.readouterr()
    return lambda: capfd.readouterr().err


def post(client: RawClient, path: str, values) -> tuple[int, dict]:
    status, raw = client.request("POST", path, json.dumps(values).encode(), JSON)
    return status, json.loads(raw)


# ------------------------------------------------------------------------------------------ every event
def test_every_event_joined_or_run_with_nothing_answers_a_message(app, config, quiet_log, capfd):
    """Each dependency of /config by index, through the queue (as the page) and directly (/gradio_api/run/predict):
    a message each time (too few values, or nothing to call); no {"error": null}, no 500, no traceback."""
    client = RawClient(app.url)
    nulls = server_errors = 0
    for dep in config["dependencies"]:
        status, answer = post(client, "/gradio_api/queue/join", {"data": [], "fn_index": dep["id"],
                                                                  "session_hash": client.session_hash})
        if status == 200:  # an event with a server part: its answer arrives on the session's stream
            _, raw = client.request("GET", f"/gradio_api/queue/data?session_hash={client.session_hash}")
            done = next(json.loads(line[5:]) for line in raw.decode().splitlines()
                        if line.startswith("data:") and '"process_completed"' in line)
            if done["success"]:  # an event that takes no values: a normal answer
                assert not dep["inputs"], (dep["id"], done)
                continue
            message = done["output"].get("error")
            assert "takes" in message, (dep["id"], done)
        else:
            message = answer["detail"]
            assert status == 404 and not dep["backend_fn"] and "runs in the page only" in message, (dep, answer)
        nulls += message is None
        status, answer = post(client, "/gradio_api/run/predict", {"data": [], "fn_index": dep["id"],
                                                                   "session_hash": client.session_hash})
        message = answer.get("error") or answer.get("detail")
        server_errors += status >= 500
        nulls += message is None
        assert 400 <= status < 500 and isinstance(message, str) and message, (dep["id"], status, answer)
    assert "Traceback" not in quiet_log()
    with capfd.disabled():
        print(f"\n{len(config['dependencies'])} events, each joined and run with no values: {nulls} answers without a "
              f"message, {server_errors} answers 500")
    assert nulls == server_errors == 0


@pytest.mark.parametrize(
    ("method", "path", "values", "status", "words"),
    [
        ("POST", "/gradio_api/queue/join", {"data": [], "fn_index": -1, "session_hash": "a"}, 404, "no event -1"),
        ("POST", "/gradio_api/queue/join", {"data": [], "fn_index": 9999, "session_hash": "a"}, 404, "no event 9999"),
        ("POST", "/gradio_api/queue/join", {"data": [], "fn_index": "0", "session_hash": "a"}, 422, "takes fn_index"),
        ("POST", "/gradio_api/queue/join", {"data": [], "session_hash": "a"}, 422, "takes fn_index"),
        ("POST", "/gradio_api/run/predict", {"data": [], "fn_index": 9999}, 404, "no event 9999"),
        ("POST", "/gradio_api/run/nope", {"data": []}, 404, "no endpoint /nope"),
        ("POST", "/gradio_api/call/nope", {"data": []}, 404, "no endpoint /nope: the app's endpoints are /ablate"),
        ("POST", "/gradio_api/call/translate", {"data": "x" * 100_000}, 422, "data: Input should be a valid list"),
        ("GET", "/gradio_api/call/translate/notanevent", None, 404, "No answer \"notanevent\" is waiting"),
        ("GET", "/gradio_api/call/v2/translate/notanevent", None, 404, "No answer \"notanevent\" is waiting"),
        ("GET", "/gradio_api/queue/data?session_hash=nosuch", None, 404, "holds nothing for session \"nosuch\""),
    ],
)
def test_unknown_names_indices_and_ids_are_4xx_with_a_message(client, quiet_log, method, path, values, status,
                                                                words):
    body = json.dumps(values).encode() if values is not None else None
    got, raw = client.request(method, path, body, JSON if body else None)
    assert got == status and words in json.loads(raw)["detail"], (got, raw[:300])
    assert len(raw) < 1200  # the value it quotes is cut
    assert "Traceback" not in quiet_log()


def test_an_event_that_runs_in_the_page_only_is_named_so(client, config):
    page_only = next(d for d in config["dependencies"] if not d["backend_fn"])
    for path, values in (("/gradio_api/queue/join", {"data": [], "fn_index": page_only["id"], "session_hash": "a"}),
                         ("/gradio_api/run/predict", {"data": [], "fn_index": page_only["id"]}),
                         (f"/gradio_api/call/{page_only['api_name']}", {"data": []})):
        status, answer = post(client, path, values)
        assert status == 404 and "runs in the page only" in answer["detail"], (path, answer)


def test_a_direct_run_with_a_bad_value_is_a_422_with_its_message(client, config):
    direct = next(d for d in config["dependencies"] if d["backend_fn"] and d.get("queue") is False and d["inputs"])
    status, answer = post(client, "/gradio_api/run/predict", {"data": [12345] * len(direct["inputs"]),
                                                              "fn_index": direct["id"]})
    assert status == 422 and "got 12345" in answer["error"], answer


# ------------------------------------------------------------------------------------------ messages
def test_a_fault_is_answered_with_a_message_not_null(client, monkeypatch):
    def broken(self, text, beam):
        raise RuntimeError("the model broke")

    monkeypatch.setattr(Runs, "translate", broken)
    answer = client.call("translate", [SENTENCE, 2])
    assert answer.event == "error" and answer.message == FAULT, answer.data


@pytest.mark.parametrize(("name", "values"), [("timelapse", ["x" * 1_000_000, "cross"]),
                                               ("lab_attention", [SENTENCE, "y" * 1_000_000]),
                                               ("translate", ["z" * 1_000_000, 2])])
def test_an_error_cuts_the_value_it_quotes(client, name, values):
    """/timelapse and /lab_attention quoted a 1,000,000-character value whole (a 1 MB answer); every endpoint's
    message is cut in one place."""
    answer = client.call(name, values)
    assert answer.event == "error" and len(answer.message) <= MESSAGE_MAX, (name, len(answer.raw))
    assert len(answer.raw) < 2 * MESSAGE_MAX and "xxxxxxxxxx" * 10 not in answer.message


def test_bounded_message_cuts_quoted_values_then_the_message():
    short = "Layer must be 1–2; got 'the visitor's own text'."
    assert bounded_message(short) == short  # a message within the bound stays as it is
    cut = bounded_message("unknown example " + repr("x" * 1_000_000) + "; choose one of: 0: A dog runs.")
    assert cut == "unknown example 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…' (1,000,000 characters); choose one of: " \
                  "0: A dog runs."
    assert len(bounded_message("y" * 5000)) == MESSAGE_MAX


def test_the_views_without_a_run_say_so(app, client):
    """/render_views and /render_detail before the session has run a sentence: the message /export gives, after the
    choices are checked; before, [null, null]."""
    params = api_info(app.url)
    for name in ("render_views", "render_detail"):
        answer = client.call(name, arguments(params[name], SENTENCE))
        assert answer.event == "error" and answer.message == "Nothing to draw yet: visualise a sentence first."
        answer = client.call(name, arguments(params[name], SENTENCE, kind="sideways"))
        assert answer.event == "error" and "choose one of" in answer.message, answer.data
    assert client.call("export", []).message == "Nothing to export yet: visualise a sentence first."


# ------------------------------------------------------------------------------------------ the rest
def _address(url: str) -> tuple[str, int]:
    host, port = url.split("//", 1)[1].rstrip("/").split(":")
    return host, int(port)


def _heartbeat_ends(url: str, session: str, wait_s: float) -> bool:
    """Whether the heartbeat stream of ``session`` ends within ``wait_s``."""
    conn = http.client.HTTPConnection(*_address(url), timeout=wait_s)
    try:
        conn.request("GET", f"/gradio_api/heartbeat/{session}")
        response = conn.getresponse()
        assert response.status == 200
        response.read()
        return True
    except TimeoutError:
        return False
    finally:
        conn.close()


def test_a_heartbeat_of_a_session_the_app_does_not_know_ends(app, client, monkeypatch):
    monkeypatch.setattr(callers, "HEARTBEAT_GRACE_S", 0.5)
    monkeypatch.setattr(callers, "HEARTBEAT_CHECK_S", 0.5)
    start = time.perf_counter()
    assert _heartbeat_ends(app.url, "anything-at-all", wait_s=30)
    assert time.perf_counter() - start < 30
    assert client.call("translate", [SENTENCE, 1]).event == "complete"  # a session the app keeps
    assert not _heartbeat_ends(app.url, client.session_hash, wait_s=2.0)  # stays open


def test_only_the_apps_own_exports_are_served(app, client):
    planted = app.temp_dir / "planted" / "secret.txt"  # another program's file inside Gradio's temp folder
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text("not the app's")
    status, raw = client.request("GET", f"/gradio_api/file={planted}")
    assert status == 403 and b"not the app's" not in raw and b"serves only the exports" in raw
    assert client.request("GET", "/gradio_api/file=/etc/passwd")[0] == 403
    assert client.request("GET", "/gradio_api/file=https://example.com/x")[0] == 403
    assert client.call("visualise", arguments(api_info(app.url)["visualise"], SENTENCE)).event == "complete"
    export = client.call("export", []).data[0][0]["path"]
    assert client.request("GET", f"/gradio_api/file={export}")[0] == 200


def test_monitoring_is_off_and_logs_no_key(client, quiet_log):
    status, _ = client.request("GET", "/monitoring")
    assert status == 403 and "monitoring" not in quiet_log().lower()
