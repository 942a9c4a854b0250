"""Two rows of the ``limits`` section (``bench.limits`` runs them): what a long hostile load leaves of the app.

- ``slow_bodies``: ``SLOW_BODIES`` connections from ``SLOW_ADDRESSES`` loopback addresses (127.0.0.2 …, each one a
  visitor: only 127.0.0.1 is a trusted proxy), each sending ``POST /gradio_api/call/translate`` with
  ``Content-Length: 100000`` and then a byte every ``DRIP_S`` seconds; a dropped one is opened again at once. While
  they are open a new visitor asks for the page (and a translation) ``VISITS`` times: served n of n
  (``viz.ui.server``: the body deadline and minimum rate, and stalled connections giving way at the bound).
- ``memory_rounds``: ``ROUNDS`` identical rounds of ``ROUND_REQUESTS`` maximum-size /attention requests (100 + 100
  tokens, distinct sentences, ten visitors at a time): the app's RSS (the server process; its model process beside
  it) once each round is answered and the app is idle again, against the bound of model/serving/README.md
  (``rest_bound_mb``).
"""

from __future__ import annotations

import http.client
import resource
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

from bench.capacity import long_text
from bench.common import app_process, read_status_kb, tree_status_kb
from model.serving.cache import DEFAULT_BUDGET_MB, TRIM_S

SLOW_BODIES, SLOW_ADDRESSES, DRIP_S, VISITS = 2100, 9, 5.0, 20
ROUNDS, ROUND_REQUESTS, ROUND_VISITORS = 10, 100, 10
FLAT_MB = 10  # the last five rounds within this
START_S = 300
SLOW_POST = (b"POST /gradio_api/call/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 100000\r\n\r\n{")


def rest_bound_mb(start_mb: float, cache_mb: float = DEFAULT_BUDGET_MB, sessions: int = 2000) -> float:
    """model/serving/README.md's bound on the server's RSS at rest: its RSS at start + the result cache's budget + the
    sessions Gradio keeps (at most 2,000, ~50 KB each) + ``HEAP_SLACK_MB`` (freed memory the allocator keeps for
    reuse: Python's own small-object arenas, the top of each heap)."""
    return start_mb + cache_mb + sessions * 50 / 1024 + HEAP_SLACK_MB


HEAP_SLACK_MB = 64


# ------------------------------------------------------------------------------------------------ slow bodies
def slow_bodies(quick: bool, log: Callable[[str], None]) -> dict:
    """``SLOW_BODIES`` slow bodies held open (re-opened when dropped) while a new visitor asks for the page."""
    n = 600 if quick else SLOW_BODIES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, n + 512)), hard))
    with app_process(("app.py",), timeout=START_S) as app:
        _launched(app)
        host, port = urlparse(app.url).hostname, urlparse(app.url).port
        counts: Counter = Counter()
        socks: list[socket.socket | None] = [None] * n

        def open_one(i: int) -> None:
            try:
                sock = socket.create_connection((host, port), timeout=5,
                                                source_address=(f"127.0.0.{2 + i % SLOW_ADDRESSES}", 0))
                sock.sendall(SLOW_POST)
                socks[i] = sock
                counts["opened"] += 1
            except OSError:
                socks[i] = None
                counts["refused"] += 1

        for i in range(n):
            open_one(i)
        stop = threading.Event()

        def drip() -> None:
            while not stop.wait(DRIP_S):
                for i, sock in enumerate(socks):
                    try:
                        if sock is None:
                            raise OSError
                        sock.sendall(b" ")
                    except OSError:
                        counts["dropped"] += sock is not None
                        if sock is not None:
                            sock.close()
                        open_one(i)

        dripping = threading.Thread(target=drip, daemon=True)
        dripping.start()
        open_at_visit, visits = [], Counter()
        for _ in range(VISITS):
            open_at_visit.append(sum(s is not None for s in socks))
            visits[_visit(host, port)] += 1
            time.sleep(0.5)
        stop.set()
        dripping.join(60)
        for sock in socks:
            if sock is not None:
                sock.close()
    out = {"connections": n, "addresses": SLOW_ADDRESSES, "visits": VISITS, "served": visits["served"],
           "visit_outcomes": dict(visits), "open_at_visits_min": min(open_at_visit),
           "open_at_visits_max": max(open_at_visit), "attacker": dict(counts)}
    log(f"  slow bodies: {out}")
    return out


