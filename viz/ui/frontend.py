"""Gradio 6.31.0's page script, served with one fix: a status message refreshes only the loading statuses it changes.

Gradio's page keeps a loading status for every component that has ever been an input or a progress target of an
event (``loading_stati.current``), and on every status message of any event (queued, started, finished: three or
four a click) it writes *each one* back into its component (``update_loading_stati_state``), changed or not. Each
write searches the whole component tree for the component and reads its props back (a deep copy), then hands the
component a new object, which redraws its status tracker. On this page (~345 components) that was ~45 % of the
page's time in a lecture's light move (a DevTools CPU profile: ~200 ms of ~540, in ``structuredClone`` under
``update_state``), and the same in every click. Here the page script's ``update_loading_stati_state`` skips a
status equal to the last one it wrote for that component; any other write of a component's state (an input's
validation, a progress target cleared, a value) forgets what was written, so the next status is written again.

``patched_script()`` is the file with ``update_loading_stati_state`` replaced (its text checked to occur exactly
once) and every other write of a component's state routed through ``__written``, a method added beside it (any other
Gradio: the file as it comes, and a log line); ``viz.ui.guards.RouteGuard`` serves it under the file's own name.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import brotli
from gradio.routes import BUILD_PATH_LIB

from viz.ui.logs import log_line

ASSETS = Path(BUILD_PATH_LIB)  # (Gradio's /assets/ folder)
_REFRESH = ("async update_loading_stati_state(){await Promise.all(Object.entries(this.loading_stati.current)"
            ".map(([e,t])=>this.update_state_cb(Number(e),{loading_status:t},!1)))}")
_WRITE = ("__written(e,t,n){this.__statuses?.delete(String(e));return this.update_state_cb(e,t,n)}"
          "async update_loading_stati_state(){const s=this.__statuses||(this.__statuses=new Map);"
          "await Promise.all(Object.entries(this.loading_stati.current).filter(([e,t])=>{const k=JSON.stringify(t);"
          "return s.get(e)===k?!1:(s.set(e,k),!0)})"
          ".map(([e,t])=>this.update_state_cb(Number(e),{loading_status:t},!1)))}")
CALL, WRITTEN = b"this.update_state_cb(", b"this.__written("


def script_path() -> Path | None:
    """Gradio's ``Blocks-<hash>.js`` (the file holding the page's event dispatcher), or None."""
    found = sorted(ASSETS.glob("Blocks-*.js"))
    return found[0] if len(found) == 1 else None


@cache
def patched_script() -> tuple[str, bytes, str] | None:
    """(its path under /assets/, the patched file, its ETag), or None where the file is not the one this fixes."""
    path = script_path()
    if path is None:
        log_line("frontend", "frontend: no single Blocks-*.js in Gradio's assets; served as it comes")
        return None
    source = path.read_bytes()
    refresh, write = _REFRESH.encode(), _WRITE.encode()
    calls = source.count(CALL)
    if source.count(refresh) != 1 or calls < 2 or b"\0" in source:
        log_line("frontend", f"frontend: {path.name} is not Gradio 6.31.0's; served as it comes")
        return None
    body = source.replace(refresh, b"\0").replace(CALL, WRITTEN).replace(b"\0", write)
    etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
    return f"/assets/{path.name}", body, etag


async def answer(scope, send, script: tuple[str, bytes, str]) -> None:
    """The patched script, Brotli-compressed where the browser takes it; 304 where it has this very one."""
    _, body, etag = script
    headers = {key.lower(): value for key, value in scope.get("headers", [])}
    common = [(b"content-type", b"text/javascript; charset=utf-8"), (b"etag", etag.encode()),
              (b"cache-control", b"max-age=0, must-revalidate"), (b"vary", b"Accept-Encoding")]
    if headers.get(b"if-none-match", b"").decode("latin-1") == etag:
        await send({"type": "http.response.start", "status": 304, "headers": common})
        return await send({"type": "http.response.body", "body": b""})
    if b"br" in headers.get(b"accept-encoding", b""):
        body, common = _compressed(body), [*common, (b"content-encoding", b"br")]
    await send({"type": "http.response.start", "status": 200,
                "headers": [*common, (b"content-length", str(len(body)).encode())]})
    return await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


@cache
def _compressed(body: bytes) -> bytes:
    return brotli.compress(body, quality=9)
