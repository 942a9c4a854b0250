"""What one visitor may take of the app's queue, and how long the app keeps an answer nobody reads. Each part names the
Gradio 6.31.0 internals it changes (``gradio.queueing.Queue``, ``gradio.routes``); tests/test_fair_queue.py fails
should these stop holding. The design note: model/serving/README.md, "One visitor cannot take the app".

- **Fair places** (``FairQueue.push``): a visitor is its address (``visitor``: the client's IP as the server sees it;
  behind a trusted proxy, the one that proxy saw, ``viz.ui.server``) and its page's session. Each holds at most
  ``PER_ADDRESS`` / ``PER_SESSION`` requests waiting, running or answered but not yet read; slow work (a head
  ablation, ``SLOW``) has smaller bounds of its own — one per page at a time — and a bounded wait. A request beyond
  them is refused at once: HTTP 429, a message saying why and when to try again (the page shows it), Retry-After.
- **Fair order** (``FairQueue.get_events``): within each queue the next request to start is the oldest of the
  visitor with the fewest running and, among those, the one that queue served longest ago: one visitor's backlog
  never stands before another's request, visitors take turns.
- **Unread answers** (``FairQueue.sweep``): an answer still unread ``UNREAD_S`` seconds after it was ready is
  replaced by a short error saying so (a late reader gets that), and stops counting against its visitor.
- **One-shot sessions** (``FairQueue.forget_one_shot_sessions``): a raw call that names no session gets one of its
  own from Gradio, named after its event (nobody can call it again); once its answer is read, the session goes.
- **Answers written once** (``raw_json_answers``): a presenter's ``JSONText`` (the /attention answer, up to ~10.5 MB)
  reaches Gradio as an ``orjson.Fragment``, which its /queue/data route writes as it is; its /call route writes
  with ``json.dumps``, which learns to do the same.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import types
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio.queueing as queueing
import gradio.routes as routes
import orjson
from fastapi import HTTPException
from gradio import route_utils
from gradio.server_messages import ProcessCompletedMessage

from viz.ui.logs import log_line
from viz.ui.wiring import ABLATIONS

# Requests one page may hold at once. A page's own events come in bursts: ~8 as it loads (the link's view on every
# tab), more when presentation mode redraws every tab; on a busy machine all of them wait at once. A bound the page
# itself can reach breaks it (its refused events never draw), so this one is well above its bursts.
PER_SESSION = 24
PER_ADDRESS = 64  # one address: a quarter of the queue's 256 places (a classroom behind one school address)
UNREAD_S = 30.0  # an answer not read this long after it was ready is dropped
SWEEP_S = 5.0  # how often unread answers are looked for
FIRST_RUN_S = 5.0  # a request's expected time before the queue has timed one of its kind
TURNS_S = 600.0  # when a visitor was last served is remembered this long (for turns)


@dataclass(frozen=True)
class SlowWork:
    """Bounds of a queue of slow work, besides ``PER_SESSION`` and ``PER_ADDRESS``."""

    noun: str  # what one request is, in the messages
    per_session: int  # waiting or running at once, per page
    per_address: int  # ... per address
    waiting: int  # waiting at most, all visitors together (the longest wait: waiting × its time)


# A head ablation decodes the shipped sample (5-9 CPU-seconds): one at a time (wiring.ABLATIONS), 16 waiting at most.
SLOW = {ABLATIONS["concurrency_id"]: SlowWork("head ablation", per_session=1, per_address=2, waiting=16)}


def visitor(request: Any) -> str:
    """The address a request came from, as the server sees it (uvicorn puts the visitor's address there when a
    trusted proxy forwarded it: ``viz.ui.server``); "" when it has none."""
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or ""


@dataclass(frozen=True)
class Held:
    """A request a visitor holds: waiting, running, or answered but not yet read."""

    address: str
    session: str
    concurrency_id: str
    waiting: bool  # in its queue, not yet started
    unread: bool = False


@dataclass
class Unread:
    held: Held
    ready_at: float  # time.monotonic() when the answer was ready
    message: ProcessCompletedMessage


class Refused(HTTPException):
    """HTTP 429 with the reason and when to try again (in its message and its Retry-After header)."""

    def __init__(self, reason: str, retry_s: float):
        seconds = max(1, math.ceil(retry_s))
        super().__init__(429, f"{reason} Try again in {seconds} s.", headers={"Retry-After": str(seconds)})


_GradioQueue = queueing.Queue


class FairQueue(_GradioQueue):
    """Gradio's queue with fair places, fair order and unread answers dropped (the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.unread: dict[str, Unread] = {}  # event id -> its answer, until it is read or dropped
        self.served: dict[tuple[str, str], float] = {}  # (queue, address) -> when its last request started
        self.one_shot: set[str] = set()  # the sessions Gradio made for a raw call that named none
        self._sweeper: asyncio.Task | None = None

    # ------------------------------------------------------------------------------ places
    async def push(self, body, request, username):
        """Gradio's push, after the visitor's bounds (``Refused`` beyond them)."""
        if body.fn_index is not None:
            try:
                fn = route_utils.get_fn(self.blocks, None, body)
            except Exception:  # noqa: BLE001 - an unknown event: Gradio's push answers it
                fn = None
            if fn is not None:
                self.check_places(fn, body.session_hash, visitor(request))
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever())
        one_shot = body.session_hash is None
        pushed = await super().push(body, request, username)
        if one_shot and body.session_hash is not None:  # (Gradio named it after the event)
            self.one_shot.add(body.session_hash)
        return pushed

    def held(self) -> Iterator[Held]:
        """Every request held now: waiting, running, answered but unread."""
        seen = set()
        for queue in self.event_queue_per_concurrency_id.values():
            for event in queue.queue:
                seen.add(event._id)
                yield Held(visitor(event.request), event.session_hash, event.concurrency_id, waiting=True)
        for job in self.active_jobs:
            for event in job or ():
                if event._id not in seen and event._id not in self.unread:
                    yield Held(visitor(event.request), event.session_hash, event.concurrency_id, waiting=False)
        for event_id, answer in self.unread.items():
            if event_id in self.pending_event_ids_session.get(answer.held.session, ()):  # else read already
                yield answer.held

    def check_places(self, fn, session: str | None, address: str) -> None:
        """Raise ``Refused`` where a new request of ``fn`` from ``session`` at ``address`` would pass a bound."""
        held = list(self.held())
        run_s = self._run_s(fn)
        if session is not None:
            mine = sum(h.session == session for h in held)
            if mine >= PER_SESSION:
                self._refuse(fn, address, f"Too many requests at once from this page: {mine} are waiting, running "
                             f"or not yet read (at most {PER_SESSION}).", run_s)
        mine = sum(h.address == address for h in held)
        if mine >= PER_ADDRESS:
            self._refuse(fn, address, f"Too many requests at once from your address: {mine} are waiting, running or "
                         f"not yet read (at most {PER_ADDRESS} per visitor).", run_s)
        slow = SLOW.get(fn.concurrency_id)
        if slow is None:
            return
        work = [h for h in held if h.concurrency_id == fn.concurrency_id and not h.unread]
        waiting = sum(h.waiting for h in work)
        queue = self.event_queue_per_concurrency_id.get(fn.concurrency_id)
        wait_s = (waiting + 1) * run_s / max(1, (queue.concurrency_limit if queue else None) or 1)
        if session is not None and sum(h.session == session for h in work) >= slow.per_session:
            self._refuse(fn, address, f"Your {slow.noun} is still waiting or running: one at a time per page, and "
                         "it goes first.", wait_s)
        if sum(h.address == address for h in work) >= slow.per_address:
            self._refuse(fn, address, f"Your address has {slow.per_address} {slow.noun}s waiting or running "
                         f"already (at most {slow.per_address} per visitor).", wait_s)
        if waiting >= slow.waiting:
            self._refuse(fn, address, f"{waiting} {slow.noun}s are waiting already (at most {slow.waiting}, for "
                         "everyone).", wait_s)

    def _run_s(self, fn) -> float:
        """How long a request of ``fn`` takes, as the queue has timed it (``FIRST_RUN_S`` until it has)."""
        timed = self.process_time_per_fn.get(fn)
        return timed.avg_time if timed is not None and timed.count else FIRST_RUN_S

    @staticmethod
    def _refuse(fn, address: str, reason: str, retry_s: float):
        log_line(("refused", fn.api_name, reason[:24]), f"refused /{fn.api_name or fn.name} from {address or '?'}: "
                 f"{reason}")
        raise Refused(reason, retry_s)

    # ------------------------------------------------------------------------------ order
    def get_events(self):
        """Gradio's pick (the first request of a queue with a free place), after each such queue's fairest request
        (``fairest``) has been moved to its front."""
        running = Counter(visitor(event.request) for job in self.active_jobs for event in job or ())
        for queue in self.event_queue_per_concurrency_id.values():
            free = queue.concurrency_limit is None or queue.current_concurrency < queue.concurrency_limit
            if free and len(queue.queue) > 1:
                served = {a: at for (q, a), at in self.served.items() if q == queue.concurrency_id}
                if i := fairest(queue.queue, running, served):
                    queue.queue.insert(0, queue.queue.pop(i))
        picked = super().get_events()
        if picked:
            now = time.monotonic()
            self.served.update(((picked[2], visitor(event.request)), now) for event in picked[0])
        return picked

    # ------------------------------------------------------------------------------ unread answers
    def send_message(self, event, event_message) -> None:
        super().send_message(event, event_message)
        if isinstance(event_message, ProcessCompletedMessage) and event.alive:
            held = Held(visitor(event.request), event.session_hash, event.concurrency_id, False, unread=True)
            self.unread[event._id] = Unread(held, time.monotonic(), event_message)

    def sweep(self, now: float | None = None) -> int:
        """Forget the answers that were read; drop those unread for ``UNREAD_S`` (a short error in their place);
        forget the sessions Gradio keeps nothing for any more. Returns how many answers were dropped."""
        now = time.monotonic() if now is None else now
        dropped = 0
        for event_id, answer in list(self.unread.items()):
            if event_id not in self.pending_event_ids_session.get(answer.held.session, ()):
                del self.unread[event_id]  # read (or the session is gone)
            elif now - answer.ready_at > UNREAD_S:
                del self.unread[event_id]
                if answer.message.success:
                    answer.message.output = {"error": f"This answer was ready but not read within {UNREAD_S:.0f} s, "
                                             "so it was dropped: ask again, and read the answer at once.",
                                             "duration": None, "visible": True, "title": "Error"}
                    answer.message.success, answer.message.title = False, "Error"
                    dropped += 1
        # Gradio 6.31.0 keeps a set of event ids per session for good (one per raw call without a session): a set
        # that is empty, or whose session's messages it no longer keeps (and that runs nothing), goes.
        for turn in [t for t, at in self.served.items() if now - at > TURNS_S]:
            del self.served[turn]  # a visitor not served for a while starts afresh
        live = self.event_ids_to_events
        for session in [s for s, ids in self.pending_event_ids_session.items()
                        if not ids or (s not in self.pending_messages_per_session and not any(i in live for i in ids))]:
            del self.pending_event_ids_session[session]
        self.forget_one_shot_sessions()
        return dropped

    def forget_one_shot_sessions(self) -> None:
        """The sessions Gradio made for raw calls that named none, gone once their answers are read (their ids no
        longer pending): each kept a session state (~10 KB; the app keeps up to 2,000 sessions) for nobody."""
        holder = self.blocks.state_holder
        for session in [s for s in self.one_shot if s not in self.pending_event_ids_session]:
            self.one_shot.discard(session)
            self.pending_messages_per_session.pop(session, None)
            with holder.lock:
                holder.session_data.pop(session, None)
                holder.time_last_used.pop(session, None)

    async def _sweep_forever(self) -> None:
        while not self.stopped:
            await asyncio.sleep(SWEEP_S)
            if dropped := self.sweep():
                log_line(("unread",), f"dropped {dropped} answer(s) not read within {UNREAD_S:.0f} s")