def _launched(app, timeout_s: float = 120) -> None:
    """Wait until Gradio's ``launch`` has finished: once its server answers, it asks the page itself and ends the app
    if that fails (ValueError "When localhost is not accessible…"), which a flood begun meanwhile can make happen."""
    t0 = time.perf_counter()
    while "share=True" not in app.log_text() and time.perf_counter() - t0 < timeout_s:
        time.sleep(0.2)


def _visit(host: str, port: int) -> str:
    """A new visitor (127.0.0.1): the page, then a translation; "served" or what went wrong."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        conn.request("GET", "/")
        page = conn.getresponse()
        page.read()
        if page.status != 200:
            return f"page {page.status}"
        conn.request("POST", "/gradio_api/call/translate", body=b'{"data": ["A dog runs.", 1]}',
                     headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        return "served" if answer.status == 200 else f"translate {answer.status}"
    except OSError as exc:
        return type(exc).__name__
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------- memory rounds
def memory_rounds(quick: bool, log: Callable[[str], None]) -> dict:
    """``ROUNDS`` identical rounds of ``ROUND_REQUESTS`` maximum-size /attention requests: the RSS after each."""
    from bench.limits import call, wait_idle

    rounds, n = (4, 30) if quick else (ROUNDS, ROUND_REQUESTS)
    with app_process(("app.py",), timeout=START_S) as app:
        pid = app.proc.pid
        call(app.url, "translate", ["A dog runs.", 4], "198.51.100.70")
        wait_idle(pid)
        time.sleep(TRIM_S + 1)
        start, start_tree = read_status_kb(pid, "VmRSS") / 1024, tree_status_kb(pid, "VmRSS") / 1024
        series, tree, outcomes = [], [], Counter()

        def one(i: int) -> str:
            return call(app.url, "attention", [long_text(i), long_text(i), None],
                        f"10.80.0.{i % ROUND_VISITORS + 1}")[0]

        for r in range(rounds):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(ROUND_VISITORS) as pool:
                outcomes.update(pool.map(one, range(n)))
            wait_idle(pid)
            time.sleep(TRIM_S + 1)  # (the allocator's freed pages handed back: model.serving.cache.trim_freed_memory)
            series.append(read_status_kb(pid, "VmRSS") / 1024)
            tree.append(tree_status_kb(pid, "VmRSS") / 1024)
            log(f"  memory round {r + 1}: {time.perf_counter() - t0:.0f} s, app RSS {series[-1]:.0f} MB "
                f"(with its model process {tree[-1]:.0f} MB)")
    last = series[-5:]
    out = {"rounds": rounds, "requests": n, "outcomes": dict(outcomes), "start_mb": start, "start_tree_mb": start_tree,
           "rss_mb": series, "tree_mb": tree, "last_five_spread_mb": max(last) - min(last),
           "bound_mb": rest_bound_mb(start)}
    log(f"  memory rounds: {out}")
    return out


def run(quick: bool, log: Callable[[str], None]) -> dict:
    return {"slow_bodies": slow_bodies(quick, log), "memory_rounds": memory_rounds(quick, log)}


def rows(r: dict) -> list[tuple[str, str, str, str]]:
    """This module's rows of the bench table: (metric, value, goal, ok?)."""
    out = []
    if "slow_bodies" in r:
        s = r["slow_bodies"]
        out.append((f"Slow bodies: {s['connections']:,} connections from {s['addresses']} addresses, each a body of "
                    f"100,000 bytes sent a byte every {DRIP_S:.0f} s (dropped ones opened again): a new visitor's "
                    "page and translation served; the slow connections' sockets open at the visits (min–max)",
                    f"{s['served']} of {s['visits']}; {s['open_at_visits_min']:,}–{s['open_at_visits_max']:,}",
                    f"{s['visits']} of {s['visits']}", "yes" if s["served"] == s["visits"] else "**no**"))
    if "memory_rounds" in r:
        m = r["memory_rounds"]
        ok = m["last_five_spread_mb"] <= FLAT_MB and max(m["rss_mb"]) <= m["bound_mb"]
        out.append((f"Memory: {m['rounds']} identical rounds of {m['requests']} maximum-size /attention requests: the "
                    "server's RSS at start, then after each round (its model process beside it: start → last)",
                    f"{m['start_mb']:.0f} → {', '.join(f'{v:.0f}' for v in m['rss_mb'])} MB "
                    f"({m['start_tree_mb']:.0f} → {m['tree_mb'][-1]:.0f} MB)",
                    f"last five within {FLAT_MB} MB; ≤ {m['bound_mb']:.0f} MB", "yes" if ok else "**no**"))
    return out
