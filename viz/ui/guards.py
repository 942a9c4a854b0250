"""The routes Gradio 6.31.0 answers badly, answered first: ``RouteGuard``, an ASGI middleware the app is served with
(``app.launch``: ``guarded``).

- ``POST /gradio_api/call/v2/<name>`` (parameters by name): Gradio answers an unknown endpoint, an unknown or missing
  parameter with 500 "Internal Server Error" (and a traceback in the log). Here: 404 for an endpoint the app does not
  have, 422 for a body that is not an object of its parameters; each says what to send.
- ``POST /gradio_api/upload``: the app takes no files, and Gradio's limit (``max_file_size=0``) refuses every file but
  an empty one. Here every upload is refused alike: 413, and nothing is written.
- Every way into an event, an answer, a session's stream, a heartbeat and a file (``viz.ui.callers``): a name the app
  does not have is a 4xx with a message; a file route serves only the app's exports (an export since removed: 404
  "export again"). A direct run (``/gradio_api/run/<name>``) that the caller got wrong (a bad value: a message) is a
  422, not Gradio's 500; only a fault of the server stays a 500.
- ``GET /`` (the page): Gradio's loading screen leaves a frame loop running for as long as the page is open (60
  frames a second on an idle page). The page gets ``assets/web/frames.js`` as the first script of its ``<head>``,
  before Gradio's own, which calms that loop (the file says how).
- ``GET /`` again: rendered once per way of asking and kept, Brotli-compressed for browsers that take it
  (``viz.ui.page_cache``: Gradio renders the 640 KB page anew for every visitor, and sends it uncompressed).
- ``GET /assets/<file>`` (Gradio's page scripts and styles, ~5 MB, their names hashed: never changed while the app
  runs): Gradio compresses each with Brotli for every visitor that loads the page (~190 ms of the server's time a
  page load). Here each is compressed once and kept (``CompressedAssets``: at most ``ASSET_CACHE_BYTES``), and
  answered from there; a request that asks for part of a file, or whether it changed, goes on to Gradio.
- ``GET /assets/Blocks-<hash>.js`` (Gradio's event dispatcher): served patched (``viz.ui.frontend``: a status
  message writes back only the loading statuses it changes).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from urllib.parse import parse_qsl

import anyio
import brotli
from fastapi.exceptions import RequestValidationError
from starlette.middleware import Middleware

from viz.ui import frontend
from viz.ui.callers import Callers, validation_error
from viz.ui.page_cache import PageCache, whole_answer
from viz.ui.patches import FAULT
from viz.views.page import WEB

API = "/gradio_api"
NO_UPLOADS = "This app takes no files: every upload is refused (empty ones too)."
ASSET_CACHE_BYTES = 32 << 20  # Gradio 6.31.0's page assets compress to ~1.5 MB
HEAD_SCRIPT = b"<script>" + (WEB / "frames.js").read_bytes().strip() + b"</script>"


def guarded(blocks) -> dict:
    """``demo.launch``'s ``app_kwargs`` with ``RouteGuard`` for ``blocks`` (the app)."""
    return {"middleware": [Middleware(RouteGuard, blocks=blocks)],
            "exception_handlers": {RequestValidationError: validation_error}}


