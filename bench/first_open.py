"""A tab opened for the first time: the click on its name -> its first figure drawn, for each tab after the Attention
tab, on pages just loaded (headless Chromium at 1280×720), against the goal of 1 s.

    python -m bench.first_open [--loads 3]

Each load opens every tab once, in the tab row's order, once the page is quiet (``bench.browser.QUIET``); the time runs
from the click's pointerdown to the first animation frame on which one of the tab's figures is shown drawn: a plotly
figure with its data, its SVG laid out (one the page drew before the tab showed counts as soon as it shows), Figure 1
with the session's blocks, the Model card's first table. Part of the ``tabs`` section of ``python -m bench``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bench.browser import CHROMIUM, CHROMIUM_ARGS, QUIET, QUIET_MS
from bench.common import app_process, stats

GOAL_MS = 1000.0
# tab id -> (its name on the tab row, what shows it drawn: plot ids, or a selector)
TABS = {
    "decoding": ("Decoding, step by step", ("decode-self", "decode-cross", "decode-top5")),
    "scaling": ("Why 1/√d_k", ("variance", "histogram", "softmax-weights", "curves")),
    "inside": ("Inside a head", ("in-projections", "in-scores", "in-m-projections")),
    "heads": ("Head analysis", ("heads-grid", "rollout-enc-raw", "rollout-enc")),
    "architecture": ("Architecture", "#figure1 svg [data-attention='cross']"),
    "lab": ("Lab", ("lab-table3a", "lab-curves", "lab-timelapse", "lab-heads")),
    "model-card": ("Model card", "#model-card-text table"),
}
# Armed before the click: window.benchFirst resolves to the milliseconds from its pointerdown to the first frame on
# which one of the plots ``ids`` (or the element ``selector``) is shown drawn
ARM = """([ids, selector, timeout]) => {
  let t0 = null;
  document.addEventListener('pointerdown', (ev) => { t0 = ev.timeStamp; }, {capture: true, once: true});
  const shown = (e) => !!e && e.getBoundingClientRect().width > 0 && e.checkVisibility();
  const drawn = () => selector ? shown(document.querySelector(selector)) : ids.some((id) => {
    const gd = document.querySelector(`#${id} .js-plotly-plot`);
    return !!gd && !!(gd.data && gd.data.length) && shown(gd.querySelector('.main-svg'));
  });
  window.benchFirst = new Promise((resolve, reject) => {
    const started = performance.now();
    const frame = (now) => {
      if (t0 !== null && drawn()) resolve(now - t0);
      else if (performance.now() - started > timeout) reject(new Error(`not drawn within ${timeout} ms`));
      else requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
  return true;
}"""


def measure(url: str, loads: int, log: Callable[[str], None] = print, timeout_ms: float = 60_000) -> dict:
    """Each tab's first opening on ``loads`` pages just loaded: {tab: stats (ms), ...}."""
    from playwright.sync_api import sync_playwright  # test requirement only

    times: dict[str, list[float]] = {tab: [] for tab in TABS}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            for _ in range(loads + 1):  # the first load is a warm-up (the browser's cache, the server's first runs)
                page.goto(url, wait_until="load", timeout=60_000)
                page.wait_for_function("() => document.querySelector('#detail .js-plotly-plot')?.data?.length > 0",
                                       timeout=90_000)
                for tab, (_, shows) in TABS.items():
                    page.evaluate(QUIET, QUIET_MS)
                    ids, selector = ((), shows) if isinstance(shows, str) else (shows, None)
                    page.evaluate(ARM, [list(ids), selector, timeout_ms])
                    page.locator(f"[role=tab][data-tab-id='{tab}']").click()
                    times[tab].append(page.evaluate("() => window.benchFirst") / 1000)
            for tab in TABS:
                times[tab] = times[tab][1:]
        finally:
            browser.close()
    out = {tab: stats(samples) for tab, samples in times.items()}
    log("  first open: " + ", ".join(f"{tab} {s['median_ms']:.0f} ms" for tab, s in out.items()))
    return out


def rows(r: dict) -> list[tuple[str, str, str, str]]:
    return [(f"Browser, a tab opened first: {TABS[tab][0]} → its first figure drawn (median / max)",
             f"{s['median_ms']:.0f} / {s['max_ms']:.0f} ms", f"≤ {GOAL_MS:.0f} ms",
             "yes" if s["max_ms"] <= GOAL_MS else "**no**") for tab, s in r.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--url", default="", help="an app already running (default: start one)")
    args = parser.parse_args()
    if args.url:
        measure(args.url, args.loads)
        return
    with app_process(("-m", "bench.serve")) as app:
        measure(app.url, args.loads)


if __name__ == "__main__":
    main()
