"""Memory stays bounded whatever the number of sessions, through the raw HTTP API.

The app is served in-process as ``app.launch`` serves it, with a 4 MB result cache. Sixty fresh sessions (raw
/gradio_api/call without a session hash: each call is a new session, as a crawler's would be) each visualise
a distinct sentence. Then: the cache holds at most its budget; the sessions hold keys, never maps or plots;
the process grew by a few MB, not by the ~1 MB per session that keeping results per session costs; and a
session whose result was evicted still gets its views (recomputed, identical); the queue keeps no record of past
events.
"""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

import numpy as np
import pytest
from helpers.raw_api import RawClient

from bench.capacity import distinct_text
from bench.common import GradioHTTP, read_status_kb
from model.network.inference import Translator
from model.serving.cache import MB, nbytes
from model.serving.runs import AttentionKey, Runs, SessionResult

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

BUDGET_MB = 4  # ~15 results of ~25 tokens a side
SESSIONS = 60


@pytest.fixture(scope="module")
def served(serve):
    """The shipped model served in this process with a BUDGET_MB result cache, and a raw-HTTP client."""
    app = serve("shipped", env={"ATTN_CACHE_MB": str(BUDGET_MB)})
    return SimpleNamespace(demo=app.demo, client=GradioHTTP(app.url), url=app.url)


def visualise(served, i: int, session_hash: str | None = None) -> list:
    """Session ``i``'s run: its own sentence, with a given target (one teacher-forced pass: fast)."""
    return served.client.call("visualise", [distinct_text(i), distinct_text(i + 1000)], session_hash)[0]


def session_states(demo) -> list:
    return [v for s in list(demo.state_holder.session_data.values()) for v in s.state_data.values()]


def first_plot(outputs: list) -> dict:
    return next(json.loads(o["plot"]) for o in outputs if isinstance(o, dict) and o.get("type") == "plotly")


def test_many_sessions_keep_keys_and_the_cache_stays_in_budget(served):
    pid = os.getpid()
    for i in range(10):
        visualise(served, i)
    rss_10 = read_status_kb(pid, "VmRSS") / 1024
    for i in range(10, SESSIONS):
        visualise(served, i)
    growth = read_status_kb(pid, "VmRSS") / 1024 - rss_10

    states = session_states(served.demo)
    results = [v for v in states if isinstance(v, SessionResult)]
    assert len(results) >= SESSIONS  # every session kept its run ...
    assert sum(nbytes(v) for v in states) < SESSIONS * 2000  # ... as a key of a few hundred bytes
    cache = results[0].runs.cache
    assert cache.budget == BUDGET_MB * MB and 0 < cache.nbytes <= cache.budget  # the maps: within budget
    assert cache.evictions > 0
    # Gradio's own copy of each session's components and last outputs (~2 MB of plots at 100 tokens) is gone
    assert all(not s.config_values for s in served.demo.state_holder.session_data.values())
    # 50 sessions: a few MB (measured ~2.5); keeping each session's result and plots cost ~1 MB per session
    assert growth < 25, f"the server grew by {growth:.0f} MB over {SESSIONS - 10} sessions"


def test_the_queue_keeps_no_record_of_past_events(served):
    """Gradio's queue recorded every event (up to 10,000) and summed them all up with pandas after each one, for a
    monitoring dashboard the app leaves off (``viz.ui.patches.no_queue_analytics``): memory and time that grew with
    the events served."""
    queue = served.demo._queue
    for i in range(12):
        visualise(served, 700 + i)
    assert len(queue.event_analytics) <= 1
    assert queue.compute_analytics_summary(list(queue.event_analytics.values())) == {"functions": {}}


def test_the_visitors_browser_keeps_no_run_history(served):
    """Gradio 6.31.0's run history kept each run of a public endpoint, its figures included, in the visitor's
    localStorage (up to 100 runs), rewritten whole several times an event, and served a page and routes to review
    them and connect a Hugging Face bucket. The app turns it off (``app.launch``): the page's config says so, and the
    page and routes are gone."""
    client = RawClient(served.url)
    status, config = client.request("GET", "/config")
    assert status == 200 and json.loads(config)["run_history"] is False
    assert client.request("GET", "/gradio_api/runs")[0] == 404
    assert client.request("POST", "/gradio_api/run-history/connect", b"{}",
                          {"Content-Type": "application/json"})[0] in (404, 405)


def test_an_idle_queue_waits_for_its_next_event_and_answers_it(served, monkeypatch):
    """Gradio's queue looked for a new event 1,000 times a second while it had none, and for progress 100 times
    (``viz.ui.patches.queue_waits_for_events``): an idle app's loops now wait for the next event, which is answered."""
    queue = served.demo._queue
    looks = []
    real = type(queue).__len__
    monkeypatch.setattr(type(queue), "__len__", lambda self: looks.append(1) or real(self))
    visualise(served, 900)
    time.sleep(0.2)  # (the event's last looks)
    looks.clear()
    time.sleep(1.0)
    assert len(looks) <= 20, len(looks)  # Gradio's loops: ~1,100 looks a second
    assert visualise(served, 901)  # the next event is taken and answered


def test_a_session_whose_result_was_evicted_gets_its_views_again(served):
    outputs = visualise(served, 500, session_hash="evicted-one")
    key = AttentionKey.of(distinct_text(500), distinct_text(1500))
    cache = next(v for v in session_states(served.demo) if isinstance(v, SessionResult)).runs.cache
    for i in range(501, 530):  # push it out
        visualise(served, i)
    assert ("attention", *key) not in cache
    views, _ = served.client.call("render_views", [], session_hash="evicted-one")  # its state's key, recomputed
    assert first_plot(views) == first_plot(outputs)
    assert ("attention", *key) in cache


def test_runs_recompute_an_evicted_result_identically(tiny_model_dir):
    from model.serving.cache import ByteLRU

    runs = Runs(Translator(tiny_model_dir, device="cpu"), cache=ByteLRU(1))  # nothing fits: always recomputed
    session, result = runs.session("a dog runs in the park.", " ein hund rennt ")
    assert session.key == AttentionKey("a dog runs in the park.", "ein hund rennt", None) and len(runs.cache) == 0
    again = session.get()
    assert again is not result and again.translation == result.translation
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_array_equal(again.maps(kind), result.maps(kind))
    cached = Runs(runs.translator).attention("a dog runs.")
    assert not cached.cross.flags.writeable  # shared by every session: read-only
