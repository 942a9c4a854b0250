"""A stream learns that its client left from one watching task, not a cancelled wait per message
(viz.ui.patches.watched_disconnects)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from starlette.requests import Request

from viz.ui.patches import watched_disconnects


def _run(scenario):
    """``asyncio.run(scenario())`` in a thread of its own (Playwright's loop may run in this one)."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, scenario()).result()


def _request(method: str, messages: asyncio.Queue) -> Request:
    return Request({"type": "http", "method": method, "path": "/", "headers": [], "query_string": b""}, messages.get)


def test_a_get_learns_its_client_left_and_waits_for_nothing_until_then():
    watched_disconnects()
    watched_disconnects()  # twice: once patched

    async def scenario() -> list:
        messages: asyncio.Queue = asyncio.Queue()
        request = _request("GET", messages)
        seen = [await asyncio.wait_for(request.is_disconnected(), 1) for _ in range(3)]  # no message: no wait
        await messages.put({"type": "http.disconnect"})
        for _ in range(3):
            await asyncio.sleep(0)
        seen.append(await request.is_disconnected())
        return [*seen, messages.qsize()]

    assert _run(scenario) == [False, False, False, True, 0]


def test_a_request_with_a_body_asks_as_starlette_does():
    watched_disconnects()

    async def scenario() -> tuple:
        messages: asyncio.Queue = asyncio.Queue()
        request = _request("POST", messages)
        first = await request.is_disconnected()  # nothing has come: Starlette's cancelled wait says no
        await messages.put({"type": "http.disconnect"})
        return first, await request.is_disconnected(), getattr(request, "_attn_watch", None)

    assert _run(scenario) == (False, True, None)