class RouteGuard:
    """Pure ASGI: answers the requests above itself, passes every other request on untouched."""

    def __init__(self, app, blocks):
        self.app, self.blocks = app, blocks
        self.assets = CompressedAssets(app)
        self.pages = PageCache()
        self.callers = Callers(blocks)
        self.script = frontend.patched_script()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = _route_path(scope), scope["method"]
        if method == "POST" and path.startswith(f"{API}/"):
            return await self.post(path[len(API) + 1:].rstrip("/"), scope, receive, send)
        if method in ("GET", "HEAD") and path.startswith((f"{API}/file=", f"{API}/file/")):
            refused = self.callers.file_problem(path[len(f"{API}/file="):])
            return await (_answer(send, *refused) if refused else self.app(scope, receive, send))
        if method == "GET" and path.startswith(f"{API}/"):
            return await self.get(path[len(API) + 1:].rstrip("/"), scope, receive, send)
        if method == "GET" and path in ("", "/"):
            return await self.pages.answer(scope, receive, send,
                                           lambda s, r, answer: self.app(s, r, _with_head_script(answer)))
        if method in ("GET", "HEAD") and self.script and path == self.script[0]:
            return await frontend.answer(scope, send, self.script)
        if method == "GET" and path.startswith("/assets/") and CompressedAssets.takes(scope):
            return await self.assets.answer(scope, receive, send, path)
        return await self.app(scope, receive, send)

    async def post(self, route: str, scope, receive, send):
        """POST /gradio_api/<route>: uploads refused; calls, joins and runs checked first."""
        if route == "upload":
            return await _answer(send, 413, NO_UPLOADS)
        kind, _, name = route.partition("/")
        if kind == "call" and not name.startswith("v2/") and "/" not in name:
            refused = self.callers.call_problem(name)
            return await (_answer(send, *refused) if refused else self.app(scope, receive, send))
        if route not in ("queue/join",) and kind not in ("run", "api") and not route.startswith("call/v2/"):
            return await self.app(scope, receive, send)
        body = await _read(receive)
        if route == "queue/join":
            refused = self.callers.join_problem(body)
        elif kind in ("run", "api"):
            refused = self.callers.run_problem(name, body)
            send = _caller_errors_as_422(send)
        else:
            refused = self.v2_problem(route[len("call/v2/"):].strip("/"), body)
        if refused:
            return await _answer(send, *refused)
        return await self.app(scope, _replay(body, receive), send)

    async def get(self, route: str, scope, receive, send):
        """GET /gradio_api/<route>: an answer, a session's stream or a heartbeat the app knows nothing of."""
        parts = route.split("/")
        refused = None
        if parts[0] == "call" and len(parts) in (3, 4) and (len(parts) == 3 or parts[1] == "v2"):
            refused = self.callers.answer_problem(parts[-1])
        elif route == "queue/data":
            refused = self.callers.stream_problem(_query(scope).get("session_hash"))
        elif parts[0] == "heartbeat" and len(parts) == 2:
            return await self.callers.heartbeat(self.app, scope, receive, send, parts[1])
        return await (_answer(send, *refused) if refused else self.app(scope, receive, send))

    def v2_problem(self, name: str, body: bytes) -> tuple[int, str] | None:
        """(status, message) for a v2 call Gradio cannot take, or None."""
        endpoints = self.blocks.get_api_info()["named_endpoints"]
        if f"/{name}" not in endpoints:
            names = ", ".join(sorted(endpoints))
            return 404, f"There is no endpoint /{name[:40]}: the app's endpoints are {names}."
        params = endpoints[f"/{name}"]["parameters"]
        names = [p["parameter_name"] for p in params]
        required = [p["parameter_name"] for p in params if not p.get("parameter_has_default")]
        wanted = (f"/{name} takes a JSON object of its parameters by name: "
                  f"{', '.join(names) if names else 'none'}" + (f" ({', '.join(required)} required)" if required
                                                                  else ""))
        try:
            values = json.loads(body or b"{}")
        except (ValueError, RecursionError):
            return 422, f"{wanted}; the body is not JSON."
        if not isinstance(values, dict):
            return 422, f"{wanted}; got {_kind(values)}."
        unknown = [key for key in values if key not in names and key != "oauth_token"]
        if unknown:
            return 422, f"{wanted}; it has no parameter {', '.join(_quoted(key) for key in unknown[:5])}."
        missing = [key for key in required if key not in values]
        if missing:
            return 422, f"{wanted}; missing: {', '.join(missing)}."
        return None


def _route_path(scope) -> str:
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


def _query(scope) -> dict[str, str]:
    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))


