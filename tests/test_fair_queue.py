"""One visitor cannot take the queue from the others (``viz.ui.limits``), through the raw HTTP API of the app as
served in-process on the tiny model.

A visitor is its address: the tests speak from loopback, which uvicorn trusts as a proxy, so each stands for another
visitor by its X-Forwarded-For (as a reverse proxy would send it). Ablations are held inside their model run until a
test lets them go, so what is waiting and running is known, never raced.

- One address sends 257 ablations (the flood that filled the queue's 256 places for everyone): two get in, the rest
  are refused at once with 429, a message saying why and when to try again, and Retry-After; meanwhile another
  visitor's translation, ablation and page load are answered, and the other visitor's ablation runs before the
  flooder's second (turns).
- A page (a session) and an address hold a bounded number of requests, unread answers included; an answer not read
  in time is dropped (a short error for whoever reads it late) and stops counting.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

import model.serving.runs
import viz.ui.limits as limits
from model.probes.ablation import baseline_score, load_sample

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "a big dog runs in the park."
FLOOD = 257  # one more than the queue's places


@pytest.fixture(scope="module")
def app(serve):
    return serve("tiny")


class Visitor:
    """Raw HTTP from one address (X-Forwarded-For), one connection per request (a flood does not wait for answers)."""

    def __init__(self, url: str, address: str, session: str | None = None):
        host, port = url.split("//", 1)[1].rstrip("/").split(":")
        self.host, self.port, self.address, self.session = host, int(port), address, session

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes, dict]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
        try:
            headers = {"X-Forwarded-For": self.address, "Content-Type": "application/json"}
            conn.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()

    def post(self, name: str, data: list) -> tuple[int, dict, dict]:
        body = {"data": data, **({"session_hash": self.session} if self.session else {})}
        status, raw, headers = self.request("POST", f"/gradio_api/call/{name}", body)
        return status, json.loads(raw), headers

    def read(self, name: str, event_id: str) -> tuple[str, object]:
        """The event's outcome: ("complete", outputs) or ("error", payload)."""
        status, raw, _ = self.request("GET", f"/gradio_api/call/{name}/{event_id}")
        assert status == 200, (status, raw[:300])
        event = None
        for line in raw.decode("utf-8").splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                return event, json.loads(line[5:])
        raise AssertionError(raw[:300])

    def call(self, name: str, data: list) -> tuple[str, object]:
        status, answer, _ = self.post(name, data)
        assert status == 200, (status, answer)
        return self.read(name, answer["event_id"])


@pytest.fixture
def held_ablations(app, translator, monkeypatch):
    """Ablations stop as their model run starts until ``release`` is set; ``started`` lists their sentences in the
    order they started."""
    baseline_score(translator, load_sample())  # cached: an ablation below decodes only the ablated sample
    release, started = threading.Event(), []
    ablate = model.serving.runs.ablate

    def held(translator, text, *args, **kwargs):
        started.append(text)
        assert release.wait(300), "never released"
        return ablate(translator, text, *args, **kwargs)

    monkeypatch.setattr(model.serving.runs, "ablate", held)
    yield release, started
    release.set()


def _wait_for(condition, timeout: float = 300.0) -> None:
    end = time.perf_counter() + timeout
    while not condition():
        assert time.perf_counter() < end, "timed out"
        time.sleep(0.05)


def _queue(app):
    return app.demo._queue


def test_a_flood_of_ablations_from_one_address_leaves_the_app_to_everyone_else(app, held_ablations):
    release, started = held_ablations
    flooder, other = Visitor(app.url, "203.0.113.7"), Visitor(app.url, "198.51.100.9")
    first = flooder.post("ablate", [SENTENCE, ["cross:1:1"]])
    assert first[0] == 200
    _wait_for(lambda: len(started) == 1)  # running (held)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: flooder.post("ablate", [f"{SENTENCE} {i}", ["cross:1:2"]]), range(FLOOD)))
    codes = Counter(status for status, _, _ in answers)
    assert codes == {200: 1, 429: FLOOD - 1}, codes  # one more waits; the others are refused at once
    status, refusal, headers = next(a for a in answers if a[0] == 429)
    assert "head ablations waiting or running already" in refusal["detail"] and "Try again in" in refusal["detail"]
    assert int(headers["retry-after"]) >= 1

    # everyone else: the page loads, a translation and an ablation are answered (the flooder's wait)
    assert other.request("GET", "/")[0] == 200
    assert other.call("translate", [SENTENCE, 2])[0] == "complete"
    mine = other.post("ablate", ["a red house.", ["cross:2:1"]])
    assert mine[0] == 200, mine
    i, waiting = next((i, a[1]["event_id"]) for i, a in enumerate(answers) if a[0] == 200)
    release.set()
    assert flooder.read("ablate", first[1]["event_id"])[0] == "complete"
    assert other.read("ablate", mine[1]["event_id"])[0] == "complete"
    assert flooder.read("ablate", waiting)[0] == "complete"
    # turns: the other visitor's ablation ran before the flooder's second, which had waited longer
    assert started == [SENTENCE, "a red house.", f"{SENTENCE} {i}"]


