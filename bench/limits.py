"""One visitor against everyone else, and what unread, concurrent and maximum-size answers cost
(``viz.ui.limits``, ``viz.ui.server``, ``viz.ui.logs``; `python -m bench --sections limits`). Each part runs against
its own ``python app.py`` (with its model process), spoken to over raw HTTP; every visitor is an address of its own
(X-Forwarded-For, which the app trusts from loopback as from a proxy).

- ``flood``: another visitor's cached /translate and /visualise of a new sentence, alone and while one address sends
  257 /ablate at once and 5 more a second (the flood that once filled the queue's 256 places for everyone): latency,
  errors, the page's load, and what the flood got (accepted, refused with 429, other).
- ``largest``: the largest /attention answer (100 source tokens, the model's own translation at its length limit):
  bytes, first and second (cached) time.
- ``unread``: 40 maximum-size /attention answers (100 + 100 tokens, distinct sentences, 40 visitors) never read: the
  app's RSS (with its model process) before, once all are answered, and once the app has dropped them.
- ``concurrent``: 100 visitors at once, each one maximum-size /attention answer, read: RSS before, peak, after.
- ``bodies``: 8 bodies of 50 MB at once: how they are answered, and the RSS they cost.
- ``logs``: bytes of log per bad input (too few values with a 50 KB text, a bad choice, an empty text, NaN, a bad
  beam), and per fault-free request.
- ``slow_bodies``, ``memory_rounds`` (``bench.endurance``): a new visitor served while 2,100 slow bodies are held
  open, and the RSS over ten identical rounds of 100 maximum-size requests.
- ``hall``: a lecture hall behind one address, alone, loading a lecture link, and beside a flood of /ablate, with a
  lone visitor from a third address throughout (``bench.hall``).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

from bench import endurance, hall
from bench.capacity import distinct_text, long_text
from bench.common import app_process, cpu_seconds, stats, tree_status_kb
from model.serving.cache import DEFAULT_BUDGET_MB

FLOOD = 257  # one more than the queue's places
TOP_UP_PER_S = 5
UNREAD = 40
CONCURRENT = 100
BODIES, BODY_MB = 8, 50
START_S = 300  # generous: the machine may be busy
GOALS = {"largest_bytes": 11.6e6, "log_bytes_per_bad_input": 200}
# model/serving/README.md: after a burst, RSS within the start + the result cache's budget + about one batch's maps in
# each of the two processes (glibc keeps some freed memory for reuse)
BATCH_HIGH_WATER_MB = 200
AFTER_BOUND_MB = DEFAULT_BUDGET_MB + 2 * BATCH_HIGH_WATER_MB
ABLATION = ["A dog runs in the park.", ["cross:1:1"]]
SENTENCE = "A man in a red shirt is riding a bicycle down a busy street."


# ------------------------------------------------------------------------------------------------ raw HTTP
def _conn(url: str, timeout: float = 600) -> http.client.HTTPConnection:
    parsed = urlparse(url)
    return http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)


_DEFAULTS: dict[tuple[str, str], list] = {}


def defaults(url: str, name: str) -> list:
    """The defaults of endpoint ``name``'s parameters (None where it has none), from /gradio_api/info."""
    if (url, name) not in _DEFAULTS:
        conn = _conn(url)
        try:
            conn.request("GET", "/gradio_api/info")
            info = json.loads(conn.getresponse().read())["named_endpoints"]
        finally:
            conn.close()
        for endpoint, spec in info.items():
            _DEFAULTS[url, endpoint.lstrip("/")] = [p.get("parameter_default") for p in spec["parameters"]]
    return _DEFAULTS[url, name]


