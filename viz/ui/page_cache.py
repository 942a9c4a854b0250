"""The page (``GET /``) rendered once and kept: ``PageCache``, used by ``viz.ui.guards.RouteGuard``.

Gradio 6.31.0 renders the page anew for every visitor: a deep copy of the whole app's config (every component and
event of eight tabs), the root URL written into it, and a 640 KB HTML template — ~20–40 ms of the server's one
interpreter a page load, while a lecture hall of a hundred students opens the same link within seconds. And it
sends those 640 KB uncompressed (its Brotli middleware compresses only paths with a file extension). Here the page
is rendered by Gradio once per way of asking for it and kept, with its Brotli form (~10 × smaller) for browsers that
take it.

What the rendered page depends on, and so the key: the path, the query's ``page`` (a multipage app's page), the
request's scheme, Host, ``root_path``, and the headers Gradio reads to find the app's public URL
(``X-Forwarded-Host``, ``X-Forwarded-Proto``, ``X-Gradio-Server``). A request with a ``deep_link`` (a state
Gradio restores per link) is not kept. The app's config does not change while it runs (nothing here re-renders
Blocks), so a kept page never goes stale. At most ``MAX_PAGES`` are kept (a visitor who varies its Host header only
replaces kept pages: each miss costs what every page load cost before).
"""

from __future__ import annotations

from collections import OrderedDict
from urllib.parse import parse_qsl

import anyio
import brotli

MAX_PAGES = 8
_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-gradio-server")


async def whole_answer(app, scope, receive) -> tuple[dict | None, bytes]:
    """``app``'s answer to the request, held whole: (its ``http.response.start`` message or None, its body)."""
    start, chunks = None, []

    async def caught(message):
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, caught)
    return start, b"".join(chunks)


class PageCache:
    """Kept answers of ``GET /``: per key, (headers, body, its Brotli form)."""

    def __init__(self, limit: int = MAX_PAGES):
        self.limit, self.kept = limit, OrderedDict()

    @staticmethod
    def key(scope) -> tuple | None:
        """What the page depends on (the module docstring), or None for a request whose page is not kept."""
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if query.get("deep_link"):
            return None
        headers = {k.lower(): v for k, v in scope.get("headers", []) if k.lower() in _HEADERS}
        return (scope.get("path"), query.get("page", ""), scope.get("scheme"), scope.get("root_path", ""),
                *(headers.get(h) for h in _HEADERS))

    async def answer(self, scope, receive, send, render) -> None:
        """Answer ``GET /`` from the kept page, or through ``render(scope, receive, send)`` (Gradio's page, its head
        script added) and keep a complete, uncompressed HTML answer."""
        key = self.key(scope)
        if key is None:
            return await render(scope, receive, send)
        if key not in self.kept:
            start, body = await whole_answer(render, scope, receive)
            if start is None:
                return None
            headers = {k.lower(): v for k, v in start.get("headers", [])}
            if (start["status"] != 200 or b"content-encoding" in headers
                    or not headers.get(b"content-type", b"").startswith(b"text/html")):
                await send(start)  # (not kept: sent as it came)
                return await send({"type": "http.response.body", "body": body})
            packed = await anyio.to_thread.run_sync(lambda: brotli.compress(body, quality=9))
            self.keep(key, start["headers"], body, packed)
        headers, body, packed = self.kept[key]
        self.kept.move_to_end(key)
        accept = dict((k.lower(), v) for k, v in scope.get("headers", [])).get(b"accept-encoding", b"")
        plain = [(k, v) for k, v in headers if k.lower() not in (b"content-length", b"content-encoding", b"vary")]
        if b"br" in accept:
            body, plain = packed, [*plain, (b"content-encoding", b"br")]
        plain += [(b"vary", b"Accept-Encoding"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": plain})
        return await send({"type": "http.response.body", "body": body})

    def keep(self, key: tuple, headers: list, body: bytes, packed: bytes) -> None:
        self.kept[key] = (headers, body, packed)
        while len(self.kept) > self.limit:
            self.kept.popitem(last=False)
