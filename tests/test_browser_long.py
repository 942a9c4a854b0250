"""A 100-token sentence in Chromium (issue #16 item 7): the close-up's tick labels never overlap, measured on the
drawn SVG text (bounding boxes), on a wide screen, on a 390×844 phone (the wide page resized: the figure is drawn
for any width) and on a 430×932 one; focusing on tokens 41–60 with <s>/</s> hidden shows every label of the window
and says so in the title. The app and Chromium are tests/conftest.py's. The phone
(430×932) runs ``run_long_sentence`` and ``assert_no_overlapping_labels`` on the page of the phone layout test
(tests/test_browser_honest.py), resized: one page load less. Screenshots are not tests: ``python -m bench.screenshots
--only long``.
"""

from __future__ import annotations

from playwright.sync_api import Browser, Page
from test_browser import GD, TIMEOUT_MS, TITLE, Watch, open_app, source_tokens

from bench.common import SENTENCES

LONG = " ".join(SENTENCES)  # ~140 words: cut to the model's 100 tokens (with a warning)
SUBTITLE = f"(id) => ({GD})(id)?.layout?.title?.subtitle?.text || ''"  # what the close-up's focus leaves out
# Tick labels of one plot as drawn: their count and how many pairs overlap (boxes intersecting by > 1 px).
LABELS = """(id) => {
    const boxes = (sel) => [...document.querySelectorAll(`#${id} ${sel}`)]
        .map((e) => e.getBoundingClientRect()).filter((r) => r.width > 0 && r.height > 0);
    const overlaps = (rs) => {
        let n = 0;
        for (let i = 0; i < rs.length; i++) for (let j = i + 1; j < rs.length; j++) {
            const a = rs[i], b = rs[j];
            if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) n++;
        }
        return n;
    };
    const x = boxes('.xtick text'), y = boxes('.ytick text');
    return {x: x.length, y: y.length, xOverlaps: overlaps(x), yOverlaps: overlaps(y)};
}"""


# Resolves once a plot's tick labels have kept their number and boxes for 10 animation frames and 300 ms (Gradio
# resizes a plot after drawing it, and fonts may still load): a quiet window, not a fixed sleep.
SETTLED = """async (id) => {
    await document.fonts.ready;
    const shape = () => JSON.stringify([...document.querySelectorAll(`#${id} .xtick text, #${id} .ytick text`)]
        .map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }));
    let last = shape(), frames = 0, since = performance.now();
    while (frames < 10 || performance.now() - since < 300) {
        await new Promise((r) => requestAnimationFrame(r));
        const now = shape();
        if (now !== last) { frames = 0; since = performance.now(); last = now; } else frames++;
    }
}"""


def new_page(browser: Browser, width: int, height: int) -> tuple[Page, Watch]:
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    return page, Watch(page)


def run_long_sentence(page: Page) -> None:
    """Run the long sentence on the Attention tab of a page already open; until its close-up is drawn and still."""
    page.fill("#source textarea", LONG)
    page.click("#run")
    page.wait_for_function("() => /100 source tokens/.test(document.querySelector('#status').textContent)")
    page.wait_for_function("() => document.querySelectorAll('#detail .xtick text').length > 0")
    page.evaluate(SETTLED, "detail")


def assert_no_overlapping_labels(page: Page) -> None:
    assert source_tokens(page) == 100
    labels = page.evaluate(LABELS, "detail")
    assert labels["xOverlaps"] == 0 and labels["yOverlaps"] == 0, labels
    assert labels["x"] >= 8 and labels["y"] >= 15, labels  # thinned, not emptied


def test_a_100_token_close_up_has_no_overlapping_labels_and_focus_on_41_to_60_shows_all_of_them(
        browser: Browser, server: str):
    page, watch = new_page(browser, 1400, 1000)
    open_app(page, server)
    run_long_sentence(page)
    assert_no_overlapping_labels(page)
    # the same page at a 390×844 phone (plotly redraws the figures at the new width): still no overlaps
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_function("() => document.querySelector('#detail .main-svg')?.getBoundingClientRect().width < 390")
    page.evaluate(SETTLED, "detail")
    assert_no_overlapping_labels(page)
    page.set_viewport_size({"width": 1400, "height": 1000})

    # focus on tokens 41–60 without the special tokens
    page.locator("#kind input[value='encoder_self']").check()  # 100 source tokens on both axes
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Encoder self-attention')")
    page.get_by_text("Long sentence? Focus the close-up").click()
    for elem_id, value in (("focus-first", "41"), ("focus-last", "60")):
        number = page.locator(f"#{elem_id} input[type=number]")
        number.fill(value)
        number.press("Enter")
    page.wait_for_function(f"() => ({SUBTITLE})('detail').includes('tokens 41–60')")
    page.locator("#hide-special input[type=checkbox]").check()
    page.wait_for_function(f"() => ({SUBTITLE})('detail').includes('hidden, rows renormalised')")
    page.evaluate(SETTLED, "detail")
    labels = page.evaluate(LABELS, "detail")
    assert labels == {"x": 20, "y": 20, "xOverlaps": 0, "yOverlaps": 0}, labels
    page.context.close()
    assert watch.errors == [] and watch.outside == [] and watch.dialogs == [], vars(watch)
