"""The browser tests' app and Chromium: bench's launcher and flags (tests depend on bench, never the reverse)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from bench.common import ROOT, app_process, is_loopback

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "ROOT", "is_loopback", "running_app"]


@contextlib.contextmanager
def running_app(timeout: float = 120.0) -> Iterator[str]:
    """`python app.py` on a free loopback port, as served (its batches in its model process, whatever conftest
    set for the tests' own process); yields its URL, stops it afterwards."""
    with app_process(("app.py",), timeout=timeout, env={"ATTN_BATCH_PROCESS": "1"}) as app:
        yield app.url
