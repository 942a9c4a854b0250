"""HTML typed into every text box of every tab stays text: in the figures, the notices and the popups.

Gradio 6.31.0 renders an error or warning popup's message as HTML, and a Markdown notice renders HTML and
Markdown: a message that quotes a typed value must quote it as text (``viz.ui.patches.escape_message``). Inside a
head's scale box once turned ``<a href=…>EVIL</a>`` + Enter into a live link in the red popup.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from helpers.browser import PAYLOAD, assert_not_injected, open_app
from playwright.sync_api import Page, expect

LINK = '<a href="https://evil.example/">EVIL</a>'
TYPED = f"A dog {LINK} {PAYLOAD} [EVIL](https://evil.example/) $$x$$ runs."
BOXES = "textarea:visible, input[type=text]:visible, input:not([type]):visible"  # text boxes and menus' boxes
# What typed HTML, Markdown or maths would leave in the page, popups included
FOUND = """() => ({
    links: document.querySelectorAll('a[href*="evil.example"]').length,
    maths: [...document.querySelectorAll('.katex')].filter((k) => /^x+$/.test(k.textContent.replace(/\\s/g, '')))
        .length,
    inPopups: document.querySelectorAll('[data-testid="toast-body"] :is(a, img, b, script)').length,
})"""
# A step that starts anything starts it within a frame or two; one that starts nothing (a menu's box: 13 of the 20
# steps) costs this wait, and each step the quiet window after it. Should a request start later on a busy machine,
# or a chained one after a gap, the next step's wait and the last check still see its answer.
START_S = 0.25
QUIET_S = 0.2
SETTLE_S = 300  # generous: a 100-token sentence's views, on a busy machine
POPUPS = "() => [...document.querySelectorAll('[data-testid=\"toast-body\"]')].map((t) => t.textContent)"
# Components waiting for an answer: Gradio 6.31.0 writes a progress text (or an ETA bar) into each until it comes
PENDING = "() => document.querySelectorAll('.progress-text, .eta-bar').length"


class Traffic:
    """The page's requests to join the app's queue, and those still in flight. (Not the answer streams: Chromium may
    never report a stream the page's client closed as finished or failed.)"""

    def __init__(self, page: Page):
        self.started, self.open = 0, set()
        self.listeners = {"request": self._start, "requestfinished": self._end, "requestfailed": self._end}
        for event, listener in self.listeners.items():
            page.on(event, listener)

    def stop(self, page: Page) -> None:
        """No more listening (the page goes on to other tests)."""
        for event, listener in self.listeners.items():
            page.remove_listener(event, listener)

    def _start(self, request) -> None:
        if "/gradio_api/queue/join" in request.url or "/gradio_api/run/" in request.url:
            self.started += 1
            self.open.add(request)

    def _end(self, request) -> None:
        self.open.discard(request)

    def settle(self, page: Page, since: int) -> None:
        """Until what a step started (if it starts anything within ``START_S``) is done: every request to join the
        queue answered and no component waiting for its answer, for ``QUIET_S`` — or, on a busy machine, not yet
        after ``SETTLE_S`` (then the step's answers are late, not missing: what this test checks is what the page shows
        once they come, and the next step's wait and the last check see them)."""
        deadline = time.monotonic() + START_S
        while self.started == since and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        deadline, quiet = time.monotonic() + SETTLE_S, None
        while time.monotonic() < deadline:
            if self.open or page.evaluate(PENDING):
                quiet = None
            elif quiet is None:
                quiet = time.monotonic()
            elif time.monotonic() - quiet >= QUIET_S:
                return
            page.wait_for_timeout(100)


@pytest.fixture
def traffic(page: Page) -> Iterator[Traffic]:
    watching = Traffic(page)
    yield watching
    watching.stop(page)


def test_html_typed_into_every_box_of_every_tab_stays_text_popups_included(page: Page, server: str, traffic: Traffic):
    open_app(page, server)
    typed, popups = [], set()
    for k in range(page.get_by_role("tab").count()):  # by place: a tab's label is not what this tests
        since, button = traffic.started, page.get_by_role("tab").nth(k)
        tab = button.inner_text()
        button.click()
        expect(button).to_have_attribute("aria-selected", "true")
        traffic.settle(page, since)
        fold = page.locator("#in-which")  # Inside a head's head and scale: folded under a button that names them
        if fold.is_visible():
            fold.click()
            expect(page.locator("#in-choices")).to_be_visible()
        for i in range(page.locator(BOXES).count()):
            box = page.locator(BOXES).nth(i)
            if not box.is_editable():
                continue
            since = traffic.started
            box.fill(TYPED)
            box.press("Enter")
            box.press("Escape")  # a menu's list closes
            traffic.settle(page, since)
            typed.append(f"{tab}: {box.get_attribute('aria-label') or box.get_attribute('placeholder') or i}")
            assert page.evaluate(FOUND) == {"links": 0, "maths": 0, "inPopups": 0}, typed[-1]
            assert_not_injected(page)
            popups.update(page.evaluate(POPUPS))
    traffic.settle(page, traffic.started)  # the last answers too, should any have come late
    assert page.evaluate(FOUND) == {"links": 0, "maths": 0, "inPopups": 0}
    assert_not_injected(page)
    assert len(typed) >= 6 and {t.split(":")[0] for t in typed} >= {"Attention", "Inside a head"}, typed
    # Inside a head's scale box says what it got: the typed text, shown as text in the popup
    assert any(LINK[:30] in text for text in popups), popups
