"""The browser tests' Chromium and pages: Debian's Chromium driven by Playwright (never `playwright install`), with
bench's flags (tests depend on bench, never the reverse), and the steps every browser test module takes on a page.

A page made here (``watched_page``, ``new_page``) fails its test on a console error, an uncaught page error, a
JavaScript dialog or any request that leaves loopback (the page must work offline): ``Watch``.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Iterator
from typing import NamedTuple

from playwright.sync_api import Browser, BrowserContext, Page

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from bench.common import is_loopback
from helpers.scripts import GD, HAS_HEATMAP, TAB_SELECTED, TITLE, VALUE

TIMEOUT_MS = 90_000  # generous: the machine may be busy training
# Every tab's context: downloads accepted (the export tests) and the clipboard readable (Copy link's tests)
CONTEXT = {"accept_downloads": True, "permissions": ["clipboard-read", "clipboard-write"]}
# What Gradio 6.31.0's page logs when it is left while an answer streams (its fetch aborted by the unload)
LEFT_BEHIND = re.compile(r"AbortError|Connection errored out")
PAYLOAD = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script><b>bold</b>'


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, kept off the network by its flags."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            _TABS.pop(id(browser), None)
            browser.close()


class Watch:
    """What a page did that it never should: console errors, page errors, dialogs, requests off loopback."""

    def __init__(self, page: Page):
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on("request", lambda r: None if is_loopback(r.url) else self.outside.append(r.url))
        page.on("dialog", self._dialog)
        _WATCHED[page] = self

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def assert_clean(self) -> None:
        found = {k: list(v) for k, v in vars(self).items() if isinstance(v, list)}
        assert self.errors == [] and self.outside == [] and self.dialogs == [], found

    def clear(self) -> None:
        for found in (self.errors, self.outside, self.dialogs):
            found.clear()


_WATCHED: weakref.WeakKeyDictionary[Page, Watch] = weakref.WeakKeyDictionary()


def goto(page: Page, url: str) -> None:
    """``page.goto(url)``, where leaving the page's last document may cut a stream still open (an answer on its way,
    or the stream kept open a moment after it): the lines the left document logs as it goes (``LEFT_BEHIND``) are not
    its errors; any other line, or these from the new document once loaded, still are."""
    watch, start = _WATCHED.get(page), None
    if watch is not None:
        start = len(watch.errors)
    page.goto(url)
    if watch is not None:
        new = watch.errors[start:]
        watch.errors[start:] = [e for e in new if not LEFT_BEHIND.search(e)]


class Tab(NamedTuple):
    """A browser tab of its own context, and what its page did (``Watch``)."""

    context: BrowserContext
    page: Page
    watch: Watch


class Tabs:
    """The browser's tabs that tests take turns in, one pool per worker's Chromium (``tabs(browser)``).

    A page load is ~5.6 s of the machine's CPU in a new tab (a new renderer process: Gradio's and plotly's scripts
    parsed and compiled anew) and ~3.0 s in a tab that loaded the app before (Chromium 150, 2 cores:
    ``python -m bench.page_loads``). So a test's page is a tab another test left, navigated to ``about:blank`` (a
    new document: no script, element or listener of the last one stays) and set to the test's size. Every tab's
    context has the same options (``CONTEXT``: what any browser test needs), so that any test can take any tab. A test
    that adds to a page what outlives a document (an init script, a listener) removes it, or asks
    ``new_page(..., fresh=True)``.
    """

    KEEP = 2  # tabs kept (the rest are closed): a kept page and a fixture's page at once

    def __init__(self, browser: Browser):
        self.browser = browser
        self.free: list[Tab] = []  # tabs kept

    def take(self, width: int, height: int, fresh: bool = False) -> Tab:
        """A tab at ``width``×``height``, on ``about:blank``, its Watch emptied."""
        if self.free and not fresh:
            tab = self.free.pop()
            tab.page.goto("about:blank")
            tab.page.set_viewport_size({"width": width, "height": height})
            tab.watch.clear()
            return tab
        context = self.browser.new_context(viewport={"width": width, "height": height}, **CONTEXT)
        context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        return Tab(context, page, Watch(page))

    def give_back(self, tab: Tab, fresh: bool = False) -> None:
        """A tab a test is done with: kept for the next test, unless it is ``fresh`` (changed beyond its document),
        closed, or enough are kept."""
        if fresh or tab.page.is_closed() or len(self.free) >= self.KEEP:
            tab.context.close()
        else:
            self.free.append(tab)

_TABS: dict[int, Tabs] = {}


def tabs(browser: Browser) -> Tabs:
    """The tabs of this Chromium (``chromium()`` forgets them as it closes the browser, and with it every tab)."""
    return _TABS.setdefault(id(browser), Tabs(browser))


def watched_page(browser: Browser, width: int, height: int, fresh: bool = False) -> Iterator[Page]:
    """A page at ``width``×``height`` (``Tabs``: ``about:blank`` in a tab a test left, unless ``fresh``) for a fixture
    to yield from; on teardown it must have shown no console or page error, sent no request off loopback and opened
    no dialog (``Watch``)."""
    tab = tabs(browser).take(width, height, fresh)
    try:
        yield tab.page
    finally:
        tabs(browser).give_back(tab, fresh)
    tab.watch.assert_clean()  # (not after a failure: that one is the test's result)


class KeptPages:
    """Loaded pages that a module's tests take turns on, one per opening (the URL opened and the page's size): a page
    load is 3 to 6 s of the machine's CPU (Gradio's and plotly's own script), most of a short test.

    ``open(url)`` gives the page the module's last test with the same opening left, not loaded again, when that test
    passed; else a page from ``Tabs``, loaded. Such a test may find what earlier tests of its module changed (they run
    in file order): it relies only on the view it sets itself, or on what stays the same (the sentence, where none of
    them changes it). It also passes alone, on a fresh page. Each test's page is checked like ``watched_page``'s
    (``Watch``), and a page a failed test used is closed, so that the next test starts on a fresh one.
    """

    def __init__(self, browser: Browser):
        self.browser = browser
        self.kept: dict[tuple, Tab] = {}  # opening -> its tab
        self.used: list[tuple] = []  # the openings the running test used

    def open(self, url: str, width: int = 1400, height: int = 1000, *, load=None) -> Page:
        """The app at ``url`` (``load``: how to load it, by default ``open_app``)."""
        key = (url, width, height)
        if key not in self.kept:
            tab = tabs(self.browser).take(width, height)
            self.kept[key] = tab
            (load or open_app)(tab.page, url)
        self.used.append(key)
        return self.kept[key].page

    def test_ended(self, failed: bool) -> None:
        """After each test: its pages checked (``Watch``), a failed test's closed."""
        used, self.used = self.used, []
        for key in dict.fromkeys(used):
            tab = self.kept[key]
            if failed:
                tab.context.close()
                del self.kept[key]
                continue
            try:
                tab.watch.assert_clean()
            finally:
                tab.watch.clear()

    def close(self) -> None:
        for tab in self.kept.values():
            tabs(self.browser).give_back(tab)
        self.kept.clear()


