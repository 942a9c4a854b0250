"""What a caller names — an event, an answer to read, a session's stream, a file — checked before Gradio looks it up
(``viz.ui.guards.RouteGuard`` asks ``Callers``). Every way into an event answers a name it does not know with a short
message and a 4xx, never Gradio 6.31.0's 500 and a traceback in the log:

- ``POST /gradio_api/queue/join`` (the page's way, by ``fn_index``), ``POST /gradio_api/run/<name>`` (an event that
  skips the queue), ``POST /gradio_api/call/<name>``: an index or name the app does not have is a 404 naming what it
  has; an event that runs in the page only (a ``js`` listener without a server part: Gradio answered
  ``{"error": null}``) a 404 saying so; a join without a whole-number ``fn_index`` a 422.
- ``GET /gradio_api/call/<name>/<event_id>``, ``GET /gradio_api/queue/data?session_hash=…``: an answer or a session
  the queue holds nothing for is a 404 (Gradio streamed a "404" error and logged a traceback).
- ``GET /gradio_api/heartbeat/<session>``: Gradio holds it open for good, whatever the session; here one whose
  session the app does not know ``HEARTBEAT_GRACE_S`` after it opened (a page's first events make its session
  known within seconds), or no longer knows (Gradio keeps at most ``SESSION_CAPACITY`` sessions), is ended.
- ``GET /gradio_api/file=<path>``: only the files the app wrote (its exports, ``ExportFolder.roots``) are served;
  Gradio served any file under its temp folder, other programs' too. Any other path is a 403 (as Gradio refuses a
  path it does not serve: nothing tells an existing file apart from a missing one); an export since removed a 404.
- A request body FastAPI cannot read (``data`` not a list, …): its 422 quoted the value whole (a 1 MB value, a 1 MB
  answer); here each problem is one short line, the value cut (``validation_error``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import unquote

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from viz.views.exports import ExportFolder
from viz.views.inputs import shown

HEARTBEAT_GRACE_S = 60.0  # a heartbeat's session must be known this long after it opened, and from then on
HEARTBEAT_CHECK_S = 60.0  # how often a heartbeat's session is looked for after that
EXPORT_GONE = "This export has been removed (the app keeps the newest ones, for an hour): export again."
NOT_A_FILE = "Not a file of this app: it serves only the exports it wrote (an export's download link)."


class Callers:
    """The names a request may use, as the app ``blocks`` has them; each ``*_problem`` is (status, message) or None."""

    def __init__(self, blocks):
        self.blocks = blocks

    # ------------------------------------------------------------------------------------------ events
    def join_problem(self, body: bytes) -> tuple[int, str] | None:
        """A queue join (``body``: its JSON) that names no event the server runs."""
        values = _object(body)
        if values is None:
            return None  # (not a JSON object: FastAPI answers, ``validation_error``)
        index = values.get("fn_index")
        if isinstance(index, bool) or not isinstance(index, int):
            return 422, ("/gradio_api/queue/join takes fn_index, an event's number (the \"id\" of one of /config's "
                         f"\"dependencies\"); got {shown(index)}.")
        return self.fn_problem(index)

    def run_problem(self, name: str, body: bytes) -> tuple[int, str] | None:
        """A direct run (``/gradio_api/run/<name>``): by the body's ``fn_index``, else by ``name``."""
        values = _object(body)
        if values is None:
            return None
        index = values.get("fn_index")
        if index is None:
            return self.call_problem(name)
        if isinstance(index, bool) or not isinstance(index, int):
            return 422, f"fn_index must be an event's number (/config's \"dependencies\"); got {shown(index)}."
        return self.fn_problem(index)

    def fn_problem(self, index: int) -> tuple[int, str] | None:
        fns = self.blocks.fns
        if index not in fns:
            return 404, f"There is no event {index}: the app's events are numbered {min(fns)} to {max(fns)}."
        if fns[index].fn is None:
            return 404, f"Event {index} runs in the page only (it has no server part): there is nothing to call."
        return None

    def call_problem(self, name: str) -> tuple[int, str] | None:
        """A call by name (``/gradio_api/call/<name>``, ``/gradio_api/run/<name>``)."""
        fn = next((fn for fn in self.blocks.fns.values() if fn.api_name == name), None)
        if fn is None:
            endpoints = ", ".join(sorted(self.blocks.get_api_info()["named_endpoints"]))
            return 404, f"There is no endpoint /{name[:40]}: the app's endpoints are {endpoints}."
        if fn.fn is None:
            return 404, f"/{name} runs in the page only (it has no server part): there is nothing to call."
        return None

    # ------------------------------------------------------------------------------------ answers, sessions
    def answer_problem(self, event_id: str) -> tuple[int, str] | None:
        """``GET /gradio_api/call/<name>/<event_id>`` of an answer the queue does not hold."""
        queue = self.blocks._queue
        if event_id in queue.event_ids_to_events:
            return None
        session = next((s for s, ids in queue.pending_event_ids_session.items() if event_id in ids), None)
        if session is not None and session in queue.pending_messages_per_session:
            return None
        return 404, (f"No answer {shown(event_id)} is waiting to be read: it was read already, dropped unread, or "
                     "never asked for. Ask again (POST /gradio_api/call/<name>), then read its answer at once.")

    def stream_problem(self, session: str | None) -> tuple[int, str] | None:
        """``GET /gradio_api/queue/data`` of a session the queue holds nothing for."""
        if session is None or session in self.blocks._queue.pending_messages_per_session:
            return None  # (no session_hash: FastAPI answers)
        return 404, (f"The queue holds nothing for session {shown(session)}: join it first "
                     "(POST /gradio_api/queue/join), then read the session's answers.")

    def known(self, session: str) -> bool:
        """Whether the app keeps anything for ``session`` (its state, or requests in the queue)."""
        queue = self.blocks._queue
        return (session in self.blocks.state_holder or session in queue.pending_messages_per_session
                or session in queue.pending_event_ids_session)

    async def heartbeat(self, app, scope, receive, send, session: str) -> None:
        """Gradio's heartbeat stream for ``session``, ended (as if its client had left) once the app does not know
        the session ``HEARTBEAT_GRACE_S`` after it opened, or no longer knows it; the stream then ends cleanly."""
        leave = asyncio.Event()
        started = ended = False

        async def receiving():
            message = asyncio.ensure_future(receive())
            left = asyncio.ensure_future(leave.wait())
            done, _ = await asyncio.wait({message, left}, return_when=asyncio.FIRST_COMPLETED)
            if message in done:
                left.cancel()
                return message.result()
            message.cancel()
            return {"type": "http.disconnect"}

        async def sending(message):
            nonlocal started, ended
            started = started or message["type"] == "http.response.start"
            ended = ended or (message["type"] == "http.response.body" and not message.get("more_body", False))
            await send(message)

        task = asyncio.ensure_future(app(scope, receiving, sending))
        wait_s = HEARTBEAT_GRACE_S
        while not task.done():
            await asyncio.wait({task}, timeout=wait_s)
            wait_s = HEARTBEAT_CHECK_S
            if not task.done() and not self.known(session):
                leave.set()
                await task
        if started and not ended and leave.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    # ------------------------------------------------------------------------------------------ files
    @staticmethod
    def file_problem(requested: str) -> tuple[int, str] | None:
        """A file route's path: 403 unless it is inside an export folder of this app (``ExportFolder.roots``; any
        other path is refused alike, whether it exists or not), 404 for an export since removed."""
        try:
            path = Path(unquote(requested)).resolve()
        except (ValueError, OSError, RuntimeError):
            return 403, NOT_A_FILE
        if not any(path != root and path.is_relative_to(root) for root in ExportFolder.roots):
            return 403, NOT_A_FILE
        return None if path.exists() else (404, EXPORT_GONE)


def _object(body: bytes) -> dict | None:
    try:
        values = json.loads(body or b"null")
    except (ValueError, RecursionError):
        return None
    return values if isinstance(values, dict) else None


async def validation_error(request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's 422 for a body it cannot read, each problem one short line: where, what, the value cut (FastAPI
    quoted the whole value)."""
    problems = []
    for error in exc.errors()[:3]:
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "the body"
        got = f" (got {shown(error['input'])})" if "input" in error else ""
        problems.append(f"{where}: {str(error.get('msg', 'not valid'))[:120]}{got}")
    more = f" (and {len(exc.errors()) - 3} more)" if len(exc.errors()) > 3 else ""
    path = request.url.path[-80:]
    return JSONResponse({"detail": f"{path} cannot read this request: {'; '.join(problems)}{more}."}, status_code=422)
