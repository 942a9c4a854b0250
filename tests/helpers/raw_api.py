"""The app as a hostile client sees it: spoken to over raw HTTP (no gradio_client), served by tests/conftest.py's
``serve``.

``RawClient.call`` is Gradio's queue protocol by hand: POST ``/gradio_api/call/<name>`` with
``{"data": [...], "session_hash": ...}``, then GET the event's SSE stream; ``RawClient.join`` calls any event, a
page-only one too, by its ``fn_index`` as the page does. JSON is written with NaN and ±Infinity
allowed, as any client may send them. ``api_info`` and ``arguments`` read the app's own description of its
endpoints, so that a call is valid but for what a test changes.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
import uuid
from dataclasses import dataclass


def api_info(url: str) -> dict[str, list[dict]]:
    """Endpoint name -> its parameters as the app describes them (``/gradio_api/info``; public ones only)."""
    with urllib.request.urlopen(f"{url}gradio_api/info") as r:
        info = json.load(r)["named_endpoints"]
    return {name.lstrip("/"): spec["parameters"] for name, spec in info.items()}


def valid(param: dict, text: str):
    """A good value for a parameter: its default (a component's value in the page), else ``text``."""
    if param.get("parameter_has_default") and (param["parameter_default"] is not None or "oneOf" in param["type"]):
        return param["parameter_default"]
    return text if param["type"].get("type") == "string" else param["example_input"]


def arguments(params: list[dict], sentence: str, /, **given) -> list:
    """Valid arguments (``valid``), some replaced by parameter name (a trailing "_" does not count)."""
    values = {p["parameter_name"].rstrip("_"): valid(p, sentence) for p in params}
    assert set(given) <= set(values), sorted(values)
    return list((values | given).values())


@dataclass
class Answer:
    event: str  # "complete" or "error"
    data: object  # the outputs (complete) or the error payload, e.g. {"error": "message", ...}
    raw: bytes  # the whole SSE answer

    @property
    def message(self) -> str | None:
        return self.data.get("error") if self.event == "error" and isinstance(self.data, dict) else None


class RawClient:
    """One session (its own ``session_hash``) over one keep-alive connection."""

    def __init__(self, url: str, timeout: float = 120.0):
        host, port = url.split("//", 1)[1].rstrip("/").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
        self.session_hash = uuid.uuid4().hex[:12]

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None) -> tuple[int, bytes]:
        # The server closes a kept-alive connection that sat idle for a few seconds (uvicorn's keep-alive
        # timeout): a test that computed for longer than that meanwhile retries once on a fresh connection.
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.conn.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def post_until_placed(self, path: str, body: bytes, tries: int = 30) -> tuple[int, bytes]:
        """POST ``body`` as JSON, again a second later while the app answers 429 (try again later)."""
        for _ in range(tries):
            status, answer = self.request("POST", path, body, {"Content-Type": "application/json"})
            if status != 429:
                break
            time.sleep(1.0)
        return status, answer

    def call(self, name: str, data: list) -> Answer:
        body = json.dumps({"data": data, "session_hash": self.session_hash}).encode()  # NaN, Infinity allowed
        # "1 at a time per page": the previous call's slot may free a moment after its answer
        status, answer = self.post_until_placed(f"/gradio_api/call/{name}", body)
        assert status == 200, (name, status, answer[:300])
        status, raw = self.request("GET", f"/gradio_api/call/{name}/{json.loads(answer)['event_id']}")
        assert status == 200, (name, status, raw[:300])
        event = None
        for line in raw.decode("utf-8").splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                return Answer(event, json.loads(line[5:].strip()), raw)
        raise AssertionError(f"/{name}: no complete or error event in {raw[:300]!r}")

    def join(self, fn_index: int, data: list) -> Answer:
        """Call the event ``fn_index`` as the page does (POST /gradio_api/queue/join, then the session's SSE
        stream /gradio_api/queue/data): page-only events too."""
        body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": self.session_hash,
                           "event_data": None, "trigger_id": None}).encode()  # NaN, Infinity allowed
        # a full queue refuses the address holding the most (viz.ui.shares): 429, try again later
        status, answer = self.post_until_placed("/gradio_api/queue/join", body)
        assert status == 200, (fn_index, status, answer[:300])
        status, raw = self.request("GET", f"/gradio_api/queue/data?session_hash={self.session_hash}")
        assert status == 200, (fn_index, status, raw[:300])
        for line in raw.decode("utf-8").splitlines():
            message = json.loads(line[5:]) if line.startswith("data:") else {}
            if message.get("msg") == "process_completed":
                output = message.get("output") or {}
                if message.get("success"):
                    return Answer("complete", output.get("data"), raw)
                return Answer("error", output, raw)
        raise AssertionError(f"event {fn_index}: no process_completed in {raw[:300]!r}")

    def close(self) -> None:
        self.conn.close()
