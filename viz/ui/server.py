"""The web server's own limits: what a connection or a request may take before the app sees it (``limited_server``;
the design note: model/serving/README.md). Gradio 6.31.0 starts uvicorn in ``gradio.http_server.start_server``
through the module-level name ``gradio.http_server.Server`` with a fixed ``uvicorn.Config`` (``launch`` passes none
of uvicorn's limits on); ``LimitedServer`` sets them on that config before uvicorn loads it.

- **Request bodies**: at most ``MAX_BODY_BYTES``; a larger one is answered 413 with a message before it is read (by
  its Content-Length, or as soon as a chunked body passes the bound), and the connection closes.
- **Headers**: at most ``MAX_HEADER_BYTES`` (h11's bound on a request not yet complete: 400 beyond it), complete within
  ``HEADER_TIMEOUT_S`` of the connection or of the request's first byte; a request still incomplete then is closed
  (``GuardedH11``: uvicorn itself keeps a half-open request, and its file descriptor, for good).
- **Request bodies, slowly sent**: a body must be complete within ``BODY_TIMEOUT_S`` of its headers, and arrive at
  ``MIN_BODY_RATE`` bytes a second at least (counted over each ``BODY_WINDOW_S``); one slower is answered 408 and
  its connection closed (uvicorn itself waits for a body for good: 2,070 bodies sent a byte every 5 s held every
  connection the server allows).
- **Connections**: at most ``MAX_CONNECTIONS`` at once (the process's file limit is raised to its hard limit, and the
  bound stays under it) and ``PER_PEER`` from one address that is not a trusted proxy; one beyond them gets a 503
  with a message and is closed at once, before it can hold a file descriptor. uvicorn's own ``limit_concurrency``
  answers only once a request's headers are in: a half-open request would still hold its connection. At the bound,
  a new connection first takes the place of one that waits for its client to send a request or the rest of one
  (``GuardedH11.waiting_since``): of the address with the most of those, the one that has waited longest
  (``_make_room``). Connections that send nothing never keep a visitor out while their deadlines run (2,100 slow
  bodies from 9 addresses kept a new visitor out 20 times in 22). An idle kept-alive connection closes after
  ``KEEP_ALIVE_S`` (uvicorn's default).
- **Behind a proxy**: uvicorn takes the visitor's address from X-Forwarded-For when the connection comes from a
  trusted proxy (``FORWARDED_ALLOW_IPS``; uvicorn's default: loopback). On a Hugging Face Space, where the proxies
  have private addresses, those are trusted unless FORWARDED_ALLOW_IPS says otherwise (``SPACE_PROXIES``).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter

import gradio.http_server as http_server
import h11
from uvicorn.middleware.proxy_headers import _TrustedHosts
from uvicorn.protocols.http.h11_impl import H11Protocol

from viz.ui.logs import log_line

MAX_BODY_BYTES = 1024 * 1024  # the largest request the page sends (a 2,000-character sentence twice) is ~25 KB
MAX_HEADER_BYTES = 16 * 1024  # h11's default, kept: a browser's headers are ~1-2 KB
HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0  # a whole body (at most MAX_BODY_BYTES): a phone on a slow link sends the page's ~25 KB in ~1 s
MIN_BODY_RATE = 1024  # bytes a second, at least, counted over each BODY_WINDOW_S
BODY_WINDOW_S = 5.0
STALLED_S = 0.0  # a connection that has waited this long for its client may give its place to a new one
KEEP_ALIVE_S = 5
MAX_CONNECTIONS = 2048  # and never more than the file limit allows (``connection_bound``)
PER_PEER = 1024  # a lecture hall behind one NAT: a page holds ~3 (its heartbeat, its answers' stream, a request)
SPACE_PROXIES = "127.0.0.1,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"


_files_left: int | None = None  # connections the process's file limit allows (``raise_file_limit``)


def raise_file_limit() -> int:
    """Raise the process's soft limit on open files to its hard limit; the connections it then allows, leaving 256
    descriptors for the app's own files."""
    global _files_left
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))
        _files_left = max(16, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 256)
    except (ImportError, OSError, ValueError):
        _files_left = MAX_CONNECTIONS
    return _files_left


