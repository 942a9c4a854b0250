"""Headless Chromium, the tabs after the Attention tab: a click -> the figures it changes drawn, against a click -> echo
shown on the same page and queue (``bench.browser``'s floor, ``python -m bench.serve``), the Attention tab's rule
(at most 3× the echo).

Each interaction is clicked with the mouse (Playwright) once the page is quiet (no change for ``QUIET_MS``); its time
runs from the click's pointerdown to the last of its figures drawn (the page script's ``attn-drawn`` event on each,
``assets/web/draw.js``), measured in the page with ``performance.now()``. After each, once the page is quiet again,
the echo is clicked. The interactions:

* Decoding: a step (Next ▶, then ◀ Previous: drawn in the page from every step's view it holds, no round trip), its
  Reveal (predict, then reveal; no round trip either) and a head (no round trip either: drawn from every head's view of
  the layer, which the page asks for once it is idle after a view came; the steps clicked first leave it time);
* Inside a head: a new query (no round trip: drawn from every query's panels of the head, which the page holds once
  the view is drawn; every panel drawn in the figure shown, only what changed: ``assets/web/inside.js``); timed to
  the panels in the view at the click (the page draws the others as they come near the view or once it is idle), and
  to all six (``inside_query_all``, printed beside the row);
* Head analysis: a statistic from its menu (a round trip: the grid drawn);
* Why 1/√d_k: a run of the trained model with the scale factor replaced, a sentence never sent before each time (a
  round trip: the two greedy decodes as one batch, the figures drawn in those shown: ``assets/web/live.js``); timed,
  like Inside a head's, to the figures in view at the click, and to all three (``scaling_run_all``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench import first_open
from bench.browser import CHROMIUM, CHROMIUM_ARGS, CLICK_TO_ECHO, QUIET, QUIET_MS, SET_TEXT, new_text
from bench.common import app_process, is_loopback, stats
from viz.views.head_analysis import STAT_CHOICES

GOAL = 3.0  # each interaction ÷ the echo on the same page
# Arms a watch for the next click: t0 is its pointerdown (the event's own time stamp); window.benchDone resolves to the
# milliseconds until the last of these plots' attn-drawn events, or (``seen``) of those of them in the view at the
# click — the page draws a change of a figure further down as it comes near the view or once the page is idle
# (``assets/web/draw.js``, drawWhenNear) — and window.benchAll to the milliseconds until every one is drawn.
WATCH = """([ids, timeout, seen]) => {
  let t0 = null, want = null;
  const inView = (id) => {
    const r = document.getElementById(id)?.getBoundingClientRect();
    return Boolean(r) && r.height > 0 && r.top < innerHeight && r.bottom > 0;
  };
  const start = (ev) => {
    t0 = ev.timeStamp;
    want = new Set(seen ? ids.filter(inView) : ids);
  };
  document.addEventListener('pointerdown', start, {capture: true, once: true});
  const all = new Set(ids);
  let done, fail, doneAll, failAll;
  window.benchDone = new Promise((resolve, reject) => { done = resolve; fail = reject; });
  window.benchAll = new Promise((resolve, reject) => { doneAll = resolve; failAll = reject; });
  window.benchAll.catch(() => {});
  const onDrawn = (ev) => {
    const id = ids.find((i) => ev.target.closest && ev.target.closest(`#${i}`));
    if (t0 === null || !id) return;
    all.delete(id);
    if (want.delete(id) && !want.size) done(performance.now() - t0);
    if (all.size) return;
    document.removeEventListener('attn-drawn', onDrawn);
    clearTimeout(timer);
    doneAll(performance.now() - t0);
  };
  const timer = setTimeout(() => {
    document.removeEventListener('attn-drawn', onDrawn);
    const error = new Error(`not drawn within ${timeout} ms: ${[...all]}`);
    fail(error);
    failAll(error);
  }, timeout);
  document.addEventListener('attn-drawn', onDrawn);
  return true;
}"""
DECODING = ("decode-top5", "decode-self", "decode-cross")
INSIDE = ("in-scores", "in-figure2", "in-projections", "in-head_output", "in-footnote4", "in-contributions")
LIVE = ("live-normal", "live-changed", "live-entropy")
LABELS = {"decoding": "Decoding, step by step", "inside": "Inside a head", "heads": "Head analysis",
          "scaling": "Why 1/√d_k"}
ROWS = {  # key -> what the table calls it
    "decoding_step": "Decoding: a step (Next / Previous) → its three figures drawn, no round trip",
    "decoding_reveal": "Decoding: Reveal → the top 5 drawn, no round trip",
    "decoding_head": "Decoding: a head → the two attention rows drawn (every step's view for it)",
    "inside_query": "Inside a head: a new query → the panels in view drawn (in the figures shown; those further down "
                    "as they come near or the page idles)",
    "heads_stat": "Head analysis: a statistic → the grid drawn",
    "scaling_run": "Why 1/√d_k: a run (a new sentence, the scale replaced) → its figures in view drawn (of three)",
}


def select_tab(page, tab_id: str, shown: str, timeout_ms: float) -> None:
    """Open a tab (from Gradio's "More tabs" menu where the row has no room for it) until ``shown`` has drawn."""
    tab = page.locator(f"[role=tab][data-tab-id={tab_id}]")
    if tab.count() and tab.first.is_visible():
        tab.first.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=LABELS[tab_id]).click()
    page.wait_for_selector(shown, timeout=timeout_ms)


