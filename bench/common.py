"""What every section shares: fixed sentences, statistics, the app subprocess and a raw-HTTP Gradio client."""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from viz.offline import OFFLINE_ENV

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}

# Multi30k-like captions (written for the benchmark, not taken from the data set). `words(n)` walks
# through them in order, so a text of n words is the same on every run.
SENTENCES = (
    "Two dogs play in snow.",
    "A young man in a red shirt is riding a bicycle down a busy street.",
    "Two little girls in pink dresses are playing with a ball on the green grass.",
    "A brown dog jumps over a wooden fence while a woman watches from the porch.",
    "Several people are standing in front of a large white building waiting for the bus.",
    "An older woman with a blue hat is selling fresh vegetables at an outdoor market.",
    "A group of children are swimming in a lake near the mountains on a sunny day.",
    "A man wearing a black jacket plays the guitar for a small crowd in the park.",
    "Three workers in orange vests are repairing the road next to a tall brick wall.",
)
_POOL = " ".join(SENTENCES).split()


def words(n: int, start: int = 0) -> str:
    """``n`` words of the caption pool from word ``start`` on (ending with a full stop): a new ``start``
    gives a new sentence of about the same length (one the app has not cached yet)."""
    if not 1 <= n <= len(_POOL) - start or start < 0:
        raise ValueError(f"n must be 1..{len(_POOL) - start} from start {start}, got {n}")
    text = " ".join(_POOL[start:start + n])
    return text if text.endswith(".") else text.rstrip(",") + "."


