"""The routes Gradio 6.31.0 answers badly, answered first: ``RouteGuard``, an ASGI middleware the app is served with
(``app.launch``: ``guarded``).

- ``POST /gradio_api/call/v2/<name>`` (parameters by name): Gradio answers an unknown endpoint, an unknown or missing
  parameter with 500 "Internal Server Error" (and a traceback in the log). Here: 404 for an endpoint the app does not
  have, 422 for a body that is not an object of its parameters; each says what to send.
- ``POST /gradio_api/upload``: the app takes no files, and Gradio's limit (``max_file_size=0``) refuses every file but
  an empty one. Here every upload is refused alike: 413, and nothing is written.
- ``GET /gradio_api/file=<an export>`` of an export that has since been removed (``viz.views.exports``): Gradio
  answers 403 for any path that does not exist; an export's link answers 404 "export again", as its docstring says.
  Only a path inside the app's export folders gets this answer (no other path is told apart from a forbidden one).
- ``GET /`` (the page): Gradio's loading screen leaves a frame loop running for as long as the page is open (60
  frames a second on an idle page). The page gets ``assets/web/frames.js`` as the first script of its ``<head>``,
  before Gradio's own, which calms that loop (the file says how).
- ``GET /assets/<file>`` (Gradio's page scripts and styles, ~5 MB, their names hashed: never changed while the app
  runs): Gradio compresses each with Brotli for every visitor that loads the page (~190 ms of the server's time a
  page load). Here each is compressed once and kept (``CompressedAssets``: at most ``ASSET_CACHE_BYTES``), and
  answered from there; a request that asks for part of a file, or whether it changed, goes on to Gradio.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from urllib.parse import unquote

import anyio
import brotli
from starlette.middleware import Middleware

from viz.views.exports import FOLDER_PREFIX
from viz.views.page import WEB

API = "/gradio_api"
NO_UPLOADS = "This app takes no files: every upload is refused (empty ones too)."
EXPORT_GONE = "This export has been removed (the app keeps the newest ones, for an hour): export again."
ASSET_CACHE_BYTES = 32 << 20  # Gradio 6.31.0's page assets compress to ~1.5 MB
HEAD_SCRIPT = b"<script>" + (WEB / "frames.js").read_bytes().strip() + b"</script>"


def guarded(blocks) -> dict:
    """``demo.launch``'s ``app_kwargs`` with ``RouteGuard`` for ``blocks`` (the app)."""
    return {"middleware": [Middleware(RouteGuard, blocks=blocks)]}


class RouteGuard:
    """Pure ASGI: answers the requests above itself, passes every other request on untouched."""

    def __init__(self, app, blocks):
        self.app, self.blocks = app, blocks
        self.assets = CompressedAssets(app)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = _route_path(scope), scope["method"]
        if method == "POST" and path.rstrip("/") == f"{API}/upload":
            return await _answer(send, 413, NO_UPLOADS)
        if method == "POST" and path.startswith(f"{API}/call/v2/"):
            body = await _read(receive)
            refused = self.v2_problem(path[len(f"{API}/call/v2/"):].strip("/"), body)
            if refused:
                return await _answer(send, *refused)
            return await self.app(scope, _replay(body, receive), send)
        if method in ("GET", "HEAD") and path.startswith(f"{API}/file=") and self.gone(path[len(f"{API}/file="):]):
            return await _answer(send, 404, EXPORT_GONE)
        if method == "GET" and path in ("", "/"):
            return await self.app(scope, receive, _with_head_script(send))
        if method == "GET" and path.startswith("/assets/") and CompressedAssets.takes(scope):
            return await self.assets.answer(scope, receive, send, path)
        return await self.app(scope, receive, send)

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

    def gone(self, requested: str) -> bool:
        """Whether ``requested`` (a file route's path) is an export of this app that is no longer there."""
        cache = Path(self.blocks.GRADIO_CACHE).resolve()
        try:
            path = Path(unquote(requested)).resolve()
            inside = path.relative_to(cache).parts
        except (ValueError, OSError, RuntimeError):
            return False
        return bool(inside) and inside[0].startswith(FOLDER_PREFIX) and ".." not in inside and not path.exists()


def _route_path(scope) -> str:
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


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
            start, chunks = None, []

            async def caught(message):
                nonlocal start
                if message["type"] == "http.response.start":
                    start = message
                elif message["type"] == "http.response.body":
                    chunks.append(message.get("body", b""))

            await self.app(scope, receive, caught)
            headers = {key.lower(): value for key, value in (start or {}).get("headers", [])}
            kind = headers.get(b"content-type", b"").split(b";")[0].strip()
            if start is None or start["status"] != 200 or kind not in self.TYPES or b"content-encoding" in headers:
                if start is not None:  # (an answer not to keep, as it came)
                    await send(start)
                    await send({"type": "http.response.body", "body": b"".join(chunks)})
                return None
            body = await anyio.to_thread.run_sync(lambda: brotli.compress(b"".join(chunks), quality=4))
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


async def _answer(send, status: int, message: str) -> None:
    """A JSON answer {"detail": message}, as FastAPI answers an HTTPException."""
    body = json.dumps({"detail": message}, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})