def post(url: str, name: str, data: list, address: str, complete: bool = True) -> tuple[int, dict]:
    """POST /gradio_api/call/<name> as the visitor ``address``: (status, answer). ``complete``: ``data`` gives the
    first inputs, the endpoint's defaults the others (an input added to the app later does not break the bench)."""
    if complete:
        data = list(data) + defaults(url, name)[len(data):]
    conn = _conn(url)
    try:
        conn.request("POST", f"/gradio_api/call/{name}", body=json.dumps({"data": data}).encode(),
                     headers={"Content-Type": "application/json", "X-Forwarded-For": address})
        resp = conn.getresponse()
        raw = resp.read()
    except OSError as exc:
        return 0, {"detail": f"{type(exc).__name__}: {exc}"}
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, {"detail": raw[:200].decode("utf-8", "replace")}


def read(url: str, name: str, event_id: str, address: str) -> tuple[str, int]:
    """GET the event's answer: ("complete" | "error" | "none", bytes)."""
    conn = _conn(url)
    try:
        conn.request("GET", f"/gradio_api/call/{name}/{event_id}", headers={"X-Forwarded-For": address})
        raw = conn.getresponse().read()
    finally:
        conn.close()
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("event:") and line[6:].strip() in ("complete", "error"):
            return line[6:].strip(), len(raw)
    return "none", len(raw)


def call(url: str, name: str, data: list, address: str, complete: bool = True) -> tuple[str, int]:
    """POST then GET: ("complete" | "error" | "refused <status>", bytes)."""
    status, answer = post(url, name, data, address, complete)
    if status != 200:
        return f"refused {status}", 0
    return read(url, name, answer["event_id"], address)


def rss_mb(pid: int) -> float:
    return tree_status_kb(pid, "VmRSS") / 1024


def wait_idle(pid: int, timeout: float = 900, quiet_s: float = 2.0, busy_s: float = 0.0) -> float:
    """Wait until the app and its model process have used ``busy_s`` CPU-seconds (the work just asked for has
    started), then until they use almost no CPU for ``quiet_s``; the seconds waited."""
    t0, start = time.perf_counter(), cpu_seconds(pid)
    while time.perf_counter() - t0 < timeout and cpu_seconds(pid) - start < busy_s:
        time.sleep(0.2)
    while time.perf_counter() - t0 < timeout:
        before = cpu_seconds(pid)
        time.sleep(quiet_s)
        if cpu_seconds(pid) - before < 0.15 * quiet_s:
            break
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------------------------- the parts
def flood(quick: bool, log: Callable[[str], None]) -> dict:
    """Another visitor's latency alone and during a flood of /ablate from one address (the module docstring)."""
    rounds = 4 if quick else 10
    with app_process(("app.py",), timeout=START_S) as app:
        url, other = app.url, "198.51.100.20"
        call(url, "translate", [SENTENCE, 4], other)  # warm: cached from now on
        new = iter(range(10_000))

        def sample() -> dict:
            times: dict[str, list[float]] = {"translate": [], "visualise": []}
            outcomes: Counter = Counter()
            for _ in range(rounds):
                for name, data in (("translate", [SENTENCE, 4]),
                                   ("visualise", [distinct_text(next(new)), "", "encoder_self", 1, 0])):
                    t0 = time.perf_counter()
                    outcome, _ = call(url, name, data, other)
                    times[name].append(time.perf_counter() - t0)
                    outcomes[outcome] += 1
            page = _status(url, "/")
            return {name: _ms(t) for name, t in times.items()} | {"outcomes": dict(outcomes), "page_status": page}

        alone = sample()
        log(f"  flood: alone {alone}")
        statuses: Counter = Counter()
        stop = threading.Event()

        def flooder() -> None:
            with ThreadPoolExecutor(8) as pool:
                for status, _ in pool.map(lambda _: post(url, "ablate", ABLATION, "203.0.113.66"), range(FLOOD)):
                    statuses[status] += 1
            while not stop.wait(1 / TOP_UP_PER_S):
                statuses[post(url, "ablate", ABLATION, "203.0.113.66")[0]] += 1

        t0 = time.perf_counter()
        thread = threading.Thread(target=flooder, daemon=True)
        thread.start()
        while sum(statuses.values()) < FLOOD and thread.is_alive():
            time.sleep(0.05)
        burst_s = time.perf_counter() - t0
        during = sample()
        stop.set()
        thread.join(60)
        log(f"  flood: during {during}; the flood's answers {dict(statuses)}")
    return {"alone": alone, "during": during, "flood_statuses": {str(k): v for k, v in statuses.items()},
            "flood_burst_s": burst_s}


