"""Where the app works around Gradio's internals, each named with the Gradio behaviour it changes and the version it
was written against (gradio 6.31.0). A Gradio upgrade should start here: tests/test_views_page.py and
tests/test_memory.py fail should these stop holding. The queue, the logs and the web server Gradio starts are changed
in modules of their own, alike: viz/ui/limits.py, viz/ui/logs.py, viz/ui/server.py (tests/test_fair_queue.py,
tests/test_server_limits.py)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import html
import importlib.util
import os
import re
import sys
from copy import copy
from types import SimpleNamespace
from typing import Any

import gradio as gr
import gradio.queueing as queueing
import gradio.state_holder as state_holder
import gradio.utils as gradio_utils

from viz.ui import values

CONTROLS = (gr.Radio, gr.Slider, gr.Checkbox, gr.CheckboxGroup, gr.Dropdown, gr.Number, gr.Button, gr.State)


def shows_progress(block) -> bool:
    """Whether an event's progress belongs on ``block``: something the visitor reads (a figure, a text, a note) on
    the page, not a layout block, a control, a visitor's text box or a hidden carrier."""
    if getattr(block, "children", None) or isinstance(block, CONTROLS) or block.visible is not True:
        return False
    return not (isinstance(block, gr.Textbox) and block.interactive is not False)


def progress_on_components(demo: gr.Blocks) -> None:
    """An event shows its progress where its answer is read: on its figures, texts and notes, not on a layout block
    (the tabs, a column), a control it sets, a text box it fills or a hidden carrier; an event with none of those
    shows it on its first output.

    Gradio 6.31.0: every component that has ever been an event's progress target (by default: all its outputs) stays
    in the page's loading status, and on every status message of any event the page refreshes each one (a search
    through the whole component tree per target); for a layout block it also reads back (and deep-copies) every
    component inside it: with the tabs an output of six events (a link, a tile or a button opens a tab), that was all
    ~225 components, several times per click. ``python -m bench --sections browser`` counts ``structuredClone`` calls
    per click on "Translate and show attention": 26,260 before, 9,792 after. A link's event alone (its controls, its
    tab, its hidden link) made 25 targets. An event that names ``show_progress_on`` keeps it; one that shows no
    progress (``show_progress="hidden"``) has a single target: each status message refreshed every one (Inside a head's
    new query had 16, a lecture's move 29), and each stays in the page's loading status for every later event."""
    for fn in demo.fns.values():
        if fn.show_progress_on is not None or not fn.outputs:
            continue
        components = [o for o in fn.outputs if not getattr(o, "children", None)]  # (gr.HTML: a BlockContext without)
        if not components:
            raise ValueError(f"the event {fn.name!r} updates only layout blocks: give it a show_progress_on")
        shown = [o for o in components if shows_progress(o)] or components[:1]
        fn.show_progress_on = shown[:1] if fn.show_progress == "hidden" else shown


STARTS = {"click", "submit"}  # a visitor's start of a run: once at a time (a double click runs it once)


def latest_choice_wins(demo: gr.Blocks) -> None:
    """Every event that no button or Enter starts draws the latest choice: one made while the last one's answer
    is on its way runs again once that answer is in (``always_last``), instead of being dropped.

    Gradio 6.31.0 gives every event whose first trigger is not a ``change`` (an ``input``, a ``release``, a tab's
    ``select``, a ``then``/``success`` after another event) the trigger mode ``once``: the page ignores the event while
    its last run is pending. A head chosen right after a layer, an arrow key pressed twice on the close-up, a second
    example picked, or a second run whose redraw comes while the first one's still runs: the choices changed and the
    figure stayed on the older one, for good. An event a click or Enter starts (``STARTS``: a run, a step) keeps the
    mode Gradio gives it."""
    for fn in demo.fns.values():
        if not any(event in STARTS for _, event in fn.targets):
            fn.trigger_mode = "always_last"


class LeanSessionState(state_holder.SessionState):
    """Gradio 6.31.0 gives every session (each page load, and each raw API call that names no session) a
    ``SessionState`` that copies every component's configuration (~330 KB and tens of milliseconds for this app's ~225
    blocks), then keeps each input and output value the session sees (~2 MB of plot JSON at 100 tokens a side), only
    for its /gradio_api/deep_link route, which this app offers no button for. This one keeps only the gr.State values
    and the components an event updated (``lean_sessions`` makes new sessions these; the app's
    ``SESSION_CAPACITY`` bounds their number). tests/test_memory.py fails should a Gradio upgrade change this."""

    def __init__(self, blocks: Any):  # SessionState.__init__, less the config copy
        self.blocks_config = copy(blocks.default_config)
        self.config_values: dict = {}
        self.state_data: dict[int, Any] = {}
        self._state_ttl: dict = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

    def __setitem__(self, key: int, value: Any) -> None:
        block = self.blocks_config.blocks.get(key)
        if isinstance(block, gr.State):
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            self.blocks_config.blocks[key] = value

    def _update_config(self, *args) -> None:  # there is no copy to update (nor in _update_value_in_config)
        pass

    _update_value_in_config = _update_config


