"""Each tab opened for the first time: from the click on its name to its first figure drawn on screen (a plotly
figure with its plot area, or Figure 1's blocks), in a fresh page each (the app loaded and quiet first).

    python -m bench.tab_open [--loads 3] [--url http://127.0.0.1:7860/]

Measured in the page (``performance.now()`` from the click's pointerdown), median of ``--loads`` fresh pages per tab;
the goal is 1 s. Part of the ``tabs`` section of ``python -m bench``.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

from bench.browser import CHROMIUM, CHROMIUM_ARGS, QUIET, QUIET_MS
from bench.common import app_process

GOAL_MS = 1000.0
TABS = ("decoding", "scaling", "inside", "heads", "architecture", "lab")
# Armed before the click: resolves to the milliseconds from the tab's pointerdown to a figure drawn in its panel
WATCH = """(tab) => { window.benchFirst = new Promise((resolve) => {
  const button = document.querySelector(`[role=tab][data-tab-id="${tab}"]`);
  let t0 = null;
  button.addEventListener('pointerdown', (e) => { t0 = performance.now(); }, {once: true, capture: true});
  const drawn = () => {
    const panel = [...document.querySelectorAll('[role=tabpanel]')].find((p) => p.offsetParent);
    return !!panel && [...panel.querySelectorAll('.js-plotly-plot .main-svg .plot, #figure1 svg g[data-attention]')]
      .some((e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; });
  };
  const check = () => {
    if (t0 !== null && button.getAttribute('aria-selected') === 'true' && drawn()) {
      resolve(performance.now() - t0);
    } else setTimeout(check, 5);
  };
  check();
}); }"""


def first_opens(url: str, loads: int, timeout_ms: float = 90_000) -> dict:
    """Per tab: the median milliseconds from its click to its first figure, over ``loads`` fresh pages."""
    from playwright.sync_api import sync_playwright  # a test requirement only

    out: dict[str, list[float]] = {tab: [] for tab in TABS}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(loads):
                for tab in TABS:
                    context = browser.new_context(viewport={"width": 1280, "height": 720})
                    page = context.new_page()
                    page.goto(url)
                    page.wait_for_selector("#detail .main-svg", timeout=timeout_ms)
                    page.evaluate(QUIET, QUIET_MS)
                    page.evaluate(WATCH, tab)
                    page.locator(f"[role=tab][data-tab-id='{tab}']").click()
                    out[tab].append(page.evaluate("() => window.benchFirst"))
                    context.close()
        finally:
            browser.close()
    return {tab: {"median_ms": statistics.median(ms), "max_ms": max(ms), "loads": len(ms)} for tab, ms in out.items()}


def report(r: dict, log: Callable[[str], None] = print) -> None:
    for tab, got in r.items():
        log(f"  {tab}: its first opening → first figure drawn: median {got['median_ms']:.0f} ms, most "
            f"{got['max_ms']:.0f} ms (goal ≤ {GOAL_MS:.0f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--url", default="", help="an app already running (default: start one)")
    args = parser.parse_args()
    if args.url:
        report(first_opens(args.url, args.loads))
        return
    with app_process(("-m", "bench.serve")) as app:
        report(first_opens(app.url, args.loads))


if __name__ == "__main__":
    main()
