"""What a page load costs the whole machine (Chromium's processes, the app and its model process), in CPU seconds and
in wall time: the app opened in a new browser tab each time, the app opened again in the same tab, and the lecture's
stops walked in one tab (each stop loads its own URL).

    python -m bench.page_loads [--loads 8] [--trace]

``--trace``: also a Chromium trace of lecture stops 2–5 walked in one tab: the renderer's restyling
(UpdateLayoutTree: how many times, its time) and the machine's CPU for the four stops.

``record_page_load``: the requests a page load sends and which answers each waited for (``bench.hall`` replays them
as a lecture hall).

The browser tests load the app ~60 times, so this is what their time is made of (tests/helpers/browser.py's ``Tabs``
hands them tabs that loaded the app before). CPU is read from /proc/stat: everything the machine ran, so run it on a
quiet machine; each figure is the median of ``--loads`` loads after one warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from bench.common import app_process

DRAWN = ("() => !!document.querySelector('#translation textarea')?.value"
         " && !!document.querySelector('#detail .main-svg')")
IDLE = "() => !document.querySelector('.progress-text, .eta-bar')"  # every answer of the load in
# The lecture's stop n on screen: its caption bar says so and its mark is drawn (assets/web/lecture.js)
STOP = """(n) => { const bar = document.getElementById('lecture-bar');
  return !!bar && JSON.parse(bar.dataset.lecture).stop === n && !!window.attnLectureMark
    && !!window.attnLectureMark(); }"""
SETTLE_MS = 500  # after each load: its chained events' last answers


def machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (all cores), from /proc/stat."""
    fields = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def measured(load: Callable[[], None]) -> tuple[float, float]:
    """(machine CPU s, wall s) of ``load()`` and the settling after it."""
    cpu, start = machine_cpu(), time.perf_counter()
    load()
    wall = time.perf_counter() - start
    time.sleep(SETTLE_MS / 1000)
    return machine_cpu() - cpu, wall


def medians(samples: list[tuple[float, float]]) -> dict:
    return {"cpu_s": statistics.median(c for c, _ in samples), "wall_s": statistics.median(w for _, w in samples),
            "loads": len(samples)}


def restyling(path: str) -> tuple[int, float]:
    """(count, ms) of the UpdateLayoutTree events of a Chromium trace (the renderers' style recalculations)."""
    with open(path, encoding="utf-8") as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    found = [e for e in events if e.get("name") == "UpdateLayoutTree" and e.get("ph") == "X"]
    return len(found), sum(e.get("dur", 0) for e in found) / 1000


# ------------------------------------------------------------------------------ what a page load sends (bench.hall)
HOOK = r"""(() => {
  const log = window.__hallLog = [];
  const now = () => performance.now();
  const fetch0 = window.fetch;
  window.fetch = async function (input, init) {
    const url = typeof input === 'string' ? input : input.url;
    const sent = /queue\/join|run\/predict/.test(url) ? {url, at: now(), body: init && init.body} : null;
    if (sent) log.push(sent);
    const resp = await fetch0.apply(this, arguments);
    if (sent && /queue\/join/.test(url)) resp.clone().json().then(j => { sent.event_id = j.event_id; });
    if (sent && /run\/predict/.test(url)) resp.clone().text().then(() => { sent.done = now(); });
    if (/queue\/data/.test(url) && resp.body) {
      const [mine, theirs] = resp.body.tee();
      const reader = theirs.getReader(), text = new TextDecoder();
      let buffer = '';
      (async () => { for (;;) {
        const {done, value} = await reader.read();
        if (done) return;
        buffer += text.decode(value, {stream: true});
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const line = buffer.slice(0, end); buffer = buffer.slice(end + 2);
          if (!line.startsWith('data:')) continue;
          const m = JSON.parse(line.slice(5));
          if (m.msg === 'process_completed') log.push({completed: m.event_id, at: now()});
        }
      } })();
      return new Response(mine, {status: resp.status, statusText: resp.statusText, headers: resp.headers});
    }
    return resp;
  };
})();"""


