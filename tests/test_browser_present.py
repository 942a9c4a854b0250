"""Presentation mode at a projector's 1280×720, on one loaded page (``kept``): every tab's first screen shows its main
figure whole, in normal and in presentation mode, and so does the Attention tab once an example is chosen (its caption
brought on screen with the figures); presentation mode switched with the page open draws the figures of other tabs
again for it, keeping their height. (That every text of every tab is large and clear in presentation mode:
tests/test_browser_axe.py.)
"""

from __future__ import annotations

from helpers.a11y import WIDE, set_present, visit
from helpers.browser import KeptPages
from helpers.first_screen import MAIN, STILL, boxes, cut, open_tab
from helpers.present import LEAST_PX
from helpers.present import STILL as FIGURES_STILL
from helpers.scripts import TITLE

from viz.views.attention import examples

SMALLEST = """(id) => Math.min(...[...document.querySelectorAll(`#${id} .main-svg text`)]
    .filter((t) => t.textContent.trim() && t.getBoundingClientRect().width > 0)
    .map((t) => parseFloat(getComputedStyle(t).fontSize)))"""


# Each shown figure: [its id, its box's height, the figure's, how much of it its block cuts]
HEIGHTS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((gd) => gd.offsetParent).map((gd) => {
    const box = (e) => e.getBoundingClientRect(), drawn = box(gd.querySelector('.main-svg'));
    const cut = Math.max(0, drawn.bottom - box(gd.closest('.block')).bottom);
    return [gd.closest('[id]:not(.js-plotly-plot)')?.id, ...[box(gd).height, drawn.height, cut].map(Math.round)];
})"""


def _example(page, example: examples.Example) -> None:
    """``example`` chosen from the Attention tab's menu, until its view is drawn and the page keeps still."""
    page.click("#example input")
    page.get_by_role("option", name=example.label).click()
    which = f"layer {example.layer} · head {example.head}"
    page.wait_for_function(f"([w, c]) => ({TITLE})('detail').endsWith(w) && !!document.querySelector('#guide')"
                           "?.offsetParent && document.querySelector('#guide').textContent.trim() === c",
                           arg=[which, example.caption])
    page.evaluate(STILL)
    page.wait_for_timeout(400)  # (the page scrolls every 200 ms while the figures come: until two still frames)
    page.evaluate(STILL)


def test_every_tab_opens_on_its_main_figure_whole(kept: KeptPages, server: str):
    """At 1280×720, each tab opened by its button, scrolled to the top: its main figure (``MAIN``) whole on screen, axis
    labels and titles included, in normal mode and in presentation mode (printed: each figure's top and bottom, px);
    then an example chosen on the Attention tab (its caption, two lines at 16 px, above the figures): the caption and
    both figures on screen together."""
    page = kept.open(server, *WIDE)
    found, drawn = {}, {}
    for present in (False, True):
        if present:
            page.locator("[role=tab][data-tab-id='attention']").click()
            set_present(page, True)
        for tab, ids in MAIN.items():
            open_tab(page, tab, ids)
            drawn[tab, present] = boxes(page, ids)
            found[tab, present] = cut(page, ids)
    print("first screens (id, top, bottom in px; presentation mode or not):", drawn)
    assert {key: got for key, got in found.items() if got} == {}, found
    longest = sorted(examples.EXAMPLES, key=lambda e: len(e.caption))[-2:]  # two lines at 1280 px, or more
    for present, example in zip((True, False), longest):
        page.locator("[role=tab][data-tab-id='attention']").click()
        set_present(page, present)
        page.evaluate("() => window.scrollTo(0, 0)")
        _example(page, example)
        guide = page.evaluate("() => document.querySelector('#guide').getBoundingClientRect().top")
        assert cut(page, MAIN["attention"]) == [] and guide >= 0, (present, boxes(page, MAIN["attention"]), guide)


def test_switching_presentation_mode_redraws_the_figures_of_other_tabs(kept: KeptPages, server: str):
    """The checkbox is on the Attention tab; the Why 1/√d_k tab's figures, drawn before it was switched on, are drawn
    again with large text when that tab shows, and small again once it is switched off; each keeps its height (drawn
    again in place, three of them once had a box of no height, their blocks cutting them at 200 px: app.css)."""
    page = kept.open(server, *WIDE)
    visit(page, "attention")
    set_present(page, False)
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
        page.evaluate(FIGURES_STILL)
        shown = page.evaluate(HEIGHTS)
        assert len(shown) >= 4 and all(box == drawn and over == 0 for _, box, drawn, over in shown), (on, shown)
