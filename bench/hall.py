"""A lecture hall behind one address, a flooder and a lone visitor (``viz.ui.shares``; the hall rows of
`python -m bench --sections limits`, or alone: `python -m bench.hall [--checkout DIR]`, ``DIR`` another copy of the
app, e.g. the code before a change). One ``python app.py`` (with its model process) serves every part, in order:

- ``alone``: the visitor's /visualise of a new sentence, alone (its lone latency).
- ``class``: ``HALL`` clients from one address, each the ``PER_CLIENT`` sentences the lecture's slide shows (the
  app's first distinct examples, the same three for every student) through /visualise, one after another, all
  clients at once: answered / refused, p95. This is a hall in a lecture, and the goal's case.
- ``hall``: the same with ``PER_CLIENT`` *new* sentences per client (300 sentences the model never ran): the
  stress case, bounded by the model's CPU (its row gives the server's CPU per answer).
- ``pages``: ``PAGES`` page loads of a lecture link from one address, one every ``PAGES_WITHIN_S`` / ``PAGES`` s,
  each replaying what a page load sends: the page (GET of the link), then the events Chromium's page sent when it
  loaded the same link (recorded here first, ``record_page_load``), each sent once the answers it followed in the
  recording are in (``/gradio_api/queue/join`` and its stream, ``/gradio_api/run/predict``): pages complete, first
  figure (the first answer that carries a plotly figure) p95.
- ``flood``: the hall again, while another address sends ``FLOOD`` /ablate at once: the hall's answers and p95
  against the hall alone, and what the flood got.
The visitor, from a third address, sends one /visualise of a new sentence after another during each part: its
median against its lone median.
``--pooled ROUNDS``: instead, the class and the hall in turn ROUNDS times on one app, the visitor's requests during
each pooled against its lone median (one run gives it 5–6 requests during the class: its ratio moves by ± 0.5).

Addresses are loopback's own (127.0.0.x): each client binds its address, so the app sees three visitors without
any proxy header. The clients are light, so that the server is what is measured: the hall's students are one Node
process (``hall_client.mjs``: ~1.5 ms of CPU a request, where httpx took ~7 — on two cores, taken from the server),
the page loads and the flood asyncio + httpx here, the visitor blocking HTTP in a process of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import shutil
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import httpx

from bench.capacity import distinct_text
from bench.common import ROOT, app_process, cpu_seconds, stats, visualise_args
from bench.page_loads import record_page_load
from viz.views.attention.examples import EXAMPLES

HALL, PER_CLIENT = 100, 3
PAGES, PAGES_WITHIN_S = 100, 10.0
FLOOD = 300
FLOOD_CONNECTIONS = 32  # a script's pool (the server answers 503 past 256 connections from one address)
STOP = 3  # the lecture stop the hall opens: its load sends the most events of the stops recorded (1, 3, 7)
HALL_AT, FLOOD_AT, VISITOR_AT = "127.0.0.2", "127.0.0.3", "127.0.0.4"
VISITOR_GAP_S = 0.25  # between the visitor's requests
LONE_S = 4.0  # the visitor alone: its requests for this long (~12)
GOALS = {"hall_p95_s": 3.0, "visitor_ratio": 2.0}
START_S = 300
ABLATION = ["A dog runs in the park.", ["cross:1:1"]]
TIMEOUT_S = 600.0
NODE_CLIENT = Path(__file__).with_name("hall_client.mjs")


# ---------------------------------------------------------------------------------------------- the clients
def _client(address: str) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=address, retries=0,
                                         limits=httpx.Limits(max_connections=None, max_keepalive_connections=400,
                                                                     keepalive_expiry=1.0))  # < the server's 5 s
    return httpx.AsyncClient(transport=transport, timeout=TIMEOUT_S)


async def _sse(client: httpx.AsyncClient, url: str):
    """The ``data:`` payloads of a server-sent event stream, as text."""
    async with client.stream("GET", url) as resp:
        if resp.status_code != 200:
            yield json.dumps({"msg": "http", "status": resp.status_code})
            return
        async for line in resp.aiter_lines():
            if line.startswith("data:"):
                yield line[5:].strip()


async def call(client: httpx.AsyncClient, url: str, name: str, data: list) -> tuple[str, str]:
    """POST /gradio_api/call/<name>, then its answer: ("complete" | "error" | "refused <status>" | "failed", detail)."""
    try:
        resp = await client.post(f"{url}gradio_api/call/{name}", json={"data": data})
        if resp.status_code != 200:
            return f"refused {resp.status_code}", resp.text[:300]
        event, outcome = None, ("none", "")
        async with client.stream("GET", f"{url}gradio_api/call/{name}/{resp.json()['event_id']}") as answer:
            async for line in answer.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event in ("complete", "error"):
                    outcome = (event, line[5:].strip()[:300])
                    break
    except httpx.HTTPError as exc:
        return "failed", f"{type(exc).__name__}: {exc}"[:300]
    return outcome


async def hall(url: str, args: Callable[[int], list], log: Callable[[str], None], clients: int = HALL) -> dict:
    """``clients`` at ``HALL_AT``, each ``PER_CLIENT`` requests of /visualise one after another, all at once: through
    Node's own http (bench/hall_client.mjs) where ``node`` is installed — its CPU is a quarter of httpx's, and on two
    cores the client's CPU is taken from the server — else through httpx here. ``client_cpu_s``: the client's CPU."""
    node = shutil.which("node")
    if node is None:
        return await _hall_httpx(url, args, log, clients)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as spec:
        json.dump({"url": url, "address": HALL_AT, "name": "visualise", "clients": clients,
                   "per_client": PER_CLIENT, "data": [args(i) for i in range(clients * PER_CLIENT)]}, spec)
        spec.flush()
        child = await asyncio.create_subprocess_exec(node, str(NODE_CLIENT), spec.name, stdout=subprocess.PIPE)
        printed, _ = await child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"bench/hall_client.mjs failed ({child.returncode}): {printed[-300:]!r}")
    got = json.loads(printed)
    out = {"clients": clients, "requests": clients * PER_CLIENT, "outcomes": got["outcomes"], "wall_s": got["wall_s"],
           "examples": got["examples"], "client_cpu_s": got["cpu_s"], **_ms(got["latencies_s"])}
    log(f"    hall: {out}")
    return out


async def _hall_httpx(url: str, args: Callable[[int], list], log: Callable[[str], None], clients: int) -> dict:
    latencies, outcomes, refusals = [], Counter(), []
    async with _client(HALL_AT) as client:
        async def student(c: int) -> None:
            for r in range(PER_CLIENT):
                t0 = time.perf_counter()
                outcome, detail = await call(client, url, "visualise", args(c * PER_CLIENT + r))
                outcomes[outcome.split(" ")[0] if outcome.startswith("refused") else outcome] += 1
                if outcome == "complete":
                    latencies.append(time.perf_counter() - t0)
                elif len(refusals) < 3:
                    refusals.append(f"{outcome}: {detail}")

        t0 = time.perf_counter()
        await asyncio.gather(*(student(c) for c in range(clients)))
        wall = time.perf_counter() - t0
    out = {"clients": clients, "requests": clients * PER_CLIENT, "outcomes": dict(outcomes), "wall_s": wall,
           "examples": refusals, "client_cpu_s": None, **_ms(latencies)}
    log(f"    hall: {out}")
    return out


async def pages(url: str, link: str, steps: list[dict], log: Callable[[str], None], count: int = PAGES) -> dict:
    """``count`` page loads of ``link`` at ``HALL_AT``, evenly spread over ``PAGES_WITHIN_S``."""
    async with _client(HALL_AT) as client:
        async def later(i: int) -> dict:
            await asyncio.sleep(i * PAGES_WITHIN_S / count)
            return await page_load(client, url, link, steps)

        t0 = time.perf_counter()
        loads = await asyncio.gather(*(later(i) for i in range(count)))
        wall = time.perf_counter() - t0
    complete = [p for p in loads if p["complete"]]
    out = {"pages": count, "complete": len(complete), "events_per_page": len(steps), "wall_s": wall,
           "first_figure": _ms([p["first_figure_s"] for p in loads if p["first_figure_s"] is not None]),
           "page": _ms([p["page_s"] for p in complete]),
           "failures": Counter(f for p in loads for f in p["failures"]).most_common(3)}
    log(f"    pages: {out}")
    return out


async def page_load(client: httpx.AsyncClient, url: str, link: str, steps: list[dict]) -> dict:
    """One page load: the link's page, then ``steps`` in a new session, each once those it follows are answered."""
    t0 = time.perf_counter()
    session = uuid.uuid4().hex[:11]
    done = [asyncio.Event() for _ in steps]
    failures: list[str] = []
    waiting: dict[str, int] = {}  # event id -> step, posted and not yet answered
    posted = asyncio.Event()
    first_figure: list[float] = []

    def finish(i: int, failure: str | None = None) -> None:
        if failure:
            failures.append(failure[:120])
        done[i].set()

    async def stream() -> None:  # the session's answers, reopened while events wait (Gradio closes it when none do)
        while not all(d.is_set() for d in done):
            if not waiting:
                posted.clear()
                await posted.wait()
                continue
            async for data in _sse(client, f"{url}gradio_api/queue/data?session_hash={session}"):
                message = json.loads(data)
                if message.get("msg") == "process_completed" and message.get("event_id") in waiting:
                    if not first_figure and '"plotly"' in data:
                        first_figure.append(time.perf_counter() - t0)
                    i = waiting.pop(message["event_id"])
                    finish(i, None if message.get("success") else f"error: {data[:100]}")
                elif message.get("msg") in ("close_stream", "unexpected_error", "http"):
                    if message.get("msg") != "close_stream":
                        for i in waiting.values():
                            finish(i, f"stream: {data[:100]}")
                        waiting.clear()
                    break

    async def step(i: int) -> None:
        for j in steps[i]["after"]:
            await done[j].wait()
        if failures:
            return finish(i)  # a page whose earlier event failed goes no further (as its chain would not)
        resp = await client.post(url.rstrip("/") + steps[i]["path"], json={**steps[i]["body"], "session_hash": session})
        if resp.status_code != 200:
            return finish(i, f"{steps[i]['path']} {resp.status_code}: {resp.text[:80]}")
        if steps[i]["path"].endswith("join"):
            waiting[resp.json()["event_id"]] = i
            posted.set()
        else:
            if not first_figure and '"plotly"' in resp.text:
                first_figure.append(time.perf_counter() - t0)
            finish(i, None if "error" not in resp.json() else f"predict: {resp.text[:80]}")

    html = await client.get(url + link.lstrip("/"))
    if html.status_code != 200:
        failures.append(f"page {html.status_code}")
    reader = asyncio.ensure_future(stream())
    await asyncio.gather(*(step(i) for i in range(len(steps))))
    reader.cancel()
    return {"complete": not failures, "failures": failures, "page_s": time.perf_counter() - t0,
            "first_figure_s": first_figure[0] if first_figure else None}