def _status(url: str, path: str) -> int:
    conn = _conn(url, 120)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except OSError:
        return 0
    finally:
        conn.close()


def _ms(samples: list[float]) -> dict:
    s = stats(samples)
    return {"median_ms": s["median_ms"], "max_ms": s["max_ms"], "n": s["n"]}


def largest(log: Callable[[str], None]) -> dict:
    """The largest /attention answer: 100 source tokens, the model's own translation at its limit."""
    with app_process(("app.py",), timeout=START_S) as app:
        out = {}
        for attempt in ("first", "cached"):
            t0 = time.perf_counter()
            outcome, size = call(app.url, "attention", ["dog " * 500, "", None], "198.51.100.30")
            out[f"{attempt}_ms"] = 1000 * (time.perf_counter() - t0)
            out["bytes"] = size
            assert outcome == "complete", outcome
    log(f"  largest /attention answer: {out}")
    return out


def unread(quick: bool, log: Callable[[str], None]) -> dict:
    """``UNREAD`` maximum-size answers asked for and never read: the RSS sampled each second until the app has
    dropped them (its log says so) and stayed quiet for 20 s."""
    n = 12 if quick else UNREAD
    with app_process(("app.py",), timeout=START_S) as app:
        call(app.url, "translate", [SENTENCE, 4], "198.51.100.40")  # warm
        wait_idle(app.proc.pid)
        before = rss_mb(app.proc.pid)
        t0 = time.perf_counter()
        statuses = Counter(post(app.url, "attention", [long_text(i), long_text(i), None], f"10.40.0.{i + 1}")[0]
                           for i in range(n))
        samples, drops, quiet_since = [], 0, time.perf_counter()
        while time.perf_counter() - t0 < 900:
            time.sleep(1)
            samples.append((time.perf_counter() - t0, rss_mb(app.proc.pid)))
            now = app.log_text().count("not read within")
            if now != drops:
                drops, quiet_since = now, time.perf_counter()
            if drops and time.perf_counter() - quiet_since > 20:
                break
    peak_s, peak = max(samples, key=lambda s: s[1])
    out = {"requests": n, "statuses": {str(k): v for k, v in statuses.items()}, "rss_before_mb": before,
           "rss_peak_mb": peak, "peak_at_s": peak_s, "rss_after_mb": samples[-1][1], "after_at_s": samples[-1][0],
           "log_drop_lines": drops}
    log(f"  unread answers: {out}")
    return out


def concurrent(quick: bool, log: Callable[[str], None]) -> dict:
    """``CONCURRENT`` visitors at once, each one maximum-size /attention answer, read."""
    n = 30 if quick else CONCURRENT
    with app_process(("app.py",), timeout=START_S) as app:
        call(app.url, "translate", [SENTENCE, 4], "198.51.100.50")
        wait_idle(app.proc.pid)
        before = rss_mb(app.proc.pid)
        start = threading.Barrier(n)

        def visitor(i: int) -> tuple[str, int, float]:
            start.wait(60)
            t0 = time.perf_counter()
            outcome, size = call(app.url, "attention", [long_text(i), long_text(i), None], f"10.50.0.{i + 1}")
            return outcome, size, time.perf_counter() - t0

        t0 = time.perf_counter()
        with ThreadPoolExecutor(n) as pool:
            results = list(pool.map(visitor, range(n)))
        wall = time.perf_counter() - t0
        peak = tree_status_kb(app.proc.pid, "VmHWM") / 1024
        wait_idle(app.proc.pid)
        after = rss_mb(app.proc.pid)
    outcomes = Counter(r[0] for r in results)
    out = {"requests": n, "outcomes": dict(outcomes), "answer_mb": max(r[1] for r in results) / 1e6,
           "latency": _ms([r[2] for r in results]), "wall_s": wall, "rss_before_mb": before, "rss_peak_mb": peak,
           "rss_after_mb": after}
    log(f"  concurrent maximum-size answers: {out}")
    return out


