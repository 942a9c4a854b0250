"""Inside a head in a real browser: the "Inside a head" tab, a click on a row of the close-up, the contributions toggle.

The app and the browser are tests/conftest.py's; each page fails its test on a console error or a request off
loopback. The tab is shown at 1280×720 (a projector). Screenshots are not tests: ``python -m bench.screenshots``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.browser import open_app, select_tab, wait_tab, watched_page
from helpers.scripts import GD, TITLE
from playwright.sync_api import Browser, Page

KINDS = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention (masked)",
         "cross": "Encoder–decoder attention"}
STEPS = "() => document.querySelector('#in-steps')?.textContent || ''"
COLORBAR = f"(id) => {{ const gd = ({GD})(id); return gd ? gd.data[0].colorbar.title.text : ''; }}"


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page at 1280×720 (a projector)."""
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


def test_the_attention_tabs_measure_draws_weights_or_contributions_and_a_redraw_keeps_it(page: Page, server: str):
    open_app(page, server)
    assert page.evaluate(COLORBAR, "detail") == "weight"
    choose(page, "measure", "contributions")
    page.wait_for_function(f"() => ({COLORBAR})('detail') === 'contribution'")
    page.wait_for_function(f"() => ({COLORBAR})('overview') === 'contribution'")
    choose(page, "head", 4)
    page.wait_for_function(f"() => ({TITLE})('detail').includes('head 4 · contributions')")
    choose(page, "measure", "weights")
    page.wait_for_function(f"() => ({COLORBAR})('detail') === 'weight'")


def test_the_tab_follows_the_attention_view_and_shares_its_factor_with_the_why_tab(page: Page, server: str):
    open_app(page, server)
    choose(page, "head", 4)
    page.wait_for_function(f"() => ({TITLE})('detail').includes('head 4')")
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


def test_a_click_on_a_row_of_the_close_up_opens_the_tab_on_that_query(page: Page, server: str):
    open_app(page, server)
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
    wait_tab(page, "Inside a head")
    steps_show(page, f"Encoder–decoder attention, layer {layer}, head 3, query 2")
    assert page.locator("#in-query input[value='2']").is_checked()
    assert page.locator("#in-kind input").input_value() == KINDS["cross"]


def test_a_token_a_head_then_each_kind_update_the_view_keeping_head_and_query(page: Page, server: str):
    open_app(page, server)
    choose(page, "kind", "cross")
    page.wait_for_function(f"() => ({TITLE})('detail').startsWith('Encoder–decoder attention · layer ')")
    layer = page.locator("#layer input[type=number]").input_value()
    select_tab(page, "Inside a head")
    steps_show(page, f"{KINDS['cross']}, layer {layer}")
    choose(page, "in-query", 3)
    steps_show(page, ", query 3")
    assert "query 3" in page.evaluate(f"() => ({GD})('in-scores').layout.annotations.at(-1).text")
    choose(page, "in-head", 2)
    steps_show(page, f"{KINDS['cross']}, layer {layer}, head 2, query 3")
    for kind in ("encoder_self", "decoder_self", "cross"):
        pick_kind(page, kind)
        steps_show(page, f"{KINDS[kind]}, layer {layer}, head 2, query 3")
        drawn(page, "in-scores", "in-figure2", "in-projections", "in-head_output", "in-contributions")
        if kind == "decoder_self":  # the keys after the query are shown masked (−∞ markers)
            page.wait_for_function(f"() => ({GD})('in-scores').data.some(t => t.mode === 'markers+text')")