async def flood(url: str) -> dict:
    """``FLOOD`` POSTs of /ablate at once from ``FLOOD_AT``, over ``FLOOD_CONNECTIONS`` connections (the answers of
    those accepted are not read)."""
    async with _client(FLOOD_AT) as client:
        connections = asyncio.Semaphore(FLOOD_CONNECTIONS)

        async def one(i: int) -> tuple[int, str]:
            async with connections:
                try:
                    resp = await client.post(f"{url}gradio_api/call/ablate", json={"data": ABLATION})
                except httpx.HTTPError as exc:
                    return 0, type(exc).__name__
            return resp.status_code, resp.text[:200]

        answers = await asyncio.gather(*(one(i) for i in range(FLOOD)))
    refusal = next((text for status, text in answers if status == 429), "")
    return {"statuses": {str(k): v for k, v in Counter(s for s, _ in answers).items()}, "refusal": refusal}


class Visitor:
    """The lone visitor at ``VISITOR_AT``: one /visualise of a new sentence after another (``VISITOR_GAP_S`` apart)
    until ``result()``, in a process of its own (``_visit``: blocking HTTP). In a thread of the bench's process it
    waited for that process's interpreter, busy with the hall's client: its latency was partly its own client's."""

    def __init__(self, url: str, data: list[list]):
        ctx = multiprocessing.get_context("spawn")
        self.stop, self.ready, self.answers = ctx.Event(), ctx.Event(), ctx.Queue()
        self.process = ctx.Process(target=_visit, args=(url, data, self.stop, self.ready, self.answers), daemon=True)
        self.latencies: list[float] = []

    def start(self) -> None:
        """Start it and wait until its first request is on its way."""
        self.process.start()
        if not self.ready.wait(60):
            raise RuntimeError("the visitor's process did not start within 60 s")

    def result(self) -> dict:
        self.stop.set()
        self.latencies, outcomes = self.answers.get(timeout=TIMEOUT_S)
        self.process.join(10)
        return {"outcomes": outcomes, **_ms(self.latencies)}


