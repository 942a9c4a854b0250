"""Logs that stay bounded whatever visitors send (``bounded_logs``; the design note: model/serving/README.md).

- An expected error — a ``gr.Error``: a bad input, answered with its message — is one short line naming the event:
  never the input, never a traceback.
- A fault (any other exception) keeps its traceback, cut: its last ``FRAMES`` frames, each line at most ``LINE``
  characters, the message at most ``MESSAGE``.
- The same kind of line from the same place more than ``BURST`` times in ``WINDOW_S`` seconds is counted, not
  printed; one line says so, and the count follows when the window ends (``log_line``).

Gradio 6.31.0 prints an event's exception with ``traceback.print_exc()`` (gradio.queueing, gradio.routes,
gradio.route_utils): a gr.Error with ``print_exception`` (its default) as a whole traceback, and the exception's
message as it is (its own "too few values" message quoted every value received: a 50 MB text, 50 MB of log). Those
modules' ``traceback`` becomes ``_BoundedTraceback``. uvicorn and asyncio log through ``logging`` ("uvicorn.error",
"asyncio": an application's exception, "Too many open files"): ``BoundedRecords`` bounds their records alike.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
import types
from collections import Counter
from collections.abc import Hashable
from types import TracebackType

FRAMES = 8  # frames of a fault's traceback kept (the innermost)
LINE = 200  # characters of a source line kept
MESSAGE = 300  # characters of an exception's message kept (a bad input's: SHORT)
SHORT = 160
BURST = 10  # lines of one kind printed per window
WINDOW_S = 60.0


def short(text: object, limit: int) -> str:
    """``text`` on one line, control characters as spaces, cut to ``limit`` characters (saying how long it was)."""
    text = str(text)
    one = "".join(c if c.isprintable() else " " for c in text[: limit + 1])
    return one if len(text) <= limit else f"{one[:limit]}… ({len(text):,} characters)"


class _Budget:
    """How many lines of each kind were printed in this window (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.start = time.monotonic()
        self.counts: Counter[Hashable] = Counter()

    def allow(self, key: Hashable) -> tuple[bool, list[str]]:
        """Whether a line of kind ``key`` may be printed now, and the lines to print first (counts of the last
        window's lines that were not printed; a note when this kind is silenced)."""
        notes: list[str] = []
        with self.lock:
            now = time.monotonic()
            if now - self.start > WINDOW_S:
                notes = [f"(and {n - BURST:,} more like: {_label(k)}, in {now - self.start:.0f} s)"
                         for k, n in self.counts.items() if n > BURST]
                self.counts.clear()
                self.start = now
            self.counts[key] += 1
            n = self.counts[key]
        if n == BURST + 1:
            notes.append(f"(more lines like: {_label(key)} are counted, not printed, for up to {WINDOW_S:.0f} s)")
        return n <= BURST, notes


def _label(key: Hashable) -> str:
    return short(" ".join(map(str, key)) if isinstance(key, tuple) else key, 80)


_BUDGET = _Budget()


def log_line(key: Hashable, text: str) -> None:
    """Print ``text`` (already bounded) to stderr, unless lines of kind ``key`` are over their budget."""
    allowed, notes = _BUDGET.allow(key)
    lines = [*notes, text] if allowed else notes
    if lines:
        print("\n".join(lines), file=sys.stderr, flush=True)


def _event(tb: TracebackType | None) -> str:
    """The event an exception happened in ("/attention"; a page-only event by its function's name), from the
    queue's frame that ran it."""
    for frame, _ in traceback.walk_tb(tb):
        fn = frame.f_locals.get("fn")
        name = getattr(fn, "api_name", None) or getattr(fn, "name", None)
        if isinstance(name, str) and hasattr(fn, "concurrency_id"):
            return f"/{name}"
    return "a request"


def fault_text(exc: BaseException, tb: TracebackType | None, where: str = "") -> str:
    """A fault's bounded report: what and where, then its innermost ``FRAMES`` frames, lines cut to ``LINE``."""
    frames = traceback.extract_tb(tb)
    cut = f"; its last {FRAMES} of {len(frames)} frames" if len(frames) > FRAMES else ""
    lines = [f"fault{f' in {where}' if where else ''}: {type(exc).__name__}: {short(exc, MESSAGE)}",
             f"Traceback (most recent call last{cut}):"]
    for fs in frames[-FRAMES:]:
        lines.append(f'  File "{short(fs.filename, LINE)}", line {fs.lineno}, in {short(fs.name, 80)}')
        if fs.line:
            lines.append(f"    {short(fs.line.strip(), LINE)}")
    return "\n".join(lines)


def report(exc: BaseException, tb: TracebackType | None) -> None:
    """One exception of an event, bounded: a gr.Error (an expected error) as one line, anything else as a fault."""
    from gradio.exceptions import Error

    where = _event(tb)
    if isinstance(exc, Error):
        log_line(("bad input", where), f"bad input to {where}: {short(exc.message, SHORT)}")
    else:
        log_line(("fault", where, type(exc).__name__), fault_text(exc, tb, where))


class _BoundedTraceback(types.ModuleType):
    """``traceback`` as Gradio's modules see it: ``print_exc`` reports the exception being handled, bounded."""

    def __getattr__(self, name: str):
        return getattr(traceback, name)

    @staticmethod
    def print_exc(limit=None, file=None, chain=True) -> None:  # noqa: ARG004 - traceback.print_exc's signature
        _, exc, tb = sys.exc_info()
        if exc is not None:
            report(exc, tb)


class BoundedRecords(logging.Filter):
    """A log record bounded: its message cut to ``MESSAGE``, its exception as ``fault_text``, and records of one kind
    (logger and message template) over their budget dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        allowed, notes = _BUDGET.allow((record.name, short(record.msg, 60)))
        if notes:
            print("\n".join(notes), file=sys.stderr, flush=True)
        if not allowed:
            return False
        message = record.getMessage()
        if len(message) > MESSAGE:
            record.msg, record.args = short(message, MESSAGE), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = fault_text(record.exc_info[1], record.exc_info[2])  # the formatter prints this
        return True


LOGGERS = ("uvicorn.error", "asyncio")


def bounded_logs() -> None:
    """Bound what the server prints, for the process (the module docstring)."""
    import gradio.queueing
    import gradio.route_utils
    import gradio.routes

    shim = _BoundedTraceback("traceback")
    for module in (gradio.queueing, gradio.routes, gradio.route_utils):
        if getattr(module, "traceback", None) is traceback:
            module.traceback = shim
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, BoundedRecords) for f in logger.filters):
            logger.addFilter(BoundedRecords())
