"""Requests that arrive together, decoded as one padded batch (a classroom clicking within a second).

One decoding step of one sentence costs about what a step of sixteen does (the model is small; the time
goes to Python and dispatch), so the server decodes concurrent requests together:

- ``MicroBatcher``: a worker thread that takes the calls waiting (up to ``max_batch_size``, after at most
  ``max_wait_s`` for more to arrive) and runs them as one batch (``model.serving.batches.run_batch``: one padded
  batch through ``Translator.attention_batch`` or ``.translate_batch``, each sentence's result the same as alone);
  ``BatchedTranslator`` puts it behind ``Translator``'s own ``attention`` and ``translate`` signatures. A bad
  sentence fails its own call only.

Switches (read by ``BatchSettings.from_env``): ``ATTN_BATCH=0`` turns batching off (the bench compares
both), ``ATTN_MAX_BATCH`` (default 32), ``ATTN_BATCH_WAIT_MS`` (default 0: the calls that queued up while
the previous batch ran make the next one; a fixed wait measured +10 ms on a lone request, for nothing) and
``ATTN_BATCH_PROCESS=0`` (the batches run in the server's process instead of a model process of their own,
``model.serving.worker``; the bench compares all three).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from model.network.inference import AttentionResult, Translator
from model.serving.batches import mask_key, run_batch
from model.serving.worker import ModelProcess, WorkerGone


# ------------------------------------------------------------------------------------------ the batcher
@dataclass(frozen=True)
class BatchSettings:
    enabled: bool = True
    max_batch_size: int = 32
    max_wait_s: float = 0.0
    process: bool = True  # the batches run in a model process of their own (model.serving.worker)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> BatchSettings:
        """``ATTN_BATCH`` (1/0, on/off, true/false, yes/no), ``ATTN_MAX_BATCH`` (1-256), ``ATTN_BATCH_WAIT_MS``
        (0-1000), ``ATTN_BATCH_PROCESS`` (0 = the batches run in the server's own process); a bad value is a
        ValueError naming the variable, the value and what to set."""
        def on(name: str) -> bool:
            raw = environ.get(name, "").strip().lower() or "1"  # unset or empty: on
            if raw not in SWITCH:
                raise ValueError(f"{name} must be 1 or 0 (on/off, true/false, yes/no), not {raw[:40]!r}")
            return SWITCH[raw]

        size = _setting(environ, "ATTN_MAX_BATCH", cls.max_batch_size, 1, 256, "a whole number of requests", int)
        wait_ms = _setting(environ, "ATTN_BATCH_WAIT_MS", cls.max_wait_s * 1000, 0, 1000, "milliseconds", float)
        return cls(on("ATTN_BATCH"), size, wait_ms / 1000, on("ATTN_BATCH_PROCESS"))


SWITCH = {"1": True, "on": True, "true": True, "yes": True, "0": False, "off": False, "false": False, "no": False}


def _setting(environ: Mapping[str, str], name: str, default, lo, hi, unit: str, kind: type):
    """The setting ``name`` as ``kind`` within [lo, hi] (``default`` when unset), else a ValueError saying so."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:  # (NaN fails too)
        raise ValueError(f"{name} must be {unit} from {lo} to {hi}, not {raw[:40]!r}")
    return value


class MicroBatcher:
    """Calls from many threads, run in batches by one worker thread.

    ``run(group, items) -> results`` gets up to ``max_batch_size`` items submitted with the same ``group``
    (items of different groups are never mixed), oldest first, and returns one result per item; a result
    that is an exception is raised in its caller only. The worker takes what is waiting, then waits at most
    ``max_wait_s`` for more of the same group (0: never waits).
    """

    def __init__(self, run: Callable[[Hashable, list], list], max_batch_size: int = 16, max_wait_s: float = 0.0):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be 1 or more, got {max_batch_size}")
        self._run, self.max_batch_size, self.max_wait_s = run, max_batch_size, max_wait_s
        self._queue: deque[tuple[Hashable, Any, Future]] = deque()
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None
        self.batch_sizes: Counter[int] = Counter()  # batch size -> how many batches of that size ran

    def submit(self, group: Hashable, item: Any) -> Any:
        """Run ``item`` in a batch of its ``group``; blocks until its result (or raises its exception)."""
        return self.submit_all(group, [item])[0]

    def submit_all(self, group: Hashable, items: list) -> list:
        """Run ``items`` together, in one batch of their ``group`` when ``max_batch_size`` allows (they queue up at
        once); blocks until every result, then raises the first exception among them, if any."""
        futures = [Future() for _ in items]
        with self._cond:
            if self._worker is None:
                self._worker = threading.Thread(target=self._loop, name="micro-batcher", daemon=True)
                self._worker.start()
            self._queue.extend((group, item, future) for item, future in zip(items, futures))
            self._cond.notify_all()
        return [future.result() for future in futures]

    def _take(self) -> tuple[Hashable, list[tuple[Any, Future]]]:
        with self._cond:
            while not self._queue:
                self._cond.wait()
            group = self._queue[0][0]
            deadline = time.monotonic() + self.max_wait_s
            while True:
                mine = [entry for entry in self._queue if entry[0] == group][: self.max_batch_size]
                left = deadline - time.monotonic()
                if len(mine) >= self.max_batch_size or left <= 0:
                    break
                self._cond.wait(left)
            taken = {id(entry) for entry in mine}
            self._queue = deque(entry for entry in self._queue if id(entry) not in taken)
        return group, [(item, future) for _, item, future in mine]

    def _loop(self) -> None:
        while True:
            group, batch = self._take()
            self.batch_sizes[len(batch)] += 1
            try:
                results = self._run(group, [item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"the batch function returned {len(results)} results for {len(batch)} items")
            except BaseException as exc:  # a bug in the batch: every caller hears of it, the worker lives on
                results = [exc] * len(batch)
            for (_, future), result in zip(batch, results):
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)


# A crowd's requests (an address holding many: a lecture hall, a flood) run in a lane of their own, at a lower CPU
# priority, so that everyone else's do not wait behind a hall's batch of 32 (the server sets it per request:
# viz.ui.limits, viz.ui.shares "Lanes"; threads started for the request inherit it).
CROWD: ContextVar[bool] = ContextVar("attn_crowd", default=False)
CROWD_NICE = 10  # the crowd lane's model process: the scheduler gives the other lane's the CPU first


class ModelWaits:
    """How many of a crowd's requests wait for the model now (their batch queued or running), and whom to tell when
    one starts waiting: a request that waits for the model takes none of the server's own interpreter, so the queue
    may start another of the crowd's (viz.ui.shares ``capped``, viz.ui.limits)."""

    def __init__(self):
        self.count, self._lock = 0, threading.Lock()
        self.listener: Callable[[], None] | None = None  # called from the waiting thread (the server's queue's wake)

    def __enter__(self) -> None:
        with self._lock:
            self.count += 1
        if (listener := self.listener) is not None:
            listener()

    def __exit__(self, *exc) -> None:
        with self._lock:
            self.count -= 1


CROWD_WAITS = ModelWaits()  # one per server process, as its queue


class Lane:
    """One micro-batcher and the model process its batches run in (``process``: else they run here)."""

    def __init__(self, translator: Translator, max_batch_size: int, max_wait_s: float, process: bool, nice: int = 0):
        self.translator = translator
        self.batcher = MicroBatcher(self._run, max_batch_size, max_wait_s)
        self.process = ModelProcess(translator.folder, str(translator.device), nice=nice) if process else None
        self.batches_here = 0  # batches run in this process (all of them without a model process)

    def _run(self, group: tuple, items: list) -> list:
        if self.process is not None and not self.process.closed:
            try:
                if self.process.ready():  # while it loads the model (the app's first seconds), batches run here
                    results = self.process.run(group, items)
                    failed = [r for r in results if isinstance(r, BaseException) and not isinstance(r, ValueError)]
                    if not failed:
                        return results
                    raise WorkerGone(f"the model process failed on a batch of {len(items)}: {failed[0]}")
            except Exception as exc:  # noqa: BLE001 - WorkerGone or not: the batch runs here, as without a process
                print(f"warning: {exc}; this batch runs in the server's own process", file=sys.stderr, flush=True)
        self.batches_here += 1
        return run_batch(self.translator, group, items)


class BatchedTranslator:
    """``Translator.attention`` and ``.translate`` (same arguments), with concurrent calls decoded together.

    A call with a ``head_mask`` (ablation) runs alone; a batch of one takes ``Translator``'s own path. With
    ``process``, the batches run in a child process (``model.serving.worker``: the decoding loop then never waits for
    the server's Python) once it has loaded the model (before, here: a cold start does not wait for it); if that
    process fails, the batch runs here and the next one starts a new process. Two lanes, each its own batcher and
    process: ``main``, and ``crowd`` for calls made where ``CROWD`` is set (its process niced by ``CROWD_NICE``).
    """

    def __init__(self, translator: Translator, max_batch_size: int = 32, max_wait_s: float = 0.0,
                 process: bool = False):
        self.translator = translator
        # process: each lane's batches run in a child process with its own copy of the model (model.serving.worker).
        # It lives as long as the server (its pipe closes when the server's process ends), or until close().
        self.main = Lane(translator, max_batch_size, max_wait_s, process)
        self.crowd = Lane(translator, max_batch_size, max_wait_s, process, nice=CROWD_NICE)

    @property
    def batcher(self) -> MicroBatcher:
        """The main lane's batcher."""
        return self.main.batcher

    @property
    def process(self) -> ModelProcess | None:
        """The main lane's model process."""
        return self.main.process

    @property
    def batches_here(self) -> int:
        """Batches run in the server's process, both lanes."""
        return self.main.batches_here + self.crowd.batches_here

    def _submit(self, lane: Lane | None, how: str, group: tuple, item) -> Any:
        """``item`` through ``lane``'s batcher (by default the request's: ``CROWD``), counted in ``CROWD_WAITS``
        while it waits if the request is a crowd's."""
        lane = lane or (self.crowd if CROWD.get() else self.main)
        submit = getattr(lane.batcher, how)
        if not CROWD.get():
            return submit(group, item)
        with CROWD_WAITS:
            return submit(group, item)

    def attention(self, text: str, target: str | None = None, scale: float | None = None,
                  head_mask=None) -> AttentionResult:
        if head_mask is not None:
            return self.translator.attention(text, target, scale, head_mask)
        return self._submit(None, "submit", ("attention", scale), (text, target))

    def attention_rows(self, requests: list[tuple[str, str | None, float | None]]) -> list[AttentionResult]:
        """``Translator.attention(text, target, scale)`` for each (text, target, scale), decoded as one batch with a
        scale per row (``model.serving.batches.attention_rows``)."""
        return self._submit(None, "submit_all", ("attention_rows",), list(requests))

    def translate(self, text: str, beam: int = 4, scale: float | None = None, head_mask=None) -> str:
        if head_mask is not None:
            return self.translator.translate(text, beam, scale, head_mask)
        return self._submit(None, "submit", ("translate", beam, scale), text)

    def translate_ids(self, batch_ids: list[list[int]], beam: int = 1, head_mask=None) -> list[str]:
        """``Translator.translate_batch(batch_ids, beam, head_mask=head_mask)``: heavy work (the ablation's sample,
        seconds of CPU), in the crowd's lane whoever asks, so that it never slows everyone else's sentences."""
        return self._submit(self.crowd, "submit", ("translate_ids", beam, mask_key(head_mask)), batch_ids)

    def start(self) -> None:
        """Start the lanes' model processes now (the app does at launch: they load while Gradio starts), if any."""
        for lane in (self.main, self.crowd):
            if lane.process is not None:
                lane.process.start()

    def close(self) -> None:
        """End the model processes for good (later batches run here)."""
        for lane in (self.main, self.crowd):
            if lane.process is not None:
                lane.process.close()
