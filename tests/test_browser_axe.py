"""Every tab in every view a class meets it in, on one loaded page: presentation mode on and off, light and dark, a
projector's 1280×720 and a phone's 390×844 (tests/helpers/a11y.py switches them in place).

- axe-core (its WCAG 2.0/2.1 A + AA rules) on what the page shows: no violation, every tab in all 8 views; its
  color-contrast rule (over half of its time) at 1280×720 only: a phone's page has the same colours (all 8 views with
  it: 0 violations too, when this was written).
- what axe cannot check, measured in the page (tests/helpers/present.py), at 1280×720 (a phone has the same colours):
  every visible text of the open tab — figures' SVG text included, which axe skips — at a contrast of at least 4.5:1
  against what is drawn behind it, light and dark; in presentation mode also at least 16 px as rendered, and no two
  texts of a figure over each other or past its figure. So too for decoder self-attention's masked maps on the
  Attention tab and Inside a head's whole matrices.
- at 320 CSS px wide (1280 px at 400 % zoom), outside presentation mode, nothing but a figure's or a table's own
  scroll box scrolls sideways, each such box says that it scrolls (a scroll bar, or "← scroll sideways →"), and no
  text is cut off, past the screen or by a box that clips it (WCAG 1.4.10, ``helpers.a11y.clipped``).

The page opens in presentation mode (``?present=1``) and visits every tab, each through its views in the order that
changes one thing a step (``route``); then presentation mode is switched off on the Attention tab, as a presenter does,
and every tab is visited again.
"""

from __future__ import annotations

from helpers.a11y import (
    AXE_VERSION,
    OTHER_VIEWS,
    TABS,
    VIEWS,
    WIDE,
    axe,
    clipped,
    overflow,
    route,
    set_present,
    set_view,
    visit,
)
from helpers.browser import goto, new_page
from helpers.present import LEAST_PX, measure
from playwright.sync_api import Browser

WIDE_VIEWS = tuple(view for view in VIEWS if view.size == WIDE)


def test_every_tab_in_every_view_is_axe_clean_and_every_text_readable(browser: Browser, server: str):
    found_axe, found_text, found_wide, found_cut = {}, {}, {}, {}
    with new_page(browser, *WIDE) as page:
        goto(page, f"{server}?present=1&tab=attention")
        page.wait_for_function("() => document.body.classList.contains('attn-present')")
        try:
            for present in (True, False):
                mode = "present" if present else "normal"
                if not present:
                    visit(page, "attention")
                    set_present(page, False)
                for tab in TABS:
                    visit(page, tab)
                    for view in route(page, WIDE_VIEWS if tab in OTHER_VIEWS else VIEWS):
                        set_view(page, view)
                        report = [f"{tab:17} {mode:7} {view!s:15}"]
                        if tab not in OTHER_VIEWS:
                            found_axe[tab, mode, view] = rules = axe(page, contrast=view.size == WIDE)
                            report.append(f"axe {({rule: len(nodes) for rule, nodes in rules.items()} or 0)}")
                        if view.size == WIDE:
                            found_text[tab, mode, view] = got = measure(page, least_px=LEAST_PX if present else 0,
                                                                        layout=present)
                            report.append(f"{got['texts']} texts, lowest contrast {got['lowest']:.2f}, smallest "
                                          f"{got['smallest']:.1f} px, {len(got['problems'])} problems")
                        print("; ".join(report))
                    if not present and tab not in OTHER_VIEWS:
                        found_wide[tab] = overflow(page)
                        found_cut[tab] = clipped(page)
        finally:
            page.emulate_media(color_scheme="light")  # (the tab goes back to the pool: as it came)
    print(f"axe-core {AXE_VERSION}; 320 px wide: {found_wide}; cut off: {found_cut}")
    tabs = len(TABS) - len(OTHER_VIEWS)
    assert (len(found_axe), len(found_text), len(found_wide)) == (tabs * 2 * len(VIEWS), len(TABS) * 4, tabs)
    assert {key: rules for key, rules in found_axe.items() if rules} == {}
    assert {key: got["problems"] for key, got in found_text.items() if got["problems"]} == {}
    assert {tab: wide for tab, wide in found_wide.items() if wide} == {}
    assert len(found_cut) == tabs and {tab: cut for tab, cut in found_cut.items() if cut} == {}