def bodies(log: Callable[[str], None]) -> dict:
    """``BODIES`` bodies of ``BODY_MB`` MB at once (announced and sent as fast as the server takes them)."""
    with app_process(("app.py",), timeout=START_S) as app:
        parsed = urlparse(app.url)
        before = rss_mb(app.proc.pid)
        chunk = b"x" * 1024 * 1024

        def send(_: int) -> tuple[str, float]:
            t0 = time.perf_counter()
            with socket.create_connection((parsed.hostname, parsed.port), timeout=120) as sock:
                sock.sendall(b"POST /gradio_api/call/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                             b"\r\nContent-Length: %d\r\n\r\n" % (BODY_MB * len(chunk)))
                try:
                    for _ in range(BODY_MB):
                        sock.sendall(chunk)
                except OSError:
                    pass  # the server answered and closed
                try:
                    head = sock.recv(64).split(b"\r\n")[0].decode()
                except OSError as exc:
                    head = type(exc).__name__
            return head, time.perf_counter() - t0

        with ThreadPoolExecutor(BODIES) as pool:
            results = list(pool.map(send, range(BODIES)))
        time.sleep(2)
        after = rss_mb(app.proc.pid)
    out = {"answers": dict(Counter(r[0] for r in results)), "max_s": max(r[1] for r in results),
           "rss_before_mb": before, "rss_after_mb": after}
    log(f"  bodies: {out}")
    return out


BAD_INPUTS = (
    ("attention", ["x" * 50_000]),  # too few values
    ("inside_head", ["a dog runs.", "", "sideways", 1, 1, 0, None]),  # a bad choice
    ("attention", ["   ", "", None]),  # empty
    ("attention", ["a dog runs.", "", float("nan")]),  # NaN scale (sent as NaN, as any client may)
    ("translate", ["y" * 50_000, "four"]),  # a bad beam with a long text
)


def logs(quick: bool, log: Callable[[str], None]) -> dict:
    """The app's log bytes per bad input, and per good request."""
    rounds = 4 if quick else 20
    with app_process(("app.py",), timeout=START_S) as app:
        call(app.url, "translate", [SENTENCE, 4], "198.51.100.60")
        time.sleep(1)
        start = app.log_bytes()
        outcomes = Counter(call(app.url, name, data, f"10.60.0.{r + 1}", complete=False)[0]
                           for r in range(rounds) for name, data in BAD_INPUTS)
        time.sleep(1)
        bad = app.log_bytes() - start
        text = app.log_text(start)
        start = app.log_bytes()
        for _ in range(rounds):
            call(app.url, "translate", [SENTENCE, 4], "198.51.100.60")
        time.sleep(1)
        good = app.log_bytes() - start
    n = rounds * len(BAD_INPUTS)
    out = {"bad_inputs": n, "outcomes": dict(outcomes), "bytes_per_bad_input": bad / n,
           "tracebacks": text.count("Traceback"), "bytes_per_good_request": good / rounds,
           "example": text.splitlines()[:len(BAD_INPUTS)]}
    log(f"  logs: {out}")
    return out


def run(quick: bool, log: Callable[[str], None] = print) -> dict:
    return {"flood": flood(quick, log), "largest": largest(log), "unread": unread(quick, log),
            "concurrent": concurrent(quick, log), "bodies": bodies(log), "logs": logs(quick, log),
            **endurance.run(quick, log), "hall": hall.run(quick, log)}


# --------------------------------------------------------------------------------------------------- table
def _ok(value: float, goal: float) -> str:
    return "yes" if value == value and value <= goal else "**no**"


def rows(r: dict) -> list[tuple[str, str, str, str]]:
    """The section's rows of the bench table: (metric, value, goal, ok?)."""
    out = []
    if "flood" in r:
        f = r["flood"]
        for name, what in (("translate", "cached /translate"), ("visualise", "/visualise of a new sentence")):
            out.append((f"Flood: another visitor's {what}, alone / while one address floods /ablate ({FLOOD} at once, "
                        f"then {TOP_UP_PER_S}/s; median, max)",
                        f"{f['alone'][name]['median_ms']:.0f}, {f['alone'][name]['max_ms']:.0f} / "
                        f"{f['during'][name]['median_ms']:.0f}, {f['during'][name]['max_ms']:.0f} ms", "", ""))
        errors = sum(v for k, v in f["during"]["outcomes"].items() if k != "complete")
        flood_codes = ", ".join(f"{v} × {k}" for k, v in sorted(f["flood_statuses"].items()))
        out.append(("Flood: the other visitor's requests not answered / page load status; the flood's answers",
                    f"{errors} / {f['during']['page_status']}; {flood_codes}", "0 / 200",
                    "yes" if errors == 0 and f["during"]["page_status"] == 200 else "**no**"))
    if "largest" in r:
        g = r["largest"]
        out.append(("Largest /attention answer (100 source tokens, the model's own translation at its limit): bytes; "
                    "first / cached time", f"{g['bytes'] / 1e6:.2f} MB; {g['first_ms']:.0f} / {g['cached_ms']:.0f} ms",
                    f"≤ {GOALS['largest_bytes'] / 1e6:.1f} MB", _ok(g["bytes"], GOALS["largest_bytes"])))
    if "unread" in r:
        u = r["unread"]
        out.append((f"Memory: app + model process RSS, {u['requests']} maximum-size /attention answers never read: "
                    "before / peak / once dropped", f"{u['rss_before_mb']:.0f} / {u['rss_peak_mb']:.0f} "
                    f"({u['peak_at_s']:.0f} s) / {u['rss_after_mb']:.0f} MB ({u['after_at_s']:.0f} s)",
                    f"after ≤ before + {AFTER_BOUND_MB} MB",
                    _ok(u["rss_after_mb"] - u["rss_before_mb"], AFTER_BOUND_MB)))
    if "concurrent" in r:
        c = r["concurrent"]
        out.append((f"Memory: {c['requests']} visitors at once, one maximum-size /attention answer each "
                    f"({c['answer_mb']:.1f} MB), read: RSS before / peak / after; p50 latency",
                    f"{c['rss_before_mb']:.0f} / {c['rss_peak_mb']:.0f} / {c['rss_after_mb']:.0f} MB; "
                    f"{c['latency']['median_ms'] / 1000:.1f} s ({dict(c['outcomes'])})",
                    f"after ≤ before + {AFTER_BOUND_MB} MB",
                    _ok(c["rss_after_mb"] - c["rss_before_mb"], AFTER_BOUND_MB)))
    if "bodies" in r:
        b = r["bodies"]
        out.append((f"{BODIES} request bodies of {BODY_MB} MB at once: answers (slowest); RSS before / after",
                    f"{', '.join(f'{v} × {k}' for k, v in b['answers'].items())} ({b['max_s']:.2f} s); "
                    f"{b['rss_before_mb']:.0f} / {b['rss_after_mb']:.0f} MB", "", ""))
    if "logs" in r:
        lg = r["logs"]
        out.append((f"Log bytes per bad input ({lg['bad_inputs']} of {len(BAD_INPUTS)} kinds, 50 KB texts among them; "
                    "tracebacks) / per good request", f"{lg['bytes_per_bad_input']:.0f} ({lg['tracebacks']}) / "
                    f"{lg['bytes_per_good_request']:.0f}", f"≤ {GOALS['log_bytes_per_bad_input']}",
                    _ok(lg["bytes_per_bad_input"], GOALS["log_bytes_per_bad_input"])))
    out += endurance.rows(r)
    if "hall" in r:
        out += hall.rows(r["hall"])
    return out
