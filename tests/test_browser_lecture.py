"""The lecture in a real browser at a projector's 1280×720: ``?lecture=1&stop=1`` and then the keyboard alone (→ where
the tab shown does not use the arrows itself, PageDown on the Decoding tab, PageUp back) walks every stop; each opens
its tab and view with no other click, in presentation mode, its mark on screen above the caption bar with the figure it
marks (from its label and title to its foot, or the part the stop is about: Equation (1)'s four maps, Figure 1's
attention blocks), the bar fully visible, every text on screen at least 16 px at a contrast of 4.5:1 or more
(tests/helpers/present.py), its pointer the model's own words (viz.views.lecture, checked against the shipped model in
tests/test_lecture.py). Then the visitor's own sentence on a stop (its marks said to be stale, then recomputed on
the next stop), in the dark theme, which the stops' links keep.

The app and Chromium are tests/conftest.py's (`python app.py`, the shipped model). Leaving a page while Gradio still
streams an answer logs the aborted stream ("AbortError", "Connection errored out"): those lines alone are allowed,
every other console error fails the test.
"""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlsplit

from helpers.browser import LEFT_BEHIND, TIMEOUT_MS, tabs
from helpers.present import STILL, measure
from playwright.sync_api import Browser, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from viz.views import lecture

OWN = "A man in a blue shirt is playing the guitar on the street."
# Stop n's mark on screen above the bar, and (``whole``) the figure it marks with it, from its label and title to its
# foot, or the part of it the mark names (its frame: e.g. Figure 1's attention blocks): on the lecture's own sentence;
# a longer sentence of the visitor's may make it taller than the screen
SHOWN = """([n, whole]) => {
  const bar = document.getElementById('lecture-bar');
  if (!bar || JSON.parse(bar.dataset.lecture).stop !== n || !window.attnLectureMark) return false;
  const b = bar.getBoundingClientRect();
  const inside = (r) => !!r && r.top >= 0 && r.left >= 0 && r.right <= innerWidth && r.bottom <= b.top;
  return inside(window.attnLectureMark()) && (!whole || inside(window.attnLectureFrame()));
}"""
WHERE = """() => {
  const bar = document.getElementById('lecture-bar'), box = (el) => el && el.getBoundingClientRect().toJSON();
  return {data: bar && bar.dataset.lecture, bar: box(bar), mark: window.attnLectureMark && window.attnLectureMark(),
          frame: window.attnLectureFrame && window.attnLectureFrame(), scrollY,
          height: document.documentElement.scrollHeight};
}"""
STATE = """() => {
  const bar = document.getElementById('lecture-bar'), b = bar.getBoundingClientRect();
  const tab = document.querySelector('[role=tablist] [role=tab][aria-selected=true][data-tab-id]');
  const checked = (id) => document.querySelector(`#${id} input:checked`)?.value ?? null;
  const box = (id) =>
    { const r = document.getElementById(id)?.getBoundingClientRect(); return r && [r.top, r.bottom]; };
  return {bar: [b.top, b.bottom, bar.scrollHeight, bar.clientHeight], text: bar.textContent, height: innerHeight,
          tab: tab && tab.dataset.tabId, present: document.body.classList.contains('attn-present'),
          view: checked('in-view'), predict: !!document.querySelector('#predict-mode input:checked'),
          reveal: box('reveal'), stages: ['in-m-scores', 'in-m-scaled', 'in-m-masked', 'in-m-weights'].map(box),
          dark: document.body.classList.contains('dark') || document.documentElement.classList.contains('dark')};
}"""


