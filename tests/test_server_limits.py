"""What a connection, a request body and a log line may take (``viz.ui.server``, ``viz.ui.logs``), against the app as
served in-process on the tiny model, over raw sockets and HTTP.

- A body over the bound is answered 413 with a message before it is sent (its Content-Length), or as soon as a
  chunked one passes the bound; the server reads no more of it. A body sent slower than the minimum rate, or not
  complete by the body deadline, is answered 408 and closed; one sent in pieces at a normal pace is answered.
- At the connection bound, a connection that has waited longest for its client gives its place to a new one.
- A request whose headers never end is closed after the header deadline; headers still incomplete past the bound
  are a 400; connections past the bound get a 503 with a message at once, and the server still answers afterwards.
- A bad input is one short log line, never the input or a traceback, however large the input; a fault keeps a
  traceback, cut to its last frames and short lines.
"""

from __future__ import annotations

import http.client
import json
import socket
import time

import pytest

import viz.ui.logs as logs
import viz.ui.server as server
from model.serving.runs import Runs

pytestmark = pytest.mark.filterwarnings("ignore::Warning:gradio.queueing")

SENTENCE = "a big dog runs in the park."


@pytest.fixture(scope="module")
def app(serve):
    return serve("tiny")


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("//", 1)[1].rstrip("/").split(":")
    return host, int(port)


