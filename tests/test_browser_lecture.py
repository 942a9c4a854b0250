"""The lecture in a real browser at a projector's 1280×720, moved like slides: ``?lecture=1&stop=1`` and then the
keyboard alone (→ where the tab shown does not use the arrows itself, PageDown on the Decoding tab, PageUp back) walks
every stop IN PLACE — no page load between stops (a mark set on the window survives; the browser's navigation count
stays one) — on the lecture's own sentence (light), on a visitor's long sentence (dark) and on a short one (light), in
one loaded page each. Each stop opens its tab and view with no other click, in presentation mode, its URL the stop's
(so its link opens it directly); its outline, its mark and its caption name one row (the checked query of Inside a
head, the heatmap row the mark is on, the token the caption names); its mark on screen above the caption bar with the
figure it marks (from its label and title to its foot, or the part the stop is about), the bar fully visible, every
text on screen at least 16 px at a contrast of 4.5:1 or more (tests/helpers/present.py), its pointer the model's own
words (viz.views.lecture, checked against the shipped model in tests/test_lecture.py). The browser's Back and Forward
move between stops; the visitor's own sentence typed on a stop makes its marks stale until the next stop.

The app and Chromium are tests/conftest.py's (`python app.py`, the shipped model). Leaving a page while Gradio still
streams an answer logs the aborted stream ("AbortError", "Connection errored out"): those lines alone are allowed
(between the walks' page loads), every other console error fails the test.
"""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from helpers.browser import LEFT_BEHIND, TIMEOUT_MS, goto, tabs
from helpers.present import STILL, measure
from playwright.sync_api import Browser, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from viz.views import lecture
from viz.views.page import PAGE

OWN = "A man in a blue shirt is playing the guitar on the street."
SHORT = "Dogs run."
# The walks: the lecture's own sentence (light), a visitor's long one (dark), a short one (light): one page load each
WALKS = ((lecture.SENTENCE, False), (OWN, True), (SHORT, False))
# Stop n's mark on screen above the bar, and (``whole``) the figure it marks with it, from its label and title to its
# foot, or the part of it the mark names (its frame: e.g. Figure 1's attention blocks): on the lecture's own sentence;
# a longer sentence of the visitor's may make it taller than the screen
SHOWN = """([n, whole]) => {
  const bar = document.getElementById('lecture-bar');
  if (!bar || JSON.parse(bar.dataset.lecture).stop !== n || !window.attnLectureMark) return false;
  const b = bar.getBoundingClientRect();
  const inside = (r) => !!r && r.top >= 0 && r.left >= 0 && r.right <= innerWidth && r.bottom <= b.top;
  return !window.attnLectureMoving() && inside(window.attnLectureMark())
    && (!whole || inside(window.attnLectureFrame()));
}"""
# What the stop outlines, marks and names: Inside a head's checked query (its outline in the figures) and its label,
# the heatmap row the mark is on (its tick label), the caption's pointer
AGREE = """() => {
  const bar = document.getElementById('lecture-bar'), d = JSON.parse(bar.dataset.lecture), m = d.mark || {};
  const pointer = bar.querySelector('.lecture-pointer').textContent;
  const query = document.querySelector('#in-query input:checked');
  let row = null;
  const gd = document.querySelector(`#${m.plot} .js-plotly-plot`);
  if (gd && m.row !== undefined && m.row !== null && !m.tile) {
    const shape = (gd.layout.shapes || []).find((s) => s.name === 'lecture-mark');
    const t = m.kind ? null : gd._fullData.find((t) => t.type === 'heatmap');
    if (shape && t) {
      const ya = gd._fullLayout[(t.yaxis || 'y').replace(/^y/, 'yaxis')], y = (shape.y0 + shape.y1) / 2;
      const i = ya.tickvals ? [...ya.tickvals].findIndex((v) => Math.abs(v - y) < 0.01) : -1;
      row = ya.type === 'category' ? ya._categories[Math.round(y)] : i >= 0 ? String(ya.ticktext[i]) : null;
    }
  }
  return {stop: d.stop, mark: m, pointer, query: query && query.value,
          queryLabel: query && query.closest('label').textContent.trim(), row};
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


# the link follows the stop: its tab, and its view where the link names it (the page rewrites it once the view is set)
SYNCED = """([tab, view]) => {
  const q = new URLSearchParams(location.search);
  const named = Object.keys(view).filter((k) => q.has(k));
  return q.get('tab') === tab && named.every((k) => q.get(k) === String(view[k]));
}"""


def _shown(page: Page, n: int, whole: bool = True) -> None:
    """Until stop ``n``'s mark (and ``whole``: its frame) is on screen above the bar; if it never is, the failure says
    where things were."""
    try:
        page.wait_for_function(SHOWN, arg=[n, whole], timeout=TIMEOUT_MS)
    except PlaywrightTimeout:
        raise AssertionError((n, page.url, page.evaluate(WHERE))) from None


def _one_row(page: Page, n: int) -> str | None:
    """The outline, the mark and the caption name one row: Inside a head's checked query is the mark's, and the
    caption names its token; a marked heatmap row's label is the token the caption names. Returns the query."""
    got = page.evaluate(AGREE)
    mark, pointer = got["mark"], got["pointer"]
    if mark.get("query") is not None:
        token = got["queryLabel"].split(": ", 1)[1].lstrip("·")
        assert got["query"] == str(mark["query"]) and f"“{token}”" in pointer, (n, got)
    if mark.get("row") is not None and not mark.get("kind"):
        assert got["row"] is not None and f"“{got['row'].lstrip('·')}”" in pointer, (n, got)
    return got["query"] if mark.get("query") is not None else None