def connection_bound() -> int:
    """``MAX_CONNECTIONS``, or fewer where the process may open fewer files."""
    return min(MAX_CONNECTIONS, raise_file_limit() if _files_left is None else _files_left)


def _plain(status: int, reason: str, text: str, retry_s: int | None = None) -> bytes:
    """A whole HTTP/1.1 response that closes the connection: ``text`` as its body."""
    body = text.encode("utf-8")
    head = [f"HTTP/1.1 {status} {reason}", "Content-Type: text/plain; charset=utf-8", f"Content-Length: {len(body)}",
            "Connection: close", *([f"Retry-After: {retry_s}"] if retry_s else [])]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with the connection bounds and the header and body deadlines of the module
    docstring."""

    _timer = None  # the header deadline
    _body_timer = None  # the next check of a body on its way
    _peer = None
    waiting_since: float | None = None  # time.monotonic() since it waits for its client; None while the app answers

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        peers = _peers(self.server_state)
        bound = connection_bound()
        self._peer = self.client[0] if self.client else ""
        peers[self._peer] += 1
        self.waiting_since = time.monotonic()
        if len(self.connections) > bound and not self._make_room():
            kind, why = "all", f"{len(self.connections) - 1} connections are open (at most {bound})"
        elif peers[self._peer] > PER_PEER and self._peer not in _trusted(self.config):
            kind, why = "peer", f"{peers[self._peer] - 1} connections are open from your address (at most {PER_PEER})"
        else:
            self._timer = self.loop.call_later(HEADER_TIMEOUT_S, self._header_timeout)
            return
        log_line(("connections", kind), f"refused a connection from {self._peer or '?'}: {why}")
        transport.write(_plain(503, "Service Unavailable", f"The server is busy: {why}. Try again in a few seconds.",
                               retry_s=5))
        transport.close()

    def data_received(self, data: bytes) -> None:
        if self._timer is None and self.conn.their_state is h11.IDLE:  # the first bytes of the next request
            self._timer = self.loop.call_later(HEADER_TIMEOUT_S, self._header_timeout)
        sending_body = self.conn.their_state is h11.SEND_BODY
        super().data_received(data)
        if self._timer is not None and self.conn.their_state is not h11.IDLE:  # its headers are in
            self._timer.cancel()
            self._timer = None
        if self.conn.their_state is h11.SEND_BODY:  # a body on its way: counted, checked each BODY_WINDOW_S
            if self._body_timer is None:
                self._body_started, self._body_bytes, self._window_bytes = time.monotonic(), 0, 0
                self._body_timer = self.loop.call_later(BODY_WINDOW_S, self._body_check)
            elif sending_body:
                self._body_bytes += len(data)
                self._window_bytes += len(data)
        else:
            self._end_body_checks()
            if self.conn.their_state is h11.DONE:
                self.waiting_since = None  # the request is in: the app answers it

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.waiting_since = time.monotonic()  # (kept alive) it waits for the next request

    def connection_lost(self, exc) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._end_body_checks()
        if self._peer is not None:
            peers = _peers(self.server_state)
            peers[self._peer] -= 1
            if peers[self._peer] <= 0:
                del peers[self._peer]
            self._peer = None
        super().connection_lost(exc)

    def _header_timeout(self) -> None:
        self._timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log_line(("header timeout",), f"closed a connection from {self._peer or '?'}: no complete request "
                     f"within {HEADER_TIMEOUT_S:.0f} s")
            self.transport.close()

    def _end_body_checks(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_check(self) -> None:
        """Each ``BODY_WINDOW_S`` while a body is on its way: drop it if it is late or too slow."""
        self._body_timer = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        took = time.monotonic() - self._body_started
        if took > BODY_TIMEOUT_S:
            why = f"the body was not complete within {BODY_TIMEOUT_S:.0f} s"
        elif self._window_bytes < MIN_BODY_RATE * BODY_WINDOW_S:
            why = (f"the body came at {self._window_bytes / BODY_WINDOW_S:,.0f} bytes a second (at least "
                   f"{MIN_BODY_RATE:,} are needed)")
        else:
            self._window_bytes = 0
            self._body_timer = self.loop.call_later(BODY_WINDOW_S, self._body_check)
            return
        log_line(("body timeout",), f"closed a connection from {self._peer or '?'}: {why}")
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_plain(408, "Request Timeout", f"Request timeout: {why}."))
        self.transport.close()

    def _make_room(self) -> bool:
        """At the connection bound: close a connection that waits for its client (``STALLED_S`` at least), if there
        is one, to make room for this one: of the address with the most such connections, the one that has waited
        longest. A new visitor's connection is taken before it can send a byte; the one that makes room is, under a
        flood, the flood's."""
        now = time.monotonic()
        waiting = [c for c in self.connections if c is not self and isinstance(c, GuardedH11)
                   and c.waiting_since is not None and now - c.waiting_since >= STALLED_S
                   and not c.transport.is_closing()]
        if not waiting:
            return False
        per_peer = Counter(c._peer for c in waiting)
        oldest = min(waiting, key=lambda c: (-per_peer[c._peer], c.waiting_since))
        log_line(("connections", "room"), f"closed a connection from {oldest._peer or '?'} that had sent no "
                 f"complete request for {now - oldest.waiting_since:.1f} s, to make room for a new one")
        if oldest.cycle is None or not oldest.cycle.response_started:
            oldest.transport.write(_plain(503, "Service Unavailable", "The server is busy and this connection sent "
                                          "no complete request: it was closed to make room for another.", retry_s=5))
        oldest.transport.close()
        self.connections.discard(oldest)  # (uvicorn removes it again once it is lost)
        return True


