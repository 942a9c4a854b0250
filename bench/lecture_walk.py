"""The lecture moved like slides (assets/web/lecture.js): from a key (→, PageDown) to the next stop drawn — its figure,
its mark and its caption on screen, the page swapped — over a walk of all its stops in one tab, forward and back.

    python -m bench.lecture_walk [--walks 2] [--text "A man …"]

The time is the page's own (window.attnLectureMoves: from the key's handler to the stop drawn), so the machine's
load shows in it: run it on a quiet machine. Part of the ``browser`` section of ``python -m bench``.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from urllib.parse import urlencode

from bench.browser import CHROMIUM, CHROMIUM_ARGS, QUIET, QUIET_MS
from bench.common import app_process
from viz.views import lecture

GOAL_MS = 500.0  # a key to the next stop drawn, p95
# Stop n drawn: its caption bar says so, no move on its way, its mark on screen
DRAWN = """(n) => { const bar = document.getElementById('lecture-bar');
  return !!bar && JSON.parse(bar.dataset.lecture).stop === n && !!window.attnLectureMoving
    && !window.attnLectureMoving() && !!window.attnLectureMark(); }"""

STATE = """() => { const bar = document.getElementById('lecture-bar');
  return {shown: bar && bar.dataset.lecture ? JSON.parse(bar.dataset.lecture).stop : null, url: location.search,
          moving: !!window.attnLectureMoving && window.attnLectureMoving(), mark: !!window.attnLectureMark
          && !!window.attnLectureMark(), frame: window.attnLectureFrame ? window.attnLectureFrame() : null,
          tab: (document.querySelector('[role=tab][aria-selected=true]') || {}).textContent}; }"""


def walk(url: str, walks: int, text: str = "", timeout_ms: float = 90_000, quiet: bool = False) -> dict:
    """``walks`` walks of every stop (forward, then back) in one tab at 1280×720: each move's milliseconds. Each key is
    pressed as soon as the stop is drawn (a presenter who does not wait: what the stop started still runs, and the
    next move waits behind it), or with ``quiet`` once the page has not changed for ``QUIET_MS`` (one who talks
    first: the tabs' rows' rule, ``bench.tabs``)."""
    from playwright.sync_api import sync_playwright  # a test requirement only

    stops = len(lecture.STOPS)
    query = {"lecture": "1", "stop": "1", **({"text": text} if text else {})}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
            page.goto(f"{url}?{urlencode(query)}")
            page.wait_for_function(DRAWN, arg=1, timeout=timeout_ms)
            loads = page.evaluate("() => performance.getEntriesByType('navigation').length")
            n = 1
            for _ in range(walks):
                for step in [1] * (stops - 1) + [-1] * (stops - 1):
                    tab = lecture.STOPS[n - 1].tab
                    if quiet:
                        page.evaluate(QUIET, QUIET_MS)
                    page.keyboard.press(("PageDown" if step > 0 else "PageUp") if tab == "decoding"
                                        else ("ArrowRight" if step > 0 else "ArrowLeft"))
                    n += step
                    try:
                        page.wait_for_function(DRAWN, arg=n, timeout=timeout_ms)
                    except Exception as err:
                        raise RuntimeError(f"stop {n - step} → {n} not drawn: {page.evaluate(STATE)}") from err
            moves = page.evaluate("() => window.attnLectureMoves")
            same = page.evaluate("() => performance.getEntriesByType('navigation').length") == loads
        finally:
            browser.close()
    ms = sorted(m["ms"] for m in moves)
    slowest = max(moves, key=lambda m: m["ms"])
    return {"median_ms": statistics.median(ms), "p95_ms": ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))],
            "moves": len(ms), "all_ms": ms, "no_page_load": same,
            "sequence": [[m["stop"], m["ms"]] for m in moves],  # (each move in order: its stop, its ms)
            "quiet": quiet, "slowest": slowest,
            "per_stop_ms": {str(k): statistics.median(m["ms"] for m in moves if m["stop"] == k)
                            for k in range(1, stops + 1) if any(m["stop"] == k for m in moves)}}


def report(r: dict, log: Callable[[str], None] = print) -> None:
    quiet = " (the page quiet)" if r.get("quiet") else ""
    log(f"  lecture: a key{quiet} → the next stop drawn: median {r['median_ms']:.0f} ms, p95 {r['p95_ms']:.0f} ms over "
        f"{r['moves']} moves (goal p95 ≤ {GOAL_MS:.0f} ms); slowest: stop {r['slowest']['stop']} "
        f"{r['slowest']['ms']} ms; no page load: {r['no_page_load']}")
    log("  per stop (median ms): " + ", ".join(f"{k}: {v:.0f}" for k, v in r["per_stop_ms"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--walks", type=int, default=2)
    parser.add_argument("--text", default="", help="the sentence (default: the lecture's own)")
    parser.add_argument("--url", default="", help="an app already running (default: start one)")
    parser.add_argument("--quiet", action="store_true", help=f"each key once the page is quiet ({QUIET_MS} ms)")
    args = parser.parse_args()
    if args.url:
        report(walk(args.url, args.walks, args.text, quiet=args.quiet))
        return
    with app_process(("-m", "bench.serve")) as app:
        report(walk(app.url, args.walks, args.text, quiet=args.quiet))


if __name__ == "__main__":
    main()