def _at_stop(page: Page, n: int, measured: bool = True, own: bool = True, whole: bool = True) -> dict:
    """Waits for stop ``n`` to show its mark on screen; checks its tab, view, mode, caption (``own``: the lecture's
    own sentence, whose words are written beside the stop) and that it was moved to in place; returns the state."""
    stop = lecture.STOPS[n - 1]
    _shown(page, n, whole)
    page.wait_for_function(SYNCED, arg=[stop.tab, {k: v for k, v in stop.view.items() if k != "query"}])
    state = page.evaluate(STATE)
    top, bottom, scroll_h, client_h = state["bar"]
    assert 0 <= top and bottom <= state["height"] and scroll_h <= client_h + 1, (n, state["bar"])  # nothing cut
    assert bottom - top <= 0.25 * state["height"], (n, state["bar"])  # compact: the figure keeps the screen
    assert (state["tab"], state["present"]) == (stop.tab, True), (n, state)
    if own:
        assert html.unescape(stop.claim) in state["text"], (n, state["text"])  # the model's own words, on the page
    row = _one_row(page, n)
    if row is not None:  # Inside a head's query, in its link too
        assert parse_qs(urlsplit(page.url).query)["query"] == [row], (n, page.url)
    assert page.evaluate("() => window.attnLectureWalk") == "loaded once", n  # moved in place: no page load
    assert f"{n} / {len(lecture.STOPS)}" in state["text"]
    if "show" in stop.view:  # Inside a head's view, opened by the link alone (no click)
        assert state["view"] == stop.view["show"]
    if stop.view.get("show") == "matrix" and whole:  # Equation (1)'s four maps ① → ④ on screen together
        assert all(0 <= t and b <= top for t, b in state["stages"]) and "① → ④ in reading order" in stop.look, state
    if stop.action == "predict":  # the step's Reveal on screen with the marked chart (and the predict mode on)
        assert state["predict"] and 0 <= state["reveal"][0] and state["reveal"][1] <= top, (state["reveal"], top)
    query = parse_qs(urlsplit(page.url).query)
    shown = {k: query[k][0] for k in stop.view if k in query and k != "query"}  # (the query: the pointer's row)
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
    """On stop 10, the visitor's own sentence: its marks are said to be for the stop's sentence (and go) until the
    next stop, which computes them for the new one."""
    page.fill("#source textarea, #source input", OWN)
    page.keyboard.press("Enter")
    page.wait_for_function("() => !document.querySelector('#lecture-bar .lecture-stale').hidden")
    assert page.evaluate("() => window.attnLectureMark()") is None  # the old mark is gone
    page.keyboard.press("PageDown")  # (the focus is in the sentence box: → stays the box's own)
    page.wait_for_url(re.compile(r"[?&]stop=11(&|$)"))
    text = _at_stop(page, 11, own=False)["text"]
    assert "“Ein Mann”" in text and lecture.STOPS[10].claim not in text, text  # recomputed on the new sentence


