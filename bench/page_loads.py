"""What a page load costs the whole machine (Chromium's processes, the app and its model process), in CPU seconds and
in wall time: the app opened in a new browser tab each time, the app opened again in the same tab, and the lecture's
stops walked in one tab (each stop loads its own URL).

    python -m bench.page_loads [--loads 8] [--trace]

``--trace``: also a Chromium trace of lecture stops 2–5 walked in one tab: the renderer's restyling
(UpdateLayoutTree: how many times, its time) and the machine's CPU for the four stops.

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
