"""The notice beside the model's translation when a sentence is far from the image captions it learnt from
(model.probes.domain), in a real browser at 1280×720: shown for a long sentence about politics, gone for a caption.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.browser import open_app, watched_page
from helpers.scripts import VALUE
from playwright.sync_api import Browser, Page

from model.training.limits import EXAMPLES

NOTICE = "() => { const e = document.querySelector('#domain-notice'); return e && e.offsetParent ? e.innerText : ''; }"


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    yield from watched_page(browser, 1280, 720)


def run(page: Page, text: str) -> None:
    old = page.evaluate(VALUE, "translation")
    page.fill("#source textarea", text)
    page.click("#run")
    page.wait_for_function(f"(old) => ({VALUE})('translation') !== old", arg=old)


def test_a_sentence_far_from_the_captions_gets_a_notice_beside_its_translation(page: Page, server: str):
    open_app(page, server)
    assert page.evaluate(NOTICE) == ""  # the first sentence is a caption
    run(page, EXAMPLES[-1].english)  # 40 words about politics
    page.wait_for_function(f"() => ({NOTICE})().includes('Far from the 29,000 image captions the model learnt from')")
    assert "long (" in page.evaluate(NOTICE)
    box, notice = (page.locator(sel).bounding_box() for sel in ("#translation", "#domain-notice"))
    assert notice["y"] >= box["y"] + box["height"] - 1 and notice["x"] < box["x"] + box["width"]  # right below it
    assert notice["x"] + notice["width"] > box["x"] and notice["y"] + notice["height"] <= 720  # on the first screen
    run(page, "A dog runs through the grass.")
    page.wait_for_function(f"() => ({NOTICE})() === ''")