def _peers(state) -> Counter:
    """Open connections per address, kept on uvicorn's server state."""
    if not hasattr(state, "peers"):
        state.peers = Counter()
    return state.peers


def _trusted(config) -> _TrustedHosts:
    """The config's trusted proxies (FORWARDED_ALLOW_IPS), parsed once."""
    if not hasattr(config, "trusted_proxies"):
        config.trusted_proxies = _TrustedHosts(config.forwarded_allow_ips)
    return config.trusted_proxies


class BodyLimit:
    """ASGI middleware: a request body over ``MAX_BODY_BYTES`` gets a 413 before the app reads any of it."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])  # h11 has checked them: one Content-Length at most, a number
        length = headers.get(b"content-length")
        if length is not None:
            if int(length) > MAX_BODY_BYTES:
                return await self._too_large(scope, send, int(length))
            return await self.app(scope, receive, send)
        if b"chunked" not in headers.get(b"transfer-encoding", b"").lower():
            return await self.app(scope, receive, send)
        body, more = bytearray(), True  # a chunked body: read up to the bound, then handed on whole
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client left
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_BODY_BYTES:
                return await self._too_large(scope, send, None)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        return await self.app(scope, replay, send)

    @staticmethod
    async def _too_large(scope, send, length: int | None) -> None:
        size = f"{length:,} bytes" if length is not None else f"over {MAX_BODY_BYTES:,} bytes"
        client = scope.get("client") or ("?",)
        path = scope.get("path", "")[:80]
        log_line(("body", path[:40]), f"refused a body of {size} to {path} from {client[0]}")
        text = json.dumps({"detail": f"The request body is {size}: this app takes at most {MAX_BODY_BYTES:,} bytes "
                                     "(a request that fills every box is ~25 KB)."}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(text)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": text})


class LimitedServer(http_server.Server):
    """Gradio's uvicorn server with the limits of the module docstring set on its config."""

    def __init__(self, config, *args, **kwargs):
        super().__init__(config, *args, **kwargs)
        config.app = BodyLimit(config.app)
        config.http = GuardedH11
        config.timeout_keep_alive = KEEP_ALIVE_S
        config.h11_max_incomplete_event_size = MAX_HEADER_BYTES
        if os.environ.get("SPACE_ID") and "FORWARDED_ALLOW_IPS" not in os.environ:
            config.forwarded_allow_ips = SPACE_PROXIES


def limited_server() -> None:
    """Servers Gradio starts from now on are ``LimitedServer``s (for the process), and the process may open as many
    files as its hard limit allows."""
    raise_file_limit()
    http_server.Server = LimitedServer
