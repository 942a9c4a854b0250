"""Issue #13 in a real browser: the "Inside a head" tab, a click on a row of the close-up, the contributions toggle.

The app, the browser and the page checks (no console error, no request off loopback) are tests/test_browser.py's.
The tab is shown at 1280×720 (a projector); one page load for all of it. Screenshots are not tests:
``python -m bench.screenshots``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page
from test_browser import GD, TITLE, open_app, select_tab, watched_page

KINDS = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention (masked)",
         "cross": "Encoder–decoder attention"}
STEPS = "() => document.querySelector('#in-steps')?.textContent || ''"
COLORBAR = f"(id) => {{ const gd = ({GD})(id); return gd ? gd.data[0].colorbar.title.text : ''; }}"


@pytest.fixture
def projector(browser: Browser) -> Iterator[Page]:  # noqa: F811
    """A page at 1280×720, checked like test_browser's ``page``."""
    yield from watched_page(browser, 1280, 720)


def steps_show(page: Page, text: str) -> None:
    page.wait_for_function(f"(t) => ({STEPS})().includes(t)", arg=text)


def drawn(page: Page, *plot_ids: str) -> None:
    for plot_id in plot_ids:
        page.wait_for_selector(f"#{plot_id} .js-plotly-plot .main-svg")


def choose(page: Page, elem_id: str, value) -> None:
    page.locator(f"#{elem_id} label:has(input[value='{value}'])").click()


def pick_kind(page: Page, kind: str) -> None:
    """The tab's kind is a dropdown."""
    page.locator("#in-kind input").click()
    page.get_by_role("option", name=KINDS[kind]).click()


def test_contributions_toggle_why_tab_links_a_click_on_a_close_up_row_opens_its_query_and_each_kind_updates_the_view(
        projector: Page, server: str):  # noqa: F811
    page = projector
    open_app(page, server)

    # The Attention tab's measure: weights, or contributions (a redraw keeps the choice)
    assert page.evaluate(COLORBAR, "detail") == "weight"
    choose(page, "measure", "contributions")
    page.wait_for_function(f"() => ({COLORBAR})('detail') === 'contribution'")
    page.wait_for_function(f"() => ({COLORBAR})('overview') === 'contribution'")
    choose(page, "head", 4)
    page.wait_for_function(f"() => ({TITLE})('detail').includes('head 4 · contributions')")
    choose(page, "measure", "weights")
    page.wait_for_function(f"() => ({COLORBAR})('detail') === 'weight'")

    # The tab follows the Attention tab's view; its scale factor links with the Why tab
    layer = page.locator("#layer input[type=number]").input_value()
    select_tab(page, "Inside a head")
    steps_show(page, f"layer {layer}, head 4, query 0")
    drawn(page, "in-scores", "in-figure2")
    page.click("#in-take-factor")  # the Why tab's slider starts at 1: no scaling
    steps_show(page, "the weights with the factor")
    assert page.locator("#in-factor textarea").input_value() == "1"
    page.fill("#in-factor textarea", "")
    page.press("#in-factor textarea", "Enter")
    steps_show(page, "the weights (a row of the heatmap)")
    assert "factor:" not in page.inner_text("#in-footnote4-text")
    page.click("#in-to-why")
    page.wait_for_selector("#to-inside", state="visible")
    page.click("#to-inside")  # back, with the Why tab's factor (its slider starts at 1: no scaling)
    page.wait_for_function("() => document.querySelector('#in-footnote4-text').textContent.includes('factor: × 1')")
    assert page.locator("#in-factor textarea").input_value() == "1"

    # A click on a row of the Attention tab's close-up opens this tab on that query
    select_tab(page, "Attention")
    choose(page, "kind", "cross")
    choose(page, "head", 3)
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Encoder–decoder attention · layer ')"
                           f" && ({TITLE})('detail').includes(' · head 3')")
    layer = page.locator("#layer input[type=number]").input_value()
    page.locator("#detail").scroll_into_view_if_needed()
    x, y = page.evaluate(
        f"""() => {{
            const gd = ({GD})('detail'), fl = gd._fullLayout, box = gd.getBoundingClientRect();
            return [box.left + fl.xaxis._offset + fl.xaxis.l2p(1), box.top + fl.yaxis._offset + fl.yaxis.l2p(2)];
        }}"""
    )
    page.mouse.click(x, y)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[role=tab]')].some(t => t.textContent.trim() === 'Inside a head'"
        " && t.getAttribute('aria-selected') === 'true')")
    steps_show(page, f"Encoder–decoder attention, layer {layer}, head 3, query 2")
    assert page.locator("#in-query input[value='2']").is_checked()
    assert page.locator("#in-kind input").input_value() == KINDS["cross"]

    # Pick a token, a head, then each kind: the view follows (the head and the query stay)
    choose(page, "in-query", 3)
    steps_show(page, "head 3, query 3")
    assert "query 3" in page.evaluate(f"() => ({GD})('in-scores').layout.annotations.at(-1).text")
    choose(page, "in-head", 2)
    steps_show(page, f"{KINDS['cross']}, layer {layer}, head 2, query 3")
    for kind in ("encoder_self", "decoder_self", "cross"):
        pick_kind(page, kind)
        steps_show(page, f"{KINDS[kind]}, layer {layer}, head 2, query 3")
        drawn(page, "in-scores", "in-figure2", "in-projections", "in-head_output", "in-contributions")
        if kind == "decoder_self":  # the keys after the query are shown masked (−∞ markers)
            page.wait_for_function(f"() => ({GD})('in-scores').data.some(t => t.mode === 'markers+text')")