def _walk(page: Page, server: str, text: str, dark: bool) -> None:
    """Stop 1 loaded, then every stop by the keyboard, in place, each checked (``_at_stop``)."""
    query = urlencode({"lecture": "1", "stop": "1", "text": text, **({"__theme": "dark"} if dark else {})})
    goto(page, f"{server}?{query}")
    _shown(page, 1)
    # plotly's module fetched as the page loads (page.js: stop 1 draws no plotly figure), by the path Gradio serves it
    assert page.request.get(f"{server.rstrip('/')}/{PAGE['plotly']}").ok
    page.wait_for_function("() => !!window.Plotly")
    page.evaluate("() => { window.attnLectureWalk = 'loaded once'; }")
    long = len(text.split()) > 10  # Equation (1)'s four maps of a long sentence: two a row, taller than the screen
    for n in range(1, len(lecture.STOPS) + 1):
        state = _at_stop(page, n, own=text == lecture.SENTENCE, whole=not (long and n == 3))
        assert state["dark"] == dark and parse_qs(urlsplit(page.url).query)["text"] == [text], (n, page.url)
        if n == len(lecture.STOPS):
            break
        key = "PageDown" if lecture.STOPS[n - 1].tab == "decoding" else "ArrowRight"  # its arrows step the decoder
        page.keyboard.press(key)
        page.wait_for_url(re.compile(rf"[?&]stop={n + 1}(&|$)"))


@pytest.mark.parametrize(("text", "dark"), WALKS, ids=["lecture-light", "long-dark", "short-light"])
def test_the_whole_lecture_walks_in_place_with_the_keyboard(browser: Browser, server: str, text: str, dark: bool):
    tab = tabs(browser).take(1280, 720)
    page, watch = tab.page, tab.watch
    try:
        _walk(page, server, text, dark)
        last = len(lecture.STOPS)
        if text == lecture.SENTENCE:  # the browser's Back and Forward, and the key back
            page.go_back()
            _at_stop(page, last - 1, measured=False)
            page.go_forward()
            _at_stop(page, last, measured=False)
            page.keyboard.press("PageUp")
            page.wait_for_url(re.compile(rf"[?&]stop={last - 1}(&|$)"))
            _at_stop(page, last - 1, measured=False)
        if text == SHORT:  # back to stop 10 (the Attention tab), the visitor's own sentence there
            for n in (last - 1, last - 2):
                page.keyboard.press("PageUp")
                page.wait_for_url(re.compile(rf"[?&]stop={n}(&|$)"))
            _at_stop(page, last - 2, measured=False, own=False)
            _own_sentence(page)
        # the browser keeps no record of the runs (app.launch: run_history=False)
        assert page.evaluate("() => Object.keys(localStorage).filter((k) => k.startsWith('gradio:run-history'))") == []
    finally:
        tabs(browser).give_back(tab)
    watch.errors = [e for e in watch.errors if not LEFT_BEHIND.search(e)]
    watch.assert_clean()


# Each role word of Head analysis's grid within its cell (presentation mode's 16 px on a phone's narrow cells)
WORDS_FIT = """() => {
  const gd = document.querySelector('#heads-grid .js-plotly-plot'), x = gd._fullLayout.xaxis;
  const cell = x._length / x.tickvals.length;
  return [...gd.querySelectorAll('.heatmap-label text')].filter((t) => t.textContent.trim())
    .map((t) => [t.textContent, parseFloat(getComputedStyle(t).fontSize), t.getBoundingClientRect().width, cell]);
}"""


def test_on_a_phone_the_marks_of_figure_2_the_close_up_and_the_grid_are_on_screen(browser: Browser, server: str):
    """At 390×844 (presentation mode, as the lecture is): stop 8's Concat block, in Figure 2 wider than the phone, is
    scrolled into view (sideways: the figure is as tall as the screen, the page ends under it); stop 9's close-up
    whole above the bar; stop 12's role words each within its cell at 16 px (one page load, moved in place)."""
    tab = tabs(browser).take(390, 844)
    page, watch = tab.page, tab.watch
    try:
        goto(page, f"{server}?{urlencode({'lecture': '1', 'stop': '8'})}")
        _shown(page, 8, whole=False)
        for n in (9, 10, 11, 12):
            page.keyboard.press("PageDown")
            page.wait_for_url(re.compile(rf"[?&]stop={n}(&|$)"))
            if n in (9, 12):
                _shown(page, n)
        words = page.evaluate(WORDS_FIT)
        assert words and all(px >= 16 and width <= cell for _, px, width, cell in words), words
    finally:
        tabs(browser).give_back(tab)
    watch.errors = [e for e in watch.errors if not LEFT_BEHIND.search(e)]
    watch.assert_clean()
