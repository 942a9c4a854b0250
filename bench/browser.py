"""Headless Chromium: click -> overview grid drawn, against click -> echo shown, on the same page and queue.

The page is ``python -m bench.serve`` (the app plus an echo button). Times are taken inside the page with
``performance.now()``, so Playwright's own round trips are not counted:

* visualise: from ``#run``.click() to the page script's ``attn-drawn`` event (``assets/web/draw.js``: plotly has
  drawn) from the overview once its ``gd.data`` is the new one (Gradio calls ``Plotly.react``). Every click sends
  a sentence never sent before (``new_text``: ~12 words, like the captions), so the model runs each time;
  ``cached`` clicks the same sentences again (the result cache answers: only the figures are built and drawn).
  The moment ``Plotly.react`` is called is recorded too: before it is network + server, after it is drawing.
* echo: from ``#echo-btn``.click() to the moment Gradio writes the echoed text into ``#echo-out``'s
  textarea (a hook on that element's ``value`` setter; no polling): the floor of a round trip, clicked once the
  page has drawn what the run started (the close-up, and the alignment view where it is on screen: no change to
  the page for ``QUIET_MS``), so that it is not a measure of the page's remaining work.
* clones: how many times Gradio's page called ``structuredClone`` (copying component data) from a click until the
  page was quiet (``app.progress_on_components`` keeps this down).
* lines: the alignment view of encoder self-attention at 60 tokens a side, all 8 heads: from a click on a token
  dot to its lines shown (the page script hides the others in the SVG, no replot; two frames later the browser has
  painted it), and from a click on a head choice to the new figure drawn (a server round trip and a full draw).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from bench.common import _POOL, app_process, cpu_seconds, is_loopback, stats, words

# Debian's Chromium, driven by Playwright (never `playwright install`); these flags keep it off the network.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
# Chromium 156's headless mode builds, for every new window (each Playwright context), its address bar's two popups
# as WebUI pages, in a renderer of their own: ~0.5 s of CPU a context, two thirds of what a new context costs, for
# nothing a headless page shows. Playwright 1.65.2 starts Chromium with a --disable-features list of its own, and
# Chromium keeps only the last such switch: this one repeats Playwright's list (tests/test_browser.py checks that it
# still does) and adds those two popups.
PLAYWRIGHT_DISABLED = (
    "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding", "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect", "TcpPortRandomizationWin", "OptimizationHints", "NetworkTimeServiceQuerying",
    "AimEnabled", "PreconnectToSearch", "msForceBrowserSignIn", "msEdgeUpdateLaunchServicesPreferredVersion",
)
NO_POPUPS = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup")
CHROMIUM_ARGS.append("--disable-features=" + ",".join((*PLAYWRIGHT_DISABLED, *NO_POPUPS)))

WORDS = 12  # a caption's length


def new_text(i: int) -> str:
    """The ``i``-th sentence of the run: ~12 words of the caption pool, none sent before in this run."""
    return f"{i}. " + words(WORDS, start=(5 * i) % (len(_POOL) - WORDS))

SET_TEXT = """([sel, text]) => {
  const box = document.querySelector(sel);
  box.value = text;
  box.dispatchEvent(new Event('input', {bubbles: true}));
}"""
# Wrap Plotly.react once, to note when the overview's redraw starts.
HOOK_REACT = """() => {
  if (window.Plotly && !window.Plotly.benchWrapped) {
    const react = window.Plotly.react;
    window.Plotly.react = function (gd, ...rest) {
      if (gd && gd.closest && gd.closest('#overview')) window.benchReactAt = performance.now();
      return react.call(this, gd, ...rest);
    };
    window.Plotly.benchWrapped = true;
  }
  if (!window.benchClonesCounted) {  // Gradio's page deep-copies component data with structuredClone
    const clone = window.structuredClone;
    window.benchClones = 0;
    window.structuredClone = function (...args) { window.benchClones += 1; return clone.apply(this, args); };
    window.benchClonesCounted = true;
  }
  return !!(window.Plotly && window.Plotly.benchWrapped);
}"""
CLICK_TO_PLOT = """async (timeout) => {
  const old = document.querySelector('#overview .js-plotly-plot'), before = old.data;
  window.benchReactAt = null;
  if (!window.benchCounting) {  // the overview's draws per click (one: draw.js skips the element Gradio drops)
    document.addEventListener('attn-drawn', (ev) => { if (ev.target.closest('#overview')) window.benchDraws += 1; });
    window.benchCounting = true;
  }
  window.benchDraws = 0;
  window.benchClones = 0;
  return await new Promise((resolve, reject) => {
    let t0;
    const done = (gd) => {
      if (!gd.closest || !gd.closest('#overview') || gd.data === before) return;
      const t1 = performance.now();
      document.removeEventListener('attn-drawn', onDrawn);
      old.removeListener('plotly_afterplot', onOld);
      clearTimeout(timer);
      resolve({total: t1 - t0, react: window.benchReactAt === null ? null : window.benchReactAt - t0});
    };
    // the page script's event once a figure is drawn (Gradio swaps the element); an app without it (a baseline
    // checkout) draws the new figure in the old element first
    const onDrawn = (ev) => done(ev.target), onOld = () => done(old);
    const timer = setTimeout(() => {
      document.removeEventListener('attn-drawn', onDrawn);
      old.removeListener('plotly_afterplot', onOld);
      reject(new Error(`overview not redrawn within ${timeout} ms`));
    }, timeout);
    document.addEventListener('attn-drawn', onDrawn);
    old.on('plotly_afterplot', onOld);
    t0 = performance.now();
    document.querySelector('#run').click();
  });
}"""
QUIET_MS = 400
# Resolves once the page has not changed for QUIET_MS (no DOM mutation: nothing drawn, no progress shown).
QUIET = """async (quietMs) => {
  if (!window.benchQuiet) {
    window.benchLastChange = performance.now();
    new MutationObserver(() => { window.benchLastChange = performance.now(); })
      .observe(document.body, {childList: true, subtree: true, attributes: true, characterData: true});
    window.benchQuiet = true;
  }
  const giveUp = performance.now() + 20 * quietMs;  // a page that never settles is measured as it is
  while (performance.now() - window.benchLastChange < quietMs && performance.now() < giveUp) {
    await new Promise((r) => setTimeout(r, quietMs - (performance.now() - window.benchLastChange) + 5));
  }
}"""
CLICK_TO_ECHO = """async ([text, timeout]) => {
  const out = document.querySelector('#echo-out textarea');
  const proto = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value');
  return await new Promise((resolve, reject) => {
    let t0;
    const finish = (ok) => {
      delete out.value;  // back to the prototype's accessor
      clearTimeout(timer);
      ok ? resolve(performance.now() - t0) : reject(new Error(`no echo within ${timeout} ms`));
    };
    const timer = setTimeout(() => finish(false), timeout);
    Object.defineProperty(out, 'value', {configurable: true, get() { return proto.get.call(this); },
      set(v) { proto.set.call(this, v); if (v === text) finish(true); }});
    t0 = performance.now();
    document.querySelector('#echo-btn').click();
  });
}"""


# The alignment view (the Attention tab's lines), scripts shared with tests/test_browser_decoding.py
LINES_WORDS = 53  # words(53): 60 SentencePiece tokens with EOS (the shipped model's tokenizer)
LINES_GD = "document.querySelector('#lines .js-plotly-plot')"
# Pixel position (viewport) of token dot `index` on side "q" (left) or "k" (right), scrolled into view first.
DOT = f"""([side, index]) => {{
  const gd = {LINES_GD}, fl = gd._fullLayout;
  const place = () => {{
    const box = gd.getBoundingClientRect(), ax = side === 'q' ? fl.yaxis : fl.yaxis2;
    return [box.left + fl.xaxis._offset + fl.xaxis.l2p(side === 'q' ? 0 : 1), box.top + ax._offset + ax.l2p(index)];
  }};
  const [, y] = place();
  window.scrollBy(0, y - window.innerHeight / 2);
  return place();
}}"""
# A click on a token dot (the mouse events plotly listens to), to its lines shown: gd.dataset.attnFocus changes when
# the page script has drawn the focus; two frames later the browser has painted it. Milliseconds.
CLICK_TOKEN_TO_DRAWN = f"""async ([x, y]) => {{
  const gd = {LINES_GD}, before = gd.dataset.attnFocus || '';
  return await new Promise((resolve) => {{
    const t0 = performance.now();
    const watch = new MutationObserver(() => {{
      if ((gd.dataset.attnFocus || '') === before) return;
      watch.disconnect();
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
    }});
    watch.observe(gd, {{attributes: true, attributeFilter: ['data-attn-focus']}});
    for (const type of ['mousemove', 'mousedown', 'mouseup', 'click']) {{
      document.elementFromPoint(x, y).dispatchEvent(new MouseEvent(type, {{bubbles: true, clientX: x, clientY: y}}));
    }}
  }});
}}"""
# A click on a head choice (0: all heads), to the new figure drawn with its lines. Milliseconds.
CLICK_HEAD_TO_DRAWN = f"""async (head) => {{
  const want = head === 0 ? 'all heads' : `head ${{head}}`;
  return await new Promise((resolve) => {{
    const t0 = performance.now();
    const poll = () => {{
      const gd = {LINES_GD};
      if (gd && gd.layout.title.text.endsWith(want) && gd.querySelector('.scatterlayer path')) {{
        requestAnimationFrame(() => resolve(performance.now() - t0));
      }} else requestAnimationFrame(poll);
    }};
    document.querySelector(`#lines-head input[value='${{head}}']`).click();
    requestAnimationFrame(poll);
  }});
}}"""


def lines(page, timeout_ms: float = 120_000) -> dict:
    """On a page of the app: encoder self-attention of a 60-token sentence in the alignment view, all 8 heads; click
    a token (pin, then let go) three times, then the head choices 5, all, 3, all."""
    page.locator("#kind input[value='encoder_self']").check()
    page.fill("#source textarea", words(LINES_WORDS))
    page.click("#run")
    page.wait_for_function("() => /60 source tokens/.test(document.querySelector('#status').textContent)",
                           timeout=timeout_ms)
    page.locator("#lines").scroll_into_view_if_needed()  # drawn once on screen
    page.wait_for_function(f"() => {LINES_GD}?.layout?.yaxis?.ticktext?.length === 60"
                           f" && !!{LINES_GD}.querySelector('.scatterlayer path')", timeout=timeout_ms)
    token_ms = []
    for i in range(3):
        x, y = page.evaluate(DOT, ["q", 10 + 7 * i])
        token_ms.append(page.evaluate(CLICK_TOKEN_TO_DRAWN, [x, y]))  # pin
        token_ms.append(page.evaluate(CLICK_TOKEN_TO_DRAWN, [x, y]))  # and let go: every line again
    # one head, all 8, another, all 8: each a new figure from the server (the view starts on all heads)
    head_ms = [page.evaluate(CLICK_HEAD_TO_DRAWN, head) for head in (5, 0, 3, 0)]
    return {"tokens_a_side": 60, "kind": "encoder_self", "heads": 8,
            "click_token_to_drawn": stats([ms / 1000 for ms in token_ms]),
            "click_head_to_drawn": stats([ms / 1000 for ms in head_ms])}


def measure(url: str, repeats: int, deadline: float, log: Callable[[str], None] = print) -> dict:
    from playwright.sync_api import sync_playwright  # test requirement only

    vis, react, echo, cached, draws, clones = [], [], [], [], [], []
    offsite: list[str] = []  # requests to anything but loopback (Chromium's flags stop their look-ups)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            # Watched, not intercepted: routing every request through Playwright would slow the clicks.
            page.on("request", lambda req: None if is_loopback(req.url) else offsite.append(req.url))
            t0 = time.perf_counter()
            page.goto(url, wait_until="load", timeout=60_000)
            page.wait_for_selector("#overview .js-plotly-plot", timeout=90_000)  # the load event's visualisation
            page.wait_for_function("() => document.querySelector('#translation textarea').value !== ''",
                                   timeout=60_000)
            page_ready_s = time.perf_counter() - t0
            page.wait_for_timeout(500)  # let the load-time resizes settle
            hooked = page.evaluate(HOOK_REACT)
            page.evaluate(QUIET, QUIET_MS)
            for i in range(repeats + 1):  # the first of each is a warm-up
                page.evaluate(SET_TEXT, ["#source textarea", new_text(i)])
                page.wait_for_timeout(50)  # Svelte takes the value
                r = page.evaluate(CLICK_TO_PLOT, 30_000)
                text = f"echo {i}"
                page.evaluate(SET_TEXT, ["#echo-in textarea", text])
                page.evaluate(QUIET, QUIET_MS)
                if i:  # (not the warm-up's)
                    clones.append(page.evaluate("() => window.benchClones"))  # the click's, until the page was quiet
                e = page.evaluate(CLICK_TO_ECHO, [text, 30_000])
                draws.append(page.evaluate("() => window.benchDraws"))  # (counted until the page was quiet)
                if i:
                    vis.append(r["total"] / 1000)
                    if r["react"] is not None:
                        react.append(r["react"] / 1000)
                    echo.append(e / 1000)
                if time.perf_counter() > deadline and len(vis) >= 3:
                    break
            for i in range(1, len(vis) + 1):  # the same sentences again: the result cache answers
                page.evaluate(SET_TEXT, ["#source textarea", new_text(i)])
                page.evaluate(QUIET, QUIET_MS)
                cached.append(page.evaluate(CLICK_TO_PLOT, 30_000)["total"] / 1000)
            alignment = lines(page)
        finally:
            browser.close()
    out = {"visualise": stats(vis), "echo": stats(echo), "cached": stats(cached), "page_ready_s": page_ready_s,
           "react_hooked": bool(hooked), "overview_draws_per_click": max(draws),
           "clones_per_click": sorted(clones)[len(clones) // 2], "offsite_requests": len(offsite),
           "offsite_examples": offsite[:5], "lines": alignment}
    if react:
        out["until_plotly_react"] = stats(react)
    out["ratio"] = out["visualise"]["median_ms"] / out["echo"]["median_ms"]
    log(f"  browser: visualise {out['visualise']['median_ms']:.0f} ms (cached {out['cached']['median_ms']:.0f} ms), "
        f"echo {out['echo']['median_ms']:.0f} ms, ratio {out['ratio']:.1f}")
    return out


def page_loads(url: str, pid: int, n: int) -> dict:
    """The server's CPU time for one visitor's page load (the app and its model process), in ``n`` fresh browser
    contexts, each until the first sentence is drawn: what every visitor of a Space costs it before any click."""
    from playwright.sync_api import sync_playwright  # test requirement only

    spent = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            for i in range(n + 1):  # the first loads the page's assets and the model's first run: a warm-up
                before = cpu_seconds(pid)
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = context.new_page()
                page.goto(url, wait_until="load", timeout=60_000)
                page.wait_for_function("() => document.querySelector('#translation textarea')?.value",
                                       timeout=60_000)
                page.wait_for_timeout(500)  # the load's chained events
                if i:
                    spent.append(cpu_seconds(pid) - before)
                context.close()
        finally:
            browser.close()
    return {"server_cpu_ms": sorted(spent)[len(spent) // 2] * 1000, "loads": len(spent)}


def run(quick: bool, log: Callable[[str], None] = print) -> dict:
    repeats = 3 if quick else 12
    with app_process(("-m", "bench.serve")) as app:
        out = measure(app.url, repeats, deadline=time.perf_counter() + (60 if quick else 240), log=log)
        out["page_load"] = page_loads(app.url, app.proc.pid, 3 if quick else 8)
        from bench import lecture_walk  # (it reads this module's Chromium)

        out["lecture"] = lecture_walk.walk(app.url, 1 if quick else 2)  # a key → the next stop drawn
        lecture_walk.report(out["lecture"], log)
        before, seconds = cpu_seconds(app.proc.pid), 3 if quick else 10
        time.sleep(seconds)  # no page open: what the app costs with no visitor
        out["idle_cpu_percent"] = 100 * (cpu_seconds(app.proc.pid) - before) / seconds
        out["idle_seconds"] = seconds
    log(f"  browser: a page load takes {out['page_load']['server_cpu_ms']:.0f} ms of the server's CPU; "
        f"with no visitor the app uses {out['idle_cpu_percent']:.1f} % of a core")
    return out