def fairest(events: list, running: Counter, served: dict[str, float]) -> int:
    """The index of the request to start next among ``events`` (oldest first): the oldest of the visitor with the
    fewest requests running (``running``: address -> count) and, among those, served longest ago (``served``:
    address -> when its last request started; never: first)."""

    def turn(i: int) -> tuple:
        address = visitor(events[i].request)
        return running[address], served.get(address, -math.inf), i

    return min(range(len(events)), key=turn)


def fair_queue() -> None:
    """Queues made from now on are ``FairQueue``s: Gradio 6.31.0's ``Blocks.queue`` makes its queue through the
    module-level name ``gradio.queueing.Queue``; this replaces it, for the process (call it before ``demo.queue``)."""
    queueing.Queue = FairQueue


class _JSONWithFragments(types.ModuleType):
    """``json`` as gradio.routes sees it: ``dumps`` also writes a list that holds ``orjson.Fragment``s (answers
    already written as JSON), each as it is."""

    def __getattr__(self, name: str):
        return getattr(json, name)

    @staticmethod
    def dumps(obj, *args, **kwargs) -> str:
        if isinstance(obj, list) and any(isinstance(v, orjson.Fragment) for v in obj):
            parts = [orjson.dumps(v) if isinstance(v, orjson.Fragment) else json.dumps(v, *args, **kwargs).encode()
                     for v in obj]
            return (b"[" + b",".join(parts) + b"]").decode("utf-8")  # one str made, of one byte a character if ASCII
        return json.dumps(obj, *args, **kwargs)


def raw_json_answers() -> None:
    """Answers already written as JSON (``JSONText``, sent as ``orjson.Fragment``) go out as they are.

    Gradio 6.31.0 sends an event's outputs through /gradio_api/queue/data with ``orjson.dumps`` (a Fragment is
    written as it is, and pydantic's ``model_dump`` passes it through) and through GET /gradio_api/call/<name>/<id>
    with the module-level ``json.dumps`` of gradio.routes, which this makes write Fragments too."""
    if not isinstance(routes.json, _JSONWithFragments):
        routes.json = _JSONWithFragments("json")