def _visit(url: str, data: list[list], stop, ready, answers) -> None:
    """The visitor's process: ``data`` one request after another until ``stop``; then (latencies, outcomes)."""
    parsed = urlparse(url)
    latencies, outcomes = [], Counter()
    for i, args in enumerate(data):
        if i == 0:
            ready.set()
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=TIMEOUT_S,
                                          source_address=(VISITOR_AT, 0))
        t0 = time.perf_counter()
        try:
            outcome = _ask(conn, args)
        except (OSError, http.client.HTTPException) as exc:
            outcome = f"failed {type(exc).__name__}"
        finally:
            conn.close()
        outcomes[outcome] += 1
        if outcome == "complete":
            latencies.append(time.perf_counter() - t0)
        if stop.wait(VISITOR_GAP_S):
            break
    answers.put((latencies, dict(outcomes)))


def _ask(conn: http.client.HTTPConnection, data: list) -> str:
    conn.request("POST", "/gradio_api/call/visualise", json.dumps({"data": data}), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    answer = resp.read()
    if resp.status != 200:
        return f"refused {resp.status}"
    conn.request("GET", f"/gradio_api/call/visualise/{json.loads(answer)['event_id']}")
    text = conn.getresponse().read().decode("utf-8", "replace")
    return "complete" if "event: complete" in text else "error"


def _ms(samples: list[float]) -> dict:
    if not samples:
        return {"n": 0, "median_ms": float("nan"), "p95_ms": float("nan"), "max_ms": float("nan")}
    s = stats(samples)
    return {"n": s["n"], "median_ms": s["median_ms"], "p95_ms": s["p95_ms"], "max_ms": s["max_ms"]}


# ----------------------------------------------------------------------------------------------- the parts
def run(quick: bool = False, log: Callable[[str], None] = print, checkout: Path = ROOT) -> dict:
    """Every part against one app (the module docstring); ``checkout``: the copy of the app to serve; ``quick``: a
    quarter of the clients and pages."""
    clients, count = (HALL // 4, PAGES // 4) if quick else (HALL, PAGES)
    link = f"?lecture=1&stop={STOP}"
    with app_process(("app.py",), timeout=START_S, checkout=checkout) as app:
        url = app.url
        info = json.loads(httpx.get(f"{url}gradio_api/info", timeout=60).text)["named_endpoints"]
        tail = [p.get("parameter_default") for p in info["/visualise"]["parameters"]][5:]

        def args(i: int) -> list:
            return visualise_args(distinct_text(i)) + tail

        slide = list(dict.fromkeys(e.sentence for e in EXAMPLES))[:PER_CLIENT]

        def slide_args(i: int) -> list:  # each student's r-th request: the slide's r-th sentence
            return visualise_args(slide[i % PER_CLIENT]) + tail

        steps = record_page_load(url, link)
        log(f"  hall: a page load of {link} sends {len(steps)} events: "
            f"{[s['path'].rsplit('/', 1)[1] for s in steps]}")
        visitor_data = [args(100_000 + i) for i in range(10_000)]
        offset = iter(range(0, 10_000, 200))

        def visitor() -> Visitor:
            v = Visitor(url, visitor_data[next(offset):])
            v.start()
            return v

        lone = visitor()
        time.sleep(LONE_S)
        out = {"link": link, "events_per_page": len(steps), "visitor_alone": lone.result()}
        log(f"  hall: the visitor alone {out['visitor_alone']}")
        for part, work in (("class", lambda: hall(url, slide_args, log, clients)),
                           ("hall", lambda: hall(url, args, log, clients)),
                           ("pages", lambda: pages(url, link, steps, log, count)),
                           ("flood", lambda: _with_flood(url, lambda i: args(10_000 + i), log, clients))):
            during, cpu = visitor(), cpu_seconds(app.proc.pid)
            out[part] = asyncio.run(work())
            out[part]["server_cpu_s"] = cpu_seconds(app.proc.pid) - cpu  # the app and its model process
            out[part]["visitor"] = during.result()
            log(f"  hall: {part}: the visitor during it {out[part]['visitor']}; the server's CPU "
                f"{out[part]['server_cpu_s']:.0f} s")
    return out


async def _with_flood(url: str, args: Callable[[int], list], log: Callable[[str], None], clients: int) -> dict:
    flooded = asyncio.ensure_future(flood(url))
    result = await hall(url, args, log, clients)
    result["flood"] = await flooded
    log(f"    flood: {result['flood']}")
    return result


# --------------------------------------------------------------------------------------------------- table
def rows(r: dict) -> list[tuple[str, str, str, str]]:
    """The hall's rows of the bench table: (metric, value, goal, ok?)."""
    lone = r["visitor_alone"]["median_ms"]

    def ratio(part: str) -> float:
        return r[part]["visitor"]["median_ms"] / lone

    def answered(h: dict) -> str:
        return ", ".join(f"{v} {k}" for k, v in sorted(h["outcomes"].items()))

    c, h, p, f = r["class"], r["hall"], r["pages"], r["flood"]
    refused_c = c["requests"] - c["outcomes"].get("complete", 0)
    refused = h["requests"] - h["outcomes"].get("complete", 0)
    refused_f = f["requests"] - f["outcomes"].get("complete", 0)
    goal_p95 = GOALS["hall_p95_s"] * 1000
    out = [
        (f"Class: {c['clients']} clients × the slide's {PER_CLIENT} sentences through /visualise from one address: "
         "answers; p50 / p95; the server's CPU per answer", f"{answered(c)}; {c['median_ms']:.0f} / "
         f"{c['p95_ms']:.0f} ms; {_per_answer(c)}",
         f"0 refused, p95 ≤ {goal_p95:.0f} ms", "yes" if refused_c == 0 and c["p95_ms"] <= goal_p95 else "**no**"),
        (f"Hall: {h['clients']} clients × {PER_CLIENT} new sentences through /visualise from one address: "
         "answers; p50 / p95; the server's CPU per answer (its floor: CPU ÷ 2 cores)",
         f"{answered(h)}; {h['median_ms']:.0f} / {h['p95_ms']:.0f} ms; {_per_answer(h)} "
         f"({h.get('server_cpu_s', 0) / 2:.0f} s)", "0 refused", "yes" if refused == 0 else "**no**"),
        (f"Hall: {p['pages']} page loads of {r['link']} from one address within {PAGES_WITHIN_S:.0f} s "
         f"({r['events_per_page']} events each): pages complete; first figure p50 / p95; whole page p95",
         f"{p['complete']} of {p['pages']}; {p['first_figure']['median_ms']:.0f} / {p['first_figure']['p95_ms']:.0f}"
         f" ms; {p['page']['p95_ms']:.0f} ms", f"{p['pages']} of {p['pages']}",
         "yes" if p["complete"] == p["pages"] else "**no**"),
        (f"Hall + flood: the hall while another address sends {FLOOD} /ablate at once: the hall's answers; p95 "
         "(× the hall alone); the flood's answers", f"{answered(f)}; {f['p95_ms']:.0f} ms "
         f"(× {f['p95_ms'] / h['p95_ms']:.2f}); " + ", ".join(f"{v} × {k}" for k, v in
                                                           sorted(f["flood"]["statuses"].items())),
         "the hall all answered", "yes" if refused_f == 0 else "**no**"),
        ("A visitor from a third address (/visualise, new sentences): median alone / during the class / the hall / "
         "the page loads / the hall + flood (× alone); not answered",
         f"{lone:.0f} / {r['class']['visitor']['median_ms']:.0f} (× {ratio('class'):.2f}) / "
         f"{r['hall']['visitor']['median_ms']:.0f} (× {ratio('hall'):.2f}) / "
         f"{r['pages']['visitor']['median_ms']:.0f} (× {ratio('pages'):.2f}) / {r['flood']['visitor']['median_ms']:.0f}"
         f" ms (× {ratio('flood'):.2f}); {_unanswered(r)}", f"≤ × {GOALS['visitor_ratio']:.0f}, 0",
         "yes" if max(ratio(p) for p in ("class", "hall", "pages", "flood")) <= GOALS["visitor_ratio"]
         and not _unanswered(r) else "**no**"),
    ]
    return out


def _per_answer(h: dict) -> str:
    answers = h["outcomes"].get("complete", 0) + h["visitor"]["outcomes"].get("complete", 0)
    return f"{1000 * h['server_cpu_s'] / answers:.0f} ms" if "server_cpu_s" in h and answers else "?"


def _unanswered(r: dict) -> int:
    return sum(v for part in ("class", "hall", "pages", "flood") for k, v in r[part]["visitor"]["outcomes"].items()
               if k != "complete")


def pooled(rounds: int, log: Callable[[str], None] = print, checkout: Path = ROOT) -> dict:
    """The visitor during the class and the hall, ``rounds`` of each in turn on one app, its every request pooled
    against its lone median (a run of ``run`` gives it 5–6 requests during the class: one ratio moves ± 0.5)."""
    with app_process(("app.py",), timeout=START_S, checkout=checkout) as app:
        url = app.url
        info = json.loads(httpx.get(f"{url}gradio_api/info", timeout=60).text)["named_endpoints"]
        tail = [p.get("parameter_default") for p in info["/visualise"]["parameters"]][5:]
        slide = list(dict.fromkeys(e.sentence for e in EXAMPLES))[:PER_CLIENT]
        data = [visualise_args(distinct_text(100_000 + i)) + tail for i in range(200 * (2 * rounds + 1))]
        lone = Visitor(url, data[:200])
        lone.start()
        time.sleep(LONE_S)
        alone = lone.result()["median_ms"]
        out: dict = {"alone_ms": alone, "class": {"ratios": [], "p95_ms": []}, "hall": {"ratios": [], "p95_ms": []}}
        during: dict[str, list[float]] = {"class": [], "hall": []}
        for r in range(rounds):
            for k, part in enumerate(("class", "hall")):
                def args(i: int, part=part, r=r) -> list:
                    text = slide[i % PER_CLIENT] if part == "class" else distinct_text(1000 * r + 10 * i + 7)
                    return visualise_args(text) + tail

                visitor = Visitor(url, data[200 * (2 * r + k + 1):][:200])
                visitor.start()
                got = asyncio.run(hall(url, args, lambda _: None, HALL))
                seen = visitor.result()
                during[part] += visitor.latencies
                out[part]["ratios"].append(seen["median_ms"] / alone)
                out[part]["p95_ms"].append(got["p95_ms"])
                log(f"  {part} {r + 1}: p95 {got['p95_ms']:.0f} ms; the visitor {seen['n']} × "
                    f"{seen['median_ms'] / alone:.2f}")
    for part, latencies in during.items():
        out[part]["pooled"] = _ms(latencies)["median_ms"] / alone
        out[part]["n"] = len(latencies)
        log(f"{part}: the visitor's {len(latencies)} requests pooled × {out[part]['pooled']:.2f} its lone {alone:.0f} "
            f"ms (rounds: {', '.join(f'× {x:.2f}' for x in out[part]['ratios'])}); the {part}'s p95 "
            f"{', '.join(f'{x:.0f}' for x in out[part]['p95_ms'])} ms")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the copy of the app to serve (default: this)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--quick", action="store_true", help="a quarter of the clients and pages")
    parser.add_argument("--pooled", type=int, metavar="ROUNDS", help="instead: the visitor during ROUNDS of the "
                        "class and of the hall in turn, its requests pooled (a steadier ratio than one run's)")
    args = parser.parse_args()
    if args.pooled:
        result = pooled(args.pooled, checkout=args.checkout.resolve())
        if args.json:
            args.json.write_text(json.dumps(result, indent=1, default=str))
        return
    result = run(args.quick, checkout=args.checkout.resolve())
    for row in rows(result):
        print(" | ".join(row))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
