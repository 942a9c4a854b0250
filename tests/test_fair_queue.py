"""Fair shares in the served app (``viz.ui.limits.FairQueue`` applying ``viz.ui.shares``; the policy alone:
tests/test_shares.py), through the raw HTTP API of the app as served in-process on the tiny model.

A visitor is an address: the tests speak from loopback, which uvicorn trusts as a proxy, so each stands for another
visitor by its X-Forwarded-For (as a reverse proxy would send it). Requests are held inside their model run until a
test lets them go, so what is waiting and running is known, never raced.

- One address sends 257 ablations: they fill the ablations' own places, the rest are refused at once with 429, a
  message saying why and when to try again, and Retry-After; meanwhile another visitor's translation, ablation and
  page load are answered (its ablation takes the flood's newest place, and runs before the flood's next: turns).
- A hall behind one address holds as many places as nobody else wants; when the queue is full, the address holding
  the most yields its newest request to another visitor's (with a message), and its own newcomers are refused.
- A page holds one heavy request at a time; unread answers share a few places, the largest holder's oldest dropped
  first, and an answer not read in time is dropped (a short error for whoever reads it late).
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
from model.serving.batching import CROWD
from model.serving.runs import Runs
from viz.ui import shares

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "a big dog runs in the park."
FLOOD = 257  # one more than the queue's places (the flood that once filled it for everyone)


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


@pytest.fixture
def held_translations(monkeypatch):
    """Translations stop as they start until ``release`` is set; ``started`` lists their texts in the order they
    started."""
    release, started = threading.Event(), []
    translate = Runs.translate

    def held(self, text, beam):
        started.append(text)
        assert release.wait(300), "never released"
        return translate(self, text, beam)

    monkeypatch.setattr(Runs, "translate", held)
    yield release, started
    release.set()


def _translations_queue(app, monkeypatch, limit: int = 1):
    """The /translate queue, running at most ``limit`` at a time for the test."""
    queue = _queue(app)
    fn = next(f for f in app.demo.fns.values() if f.api_name == "translate")
    queue.create_event_queue_for_fn(fn)
    monkeypatch.setattr(queue.event_queue_per_concurrency_id[fn.concurrency_id], "concurrency_limit", limit)
    return queue


def test_the_heavy_queues_are_the_apps(app):
    assert set(shares.HEAVY) <= {fn.concurrency_id for fn in app.demo.fns.values()}


def test_a_flood_of_ablations_from_one_address_leaves_the_app_to_everyone_else(app, held_ablations):
    release, started = held_ablations
    flooder, other = Visitor(app.url, "203.0.113.7"), Visitor(app.url, "198.51.100.9")
    first = flooder.post("ablate", [SENTENCE, ["cross:1:1"]])
    assert first[0] == 200
    _wait_for(lambda: len(started) == 1)  # running (held)

    places = shares.HEAVY["ablate"].places
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: flooder.post("ablate", [f"{SENTENCE} {i}", ["cross:1:2"]]), range(FLOOD)))
    codes = Counter(status for status, _, _ in answers)
    assert codes == {200: places, 429: FLOOD - places}, codes  # the ablations' places fill; the rest are refused
    status, refusal, headers = next(a for a in answers if a[0] == 429)
    assert f"{places} head ablations are waiting already" in refusal["detail"] and "Try again in" in refusal["detail"]
    assert int(headers["retry-after"]) >= 1

    # everyone else: the page loads, a translation and an ablation are answered (the flood's newest gives its place)
    assert other.request("GET", "/")[0] == 200
    assert other.call("translate", [SENTENCE, 2])[0] == "complete"
    mine = other.post("ablate", ["a red house.", ["cross:2:1"]])
    assert mine[0] == 200, mine
    # one of the flood's gave its place (its newest to arrive: eight threads sent them, so the arrival order is the
    # server's, not the list's) and its reader hears why; every other one of the flood's is still waiting
    accepted = [a[1]["event_id"] for a in answers if a[0] == 200]
    gone = [event_id for event_id in accepted if event_id not in _queue(app).event_ids_to_events]
    assert len(gone) == 1, gone
    event, payload = flooder.read("ablate", gone[0])
    assert event == "error" and "gave its place" in payload["error"], payload
    release.set()
    assert flooder.read("ablate", first[1]["event_id"])[0] == "complete"
    assert other.read("ablate", mine[1]["event_id"])[0] == "complete"
    for event_id in accepted:
        if event_id != gone[0]:
            assert flooder.read("ablate", event_id)[0] == "complete"
    # turns: the other visitor's ablation ran before the flooder's second, which had waited longer
    assert started[:2] == [SENTENCE, "a red house."] and len(started) == 1 + len(accepted)


def test_a_hall_behind_one_address_holds_every_place_nobody_else_wants(app, held_translations, monkeypatch):
    release, started = held_translations
    _translations_queue(app, monkeypatch, limit=4)
    hall = [Visitor(app.url, "192.0.2.10", session=f"student-{i}") for i in range(100)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda v: v.post("translate", [f"{SENTENCE} {v.session}", 2]), hall))
    assert Counter(status for status, _, _ in answers) == {200: 100}  # 4 running, 96 waiting
    release.set()
    assert all(v.read("translate", a[1]["event_id"])[0] == "complete" for v, a in zip(hall, answers, strict=True))


def test_a_full_queue_takes_the_newest_place_of_the_address_holding_the_most(app, held_translations, monkeypatch):
    release, started = held_translations
    queue = _translations_queue(app, monkeypatch)
    monkeypatch.setattr(queue, "max_size", 6)
    hall, visitor = Visitor(app.url, "192.0.2.20"), Visitor(app.url, "192.0.2.21")
    first = hall.post("translate", [f"{SENTENCE} 0", 2])
    assert first[0] == 200, first
    _wait_for(lambda: len(started) == 1)
    accepted = [hall.post("translate", [f"{SENTENCE} {i}", 2]) for i in range(1, 7)]
    assert [status for status, _, _ in accepted] == [200] * 6  # every place
    status, refusal, headers = hall.post("translate", [f"{SENTENCE} 7", 2])
    assert status == 429 and int(headers["retry-after"]) >= 1
    assert refusal["detail"].startswith("The app is busy: every place in its queue is taken: your address holds the "
                                        "most of its 6 places (6). Try again in "), refusal
    mine = visitor.post("translate", ["a red house.", 2])
    assert mine[0] == 200
    event, payload = hall.read("translate", accepted[-1][1]["event_id"])  # the hall's newest gave its place
    assert event == "error" and "gave its place" in payload["error"] and "Try again in" in payload["error"], payload
    release.set()
    assert visitor.read("translate", mine[1]["event_id"])[0] == "complete"
    for _status, answer, _ in [first, *accepted[:-1]]:
        assert hall.read("translate", answer["event_id"])[0] == "complete"
    assert started[:2] == [f"{SENTENCE} 0", "a red house."]  # the visitor's turn came before the hall's next


def test_a_lone_visitor_starts_beside_a_crowd_and_runs_in_the_other_lane(app, monkeypatch):
    lanes, release = {}, threading.Event()
    translate = Runs.translate

    def held(self, text, beam):
        lanes[text] = CROWD.get()  # the lane the server set for this request's model work
        assert release.wait(300), "never released"
        return translate(self, text, beam)

    monkeypatch.setattr(Runs, "translate", held)
    queue = _translations_queue(app, monkeypatch, limit=2)
    monkeypatch.setattr(shares, "CROWD", 1)  # an address holding more than one request is a crowd
    hall, visitor = Visitor(app.url, "192.0.2.30"), Visitor(app.url, "192.0.2.31")
    posted = [hall.post("translate", [f"{SENTENCE} {i}", 2]) for i in range(8)]
    assert [status for status, _, _ in posted] == [200] * 8
    _wait_for(lambda: len(lanes) == 2)  # the queue's limit; the rest wait (a crowd gets no worker beyond it)
    mine = visitor.post("translate", ["a red house.", 2])
    assert mine[0] == 200
    _wait_for(lambda: "a red house." in lanes)  # started at once, beyond the limit, while the hall's wait
    fn = next(f for f in app.demo.fns.values() if f.api_name == "translate")
    assert len(lanes) == 3 and queue.event_queue_per_concurrency_id[fn.concurrency_id].current_concurrency == 3
    release.set()
    assert visitor.read("translate", mine[1]["event_id"])[0] == "complete"
    for _status, answer, _ in posted:
        assert hall.read("translate", answer["event_id"])[0] == "complete"
    assert lanes["a red house."] is False and lanes[f"{SENTENCE} 7"] is True  # the hall's last: the crowd's lane


def test_a_crowd_starts_only_a_few_at_once_while_another_visitor_is_served(app, monkeypatch):
    """Nobody else: a crowd takes every worker. A visitor comes: the crowd starts no more than ``CROWD_RUNNING`` at
    once while it is served, though workers are free; the visitor gone, the crowd takes them again."""
    started, gates = [], {}
    translate = Runs.translate

    def held(self, text, beam):
        started.append(text)
        assert gates.setdefault(text, threading.Event()).wait(300), "never released"
        return translate(self, text, beam)

    monkeypatch.setattr(Runs, "translate", held)
    queue = _translations_queue(app, monkeypatch, limit=4)
    monkeypatch.setattr(shares, "CROWD", 1)
    monkeypatch.setattr(shares, "CROWD_RUNNING", 2)
    monkeypatch.setattr(shares, "OTHERS_RECENT_S", 0.0)  # others are served only while they hold a request
    fn = next(f for f in app.demo.fns.values() if f.api_name == "translate")
    translations = queue.event_queue_per_concurrency_id[fn.concurrency_id]
    hall, visitor = Visitor(app.url, "192.0.2.40"), Visitor(app.url, "192.0.2.41")
    texts = [f"{SENTENCE} {i}" for i in range(7)]
    posted = [hall.post("translate", [text, 2]) for text in texts]
    _wait_for(lambda: len(started) == 4)  # every worker: nobody else is served
    mine = visitor.post("translate", ["a red house.", 2])
    _wait_for(lambda: "a red house." in started)  # beyond the limit, at once
    for text in started[:3]:  # three of the hall's four finish: one runs, three workers are free
        gates.setdefault(text, threading.Event()).set()
    for (_status, answer, _), text in zip(posted, texts):
        if text in started[:3]:
            assert hall.read("translate", answer["event_id"])[0] == "complete"
    _wait_for(lambda: len(started) >= 6)  # the hall's one running and one more: two at once
    time.sleep(0.5)  # (the queue started the fifth and looked again: it would have started the sixth at once)
    assert len(started) == 6 and len(translations.queue) == 2, (started, len(translations.queue))
    gates.setdefault("a red house.", threading.Event()).set()
    assert visitor.read("translate", mine[1]["event_id"])[0] == "complete"
    _wait_for(lambda: len(started) == 8)  # the visitor gone: both waiting requests of the hall start
    for text in texts:
        gates.setdefault(text, threading.Event()).set()
    for (_status, answer, _), text in zip(posted, texts):
        if text not in started[:3]:
            assert hall.read("translate", answer["event_id"])[0] == "complete"


def test_a_page_holds_one_heavy_request_at_a_time(app, held_ablations):
    release, started = held_ablations
    page = Visitor(app.url, "192.0.2.30", session="one-page")
    first = page.post("ablate", ["a small cat sleeps.", ["cross:1:1"]])  # a sentence no test ablated (not cached)
    assert first[0] == 200
    _wait_for(lambda: len(started) == 1)
    status, refusal, headers = page.post("ablate", ["a small cat sleeps.", ["cross:1:2"]])
    assert status == 429 and "Your head ablation is still waiting or running" in refusal["detail"]
    assert "retry-after" in headers
    other_page = Visitor(app.url, "192.0.2.30", session="another-page")  # the same address: waits its turn
    second = other_page.post("ablate", ["a small cat sleeps.", ["cross:2:2"]])
    assert second[0] == 200
    release.set()
    assert page.read("ablate", first[1]["event_id"])[0] == "complete"
    assert other_page.read("ablate", second[1]["event_id"])[0] == "complete"


def test_unread_answers_share_a_few_places_and_are_dropped_when_not_read_in_time(app, monkeypatch):
    monkeypatch.setattr(shares, "UNREAD_PLACES", 3)
    monkeypatch.setattr(shares, "UNREAD_S", 600.0)
    script, page = Visitor(app.url, "192.0.2.40"), Visitor(app.url, "192.0.2.41")
    queue = _queue(app)
    ids = []
    for i in range(3):
        ids.append(script.post("attention", [f"{SENTENCE} {i}", "", None])[1]["event_id"])
        _wait_for(lambda: ids[-1] in queue.unread)
    assert page.call("attention", [SENTENCE, "", None])[0] == "complete"  # read at once: never crowded out
    monkeypatch.setattr(shares, "UNREAD_GRACE_S", 600.0)  # every answer young: on its way to a reader
    ids.append(script.post("attention", [f"{SENTENCE} 3", "", None])[1]["event_id"])
    _wait_for(lambda: ids[-1] in queue.unread)
    assert all(i in queue.unread for i in ids)  # a young answer is never crowded out
    monkeypatch.setattr(shares, "UNREAD_GRACE_S", 0.0)
    queue.sweep()
    assert ids[0] not in queue.unread and len(queue.unread) == 3
    event, payload = script.read("attention", ids[0])  # the script's oldest went first
    assert event == "error" and "dropped unread" in payload["error"], payload
    monkeypatch.setattr(shares, "UNREAD_S", 0.5)
    monkeypatch.setattr(limits, "SWEEP_S", 0.2)
    _wait_for(lambda: not any(i in queue.unread for i in ids))
    event, payload = script.read("attention", ids[1])  # a late reader hears why
    assert event == "error" and "not read within" in payload["error"], payload
    assert script.call("attention", [SENTENCE, "", None])[0] == "complete"
