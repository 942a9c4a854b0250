"""Presentation mode on every tab (``?present=1``): every visible text of the open tab — figure titles, ticks, legends,
colour-bar labels, cell texts, captions, notes, Markdown, tables, the How-to-read text, control labels — at least
16 px as rendered, at a contrast of at least 4.5:1 against what is drawn behind it, and no two texts of a figure over
each other or past its figure; light and dark (the system's colour scheme, which Gradio follows while the page is
open; ``__theme=dark`` gives the same style), at 1280×720.

One page, the tabs visited in turn by their tab buttons, each measured in both themes (the page keeps presentation
mode: the class ``attn-present`` on the body, and the figures drawn for it). Measured in the page:
tests/helpers/present.py.
"""

from __future__ import annotations

from helpers.browser import goto, new_page
from helpers.present import LEAST_PX, STILL, measure
from playwright.sync_api import Browser, Page

WIDE = (1280, 720)
# the tabs, and what shows that each is drawn (selectors; Lab: its summary, with or without its training curves)
TABS = {
    "attention": ("#overview .main-svg", "#detail .main-svg"),
    "decoding": ("#decode-top5 .main-svg", "#decode-self .main-svg", "#decode-cross .main-svg"),
    "scaling": ("#variance .main-svg", "#histogram .main-svg", "#softmax-weights .main-svg", "#curves .main-svg",
                "#live-entropy .main-svg"),
    "inside": ("#in-scores .main-svg", "#in-figure2 .main-svg", "#in-projections .main-svg",
               "#in-head_output .main-svg", "#in-contributions .main-svg", "#in-footnote4 .main-svg"),
    "inside-matrix": ("#in-m-projections .main-svg", "#in-m-scores .main-svg", "#in-m-weights .main-svg",
                      "#in-m-output .main-svg"),
    "heads": ("#heads-grid .main-svg", "#rollout-enc .hm image", "#rollout-cross .hm image"),
    "architecture": ("#figure1 svg [data-attention='cross']", "#figure2 svg"),
    "lab": ("#lab-summary",),
    "model-card": (),
    "attention-masked": ("#overview .legend text", "#detail .legend text"),  # decoder self-attention: its mask's key
}
# … and page functions
DRAWN = {
    "lab": "() => !!document.querySelector('#lab-heads .main-svg') || (document.querySelector('#lab-summary')"
           "?.textContent || '').includes('still training')",
    "model-card": "() => [...document.querySelectorAll('[role=tabpanel]')].some((p) => p.offsetParent"
                  " && p.querySelector('.prose table'))",
}


def open_how_to_read(page: Page) -> None:
    """Unfold the open tab's closed accordions (the How-to-read text), so that their text is measured too."""
    page.evaluate("""() => {
        const panel = [...document.querySelectorAll('[role=tabpanel]')].find((p) => p.offsetParent);
        for (const b of panel.querySelectorAll('button.label-wrap:not(.open)')) b.click();
        for (const d of panel.querySelectorAll('details:not([open])')) d.open = true;
    }""")


def visit(page: Page, tab: str) -> None:
    """Open ``tab`` by its button (Inside a head's whole matrices: by its View choice), until it is drawn and
    still."""
    if tab == "inside-matrix":
        page.locator("#in-view label", has_text="Whole matrices").click()
    elif tab == "attention-masked":
        visit(page, "attention")
        page.locator("#kind input[value='decoder_self']").check()
    else:
        page.locator(f"[role=tab][data-tab-id='{tab}']").click()
        page.wait_for_function(f"() => document.querySelector(\"[role=tab][data-tab-id='{tab}']\")"
                               "?.getAttribute('aria-selected') === 'true'")
    for selector in TABS[tab]:
        page.locator(selector).first.wait_for(state="visible")
    if tab in DRAWN:
        page.wait_for_function(DRAWN[tab])
    open_how_to_read(page)
    page.evaluate(STILL)


def theme(page: Page, dark: bool) -> None:
    """The system's colour scheme switched (Gradio follows it while the page is open: its theme is "system" when the
    URL names none), until the page has restyled and its figures and texts keep still."""
    page.emulate_media(color_scheme="dark" if dark else "light")
    page.wait_for_function("(dark) => document.body.classList.contains('dark') === dark", arg=dark)
    page.evaluate(STILL)


def test_presentation_mode_writes_every_text_of_every_tab_large_and_clear(browser: Browser, server: str):
    """Each tab measured in the theme it opened in, then in the other one: the theme switched with the page open
    (its figures drawn again in the new theme's text colour: assets/web/draw.js); the next tab opens in that one. So
    half the tabs are first drawn light and half dark."""
    with new_page(browser, *WIDE) as page:
        goto(page, f"{server}?present=1&tab=attention")
        page.wait_for_function("() => document.body.classList.contains('attn-present')")
        found, dark = {}, False
        try:
            for tab in TABS:
                visit(page, tab)
                for _ in range(2):
                    name = "dark" if dark else "light"
                    found[name, tab] = got = measure(page)
                    print(f"{name} {tab}: {got['texts']} texts, smallest {got['smallest']:.1f} px, "
                          f"lowest contrast {got['lowest']:.2f}, {len(got['problems'])} problems")
                    if len(found) % 2:  # (not after the tab's second theme: the next tab opens in it)
                        dark = not dark
                        theme(page, dark)
        finally:
            page.emulate_media(color_scheme="light")  # (the tab goes back to the pool: as it came)
        assert len(found) == 2 * len(TABS)
        assert {key: got["problems"] for key, got in found.items() if got["problems"]} == {}


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
