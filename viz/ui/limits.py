"""The app's queue with fair shares (``viz.ui.shares``: the policy, with no Gradio in it) and unread answers dropped,
and answers written once. Each part names the Gradio 6.31.0 internals it changes (``gradio.queueing.Queue``,
``gradio.routes``); tests/test_fair_queue.py fails should these stop holding. The design note:
model/serving/README.md, "Fair shares".

- **Places** (``FairQueue.push``): a visitor is its address (``visitor``: the client's IP as the server sees it;
  behind a trusted proxy, the one that proxy saw, ``viz.ui.server``) and its page's session. A request takes one of
  the queue's places (Gradio's ``max_size``) while one is free; when none is, the address holding the most yields
  its newest (``shares.yielder``): the newcomer is refused — HTTP 429, a message saying why and when to try again
  (the page shows it), Retry-After — or a request already waiting leaves the queue with such a message as its answer
  (``evict``). Heavy work (``shares.HEAVY``) has its bounds per page and places of its own, alike.
- **Turns** (``FairQueue.get_events``): within each queue the next request to start is the one ``shares.next_up``
  picks — addresses in turn, sessions in turn within an address — moved to the front before Gradio's own pick.
- **Lanes** (``FairQueue.get_events``, ``FairQueue.process_events``): where a queue's workers are all taken, a
  request of an address that is not a crowd still starts (``shares.quick_pick``, up to ``shares.QUICK_WORKERS`` more);
  a crowd's request runs its model work in the crowd's lane (``model.serving.batching.CROWD``).
- **Unread answers** (``FairQueue.send_message``, ``FairQueue.sweep``): an answer ready and not yet read holds one
  of ``shares.UNREAD_PLACES``; past them, the address holding the most loses its oldest; an answer still unread
  ``shares.UNREAD_S`` seconds after it was ready is dropped too. A dropped answer is replaced by a short error saying
  so (what a late reader gets).
- **Answers written once** (``raw_json_answers``): a presenter's ``JSONText`` (the /attention answer, up to ~10.5 MB)
  reaches Gradio as an ``orjson.Fragment``, which its /queue/data route writes as it is; its /call route writes
  with ``json.dumps``, which learns to do the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
import types
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio.queueing as queueing
import gradio.routes as routes
import orjson
from fastapi import HTTPException
from gradio import route_utils
from gradio.server_messages import ProcessCompletedMessage

from model.serving.batching import CROWD, CROWD_WAITS
from viz.ui import shares
from viz.ui.logs import log_line
from viz.ui.shares import Busy, Claim

SWEEP_S = 5.0  # how often unread answers are looked for
FIRST_RUN_S = 5.0  # a request's expected time before the queue has timed one of its kind


def visitor(request: Any) -> str:
    """The address a request came from, as the server sees it (uvicorn puts the visitor's address there when a
    trusted proxy forwarded it: ``viz.ui.server``); "" when it has none."""
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or ""


def claim(event, at: float | None = None) -> Claim:
    """A Gradio event as the policy sees it (``at``: when its answer was ready; default: when it came, made once)."""
    if at is not None:
        return Claim(event._id, visitor(event.request), event.session_hash, at)
    if (made := getattr(event, "attn_claim", None)) is None:
        made = event.attn_claim = Claim(event._id, visitor(event.request), event.session_hash, event.enqueue_time)
    return made


@dataclass
class Unread:
    claim: Claim  # its ``at``: time.monotonic() when the answer was ready
    message: ProcessCompletedMessage


class Refused(HTTPException):
    """HTTP 429 with the reason and when to try again (in its message and its Retry-After header)."""

    def __init__(self, busy: Busy):
        super().__init__(429, busy.message, headers={"Retry-After": str(busy.retry_s)})


def error_output(message: str, title: str = "Error") -> dict:
    """A failed event's output as Gradio 6.31.0 sends it (``utils.error_payload``): the page shows it in a popup."""
    return {"error": message, "duration": None, "visible": True, "title": title}


