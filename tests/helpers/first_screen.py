"""The first screen of each tab at a projector's 1280×720, measured in the page: the tab's main figure whole — its
drawing and every text of it (titles, tick and axis labels, legends) — between the screen's top and its foot, with the
page scrolled to the top as the tab opens (``FIRST_SCREEN``). Used by tests/test_browser_present.py, normal and
presentation mode, and after an example is chosen on the Attention tab (then on the screen as the page scrolled it:
classroom.js brings the example's caption and the figures on screen together).
"""

from __future__ import annotations

from playwright.sync_api import Page

from helpers.scripts import still

# Each tab's main figures (the Plot or SVG figure's element ids) that its first screen shows whole. The Lab's is its
# first figure, Table 3 (A) (its training curves, four panels of ~250 px, are taller than any screen). Inside a head's
# is its panel (a), for the sentence it opens on (a sentence of more than ~10 keys makes it taller, 17 px a key: it
# scrolls, viz.inside.projections_spec); Architecture's is Figure 1 (890 × 442 in its viewBox, drawn ~1.3× its size:
# assets/web/figure1.js). The Model card has no figure.
MAIN = {
    "attention": ("overview", "detail"),
    "decoding": ("decode-self", "decode-cross"),
    "scaling": ("variance", "histogram"),
    "inside": ("in-projections",),
    "heads": ("heads-grid",),
    "architecture": ("figure1",),
    "lab": ("lab-table3a",),
}
STILL = still(".js-plotly-plot .main-svg, svg text, .prose, [role=tablist]")

# [id, top, bottom] of each figure as drawn now (its SVG and its texts; null until drawn)
BOXES = """(ids) => ids.map((id) => {
    const root = document.getElementById(id), gd = root && root.querySelector('.js-plotly-plot');
    const svg = gd ? (gd.data && gd.data.length ? gd.querySelector('.main-svg') : null) : root && root.querySelector(
        'svg[viewBox]');
    if (!svg) return [id, null, null];
    const box = svg.getBoundingClientRect();
    let top = box.top, bottom = box.bottom;
    for (const t of (gd || svg).querySelectorAll('svg text')) {
        const r = t.getBoundingClientRect();
        if (!r.height || !t.textContent.trim() || t.closest('.hoverlayer')) continue;
        top = Math.min(top, r.top);
        bottom = Math.max(bottom, r.bottom);
    }
    return [id, Math.round(top), Math.round(bottom)];
})"""
DRAWN = f"(ids) => ({BOXES})(ids).every(([, top]) => top !== null)"


def open_tab(page: Page, tab: str, ids: tuple[str, ...]) -> None:
    """Open ``tab`` by its button, until ``ids`` are drawn and the page keeps still; scrolled to the top."""
    page.locator(f"[role=tab][data-tab-id='{tab}']").click()
    page.wait_for_function(DRAWN, arg=list(ids))
    page.evaluate("() => window.scrollTo(0, 0)")
    page.evaluate(STILL)


def boxes(page: Page, ids: tuple[str, ...]) -> list[list]:
    """[id, top, bottom] of each figure, in the screen's pixels."""
    return page.evaluate(BOXES, list(ids))


def cut(page: Page, ids: tuple[str, ...]) -> list[list]:
    """The figures of ``ids`` not whole on the screen as it is: [id, top, bottom] each; [] when all are."""
    height = page.viewport_size["height"]
    return [box for box in boxes(page, ids) if box[1] is None or box[1] < 0 or box[2] > height]