def lean_sessions() -> None:
    """New sessions keep no copy of every component and value (``LeanSessionState``). Gradio 6.31.0 makes each
    session through the module-level name ``gradio.state_holder.SessionState``; this replaces it, for the process."""
    state_holder.SessionState = LeanSessionState


def no_queue_analytics(demo: gr.Blocks) -> None:
    """The queue keeps no per-event analytics: they feed only Gradio's monitoring dashboard, which this app leaves off.

    Gradio 6.31.0 records every event (up to ``GRADIO_ANALYTICS_MAX_EVENTS``, 10,000) and, after each one, builds a
    pandas DataFrame of all those records to group and take percentiles of them: work that grows with the events
    served, up to ~40% of the server's time answering a stream of short requests (measured with py-spy on the bad-value
    probe, tests/helpers/bad_values.py). Call after ``demo.queue`` (which makes the queue)."""
    queue = demo._queue
    queue.ANALYTICS_MAX_EVENTS = 1  # the record of the event running, which the queue updates in place
    queue.compute_analytics_summary = lambda records: queue.cached_event_analytics_summary


def no_matplotlib_lookups() -> None:
    """Each event stops searching for matplotlib, which this app does not install.

    Gradio 6.31.0 runs every event inside ``utils.MatplotlibBackendMananger``, which imports matplotlib on entering
    and on leaving: without it, each is a failed import that searches every folder of ``sys.path``, in the server's
    event loop — 8 % of that loop's time while a hall of 100 sent its 300 requests (py-spy, `python -m bench.hall`'s
    class). Where matplotlib is importable, nothing changes."""
    if importlib.util.find_spec("matplotlib") is None:
        gradio_utils.MatplotlibBackendMananger.__enter__ = lambda self: None
        gradio_utils.MatplotlibBackendMananger.__exit__ = lambda self, *exc: None


def watched_disconnects() -> None:
    """A stream asks whether its client left without a cancelled wait each time.

    Gradio 6.31.0's streams (a page's ``/queue/data``, an API call's answer) ask Starlette's
    ``Request.is_disconnected`` before every message they send, and Starlette answers by entering an anyio cancel
    scope, cancelling it and waiting on the connection in it: 14 % of the server's event loop while a hall of 100
    sent its 300 requests (py-spy, `python -m bench.hall`'s class). Here a GET (it has no body to read) starts one
    task on its first question that waits for the client to leave (the server tells it that too when the answer is
    complete, so the task ends with the request), and every question reads what it found."""
    from starlette.requests import Request

    asked = Request.is_disconnected
    if getattr(asked, "watched", False):
        return

    async def is_disconnected(self) -> bool:
        if self._is_disconnected or self.scope.get("method") != "GET":
            return await asked(self)
        if getattr(self, "_attn_watch", None) is None:
            async def watch() -> None:
                while (await self._receive()).get("type") != "http.disconnect":
                    pass
                self._is_disconnected = True

            self._attn_watch = asyncio.get_running_loop().create_task(watch())
        return self._is_disconnected

    is_disconnected.watched = True
    Request.is_disconnected = is_disconnected


def quiet_queue(demo: gr.Blocks) -> None:
    """The queue's work beyond the events it runs, cut: ``no_queue_analytics``, ``queue_waits_for_events``,
    ``no_matplotlib_lookups`` and ``watched_disconnects``. Call after ``demo.queue`` (which makes the queue)."""
    no_queue_analytics(demo)
    queue_waits_for_events(demo)
    no_matplotlib_lookups()
    watched_disconnects()


IDLE_WAIT_S = 1.0  # the longest a queue's loop waits for an event before it looks again anyway


def queue_waits_for_events(demo: gr.Blocks) -> None:
    """The queue's loops wait for a change instead of looking for one.

    Gradio 6.31.0's ``Queue.start_processing`` looks for an event it can start 1,000 times a second whenever it has
    none (it sleeps ``sleep_when_free``, 1 ms on Linux, between looks: with the queue empty, with every worker busy,
    or with the events queued all held back by their concurrency limit), and ``start_progress_updates`` looks for
    progress 100 times a second: 4 % of a core for an app nobody uses (``python -m bench --sections browser``: its
    idle row), more while requests wait their turn. What it waits for can only change when an event is pushed or a
    job ends: here those sleeps wait for the next such change instead (or ``IDLE_WAIT_S``), the progress loop's only
    while no job runs; every other sleep, and the loops themselves, are Gradio's. A sleep is told apart by the queue
    that takes it (its caller's ``self``). Call after ``demo.queue`` (which makes the queue)."""
    queue = demo._queue
    queue.attn_changed = asyncio.Event()  # (bound to the server's loop when first awaited there)
    queue.attn_changes = queue.attn_looked = 0  # changes counted; how many there were when it last looked

    def then_changed(method):
        async def run(*args, **kwargs):
            try:
                return await method(*args, **kwargs)
            finally:
                queue.attn_changes += 1
                queue.attn_changed.set()

        return run

    get_events = queue.get_events

    def looking():
        queue.attn_looked = queue.attn_changes
        return get_events()

    queue.push, queue.process_events = then_changed(queue.push), then_changed(queue.process_events)
    queue.get_events = looking
    if not isinstance(queueing.asyncio, SimpleNamespace):  # once a process: the queueing module's asyncio.sleep
        names = {name: getattr(asyncio, name) for name in dir(asyncio) if not name.startswith("__")}
        queueing.asyncio = SimpleNamespace(**{**names, "sleep": _queue_sleep})