_GradioQueue = queueing.Queue


class FairQueue(_GradioQueue):
    """Gradio's queue with fair places, fair turns and unread answers dropped (the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.unread: dict[str, Unread] = {}  # event id -> its answer, until it is read or dropped
        self.turns = shares.Turns()
        self.others_at: dict[str, float] = {}  # address -> when it last held a request as no crowd (shares.capped)
        self._sweeper: asyncio.Task | None = None

    # ------------------------------------------------------------------------------ places
    async def push(self, body, request, username):
        """Gradio's push, after room is made for the request (``Refused`` where the policy refuses it)."""
        if body.fn_index is not None:
            try:
                fn = route_utils.get_fn(self.blocks, None, body)
            except Exception:  # noqa: BLE001 - an unknown event: Gradio's push answers it
                fn = None
            if fn is not None:
                try:
                    self.make_room(fn, body.session_hash, visitor(request))
                except Busy as busy:
                    self._log("refused", fn, visitor(request), busy)
                    raise Refused(busy) from None
        if self._sweeper is None or self._sweeper.done():
            loop = asyncio.get_running_loop()
            self._sweeper = loop.create_task(self._sweep_forever())
            CROWD_WAITS.listener = lambda: self._wake(loop)
        return await super().push(body, request, username)

    def _wake(self, loop: asyncio.AbstractEventLoop) -> None:
        """``_changed`` in the server's loop, from a thread (nothing once that loop is closed: the app stopped)."""
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._changed)

    def _changed(self) -> None:
        """Look for a request to start again (a crowd's request began to wait for the model: another may start),
        through ``viz.ui.patches.queue_waits_for_events``'s wake where the queue has it."""
        if hasattr(self, "attn_changed"):
            self.attn_changes += 1
            self.attn_changed.set()

    def waiting(self, concurrency_id: str | None = None) -> list:
        """(event, claim) of every request waiting (in queue ``concurrency_id`` only, if given), oldest first."""
        return [(e, claim(e)) for q in self.event_queue_per_concurrency_id.values()
                if concurrency_id in (None, q.concurrency_id) for e in q.queue]

    def make_room(self, fn, session: str | None, address: str) -> None:
        """Room for a new request of ``fn`` from ``session`` at ``address``: a place freed where the policy says so,
        or ``Busy`` where the request itself is refused."""
        newcomer = Claim("", address, session or f"#{uuid.uuid4().hex}", time.monotonic())
        heavy = shares.HEAVY.get(fn.concurrency_id)
        if heavy is not None:
            kind = self.waiting(fn.concurrency_id)
            wait_s = (len(kind) + 1) * self._run_s(fn) / max(1, self._limit(fn.concurrency_id))
            if session is not None:
                running = [e for job in self.active_jobs for e in job or () if e.concurrency_id == fn.concurrency_id]
                mine = sum(c.session == session for _, c in kind) + sum(e.session_hash == session for e in running)
                if mine >= heavy.per_session:
                    raise shares.heavy_per_session(heavy, wait_s)
            if heavy.places is not None:
                self._yield(kind, newcomer, heavy.places, lambda n, y: shares.heavy_full(heavy, n, wait_s, y))
        if self.max_size is not None:
            everyone = self.waiting()
            retry_s = self._run_s(fn) * max(1, len(everyone) // max(1, self._limit(fn.concurrency_id)))
            self._yield(everyone, newcomer, self.max_size,
                        lambda n, y: shares.queue_full(n, self.max_size, retry_s, y))

    def _yield(self, waiting: list, newcomer: Claim, places: int, busy: Callable[[int, bool], Busy]) -> None:
        out = shares.yielder([c for _, c in waiting], newcomer, places)
        if out is None:
            return
        holding = sum(c.address == out.address for _, c in waiting)
        if out is newcomer:
            raise busy(holding, False)
        self.evict(next(e for e, c in waiting if c.id == out.id), busy(holding, True))

    def evict(self, event, busy: Busy) -> None:
        """``event`` leaves its queue; its answer: ``busy``'s message."""
        self.event_queue_per_concurrency_id[event.concurrency_id].queue.remove(event)
        self.event_ids_to_events.pop(event._id, None)
        self._log("yielded", event.fn, visitor(event.request), busy)
        self.send_message(event, ProcessCompletedMessage(output=error_output(busy.message, "Busy"), success=False,
                                                         title="Busy"))

    def _limit(self, concurrency_id: str) -> int:
        queue = self.event_queue_per_concurrency_id.get(concurrency_id)
        return (queue.concurrency_limit if queue else None) or 1

    def _run_s(self, fn) -> float:
        """How long a request of ``fn`` takes, as the queue has timed it (``FIRST_RUN_S`` until it has)."""
        timed = self.process_time_per_fn.get(fn)
        return timed.avg_time if timed is not None and timed.count else FIRST_RUN_S

    @staticmethod
    def _log(what: str, fn, address: str, busy: Busy) -> None:
        log_line((what, fn.api_name, busy.reason[:24]), f"{what} /{fn.api_name or fn.name} from {address or '?'}: "
                 f"{busy.reason}")

    # ------------------------------------------------------------------------------ turns
    def get_events(self):
        """The next request to start: in a queue with a free worker, the one ``shares.next_up`` names among those
        whose address may start one (``shares.capped``: a crowd, while others are served, runs a few at a time);
        else, where a queue's workers are all taken, a request of an address that is not a crowd
        (``shares.quick_pick``). Each request picked learns its lane (``attn_crowd``)."""
        running: Counter = Counter()
        holding: Counter = Counter()  # requests waiting or running, by address
        for job in self.active_jobs:
            for event in job or ():
                running["address", visitor(event.request)] += 1
                running["session", event.session_hash] += 1
                holding[visitor(event.request)] += 1
        for queue in self.event_queue_per_concurrency_id.values():
            holding.update(claim(e).address for e in queue.queue)
        now = time.monotonic()
        for address, n in holding.items():
            if not shares.crowd(n):
                self.others_at[address] = now
        self.others_at = {a: t for a, t in self.others_at.items() if now - t <= shares.OTHERS_RECENT_S}
        crowds = {a for a, n in holding.items() if shares.crowd(n)}
        others = any(a not in crowds for a in self.others_at)  # (a crowd's own first requests are not others)
        capped = shares.capped(holding, running, others, CROWD_WAITS.count)
        picked = self._pick(running, capped) or self._quick_pick(holding)
        if picked:
            for event in picked[0]:
                self.turns.served(picked[2], claim(event), now)
                event.attn_crowd = shares.crowd(holding[claim(event).address])
        return picked

    def _pick(self, running: Counter, capped: set[str]):
        """Gradio's pick (a queue with a free worker, in random order; its first request, with the same event's next
        ones where the event takes batches), the request ``shares.next_up`` names among the uncapped moved first."""
        ids = list(self.event_queue_per_concurrency_id)
        random.shuffle(ids)
        for concurrency_id in ids:
            queue = self.event_queue_per_concurrency_id[concurrency_id]
            if not queue.queue or (queue.concurrency_limit is not None
                                   and queue.current_concurrency >= queue.concurrency_limit):
                continue
            allowed = [i for i, e in enumerate(queue.queue) if claim(e).address not in capped]
            if not allowed:
                continue
            i = allowed[shares.next_up(concurrency_id, [claim(queue.queue[j]) for j in allowed], running, self.turns)]
            queue.queue.insert(0, queue.queue.pop(i))
            first = queue.queue[0]
            events = [first]
            if first.fn.batch:
                events += [e for e in queue.queue[1:] if e.fn == first.fn][: first.fn.max_batch_size - 1]
            for event in events:
                queue.queue.remove(event)
            return events, first.fn.batch, concurrency_id
        return None

    def _quick_pick(self, holding: Counter):
        """The oldest request of an address that is not a crowd, from a queue whose workers are all taken, up to
        ``shares.QUICK_WORKERS`` beyond its limit (not for heavy work, nor a queue that runs one at a time)."""
        for queue in self.event_queue_per_concurrency_id.values():
            limit = queue.concurrency_limit or 0
            if (queue.concurrency_id in shares.HEAVY or limit < 2 or not queue.queue
                    or queue.current_concurrency >= limit + shares.QUICK_WORKERS or queue.queue[0].fn.batch):
                continue
            i = shares.quick_pick([claim(e) for e in queue.queue], holding)
            if i is not None:
                return [queue.queue.pop(i)], False, queue.concurrency_id
        return None

    async def process_events(self, events, batch, begin_time, fn) -> None:
        """Gradio's, with the model's lane set for the request's work (``model.serving.batching.CROWD``: the worker
        threads it starts inherit it)."""
        lane = CROWD.set(any(getattr(e, "attn_crowd", False) for e in events))
        try:
            await super().process_events(events, batch, begin_time, fn)
        finally:
            CROWD.reset(lane)

    # ------------------------------------------------------------------------------ unread answers
    def send_message(self, event, event_message) -> None:
        super().send_message(event, event_message)
        if isinstance(event_message, ProcessCompletedMessage) and event.alive and event_message.success:
            self.unread[event._id] = Unread(claim(event, time.monotonic()), event_message)
            self._forget_read()
            self._crowd_out(time.monotonic())

    def _crowd_out(self, now: float) -> None:
        """Past ``shares.UNREAD_PLACES`` unread answers, drop the oldest of the address holding the most, among those
        ready ``shares.UNREAD_GRACE_S`` ago or more."""
        while len(self.unread) > shares.UNREAD_PLACES:
            left = [u.claim for u in self.unread.values() if now - u.claim.at >= shares.UNREAD_GRACE_S]
            if not left:
                return
            out = shares.oldest(left)
            holding = sum(c.address == out.address for c in left)
            _drop(self.unread.pop(out.id), shares.unread_crowded(holding))
            log_line(("unread", "crowded"), f"dropped an unread answer of {out.address or '?'}: "
                     f"{shares.UNREAD_PLACES} are unread, it held {holding}")

    def _forget_read(self) -> None:
        """Forget the answers that were read (or whose session is gone)."""
        for event_id, answer in list(self.unread.items()):
            if event_id not in self.pending_event_ids_session.get(answer.claim.session, ()):
                del self.unread[event_id]

    def sweep(self, now: float | None = None) -> int:
        """Forget the answers that were read; drop those unread for ``shares.UNREAD_S`` (a short error in their place);
        forget the sessions Gradio keeps nothing for any more. Returns how many answers were dropped."""
        now = time.monotonic() if now is None else now
        self._forget_read()
        self._crowd_out(now)
        dropped = 0
        for event_id, answer in list(self.unread.items()):
            if now - answer.claim.at > shares.UNREAD_S:
                del self.unread[event_id]
                dropped += _drop(answer, shares.unread_dropped(shares.UNREAD_S))
        # Gradio 6.31.0 keeps a set of event ids per session for good (one per raw call without a session): a set
        # that is empty, or whose session's messages it no longer keeps (and that runs nothing), goes.
        live = self.event_ids_to_events
        for session in [s for s, ids in self.pending_event_ids_session.items()
                        if not ids or (s not in self.pending_messages_per_session and not any(i in live for i in ids))]:
            del self.pending_event_ids_session[session]
        return dropped

    async def _sweep_forever(self) -> None:
        while not self.stopped:
            await asyncio.sleep(SWEEP_S)
            if dropped := self.sweep():
                log_line(("unread",), f"dropped {dropped} answer(s) not read within {shares.UNREAD_S:.0f} s")


def _drop(answer: Unread, why: str) -> bool:
    """Replace an unread answer, still queued for its reader, by a short error saying ``why``."""
    if not answer.message.success:
        return False
    answer.message.output = error_output(why)
    answer.message.success, answer.message.title = False, "Error"
    return True


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
