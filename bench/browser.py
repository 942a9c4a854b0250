"""Headless Chromium: click -> overview grid drawn, against click -> echo shown, on the same page and queue.

The page is ``python -m bench.serve`` (the app plus an echo button). Times are taken inside the page with
``performance.now()``, so Playwright's own round trips are not counted:

* visualise: from ``#run``.click() to the overview's ``plotly_afterplot`` once its ``gd.data`` is the new
  one (Gradio calls ``Plotly.react``; the text alternates, so every click brings new data). The moment
  ``Plotly.react`` is called is recorded too: before it is network + server, after it is plotly drawing.
* echo: from ``#echo-btn``.click() to the moment Gradio writes the echoed text into ``#echo-out``'s
  textarea (a hook on that element's ``value`` setter; no polling).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from bench.common import app_process, is_loopback, stats

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

TEXTS = (
    "A man in a blue shirt is playing the guitar on the street.",
    "Two dogs are running through the snow.",
)
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
  return !!(window.Plotly && window.Plotly.benchWrapped);
}"""
CLICK_TO_PLOT = """async (timeout) => {
  const gd = document.querySelector('#overview .js-plotly-plot');
  const before = gd.data;
  window.benchReactAt = null;
  return await new Promise((resolve, reject) => {
    let t0;
    const onPlot = () => {
      if (gd.data === before) return;
      const t1 = performance.now();
      gd.removeListener('plotly_afterplot', onPlot);
      clearTimeout(timer);
      resolve({total: t1 - t0, react: window.benchReactAt === null ? null : window.benchReactAt - t0});
    };
    const timer = setTimeout(() => {
      gd.removeListener('plotly_afterplot', onPlot);
      reject(new Error(`overview not redrawn within ${timeout} ms`));
    }, timeout);
    gd.on('plotly_afterplot', onPlot);
    t0 = performance.now();
    document.querySelector('#run').click();
  });
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


def measure(url: str, repeats: int, deadline: float, log: Callable[[str], None] = print) -> dict:
    from playwright.sync_api import sync_playwright  # test requirement only

    vis, react, echo = [], [], []
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
            for i in range(repeats + 1):  # the first of each is a warm-up
                page.evaluate(SET_TEXT, ["#source textarea", TEXTS[i % 2]])
                page.wait_for_timeout(50)  # Svelte takes the value
                r = page.evaluate(CLICK_TO_PLOT, 30_000)
                text = f"echo {i}"
                page.evaluate(SET_TEXT, ["#echo-in textarea", text])
                page.wait_for_timeout(50)
                e = page.evaluate(CLICK_TO_ECHO, [text, 30_000])
                if i:
                    vis.append(r["total"] / 1000)
                    if r["react"] is not None:
                        react.append(r["react"] / 1000)
                    echo.append(e / 1000)
                if time.perf_counter() > deadline and len(vis) >= 3:
                    break
        finally:
            browser.close()
    out = {"visualise": stats(vis), "echo": stats(echo), "page_ready_s": page_ready_s,
           "react_hooked": bool(hooked), "offsite_requests": len(offsite),
           "offsite_examples": offsite[:5]}
    if react:
        out["until_plotly_react"] = stats(react)
    out["ratio"] = out["visualise"]["median_ms"] / out["echo"]["median_ms"]
    log(f"  browser: visualise {out['visualise']['median_ms']:.0f} ms, echo {out['echo']['median_ms']:.0f} ms, "
        f"ratio {out['ratio']:.1f}")
    return out


def run(quick: bool, log: Callable[[str], None] = print) -> dict:
    repeats = 3 if quick else 12
    with app_process(("-m", "bench.serve")) as app:
        return measure(app.url, repeats, deadline=time.perf_counter() + (60 if quick else 240), log=log)