@contextlib.contextmanager
def new_page(browser: Browser, width: int, height: int, fresh: bool = False) -> Iterator[Page]:
    """``watched_page`` for a ``with`` block inside a test (a page of another size than the fixture's)."""
    pages = watched_page(browser, width, height, fresh)
    try:
        yield next(pages)
    except BaseException:
        pages.close()  # gives the tab back
        raise
    next(pages, None)  # gives it back and checks what it did


# ---------------------------------------------------------------------------------------------- on the page
def open_app(page: Page, url: str) -> None:
    """Load the page and wait for the example sentence to be drawn (demo.load runs the model once)."""
    goto(page, url)
    for plot_id in ("overview", "detail"):
        page.wait_for_function(HAS_HEATMAP, arg=plot_id)
    page.wait_for_function(f"() => !!({VALUE})('translation')")


def wait_idle(page: Page) -> None:
    """Until no component of the page waits for an answer (Gradio 6.31.0 writes a progress text, or an ETA bar, into
    each until it comes, and dims a waiting Markdown to 20 % opacity, ``.pending``, even where its event shows no
    progress): a test on a kept page ends so, where its last action's answer may still be on its way; what measures
    colours waits so (a dimmed text reads at a contrast of ~1.5:1)."""
    page.wait_for_function("() => !document.querySelector('.progress-text, .eta-bar, .pending')")


def value(page: Page, elem_id: str) -> str:
    return page.evaluate(VALUE, elem_id)


def title(page: Page, plot_id: str) -> str:
    return page.evaluate(TITLE, plot_id)


def source_tokens(page: Page) -> int:
    """The number of source tokens the status line reports."""
    status = page.inner_text("#status")
    match = re.search(r"(\d+) source tokens", status)
    assert match, status
    return int(match.group(1))


def tick_labels(page: Page, plot_id: str) -> list[str]:
    """The tick labels as the browser drew them (SVG text, entities decoded)."""
    selector = f"#{plot_id} .xtick text, #{plot_id} .ytick text"
    return page.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")


def select_tab(page: Page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    wait_tab(page, name)


def wait_tab(page: Page, name: str) -> None:
    """Until the tab labelled ``name`` is the one selected (a click elsewhere may open it)."""
    page.wait_for_function(TAB_SELECTED, arg=name)


def select_any_tab(page: Page, name: str, shown: str) -> None:
    """Like ``select_tab``, also on a phone (the tab names wrap there; Gradio's "More tabs" menu, should the tabs
    ever fold into one, is tried too); waits until the element ``shown`` (a selector inside the tab) is visible."""
    tab = page.get_by_role("tab", name=name)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=name).click()
    page.locator(shown).first.wait_for(state="visible")


def choose_kind(page: Page, label: str) -> None:
    page.locator("#kind label", has_text=label).click()


def set_number(page: Page, root: str, number: int | float) -> None:
    """Type a value into a Gradio slider's number box and confirm it (a change event)."""
    box = page.locator(f"{root} input[type=number]").first
    box.fill(str(number))
    box.press("Enter")


def plot_point(page: Page, plot_id: str, x: float, y: float) -> tuple[float, float]:
    """The page coordinates of the data point (x, y) of a plot (its first x and y axes), scrolled into view."""
    page.locator(f"#{plot_id}").scroll_into_view_if_needed()
    return page.evaluate(
        f"""([id, x, y]) => {{
            const gd = ({GD})(id), fl = gd._fullLayout, box = gd.getBoundingClientRect();
            return [box.left + fl.xaxis._offset + fl.xaxis.l2p(x), box.top + fl.yaxis._offset + fl.yaxis.l2p(y)];
        }}""",
        [plot_id, x, y],
    )


def assert_not_injected(page: Page) -> None:
    """The payload stayed text: nothing ran, and no element of it reached the DOM."""
    found = page.evaluate(
        """() => ({
            xss: typeof window.__xss,
            img: document.querySelectorAll('img[src="x"], img[onerror]').length,
            script: [...document.scripts].filter(s => s.textContent.includes('__xss')).length,
            bold: [...document.querySelectorAll('b')].filter(b => b.textContent === 'bold').length,
        })"""
    )
    assert found == {"xss": "undefined", "img": 0, "script": 0, "bold": 0}, found


def is_dark(page: Page) -> bool:
    return page.evaluate("() => document.body.classList.contains('dark')")
