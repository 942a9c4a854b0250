"""Memory stays bounded whatever the number of sessions, through the raw HTTP API.

The app is served in-process as ``app.launch`` serves it, with a 4 MB result cache. Sixty fresh sessions (raw
/gradio_api/call, each naming a session of its own) each visualise a distinct sentence (a call that names none
gets a session of its own from Gradio, gone once its answer is read). Then: the cache holds at most its budget; the
sessions hold keys, never maps or plots; the process grew by a few MB, not by the ~1 MB per session that keeping
results per session costs; and a session whose result was evicted still gets its views (recomputed, identical);
the queue keeps no record of past events. Rounds of maximum-size requests leave the memory flat and within
model/serving/README.md's bound, the freed heap's pages handed back to the system.
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from helpers.raw_api import RawClient

from bench.capacity import distinct_text, long_text
from bench.common import GradioHTTP, read_status_kb
from bench.endurance import rest_bound_mb
from model.network.inference import Translator
from model.serving.cache import MB, give_back_freed_memory, nbytes
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
    """Session ``i``'s run (a session of its own, ``session-<i>`` unless named): its own sentence, with a given
    target (one teacher-forced pass: fast)."""
    return served.client.call("visualise", [distinct_text(i), distinct_text(i + 1000)],
                              session_hash or f"session-{i}")[0]


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


def test_an_event_searches_for_no_matplotlib(served, monkeypatch):
    """Gradio runs each event inside a manager that imports matplotlib going in and out: without it installed, two
    failed imports searching all of sys.path per event, in the server's loop (``viz.ui.patches.no_matplotlib_lookups``).
    Answered with no import of it tried."""
    import builtins

    tried = []
    real = builtins.__import__

    def spying(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            tried.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", spying)
    assert visualise(served, 902)
    assert tried == []


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


def rss_mb(demo) -> float:
    """This process's RSS at rest: answers already read forgotten (the queue's sweep, every few seconds) and the freed
    heap's pages handed back (the app's trimming thread, every few seconds), now rather than waited for."""
    demo._queue.sweep()
    gc.collect()
    give_back_freed_memory()
    return read_status_kb(os.getpid(), "VmRSS") / 1024


def test_rounds_of_maximum_size_requests_leave_memory_flat_and_within_the_bound(served):
    """Identical rounds of maximum-size /attention requests (100 + 100 tokens, ~10 MB answers): after the first round
    the resident memory stays flat, and within the README's bound at rest (the start, the cache's budget, the
    sessions made, the heap's slack); ``python -m bench --sections limits`` runs ten rounds of 100 as served."""
    assert any(t.name == "malloc-trim" for t in threading.enumerate())  # app.launch started it
    client = RawClient(served.url)  # answers read as bytes: this process serves, it should not parse 10 MB too
    before, rounds, per_round = rss_mb(served.demo), 4, 6
    after = []
    for _ in range(rounds):
        for i in range(per_round):
            body = json.dumps({"data": [long_text(i), long_text(i), None]}).encode()
            status, answer = client.request("POST", "/gradio_api/call/attention", body,
                                            {"Content-Type": "application/json"})
            assert status == 200, answer
            status, raw = client.request("GET", f"/gradio_api/call/attention/{json.loads(answer)['event_id']}")
            assert b"event: complete" in raw and len(raw) > 5e6  # a maximum-size answer
            del raw
        after.append(rss_mb(served.demo))
    assert max(after[1:]) - min(after[1:]) < 10, (before, after)
    bound = rest_bound_mb(before, cache_mb=BUDGET_MB, sessions=rounds * per_round)
    assert max(after) <= bound, (before, after, bound)


def test_freed_heap_pages_go_back_to_the_system():
    """Blocks under the mmap threshold, allocated by several threads and freed with a few kept among them (so that no
    heap can simply shrink from its top): their pages stay resident until they are handed back."""
    kept = []

    def churn():
        blocks = [bytearray(20_000) for _ in range(1500)]  # ~30 MB a thread, written (resident)
        kept.extend(blocks[::100])
        blocks.clear()

    gc.collect()
    give_back_freed_memory()  # start from what this process (and the tests before it) left resident
    before = read_status_kb(os.getpid(), "VmRSS") / 1024
    threads = [threading.Thread(target=churn) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = read_status_kb(os.getpid(), "VmRSS") / 1024
    assert give_back_freed_memory()
    given_back = held - read_status_kb(os.getpid(), "VmRSS") / 1024
    grown = held - before  # ~118 MB written, ~1 MB kept; what stayed resident once freed
    assert grown > 20, f"the freed blocks left only {grown:.0f} MB resident: nothing to hand back"
    assert given_back > 0.5 * grown, f"{given_back:.0f} MB of the {grown:.0f} MB still resident went back"