def _queue_sleep(delay, *args, **kwargs):
    """``asyncio.sleep`` for gradio.queueing: a patched queue's look that can find nothing new waits for a change."""
    queue = sys._getframe(1).f_locals.get("self")
    changed = getattr(queue, "attn_changed", None)
    if changed is None or queue.stopped or not _nothing_to_find(queue, delay):
        return asyncio.sleep(delay, *args, **kwargs)
    changed.clear()
    return _wait(changed)


def _nothing_to_find(queue, delay) -> bool:
    """Whether the loop taking this sleep can find nothing new before an event is pushed or a job ends (checked
    with no await between it and the wait: a change after it sets the event waited for)."""
    if delay == queue.progress_update_sleep_when_free:  # progress: no job runs, none is waiting to start
        return len(queue) == 0 and all(job is None for job in queue.active_jobs)
    if delay != queue.sleep_when_free:
        return False
    # start_processing: nothing queued; every worker busy; or nothing pushed or ended since get_events found nothing
    return len(queue) == 0 or None not in queue.active_jobs or queue.attn_changes == queue.attn_looked


async def _wait(changed: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(changed.wait(), IDLE_WAIT_S)


def answer_every_value(demo: gr.Blocks) -> None:
    """Every value of every event, page-only ones included, answered with a message where it cannot be used
    (``viz.ui.values``): too few or too many values, and a value its component would never send.

    Gradio 6.31.0 reads an event's values in ``Blocks.preprocess_data``: too few raise a plain ValueError (an error
    without a message: the app does not show Python's exceptions), too many are dropped silently, and a component
    that cannot read a value fails with Python's words or none. This checks them first and raises a ``gr.Error``
    (its message reaches the client, as text: ``escape_message``)."""
    read = demo.preprocess_data

    async def preprocess_data(block_fn, inputs, state, explicit_call=False):
        try:
            values.check_count(block_fn, inputs)
            blocks = state.blocks_config.blocks if state is not None else {}
            values.check_values(block_fn, inputs, blocks)
        except ValueError as exc:
            raise gr.Error(escape_message(str(exc))) from None
        return await read(block_fn, inputs, state, explicit_call)

    demo.preprocess_data = preprocess_data


def escape_message(message: str) -> str:
    """A message as Gradio 6.31.0 shows it: its error and warning popups render the message as HTML (a link typed
    into a box and quoted back would be live), so the message's text is escaped."""
    return html.escape(message, quote=False)


FAULT = "The server failed to answer this request (its log says where): try again, and report it if it happens again."
MESSAGE_MAX = 1000  # characters of an error message; a longer one has its quoted values cut (QUOTE_MAX), then itself
QUOTE_MAX = 40
_QUOTED = re.compile(r"""(['"])((?:\\.|(?!\1).)*)\1""")


def error_messages() -> None:
    """Every error an event answers carries a message of at most ``MESSAGE_MAX`` characters, for every endpoint in one
    place (``bounded_message``).

    Gradio 6.31.0 turns an event's exception into its answer with ``gradio.utils.error_payload`` (imported by name
    into gradio.queueing): a ``gr.Error``'s message as it is (a presenter that quoted a 1,000,000-character value whole
    answered 1 MB), and any other exception as ``{"error": null}``, no message at all (with ``show_error=False``, which
    keeps Python's words from visitors). Here the first is cut, and the second says the server failed (``FAULT``; the
    log keeps the traceback, ``viz.ui.logs``)."""
    if getattr(gradio_utils.error_payload, "bounded", False):
        return
    payload = gradio_utils.error_payload

    def error_payload(error, show_error):
        content = payload(error, show_error)
        if content.get("error") is None:
            return {**content, "error": FAULT, "visible": True, "title": "Error", "duration": None}
        return {**content, "error": bounded_message(str(content["error"]))}

    error_payload.bounded = True
    gradio_utils.error_payload = queueing.error_payload = error_payload


def bounded_message(message: str) -> str:
    """``message`` as an answer may carry it: within ``MESSAGE_MAX`` characters it stays as it is; a longer one has
    each quoted value ('…' or "…") over ``QUOTE_MAX`` characters cut (saying how long it was), then, if still too
    long, is cut itself."""
    if len(message) <= MESSAGE_MAX:
        return message

    def cut(match: re.Match) -> str:
        quote, inside = match.group(1), match.group(2)
        if len(inside) <= QUOTE_MAX:
            return match.group(0)
        return f"{quote}{inside[:QUOTE_MAX - 1]}…{quote} ({len(inside):,} characters)"

    message = _QUOTED.sub(cut, message)
    return message if len(message) <= MESSAGE_MAX else f"{message[:MESSAGE_MAX - 1]}…"