def record_page_load(url: str, link: str, quiet_s: float = 3.0, timeout_s: float = 300.0) -> list[dict]:
    """What Chromium's page sends as it loads ``url + link`` (the second load, in a fresh context: the first warms the
    app), once every request it sent is answered and it sent nothing more for ``quiet_s``: steps ``{"path", "body",
    "after"}`` in the order sent, ``after`` the steps whose answers were in before it was sent."""
    from playwright.sync_api import sync_playwright  # a test requirement only

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(2):
                context = browser.new_context(viewport={"width": 1280, "height": 720})
                context.add_init_script(HOOK)
                page = context.new_page()
                page.goto(url + link)
                log, seen, end = [], 0, time.perf_counter() + timeout_s
                while time.perf_counter() < end:
                    page.wait_for_timeout(quiet_s * 1000)
                    log = page.evaluate("() => window.__hallLog")
                    if log and len(log) == seen and _answered(log):
                        break
                    seen = len(log)
                context.close()
        finally:
            browser.close()
    if not log or not _answered(log):
        raise RuntimeError(f"the page load of {link} was not answered within {timeout_s:.0f} s: {log}")
    completed = {e["completed"]: e["at"] for e in log if "completed" in e}
    sent = [e for e in log if "url" in e]
    done_at = [completed.get(e.get("event_id"), e.get("done")) for e in sent]
    steps = []
    for e in sent:
        body = json.loads(e["body"])
        body.pop("session_hash", None)
        steps.append({"path": "/gradio_api/" + ("queue/join" if "queue/join" in e["url"] else "run/predict"),
                      "body": body, "after": [j for j, at in enumerate(done_at) if at < e["at"]]})
    return steps


def _answered(log: list[dict]) -> bool:
    """Whether every request of a recorded page load was answered."""
    completed = {e["completed"] for e in log if "completed" in e}
    return all(e.get("event_id") in completed or "done" in e for e in log if "url" in e)


def run(loads: int, trace: bool = False, log: Callable[[str], None] = print) -> dict:
    from playwright.sync_api import sync_playwright  # a test requirement only

    out = {}
    with app_process(("-m", "bench.serve")) as app, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            def in_new_tab(url: str) -> None:
                context = browser.new_context(viewport={"width": 1280, "height": 720})
                page = context.new_page()
                page.goto(url)
                page.wait_for_function(DRAWN, timeout=90_000)
                page.wait_for_function(IDLE, timeout=90_000)
                context.close()

            samples = [measured(lambda: in_new_tab(app.url)) for _ in range(loads + 1)][1:]
            out["new_tab"] = medians(samples)

            page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()

            def in_same_tab(url: str) -> None:
                page.goto(url)
                page.wait_for_function(DRAWN, timeout=90_000)
                page.wait_for_function(IDLE, timeout=90_000)

            samples = [measured(lambda i=i: in_same_tab(f"{app.url}?layer={1 + i % 6}")) for i in range(loads + 1)]
            out["same_tab"] = medians(samples[1:])

            def stop(n: int) -> None:
                page.goto(f"{app.url}?lecture=1&stop={n}")
                page.wait_for_function(STOP, arg=n, timeout=90_000)
                page.wait_for_function(IDLE, timeout=90_000)

            stop(1)  # a warm-up
            out["lecture_stop"] = medians([measured(lambda n=n: stop(n)) for n in range(2, 2 + min(loads, 10))])
            if trace:
                stop(1)
                with tempfile.TemporaryDirectory() as folder:
                    path = f"{folder}/trace.json"
                    browser.start_tracing(path=path, categories=["devtools.timeline"])
                    cpu, _ = measured(lambda: [stop(n) for n in range(2, 6)])
                    browser.stop_tracing()
                    count, ms = restyling(path)
                out["lecture_trace"] = {"cpu_s": cpu, "restyles": count, "restyle_ms": ms}
        finally:
            browser.close()
    for name, what in (("new_tab", "the app in a new tab"), ("same_tab", "the app again in the same tab"),
                       ("lecture_stop", "a lecture stop (stops 2 on, one tab)")):
        r = out[name]
        log(f"  {what}: machine CPU {r['cpu_s']:.2f} s, wall {r['wall_s']:.2f} s (median of {r['loads']})")
    if trace:
        r = out["lecture_trace"]
        log(f"  lecture stops 2-5, traced: machine CPU {r['cpu_s']:.1f} s, restyled {r['restyles']} times in "
            f"{r['restyle_ms']:.0f} ms")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=8)
    parser.add_argument("--trace", action="store_true", help="trace lecture stops 2-5: their restyling")
    args = parser.parse_args()
    run(args.loads, args.trace)


if __name__ == "__main__":
    main()
