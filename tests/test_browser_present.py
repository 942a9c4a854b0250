"""Presentation mode switched with the page open: the figures of other tabs drawn again for it, keeping their height.
(That every text of every tab is large and clear in presentation mode: tests/test_browser_axe.py.)
"""

from __future__ import annotations

from helpers.a11y import WIDE, visit
from helpers.browser import goto, new_page
from helpers.present import LEAST_PX, STILL
from playwright.sync_api import Browser

SMALLEST = """(id) => Math.min(...[...document.querySelectorAll(`#${id} .main-svg text`)]
    .filter((t) => t.textContent.trim() && t.getBoundingClientRect().width > 0)
    .map((t) => parseFloat(getComputedStyle(t).fontSize)))"""


# Each shown figure: [its id, its box's height, the figure's, how much of it its block cuts]
HEIGHTS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((gd) => gd.offsetParent).map((gd) => {
    const box = (e) => e.getBoundingClientRect(), drawn = box(gd.querySelector('.main-svg'));
    const cut = Math.max(0, drawn.bottom - box(gd.closest('.block')).bottom);
    return [gd.closest('[id]:not(.js-plotly-plot)')?.id, ...[box(gd).height, drawn.height, cut].map(Math.round)];
})"""


def test_switching_presentation_mode_redraws_the_figures_of_other_tabs(browser: Browser, server: str):
    """The checkbox is on the Attention tab; the Why 1/√d_k tab's figures, drawn before it was switched on, are drawn
    again with large text when that tab shows, and small again once it is switched off; each keeps its height (drawn
    again in place, three of them once had a box of no height, their blocks cutting them at 200 px: app.css)."""
    with new_page(browser, *WIDE) as page:
        goto(page, f"{server}?tab=scaling")
        visit(page, "scaling")
        small = page.evaluate(SMALLEST, "softmax-weights")  # its subplot titles: 13 px
        assert small < LEAST_PX, small
        for on, check in ((True, lambda px: px >= LEAST_PX), (False, lambda px: px == small)):
            visit(page, "attention")
            page.locator("#present input[type=checkbox]").click()
            page.wait_for_function("(on) => document.body.classList.contains('attn-present') === on", arg=on)
            visit(page, "scaling")
            page.wait_for_function(f"([id, least, on]) => (({SMALLEST})(id) >= least) === on",
                                   arg=["softmax-weights", LEAST_PX, on])
            assert check(page.evaluate(SMALLEST, "softmax-weights"))
            page.evaluate(STILL)
            shown = page.evaluate(HEIGHTS)
            assert len(shown) >= 4 and all(box == drawn and cut == 0 for _, box, drawn, cut in shown), (on, shown)