# Where each figure on screen is and how plotly laid it out (said when a text is cut or overlaps)
GEOMETRY = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((gd) => gd.offsetParent).map((gd) => {
  const box = (e) => {
    const r = e && e.getBoundingClientRect();
    return r && [r.left, r.top, r.width, r.height].map(Math.round);
  };
  const fl = gd._fullLayout || {};
  return {id: gd.closest('[id]:not(.js-plotly-plot)')?.id, box: box(gd), svg: box(gd.querySelector('.main-svg')),
          parent: box(gd.parentElement), size: [fl.width, fl.height], margin: fl.margin, autosize: gd.layout?.autosize};
})"""


def _shown(page: Page, n: int, whole: bool = True) -> None:
    """Until stop ``n``'s mark (and ``whole``: its frame) is on screen above the bar; if it never is, the failure says
    where things were."""
    try:
        page.wait_for_function(SHOWN, arg=[n, whole], timeout=TIMEOUT_MS)
    except PlaywrightTimeout:
        raise AssertionError((n, page.url, page.evaluate(WHERE))) from None


def _at_stop(page: Page, n: int, measured: bool = True) -> dict:
    """Waits for stop ``n`` to show its mark on screen; checks its tab, view, mode and caption; returns the state."""
    stop = lecture.STOPS[n - 1]
    _shown(page, n)
    page.wait_for_function("(tab) => new URLSearchParams(location.search).get('tab') === tab", arg=stop.tab)  # synced
    state = page.evaluate(STATE)
    top, bottom, scroll_h, client_h = state["bar"]
    assert 0 <= top and bottom <= state["height"] and scroll_h <= client_h + 1, (n, state["bar"])  # nothing cut
    assert bottom - top <= 0.25 * state["height"], (n, state["bar"])  # compact: the figure keeps the screen
    assert (state["tab"], state["present"]) == (stop.tab, True), (n, state)
    assert html.unescape(stop.claim) in state["text"], (n, state["text"])  # the model's own words, on the page
    assert f"{n} / {len(lecture.STOPS)}" in state["text"]
    if "show" in stop.view:  # Inside a head's view, opened by the link alone (no click)
        assert state["view"] == stop.view["show"]
    if stop.view.get("show") == "matrix":  # Equation (1)'s four maps ① → ④ on screen together, as it says
        assert all(0 <= t and b <= top for t, b in state["stages"]) and "① → ④, left to right" in stop.look, state
    if stop.action == "predict":  # the step's Reveal on screen with the marked chart (and the predict mode on)
        assert state["predict"] and 0 <= state["reveal"][0] and state["reveal"][1] <= top, (state["reveal"], top)
    query = parse_qs(urlsplit(page.url).query)
    shown = {k: query[k][0] for k in stop.view if k in query}
    assert shown == {k: v for k, v in stop.view.items() if k in shown} and shown, (n, page.url)  # the stop's view
    if measured:
        _large_and_clear(page, n)
    return state


def _large_and_clear(page: Page, n: int) -> None:
    """Every text on screen (the caption bar's too) at least 16 px and 4.5:1, no figure's texts over each other or
    cut: measured as presentation mode is (tests/helpers/present.py), once the figures keep still."""
    for _ in range(3):  # on a busy machine a figure may start a redraw after it kept still: a defect stays, that goes
        page.evaluate(STILL)
        got = measure(page, on_screen=True)
        if got["texts"] and not got["problems"]:
            return
        page.wait_for_timeout(1000)
    assert got["texts"] and not got["problems"], (n, page.url, got["problems"][:20], page.evaluate(GEOMETRY))


def _own_sentence(page: Page) -> None:
    """On stop 2, the visitor's own sentence: its marks are said to be for the stop's sentence (and go) until the next
    stop, which computes them for the new one."""
    page.fill("#source textarea, #source input", OWN)
    page.keyboard.press("Enter")
    page.wait_for_function("() => !document.querySelector('#lecture-bar .lecture-stale').hidden")
    assert page.evaluate("() => window.attnLectureMark()") is None  # the old mark is gone
    page.keyboard.press("PageDown")  # (the focus is in the sentence box: → stays the box's own)
    page.wait_for_url(re.compile(r"[?&]stop=3(&|$)"))
    _shown(page, 3, whole=False)  # (this sentence's 13 tokens: the four maps two a row again, taller than the screen)
    text = page.evaluate(STATE)["text"]
    assert "“shirt”" in text and lecture.STOPS[2].claim not in text, text  # recomputed on the new sentence
    _large_and_clear(page, 3)  # dark, the whole matrices of 13 tokens


def test_the_whole_lecture_walks_with_the_keyboard(browser: Browser, server: str):
    tab = tabs(browser).take(1280, 720)
    page, watch = tab.page, tab.watch
    try:
        page.goto(f"{server}?lecture=1&stop=1")
        for n in range(1, len(lecture.STOPS) + 1):
            _at_stop(page, n)
            if n == len(lecture.STOPS):
                break
            key = "PageDown" if lecture.STOPS[n - 1].tab == "decoding" else "ArrowRight"  # its arrows step the decoder
            page.keyboard.press(key)
            page.wait_for_url(re.compile(rf"[?&]stop={n + 1}(&|$)"))
        page.keyboard.press("PageUp")
        page.wait_for_url(re.compile(rf"[?&]stop={len(lecture.STOPS) - 1}(&|$)"))
        _at_stop(page, len(lecture.STOPS) - 1, measured=False)  # (measured on the way)
        page.goto(f"{server}?lecture=1&stop=2&__theme=dark")  # the dark theme, which Next keeps
        assert _at_stop(page, 2)["dark"]
        _own_sentence(page)
        assert "__theme=dark" in page.url and page.evaluate(STATE)["dark"]
        # 15 page loads and a sentence later, the browser keeps no record of the runs (app.launch: run_history=False)
        assert page.evaluate("() => Object.keys(localStorage).filter((k) => k.startsWith('gradio:run-history'))") == []
    finally:
        tabs(browser).give_back(tab)
    watch.errors = [e for e in watch.errors if not LEFT_BEHIND.search(e)]
    watch.assert_clean()
