"""Two checkouts of the app side by side: one interaction of ``bench.browser`` (a new sentence → the overview drawn) or
``bench.tabs`` (the Why tab's run, or a new query in Inside a head), clicked on each app's page in turn, so that both
meet the same machine at the same moments (a shared machine's speed drifts by ±10 % within an hour: two runs of
``python -m bench`` an hour apart do not compare a change).

    python -m bench.side_by_side {overview|why|inside|lecture} /path/to/before /path/to/after [--runs 16]

Each checkout's app (``python -m bench.serve``, with the checkout's own ``.venv`` where it has one: ``app_process``)
on a port of its own, one headless Chromium with a page on each. Prints, per checkout: the median click -> drawn (every
figure of the interaction, those out of the view too: the same for a checkout that draws them later), the
median echo and their ratio (``bench.tabs``'s measure), and for the Why run the median time from the answer's arrival
(its hidden textbox written) to its three figures drawn: the page's own share of a run. ``lecture``: walks of
``bench.lecture_walk`` (every stop, forward and back, a key as soon as the stop is drawn), one walk on each app in
turn, ``--runs`` walks each.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from pathlib import Path

from bench.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    CLICK_TO_ECHO,
    CLICK_TO_PLOT,
    HOOK_REACT,
    QUIET,
    QUIET_MS,
    SET_TEXT,
    new_text,
)
from bench.common import app_process
from bench.lecture_walk import report, walk
from bench.tabs import INSIDE, LIVE, select_tab, timed

# The answer's arrival: the Why run's hidden textbox written (window.benchArrived, in the page's clock)
ARRIVAL = """() => {
  const box = document.querySelector('#live-frames textarea');
  const {get, set} = Object.getOwnPropertyDescriptor(box, 'value')
    || Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value');
  Object.defineProperty(box, 'value', {configurable: true, get() { return get.call(this); },
    set(text) { if (text) window.benchArrived = performance.now(); set.call(this, text); }});
  document.addEventListener('attn-drawn', (ev) => {
    if (ev.target.closest && ev.target.closest('#live-entropy')) window.benchLastDrawn = performance.now();
  });
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("interaction", choices=("overview", "why", "inside", "lecture"))
    parser.add_argument("checkouts", nargs=2, type=Path)
    parser.add_argument("--runs", type=int, default=16)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright  # test requirement only

    with contextlib.ExitStack() as stack:
        apps = [stack.enter_context(app_process(("-m", "bench.serve"), checkout=checkout.resolve()))
                for checkout in args.checkouts]
        if args.interaction == "lecture":
            return lecture_walks(args.checkouts, [app.url for app in apps], args.runs)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            pages = []
            for app in apps:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(app.url, wait_until="load")
                page.wait_for_selector("#overview .js-plotly-plot", timeout=90_000)
                if args.interaction == "overview":
                    page.evaluate(HOOK_REACT)
                elif args.interaction == "why":
                    select_tab(page, "scaling", "#live-entropy .js-plotly-plot .main-svg", 60_000)
                    page.evaluate(ARRIVAL)
                else:
                    select_tab(page, "inside", "#in-scores .js-plotly-plot .main-svg", 60_000)
                pages.append(page)
            got = [{"drawn": [], "echo": [], "page": []} for _ in pages]
            for i in range(args.runs + 1):  # the first of each: a warm-up
                for page, out in zip(pages, got):
                    page.bring_to_front()
                    if args.interaction == "overview":  # bench.browser's row: a new sentence, then the echo
                        page.evaluate(SET_TEXT, ["#source textarea", new_text(100 + i)])
                        page.wait_for_timeout(50)  # Svelte takes the value
                        page.evaluate(QUIET, QUIET_MS)
                        drawn = page.evaluate(CLICK_TO_PLOT, 30_000)["total"] / 1000
                        page.evaluate(SET_TEXT, ["#echo-in textarea", f"echo {i}"])
                        page.evaluate(QUIET, QUIET_MS)
                        echo, own = page.evaluate(CLICK_TO_ECHO, [f"echo {i}", 30_000]) / 1000, None
                    elif args.interaction == "why":
                        page.evaluate(SET_TEXT, ["#live-text textarea", new_text(100 + i)])
                        page.wait_for_timeout(50)  # Svelte takes the value
                        drawn, _, echo = timed(page, LIVE, lambda p=page: p.click("#live-run"), 60_000)
                        own = page.evaluate("() => window.benchLastDrawn - window.benchArrived")
                    else:
                        radios = page.locator("#in-query input[type=radio]")  # the next query each time
                        query = (int(page.locator("#in-query input[type=radio]:checked").get_attribute("value"))
                                 + 1) % radios.count()
                        drawn, _, echo = timed(page, INSIDE, lambda p=page, q=query: p.click(
                            f"#in-query label:has(input[value='{q}'])"), 60_000)
                        own = None
                    if i:
                        out["drawn"].append(drawn * 1000)
                        out["echo"].append(echo * 1000)
                        if own is not None:
                            out["page"].append(own)
            browser.close()
    for checkout, out in zip(args.checkouts, got):
        drawn, echo = statistics.median(out["drawn"]), statistics.median(out["echo"])
        line = f"{checkout}: click -> drawn {drawn:.0f} ms, echo {echo:.0f} ms, {drawn / echo:.2f}×"
        if out["page"]:
            line += f"; answer -> drawn {statistics.median(out['page']):.1f} ms"
        print(line)


def lecture_walks(checkouts: list[Path], urls: list[str], runs: int) -> None:
    """``runs`` lecture walks on each app, one on each in turn; each walk's figures, then both checkouts' medians."""
    moves: list[list[float]] = [[] for _ in urls]
    for _ in range(runs):
        for checkout, url, got in zip(checkouts, urls, moves):
            result = walk(url, 1)
            report(result, lambda line, c=checkout: print(f"{c}:{line}"))
            got.extend(result["all_ms"])
    for checkout, got in zip(checkouts, moves):
        got.sort()
        print(f"{checkout}: {len(got)} moves, median {statistics.median(got):.0f} ms, "
              f"p95 {got[min(len(got) - 1, round(0.95 * (len(got) - 1)))]:.0f} ms")


if __name__ == "__main__":
    main()
