"""Start the app in a subprocess and drive Debian's Chromium through Playwright (never `playwright install`)."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app(timeout: float = 120.0) -> Iterator[str]:
    """`python app.py` on a free loopback port; yields its URL, stops it afterwards (bench.common.app_process)."""
    from bench.common import app_process  # bench imports this module for the flags: import late

    with app_process(("app.py",), timeout=timeout) as app:
        yield app.url


def is_loopback(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in ("data", "blob", "about", "chrome", "chrome-extension"):
        return True
    return (parsed.hostname or "") in LOOPBACK
