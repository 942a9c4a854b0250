"""The last few answers of a view, for the next request that asks for the very same one.

A lecture hall opens one stop's link at once: a hundred pages ask the server for the same view of the same sentence
within seconds, and each drew its figures again (the whole-matrix view of Inside a head: ~40 ms of the server's
interpreter a page, a quarter of its time while a hall of 100 loaded stop 3; ``python -m bench.hall``). A ``ViewMemo``
keeps a view's last ``size`` answers by the sentence's run (the cached ``AttentionResult`` object, held weakly: an
answer is never given for another run that happens to reuse its id) and the view's other choices. Views are pure
functions of those, and their answers are only read afterwards (``viz.ui.wiring`` turns them into Gradio values
anew for each request), so one answer serves every request that asks for it. Bounded by count: a view's answer is
its figures' JSON, well under a megabyte; the answers of a run that has left the cache go at the next new one.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class ViewMemo:
    """``memo(result, key, draw)``: ``draw()``'s answer, the one kept for (``result``, ``key``) if there is one."""

    def __init__(self, size: int = 8):
        self.size = size
        self._answers: OrderedDict[tuple, tuple[weakref.ref, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def __call__(self, result: object, key: Hashable, draw: Callable[[], Any]) -> Any:
        slot = (id(result), key)
        with self._lock:
            kept = self._answers.get(slot)
            if kept is not None and kept[0]() is result:
                self._answers.move_to_end(slot)
                self.hits += 1
                return kept[1]
        answer = draw()  # (outside the lock: two first requests may both draw; the answers are equal)
        with self._lock:
            for gone in [s for s, (ref, _) in self._answers.items() if ref() is None]:
                del self._answers[gone]  # its run left the cache: its answer goes too
            self._answers[slot] = (weakref.ref(result), answer)
            self._answers.move_to_end(slot)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
        return answer

    def __len__(self) -> int:
        return len(self._answers)
