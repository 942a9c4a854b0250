"""One least-recently-used cache for the whole server, bounded in bytes (not in entries).

A session keeps only a small key; the results themselves (an ``AttentionResult`` at 100 tokens a side is
~6 MB of float32 maps) live here, shared by every session, and the least recently used go first once the
sum of their sizes passes the budget. The model is deterministic, so a result that was evicted is simply
computed again when someone asks for it: eviction costs time, never an answer.

- Size of a value: ``nbytes`` (numpy arrays' own ``nbytes``, strings' lengths, walked through dataclass
  fields, tuples, lists and dicts) — the memory that grows with sentence length, not Python's few hundred
  bytes of bookkeeping per entry.
- Budget: ``ATTN_CACHE_MB`` megabytes (default ``DEFAULT_BUDGET_MB``); 0 turns caching off. A value larger
  than the whole budget is returned but not kept.
- Thread-safe: one lock guards the table; computations run outside it. Callers asking at the same time for
  the same missing key share one computation (``get_or_compute``): 30 students clicking the same example
  cost one model run.
- Values are shared between sessions: treat them as read-only (the server marks cached arrays so).
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future
from typing import Any

import numpy as np

DEFAULT_BUDGET_MB = 256
BUDGET_ENV = "ATTN_CACHE_MB"
MB = 1024 * 1024


def budget_from_env(environ: Mapping[str, str] = os.environ) -> int:
    """The cache budget in bytes: ``ATTN_CACHE_MB`` (a number of megabytes, 0 = no cache) or the default."""
    raw = environ.get(BUDGET_ENV, "").strip()
    if not raw:
        return DEFAULT_BUDGET_MB * MB
    try:
        mb = float(raw)
    except ValueError:
        raise ValueError(f"{BUDGET_ENV} must be a number of megabytes (e.g. 256), got {raw!r}") from None
    if not 0 <= mb < 1e7:  # also refuses NaN
        raise ValueError(f"{BUDGET_ENV} must be from 0 to 10,000,000 megabytes, got {raw!r}")
    return int(mb * MB)


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def fixed_mmap_threshold(threshold: int = 128 * 1024) -> bool:
    """Keep large arrays (attention maps, plot JSON) in their own mmap, returned to the OS when freed.

    glibc raises its mmap threshold to the size of any mmapped block that is freed (up to 32 MB); from then on
    blocks of a few MB come from heap arenas that rarely shrink, and a server's resident memory grows by
    ~0.3 MB per request although nothing is kept (measured: 120 sessions at 100 tokens, +34 MB; with a
    fixed threshold, +6 MB). Setting the threshold (glibc's default value) turns that adjustment off.
    Returns False where there is no glibc (nothing changes)."""
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False


TRIM_S = 10.0  # how often freed heap memory is given back to the system
_trimming: threading.Thread | None = None


def trim_freed_memory(every_s: float = TRIM_S) -> bool:
    """Give the heap's freed memory back to the system every ``every_s`` seconds (``give_back_freed_memory``, from a
    daemon thread; once per process).

    Blocks under the mmap threshold (a request's Python objects, its JSON pieces, a pickled batch) come from glibc's
    heap arenas, one per thread that allocates at once (up to 8 per core); freed, their pages stay resident, in as
    many arenas as threads ran, and each round of work leaves them more scattered: an app served identical rounds of
    100 maximum-size requests grew by 45, then 19 MB a round, though it kept nothing new. Handed back, resident memory
    stays where the cache and the sessions put it (``python -m bench --sections limits``, its ten-round row;
    model/serving/README.md). A trim takes well under a millisecond (0.2-0.3 ms measured after a round). Returns False
    where there is no glibc (nothing changes)."""
    global _trimming
    if not give_back_freed_memory():
        return False
    if _trimming is None or not _trimming.is_alive():

        def trimming() -> None:
            while True:
                time.sleep(every_s)
                give_back_freed_memory()

        _trimming = threading.Thread(target=trimming, name="malloc-trim", daemon=True)
        _trimming.start()
    return True


def give_back_freed_memory() -> bool:
    """Hand the pages of the heap's freed blocks back to the system now (glibc's ``malloc_trim(0)``, which also
    releases free pages inside each arena); False where there is no glibc."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def nbytes(value: Any) -> int:
    """The bytes a cached value holds that grow with its content (see the module docstring). Other objects
    count as ``sys.getsizeof`` (their attributes are not followed: they may hold the whole model)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (int, float, bool)) or value is None:
        return 0
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, (list, tuple)):
        return sum(nbytes(v) for v in value) + 8 * len(value)
    if isinstance(value, dict):
        return sum(nbytes(k) + nbytes(v) for k, v in value.items()) + 16 * len(value)
    size = getattr(value, "nbytes", None)  # a torch tensor (without importing torch here)
    return size if isinstance(size, int) else sys.getsizeof(value)


class ByteLRU:
    """A least-recently-used cache whose size is the sum of its values' ``size(value)`` in bytes."""

    def __init__(self, budget_bytes: int, size: Callable[[Any], int] = nbytes):
        if budget_bytes < 0:
            raise ValueError(f"the cache budget must be 0 or more bytes, got {budget_bytes}")
        self.budget, self._size = int(budget_bytes), size
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()  # oldest first
        self._pending: dict[Hashable, Future] = {}  # keys being computed right now
        self._lock = threading.Lock()
        self.nbytes = 0  # the sum of the sizes of the values held
        self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value for ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            if key not in self._entries:
                return default
            self._entries.move_to_end(key)
            return self._entries[key][0]

    def put(self, key: Hashable, value: Any) -> bool:
        """Keep ``value`` as the most recently used, evicting the least recently used until it fits.
        Returns False (and keeps nothing) for a value larger than the whole budget."""
        size = self._size(value)
        with self._lock:
            return self._put_locked(key, value, size)

    def _put_locked(self, key: Hashable, value: Any, size: int) -> bool:
        if key in self._entries:
            self.nbytes -= self._entries.pop(key)[1]
        if size > self.budget:
            return False
        while self._entries and self.nbytes + size > self.budget:
            _, (_, old) = self._entries.popitem(last=False)
            self.nbytes -= old
            self.evictions += 1
        self._entries[key] = (value, size)
        self.nbytes += size
        return True

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The cached value, or ``compute()``'s (then cached). Concurrent callers of a missing key wait for
        the first one's computation instead of repeating it; its exception reaches each of them."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.hits += 1
                return self._entries[key][0]
            waiting = self._pending.get(key)
            if waiting is None:
                self.misses += 1
                mine = self._pending[key] = Future()
            else:
                self.hits += 1
        if waiting is not None:
            return waiting.result()
        try:
            value = compute()
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            mine.set_exception(exc)
            raise
        size = self._size(value)
        with self._lock:
            self._put_locked(key, value, size)
            del self._pending[key]
        mine.set_result(value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0

    def stats(self) -> dict:
        with self._lock:
            return {"entries": len(self._entries), "bytes": self.nbytes, "budget_bytes": self.budget,
                    "hits": self.hits, "misses": self.misses, "evictions": self.evictions}