def _connect(url: str) -> socket.socket:
    sock = socket.create_connection(_address(url), timeout=120)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _call(url: str, name: str, data: list) -> tuple[str, object]:
    conn = http.client.HTTPConnection(*_address(url), timeout=300)
    try:
        conn.request("POST", f"/gradio_api/call/{name}", body=json.dumps({"data": data}).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        assert resp.status == 200, answer
        conn.request("GET", f"/gradio_api/call/{name}/{answer['event_id']}")
        raw = conn.getresponse().read().decode()
    finally:
        conn.close()
    event = None
    for line in raw.splitlines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:") and event in ("complete", "error"):
            return event, json.loads(line[5:])
    raise AssertionError(raw[:300])


# ------------------------------------------------------------------------------------------- request bodies
def test_a_body_over_the_bound_is_refused_before_it_is_sent(app):
    with _connect(app.url) as sock:  # 50 MB announced, one byte sent: the answer comes without the rest
        sock.sendall(b"POST /gradio_api/call/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 50000000\r\n\r\n{")
        answer = _read_all(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413") and b"connection: close" in head.lower()
    detail = json.loads(body)["detail"]
    assert "50,000,000 bytes" in detail and f"at most {server.MAX_BODY_BYTES:,} bytes" in detail


def test_a_chunked_body_over_the_bound_is_refused_as_it_passes_it(app):
    chunks = [b"x" * server.MAX_BODY_BYTES, b"x" * 1024]  # the bound, then a little more (and no end: not needed)
    with _connect(app.url) as sock:
        sock.sendall(b"POST /gradio_api/call/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks))
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 413") and b"at most" in answer


def test_a_body_within_the_bound_is_answered(app):
    assert _call(app.url, "translate", [SENTENCE + " " + "x" * 1000, 2])[0] == "complete"


SLOW_POST = (b"POST /gradio_api/call/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 100000\r\n\r\n")


def _slow_bodies(monkeypatch, window_s: float = 0.5, deadline_s: float = 30.0, rate: int = 1024) -> None:
    """The body checks shortened for a test: a window of ``window_s``, the whole body within ``deadline_s``."""
    monkeypatch.setattr(server, "BODY_WINDOW_S", window_s)
    monkeypatch.setattr(server, "BODY_TIMEOUT_S", deadline_s)
    monkeypatch.setattr(server, "MIN_BODY_RATE", rate)


def test_a_body_sent_slower_than_the_minimum_rate_is_dropped(app, monkeypatch):
    _slow_bodies(monkeypatch)
    with _connect(app.url) as sock:  # the drip: a body announced, then a byte now and then
        sock.sendall(SLOW_POST + b"{")
        start = time.perf_counter()
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408") and b"at least 1,024 are needed" in answer, answer[:300]
    assert time.perf_counter() - start < 100  # by the rate check, not by the test's own socket timeout


def test_a_body_not_complete_by_the_deadline_is_dropped(app, monkeypatch):
    _slow_bodies(monkeypatch, window_s=0.3, deadline_s=1.0, rate=10)  # a rate it keeps, a deadline it misses
    with _connect(app.url) as sock:
        sock.sendall(SLOW_POST)
        sock.settimeout(0.1)
        answer = b""
        for _ in range(100):
            try:
                sock.sendall(b" " * 50)
                if chunk := sock.recv(65536):
                    answer += chunk
                    break
            except TimeoutError:
                continue
            except OSError:
                break
        sock.settimeout(120)
        answer += _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408") and b"not complete within 1 s" in answer, answer[:300]


def test_a_body_sent_in_pieces_at_a_normal_pace_is_answered(app, monkeypatch):
    _slow_bodies(monkeypatch, window_s=0.5, rate=64)
    body = json.dumps({"data": [SENTENCE, 2]}).encode() + b" " * 200  # ~1.5 s at this pace: three windows
    with _connect(app.url) as sock:
        sock.sendall(b"POST /gradio_api/call/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body))
        for i in range(0, len(body), 16):  # pieces a tenth of a second apart: ~160 bytes a second
            sock.sendall(body[i:i + 16])
            time.sleep(0.1)
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 200") and b"event_id" in answer, answer[:300]


def test_at_the_bound_a_stalled_connection_makes_room_for_a_new_visitor(app, monkeypatch):
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 6)
    monkeypatch.setattr(server, "STALLED_S", 0.3)
    socks = []
    try:
        for _ in range(6):  # slow bodies hold every place
            sock = _connect(app.url)
            sock.sendall(SLOW_POST + b"{")
            socks.append(sock)
        time.sleep(0.5)
        for _ in range(3):  # each new visitor is served: the longest-stalled body gives way
            conn = http.client.HTTPConnection(*_address(app.url), timeout=120)
            conn.request("GET", "/config")
            assert conn.getresponse().status == 200
            conn.close()
        for sock in socks:
            sock.settimeout(0.2)
        gave_way = []
        for sock in socks:
            try:
                gave_way.append(sock.recv(1000))
            except TimeoutError:
                pass
        assert sum(a.startswith(b"HTTP/1.1 503") and b"to make room" in a for a in gave_way) >= 1, gave_way
    finally:
        for sock in socks:
            sock.close()


# ---------------------------------------------------------------------------------------- headers, connections
def test_a_request_whose_headers_never_end_is_closed(app, monkeypatch):
    monkeypatch.setattr(server, "HEADER_TIMEOUT_S", 1.0)
    with _connect(app.url) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nX-a: ")
        start = time.perf_counter()
        assert _read_all(sock) == b""  # closed without an answer
    assert time.perf_counter() - start < 100  # by the deadline, not by the test's own socket timeout
    with _connect(app.url) as sock:  # a connection that never sends a byte too
        assert _read_all(sock) == b""


def test_headers_still_incomplete_past_the_bound_are_a_400(app):
    with _connect(app.url) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-a: " + b"a" * (server.MAX_HEADER_BYTES + 1024))
        assert _read_all(sock).startswith(b"HTTP/1.1 400")


def test_connections_past_the_bound_are_refused_at_once_and_the_server_answers_after(app, monkeypatch, capfd):
    monkeypatch.setattr(server, "HEADER_TIMEOUT_S", 2.0)
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 6)
    monkeypatch.setattr(server, "STALLED_S", 60.0)  # none of them has stalled long enough to give way
    socks = [_connect(app.url) for _ in range(30)]  # half-open: they never send a request
    try:
        refused = []
        for sock in socks:
            sock.settimeout(120)
        for sock in socks[10:]:  # the server answers these at once (the first ones hold their places)
            answer = _read_all(sock)
            refused.append(answer)
        assert all(a.startswith(b"HTTP/1.1 503") and b"connections are open" in a for a in refused)
    finally:
        for sock in socks:
            sock.close()
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 2048)
    assert _call(app.url, "translate", [SENTENCE, 2])[0] == "complete"
    err = capfd.readouterr().err
    assert err.count("refused a connection") <= logs.BURST + 1  # counted, not printed, past the budget


def test_one_address_that_is_not_a_trusted_proxy_holds_a_bounded_number_of_connections(app, monkeypatch):
    monkeypatch.setattr(server, "HEADER_TIMEOUT_S", 2.0)
    monkeypatch.setattr(server, "PER_PEER", 4)
    monkeypatch.setattr(server, "_trusted", lambda config: ())  # loopback as a visitor, not as a proxy
    socks = [_connect(app.url) for _ in range(12)]
    try:
        answers = [_read_all(sock) for sock in socks[6:]]  # past the first four (and any other of this address)
    finally:
        for sock in socks:
            sock.close()
    assert all(a.startswith(b"HTTP/1.1 503") and b"from your address" in a for a in answers), answers


# --------------------------------------------------------------------------------------------------- logs
def test_a_bad_input_is_one_short_log_line(app, capfd, monkeypatch):
    # a fresh window: the lines this process printed before (other tests' bad inputs) must not silence these three
    monkeypatch.setattr(logs, "_BUDGET", logs._Budget())
    capfd.readouterr()
    big = "y" * 200_000
    assert _call(app.url, "inside_head", [big, "", "bogus", 1, 1, 0, None])[0] == "error"  # a bad kind
    assert _call(app.url, "attention", [big])[0] == "error"  # too few values
    assert _call(app.url, "attention", ["   ", "", None])[0] == "error"  # empty
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("bad input")]
    assert len(lines) == 3, err[:2000]
    assert "Traceback" not in err and "yyyyyyyyyy" not in err
    assert all(len(line) <= 40 + logs.SHORT for line in lines), lines
    assert len(err) < 1500, err[:2000]


def test_a_fault_keeps_a_cut_traceback(app, monkeypatch, capfd):
    def broken(self, text, beam):
        raise RuntimeError("the model broke: " + "z" * 100_000)

    monkeypatch.setattr(Runs, "translate", broken)
    monkeypatch.setattr(logs, "_BUDGET", logs._Budget())  # a fresh window, whatever this process printed before
    capfd.readouterr()
    assert _call(app.url, "translate", [SENTENCE, 2])[0] == "error"
    err = capfd.readouterr().err
    assert "fault in /translate: RuntimeError: the model broke: zzz" in err and "Traceback" in err
    assert 'File "' in err and "broken" in err  # where it happened
    assert len(err) < 4000 and max(map(len, err.splitlines())) <= 40 + logs.MESSAGE + 40, err[:5000]