def _kind(value) -> str:
    return {list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(type(value), "a number")


def _quoted(key: str) -> str:
    text = json.dumps(key, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


async def _read(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


class CompressedAssets:
    """Gradio's page assets as Brotli compresses them, each compressed once (in a worker thread) and kept, newest
    used last, within ``limit`` bytes; only complete answers (200) of a compressible type are kept."""

    TYPES = (b"text/javascript", b"application/javascript", b"text/css")

    def __init__(self, app, limit: int = ASSET_CACHE_BYTES):
        self.app, self.limit, self.kept, self.size = app, limit, OrderedDict(), 0

    @staticmethod
    def takes(scope) -> bool:
        """A browser's plain request for a whole file that takes Brotli."""
        headers = {key.lower(): value for key, value in scope.get("headers", [])}
        return (b"br" in headers.get(b"accept-encoding", b"") and b"range" not in headers
                and b"if-none-match" not in headers and b"if-modified-since" not in headers)

    async def answer(self, scope, receive, send, path: str) -> None:
        if path not in self.kept:
            start, whole = await whole_answer(self.app, scope, receive)
            headers = {key.lower(): value for key, value in (start or {}).get("headers", [])}
            kind = headers.get(b"content-type", b"").split(b";")[0].strip()
            if start is None or start["status"] != 200 or kind not in self.TYPES or b"content-encoding" in headers:
                if start is not None:  # (an answer not to keep, as it came)
                    await send(start)
                    await send({"type": "http.response.body", "body": whole})
                return None
            body = await anyio.to_thread.run_sync(lambda: brotli.compress(whole, quality=4))
            kept = [(k, v) for k, v in start["headers"] if k.lower() not in (b"content-length", b"vary")]
            kept += [(b"content-encoding", b"br"), (b"vary", b"Accept-Encoding"),
                     (b"content-length", str(len(body)).encode())]
            self.keep(path, kept, body)
            if path not in self.kept:  # (larger than the limit)
                await send({"type": "http.response.start", "status": 200, "headers": kept})
                return await send({"type": "http.response.body", "body": body})
        headers, body = self.kept[path]
        self.kept.move_to_end(path)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        return await send({"type": "http.response.body", "body": body})

    def keep(self, path: str, headers: list, body: bytes) -> None:
        if len(body) > self.limit or path in self.kept:
            return
        self.kept[path] = (headers, body)
        self.size += len(body)
        while self.size > self.limit:
            _, (_, old) = self.kept.popitem(last=False)
            self.size -= len(old)


def _with_head_script(send):
    """``send`` for the page: an HTML answer (not compressed) gets ``HEAD_SCRIPT`` right after its ``<head>``, its
    length told anew; any other answer goes out as it comes."""
    start, chunks = None, []

    async def sending(message):
        nonlocal start
        if message["type"] == "http.response.start":
            headers = {key.lower(): value for key, value in message.get("headers", [])}
            if headers.get(b"content-type", b"").startswith(b"text/html") and b"content-encoding" not in headers:
                start = message
                return None
            return await send(message)
        if message["type"] != "http.response.body" or start is None:
            return await send(message)
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return None
        body = b"".join(chunks).replace(b"<head>", b"<head>" + HEAD_SCRIPT, 1)
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        return await send({"type": "http.response.body", "body": body})

    return sending


def _replay(body: bytes, receive):
    """``receive`` for the app behind: the body read here, then the client's own messages (its disconnect)."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _caller_errors_as_422(send):
    """``send`` for a direct run: Gradio 6.31.0 answers every error of one with 500; one whose message is not the
    server's fault (``patches.FAULT``: a bad value, answered with its message) goes out as 422."""
    held = None

    async def sending(message):
        nonlocal held
        if message["type"] == "http.response.start" and message["status"] == 500:
            held = message
            return None
        if held is not None and message["type"] == "http.response.body":
            try:
                error = json.loads(message.get("body", b"")).get("error")
            except (ValueError, AttributeError):
                error = None
            status = 422 if isinstance(error, str) and error != FAULT else 500
            await send({**held, "status": status})
            held = None
        return await send(message)

    return sending


async def _answer(send, status: int, message: str) -> None:
    """A JSON answer {"detail": message}, as FastAPI answers an HTTPException."""
    body = json.dumps({"detail": message}, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})