def timed(page, ids: tuple[str, ...], click: Callable[[], None], timeout_ms: float,
          seen: bool = False) -> tuple[float, float, float]:
    """(click -> ``ids`` drawn (``seen``: those in the view), click -> all of them drawn, then click -> echo shown), in
    seconds, each clicked once the page is quiet."""
    page.evaluate(QUIET, QUIET_MS)
    page.evaluate(WATCH, [list(ids), timeout_ms, seen])
    click()
    drawn = page.evaluate("() => window.benchDone")
    every = page.evaluate("() => window.benchAll")
    text = f"echo {time.monotonic_ns()}"
    page.evaluate(SET_TEXT, ["#echo-in textarea", text])
    page.evaluate(QUIET, QUIET_MS)
    echo = page.evaluate(CLICK_TO_ECHO, [text, timeout_ms])
    return drawn / 1000, every / 1000, echo / 1000


def measure(url: str, repeats: int, log: Callable[[str], None] = print, timeout_ms: float = 60_000) -> dict:
    from playwright.sync_api import sync_playwright  # test requirement only

    times: dict[str, list[float]] = {key: [] for key in ROWS}
    every: dict[str, list[float]] = {"inside_query": [], "scaling_run": []}  # -> every figure drawn, out of view too
    echoes: list[float] = []
    offsite: list[str] = []

    def run(key: str, ids: tuple[str, ...], click: Callable[[], None], warm_up: bool = False,
            seen: bool = False) -> None:
        drawn, all_drawn, echo = timed(page, ids, click, timeout_ms, seen)
        if not warm_up:
            times[key].append(drawn)
            echoes.append(echo)
            if seen:
                every[key].append(all_drawn)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("request", lambda req: None if is_loopback(req.url) else offsite.append(req.url))
            page.goto(url, wait_until="load", timeout=60_000)
            page.wait_for_selector("#overview .js-plotly-plot", timeout=90_000)
            page.wait_for_function("() => document.querySelector('#translation textarea').value !== ''",
                                   timeout=60_000)

            # the Attention tab's sentence, taken over
            select_tab(page, "decoding", "#decode-cross .js-plotly-plot .main-svg", timeout_ms)
            for i in range(repeats + 1):
                run("decoding_step", DECODING, lambda: page.click("#step-next"), warm_up=not i)
                run("decoding_step", DECODING, lambda: page.click("#step-prev"), warm_up=not i)
            for i in range(repeats + 1):  # one head, then the mean, each a change
                head = 1 + i % 8
                run("decoding_head", ("decode-self", "decode-cross"),
                    lambda h=head: page.click(f"#decode-head label:has(input[value='{h}'])"), warm_up=not i)
                run("decoding_head", ("decode-self", "decode-cross"),
                    lambda: page.click("#decode-head label:has(input[value='0'])"), warm_up=not i)
            page.get_by_label("Predict, then reveal").check()
            page.evaluate(QUIET, QUIET_MS)
            for i in range(repeats + 1):  # a new step starts hidden; then Reveal
                page.click("#step-next" if i % 2 == 0 else "#step-prev")
                page.wait_for_function("() => /Next token: hidden/.test(document.querySelector('#decode-status')"
                                       ".textContent)", timeout=timeout_ms)
                run("decoding_reveal", ("decode-top5",), lambda: page.click("#reveal"), warm_up=not i)
            page.get_by_label("Predict, then reveal").uncheck()
            log(f"  tabs: decoding step {stats(times['decoding_step'])['median_ms']:.0f} ms, "
                f"reveal {stats(times['decoding_reveal'])['median_ms']:.0f} ms, "
                f"head {stats(times['decoding_head'])['median_ms']:.0f} ms")

            select_tab(page, "heads", "#heads-grid .js-plotly-plot .main-svg", timeout_ms)
            labels = [label for label, stat in STAT_CHOICES if stat in ("entropy", "confidence", "spread", "previous")]
            for i in range(2 * repeats + 1):
                page.click("#heads-stat input")  # the menu open (not timed), then an option
                option = page.get_by_role("option", name=labels[i % len(labels)], exact=True)
                run("heads_stat", ("heads-grid",), option.click, warm_up=not i)
            log(f"  tabs: heads statistic {stats(times['heads_stat'])['median_ms']:.0f} ms")

            select_tab(page, "scaling", "#live-entropy .js-plotly-plot .main-svg", timeout_ms)
            for i in range(repeats + 1):
                page.evaluate(SET_TEXT, ["#live-text textarea", new_text(100 + i)])
                page.wait_for_timeout(50)  # Svelte takes the value
                run("scaling_run", LIVE, lambda: page.click("#live-run"), warm_up=not i, seen=True)
            log(f"  tabs: scaling run {stats(times['scaling_run'])['median_ms']:.0f} ms in view, "
                f"{stats(every['scaling_run'])['median_ms']:.0f} ms all three figures")

            select_tab(page, "inside", "#in-scores .js-plotly-plot .main-svg", timeout_ms)
            n_queries = page.locator("#in-query input[type=radio]").count()
            for i in range(2 * repeats + 1):  # the next query each time
                shown = int(page.locator("#in-query input[type=radio]:checked").get_attribute("value"))
                query = (shown + 1) % n_queries
                run("inside_query", INSIDE, lambda q=query: page.click(f"#in-query label:has(input[value='{q}'])"),
                    warm_up=not i, seen=True)
            log(f"  tabs: inside query {stats(times['inside_query'])['median_ms']:.0f} ms in view, "
                f"{stats(every['inside_query'])['median_ms']:.0f} ms all six panels")
        finally:
            browser.close()
    echo = stats(echoes)
    out: dict = {"echo": echo, "offsite_requests": len(offsite),
                 **{f"{key}_all": stats(samples) for key, samples in every.items()}}
    for key, samples in times.items():
        s = stats(samples)
        out[key] = {**s, "ratio": s["median_ms"] / echo["median_ms"]}
    log(f"  tabs: echo {echo['median_ms']:.0f} ms; ratios "
        + ", ".join(f"{key} {out[key]['ratio']:.1f}" for key in ROWS))
    return out


def rows(r: dict) -> list[tuple[str, str, str, str]]:
    """The table's rows: each interaction (median / p95) and its ratio to the echo on the same page."""
    out = [("Browser, other tabs: click → echo shown (median / p95)",
            f"{r['echo']['median_ms']:.0f} / {r['echo']['p95_ms']:.0f} ms", "", "")]
    for key, what in ROWS.items():
        s = r[key]
        out.append((f"Browser, other tabs: {what} (median / p95; ÷ echo)",
                     f"{s['median_ms']:.0f} / {s['p95_ms']:.0f} ms; {s['ratio']:.1f}×", f"≤ {GOAL:.0f}×",
                     "yes" if s["ratio"] <= GOAL else "**no**"))
    if "first_open" in r:
        out += first_open.rows(r["first_open"])
    return out


def run(quick: bool, log: Callable[[str], None] = print) -> dict:
    with app_process(("-m", "bench.serve")) as app:
        out = measure(app.url, 3 if quick else 8, log=log)
        out["first_open"] = first_open.measure(app.url, 2 if quick else 4, log=log)  # each tab's first opening
        return out