def stats(samples_s: Sequence[float]) -> dict:
    """Seconds in -> milliseconds out: median, p95 (linear interpolation), min, max, n and the samples."""
    ms = sorted(1000.0 * s for s in samples_s)
    if not ms:
        raise ValueError("no samples")

    def pct(p: float) -> float:
        k = (len(ms) - 1) * p / 100.0
        lo, hi = math.floor(k), math.ceil(k)
        return ms[lo] + (ms[hi] - ms[lo]) * (k - lo)

    return {"median_ms": pct(50), "p95_ms": pct(95), "min_ms": ms[0], "max_ms": ms[-1], "n": len(ms),
            "samples_ms": [round(v, 3) for v in ms]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_loopback(url: str) -> bool:
    """Whether a request stays on this machine (data:, blob: and the browser's own schemes count as local)."""
    parsed = urlparse(url)
    if parsed.scheme in ("data", "blob", "about", "chrome", "chrome-extension"):
        return True
    return (parsed.hostname or "") in LOOPBACK


def read_status_kb(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/<pid>/status (VmHWM = peak resident set, VmRSS = now)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def tree_status_kb(pid: int, field: str) -> int:
    """``read_status_kb`` summed over ``pid`` and its descendants (the app and its model process,
    ``model.serving.worker``); for VmHWM, the sum of each process's own peak. A process that ends meanwhile counts 0."""
    total = 0
    for p in (pid, *descendants(pid)):
        try:
            total += read_status_kb(p, field)
        except (OSError, KeyError):  # gone, or a zombie (no memory lines)
            pass
    return total


def descendants(pid: int) -> list[int]:
    """``pid``'s children, their children, ... (the app's model process); one that ends meanwhile is left out."""
    out = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue  # the thread ended meanwhile
        for child in children:
            out += [child, *descendants(child)]
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` and its descendants so far (what they have used, not their children's
    after those ended), from /proc/<pid>/stat."""
    total = 0.0
    for p in (pid, *descendants(pid)):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


@dataclass
class AppProcess:
    url: str
    proc: subprocess.Popen
    spawned_at: float  # time.perf_counter() just before Popen
    http_200_s: float  # spawn -> first HTTP 200 on "/"
    log: Any = None  # the file its stdout and stderr go to

    def log_bytes(self) -> int:
        """How many bytes the app has written to its log so far."""
        self.log.flush()
        return os.fstat(self.log.fileno()).st_size

    def log_text(self, start: int = 0) -> str:
        """The app's log from byte ``start`` on (read without moving the file's offset, which the app writes at)."""
        end = self.log_bytes()
        return os.pread(self.log.fileno(), max(0, end - start), start).decode("utf-8", "replace")


@contextlib.contextmanager
def app_process(args: Sequence[str] = ("app.py",), timeout: float = 120.0,
                env: dict[str, str] | None = None, checkout: Path = ROOT) -> Iterator[AppProcess]:
    """``python <args>`` on a free loopback port (the browser tests' app too), timed and with its pid;
    ``env`` adds to the environment (e.g. ``ATTN_BATCH=0``, ``ATTN_CACHE_MB``); ``checkout``: the copy of the app it
    runs in (another one's, ``bench.side_by_side``: with its own ``.venv`` where it has one).

    Output goes to a temporary file (a pipe nobody reads could fill up and block the server).
    """
    own = checkout / ".venv" / "bin" / "python"
    python = str(own) if checkout != ROOT and own.exists() else sys.executable
    port = free_port()
    env = {**os.environ, **OFFLINE_ENV, **(env or {}), "GRADIO_SERVER_PORT": str(port), "PYTHONUNBUFFERED": "1"}
    env.pop("GRADIO_SERVER_NAME", None)  # Gradio's default: 127.0.0.1
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryFile(mode="w+") as log:
        start = time.perf_counter()
        proc = subprocess.Popen([python, *args], cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"{' '.join(args)} exited with {proc.returncode}:\n{log.read()[-4000:]}")
                try:
                    with urllib.request.urlopen(url, timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.perf_counter() - start > timeout:
                    raise TimeoutError(f"{' '.join(args)} did not answer on {url} within {timeout} s")
                time.sleep(0.02)
            yield AppProcess(url, proc, start, time.perf_counter() - start, log)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


class CallError(RuntimeError):
    """The event finished with ``event: error`` (or an unexpected HTTP answer)."""


_DEFAULTS: dict[tuple, list] = {}  # (host, port, endpoint) -> its parameters' defaults


class GradioHTTP:
    """Gradio's queue protocol over one keep-alive connection: POST /gradio_api/call/<name>, then GET its SSE.

    Not thread-safe: give each thread its own. ``call`` returns (outputs, bytes of the SSE answer). ``address``: the
    visitor this client stands for, sent as X-Forwarded-For (the app trusts it from loopback, as from a proxy, and
    shares its queue among visitors: ``viz.ui.shares``); None: the loopback address itself.
    """

    def __init__(self, url: str, timeout: float = 120.0, address: str | None = None):
        if not is_loopback(url):
            raise ValueError(f"the benchmark only talks to loopback addresses, not {url}")
        parsed = urlparse(url)
        self.host, self.port, self.timeout = parsed.hostname, parsed.port or 80, timeout
        self.headers = {"X-Forwarded-For": address} if address else {}
        self.conn: http.client.HTTPConnection | None = None

    def _request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        for attempt in (0, 1):  # one retry on a fresh connection if the kept-alive one was closed
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                headers = {**self.headers, **({"Content-Type": "application/json"} if body is not None else {})}
                self.conn.request(method, path, body=body, headers=headers)
                resp = self.conn.getresponse()
                data = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt:
                    raise
                continue
            if resp.status != 200:
                raise CallError(f"{method} {path}: HTTP {resp.status}: {data[:300]!r}")
            return data
        raise AssertionError("unreachable")

    def defaults(self, name: str) -> list:
        """The default of every parameter of endpoint ``name`` (None where it has none), from /gradio_api/info."""
        key = (self.host, self.port, name)
        if key not in _DEFAULTS:
            info = json.loads(self._request("GET", "/gradio_api/info"))
            params = info["named_endpoints"][f"/{name}"]["parameters"]
            _DEFAULTS[key] = [p.get("parameter_default") for p in params]
        return _DEFAULTS[key]

    def call(self, name: str, data: list, session_hash: str | None = None) -> tuple[list, int]:
        """Run endpoint ``name`` with ``data`` for its first inputs and the defaults for the rest (so that an
        input added to the app later does not break the benchmark). Each call is a new Gradio session unless
        ``session_hash`` names one (calls with the same hash share its gr.State)."""
        defaults = self.defaults(name)
        body = {"data": list(data) + defaults[len(data):]}
        if session_hash is not None:
            body["session_hash"] = session_hash
        answer = self._request("POST", f"/gradio_api/call/{name}", json.dumps(body).encode())
        event_id = json.loads(answer)["event_id"]
        raw = self._request("GET", f"/gradio_api/call/{name}/{event_id}")
        event = None
        for line in raw.decode("utf-8").splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                payload = line[5:].strip()
                if event == "error":
                    raise CallError(f"/{name} failed: {payload[:300]}")
                return json.loads(payload), len(raw)
        raise CallError(f"/{name}: no complete event in {raw[:300]!r}")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def visitor_address(i: int) -> str:
    """The ``i``-th simulated visitor's address (a private one, as X-Forwarded-For: ``GradioHTTP``)."""
    return f"10.77.{i // 250 % 256}.{i % 250 + 1}"


def visualise_args(text: str) -> list:
    """Inputs of the app's /visualise endpoint: text, target, kind, layer, head (0 = mean)."""
    return [text, "", "encoder_self", 1, 0]


def client_burst(app_url: str, n_clients: int, per_client: int, text: Callable[[int, int], list],
            endpoint: str = "visualise", timeout: float = 600.0, deadline: float | None = None) -> dict:
    """``n_clients`` threads (own connections) sending ``per_client`` requests each, all released at once;
    ``text(client, request)`` gives the request's inputs; none is sent after ``deadline`` (perf_counter).
    Each client is a visitor of its own (``visitor_address``). -> latency stats, requests/s and errors."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start_line = threading.Barrier(n_clients)

    def worker(c: int) -> None:
        client = GradioHTTP(app_url, timeout=timeout, address=visitor_address(c))
        try:
            start_line.wait(timeout=60)
            for r in range(per_client):
                if deadline is not None and time.perf_counter() > deadline:
                    with lock:
                        errors.append("deadline")
                    break
                t0 = time.perf_counter()
                try:
                    client.call(endpoint, text(c, r))
                except (CallError, OSError, ValueError) as exc:
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}"[:200])
                    client.close()
                    continue
                with lock:
                    latencies.append(time.perf_counter() - t0)
        except threading.BrokenBarrierError:
            with lock:
                errors.append("barrier")
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in range(n_clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    wall = time.perf_counter() - t0
    errors += ["thread still running"] * sum(t.is_alive() for t in threads)
    out = stats(latencies) if latencies else {"median_ms": float("nan"), "p95_ms": float("nan"), "n": 0}
    out.pop("samples_ms", None)
    return {**out, "clients": n_clients, "requests_per_client": per_client, "wall_s": wall,
            "throughput_rps": len(latencies) / wall if wall > 0 else 0.0, "errors": len(errors),
            "error_examples": sorted(set(errors))[:5]}