def test_a_page_holds_a_few_requests_unread_ones_included(app, monkeypatch):
    monkeypatch.setattr(limits, "UNREAD_S", 600.0)  # nothing is dropped during the test
    page = Visitor(app.url, "192.0.2.10", session="one-page-session")
    accepted = [page.post("translate", [f"{SENTENCE} {i}", 2]) for i in range(limits.PER_SESSION)]
    assert all(status == 200 for status, _, _ in accepted)
    _wait_for(lambda: all(a[1]["event_id"] in _queue(app).unread for a in accepted))  # answered, never read
    status, refusal, headers = page.post("translate", [SENTENCE, 2])
    assert status == 429 and "from this page" in refusal["detail"] and "not yet read" in refusal["detail"]
    assert "retry-after" in headers
    # another page at the same address is not this page
    assert Visitor(app.url, "192.0.2.10", session="another-page").call("translate", [SENTENCE, 2])[0] == "complete"
    page.read("translate", accepted[0][1]["event_id"])  # one read: a place again
    assert page.call("translate", [SENTENCE, 2])[0] == "complete"


def test_an_address_holds_a_bounded_share_of_the_queue(app, monkeypatch):
    monkeypatch.setattr(limits, "UNREAD_S", 600.0)
    crawler = Visitor(app.url, "192.0.2.20")  # no session: every call a new one, as a script's
    answers = [crawler.post("translate", [f"{SENTENCE} {i}", 2]) for i in range(limits.PER_ADDRESS + 5)]
    codes = Counter(status for status, _, _ in answers)
    assert codes == {200: limits.PER_ADDRESS, 429: 5}, codes
    assert "from your address" in answers[-1][1]["detail"]
    assert Visitor(app.url, "192.0.2.21").call("translate", [SENTENCE, 2])[0] == "complete"


def test_an_answer_nobody_reads_is_dropped_and_stops_counting(app, monkeypatch):
    monkeypatch.setattr(limits, "PER_ADDRESS", 3)
    monkeypatch.setattr(limits, "UNREAD_S", 600.0)
    script = Visitor(app.url, "192.0.2.30")
    ids = [script.post("attention", [f"{SENTENCE} {i}", "", None])[1]["event_id"] for i in range(3)]
    queue = _queue(app)
    _wait_for(lambda: all(i in queue.unread for i in ids))
    assert all(queue.unread[i].message.success for i in ids)
    assert script.post("attention", [SENTENCE, "", None])[0] == 429  # its unread answers count against it
    monkeypatch.setattr(limits, "UNREAD_S", 0.5)
    monkeypatch.setattr(limits, "SWEEP_S", 0.2)
    _wait_for(lambda: not any(i in queue.unread for i in ids))
    event, payload = script.read("attention", ids[0])  # a late reader hears why
    assert event == "error" and "not read within" in payload["error"], payload
    assert script.call("attention", [SENTENCE, "", None])[0] == "complete"  # places again


def test_the_next_request_is_the_fairest():
    class Event:
        def __init__(self, address):
            self.request = type("R", (), {"client": type("C", (), {"host": address})()})()

    events = [Event(a) for a in ("flood", "flood", "flood", "new", "flood")]
    assert limits.fairest(events, Counter(), {}) == 0  # nobody served yet: the oldest
    assert limits.fairest(events, Counter({"flood": 1}), {}) == 3  # the visitor with fewer running first
    assert limits.fairest(events, Counter(), {"flood": 5.0}) == 3  # the visitor served longest ago first
    assert limits.fairest(events, Counter(), {"flood": 5.0, "new": 9.0}) == 0
