"""Screenshots of the app to look at (they are not tests): every tab, the alignment view, presentation mode (on every
tab too: ``present-<tab>``) and a 100-token sentence's close-up, at a projector's 1280×720 and a phone's 390×844,
light and dark.

    python -m bench.screenshots                      # starts `python app.py` on a free loopback port
    python -m bench.screenshots --only present --only 'tab-*-390x844-dark'
    python -m bench.screenshots --url http://127.0.0.1:7860/   # an app already running (loopback only)

Files go to screenshots/ (git-ignored; ``--out DIR`` elsewhere): ``<shot>-<width>x<height>-<theme>.png`` is the
first screen (the viewport), ``…-full.png`` the whole page, ``…-element.png`` one figure. ``--only`` takes fnmatch
patterns (or plain substrings) of the name without ``.png``; a size/theme that has no shot chosen is not opened at
all. The files written are printed, one a line; so is anything the page did that it never should (a console error,
a request off loopback), and the exit status is then 1. One Chromium, one page per size and theme (each shot waits
for its figures: no sleeps).
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from bench.common import ROOT, SENTENCES, app_process, is_loopback
from viz.views.attention.projector import TITLE_PX

SHOTS = ROOT / "screenshots"
SIZES = ((1280, 720), (390, 844))
THEMES = ("light", "dark")
TIMEOUT_MS = 120_000  # generous: the machine may be busy
LONG = " ".join(SENTENCES)  # ~140 words: the app cuts it to the model's 100 tokens

GD = "(id) => document.querySelector(`#${id} .js-plotly-plot`)"
HAS_HEATMAP = f"(id) => {{ const gd = ({GD})(id); return !!(gd && gd.data?.some(t => t.type === 'heatmap')); }}"
FILLED = "(id) => { const e = document.querySelector(`#${id} textarea, #${id} input`); return !!e && !!e.value; }"
TEXT = "([sel, part]) => (document.querySelector(sel)?.textContent || '').includes(part)"
# Fonts loaded, then a quiet window: the page's boxes unchanged for 10 frames and 200 ms (Gradio resizes its plots
# after drawing them).
SETTLED = """async () => {
    await document.fonts.ready;
    const shape = () => JSON.stringify([...document.querySelectorAll('.js-plotly-plot .main-svg, svg')]
        .map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }));
    let last = shape(), frames = 0, since = performance.now();
    while (frames < 10 || performance.now() - since < 200) {
        await new Promise((r) => requestAnimationFrame(r));
        const now = shape();
        if (now !== last) { frames = 0; since = performance.now(); last = now; } else frames++;
    }
}"""

# The tabs: label, id, and what shows that the tab is drawn (selectors to wait for, then page functions).
TABS = (
    ("Decoding, step by step", "decoding", ("#decode-top5 .main-svg", "#decode-self .main-svg",
                                            "#decode-cross .main-svg"),
     (f"() => ({TEXT})(['#decode-status', 'Step 1 of'])",)),
    ("Why 1/√d_k", "scaling", ("#variance .main-svg", "#histogram .main-svg", "#softmax-weights .main-svg",
                               "#curves .main-svg", "#live-entropy .main-svg"),
     (f"() => ({HAS_HEATMAP})('live-changed')",)),
    ("Inside a head", "inside", ("#in-scores .main-svg", "#in-figure2 .main-svg", "#in-projections .main-svg",
                                 "#in-head_output .main-svg", "#in-contributions .main-svg"),
     ()),
    ("Head analysis", "heads", ("#heads-grid .main-svg", "#rollout-enc .hm image", "#rollout-cross .hm image"), ()),
    ("Architecture", "architecture", ("#figure1 svg [data-attention='cross']", "#figure2 svg"), ()),
    ("Lab", "lab", ("#lab-summary",),  # its figures, or (nothing shipped yet) the summary that says so
     ("() => !!document.querySelector('#lab-heads .main-svg') || "
      "(document.querySelector('#lab-summary')?.textContent || '').includes('still training')",)),
    ("Model card", "model-card", ("text=Model running on",), ()),
)


@dataclass
class Session:
    """One page at one size and theme; what it wrote, and what it did that it never should."""

    page: object
    size: str
    theme: str
    wanted: Callable[[str], bool]
    out: Path = SHOTS
    written: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def name(self, shot: str, suffix: str = "") -> str:
        return f"{shot}-{self.size}-{self.theme}{suffix}"

    def shoot(self, shot: str, element: str | None = None) -> None:
        """The viewport and the full page (and ``element`` alone, if given) of what is shown now."""
        self.page.evaluate(SETTLED)
        self.out.mkdir(parents=True, exist_ok=True)
        for suffix, full in (("", False), ("-full", True)):
            path = self.out / f"{self.name(shot, suffix)}.png"
            self.page.screenshot(path=str(path), full_page=full)
            self.record(path)
        if element:
            path = self.out / f"{self.name(shot, '-element')}.png"
            self.page.locator(element).first.screenshot(path=str(path))
            self.record(path)

    def record(self, path: Path) -> None:
        self.written.append(path)
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path, flush=True)


def matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """Whether a shot's name (``tab-scaling-390x844-dark``) is chosen: by an fnmatch pattern or a substring."""
    if not patterns:
        return lambda name: True
    return lambda name: any(p in name or fnmatch.fnmatchcase(name, p) for p in patterns)


def wait_drawn(page, selectors: Sequence[str] = (), functions: Sequence[str] = ()) -> None:
    for selector in selectors:
        page.locator(selector).first.wait_for(state="visible")
    for fn in functions:
        page.wait_for_function(fn)


def select_tab(page, label: str, tab_id: str) -> None:
    """Open a tab (by its button; by Gradio's "More tabs" menu, listed by label, should the tabs ever fold into one)."""
    tab = page.locator(f"[role=tab][data-tab-id='{tab_id}']")
    if tab.count() and tab.first.is_visible():
        tab.first.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=label).click()
    page.wait_for_function(f"() => document.querySelector(\"[role=tab][data-tab-id='{tab_id}']\")"
                           "?.getAttribute('aria-selected') === 'true'")
    page.evaluate("() => window.scrollTo(0, 0)")


def lines_on_screen(page, old=None) -> None:
    """Scroll the alignment view on screen (the page draws it only there) and wait until it is drawn (a figure
    other than ``old``, the one it showed before, if given)."""
    page.locator("#lines").scroll_into_view_if_needed()
    page.wait_for_function(f"(old) => {{ const gd = ({GD})('lines'); return !!gd?.querySelector('.scatterlayer path')"
                           " && JSON.stringify(gd.layout.yaxis.ticktext) !== old; }", arg=old)


def attention_shots(s: Session) -> None:
    """The Attention tab as it opens (the sharp default view), its alignment view, and presentation mode."""
    page = s.page
    lines_on_screen(page)  # drawn once on screen: the whole-page shots show it too
    page.evaluate("() => window.scrollTo(0, 0)")
    if s.wanted(s.name("tab-attention")):
        s.shoot("tab-attention")
    if s.wanted(s.name("alignment")):
        lines_on_screen(page)
        s.shoot("alignment", "#lines")
        page.evaluate("() => window.scrollTo(0, 0)")
    if s.wanted(s.name("present")):
        page.locator("#present input").check()
        page.wait_for_function("() => document.body.classList.contains('attn-present')")
        page.wait_for_function(f"() => ({GD})('detail')?.layout?.title?.font?.size === {TITLE_PX}")
        s.shoot("present")
        page.locator("#present input").uncheck()
        page.wait_for_function("() => !document.body.classList.contains('attn-present')")


def present_shots(s: Session) -> None:
    """Every other tab in presentation mode (switched on on the Attention tab, as a presenter does)."""
    chosen = [tab for tab in TABS if s.wanted(s.name(f"present-{tab[1]}"))]
    if not chosen:
        return
    page = s.page
    select_tab(page, "Attention", "attention")
    page.locator("#present input").check()
    page.wait_for_function("() => document.body.classList.contains('attn-present')")
    for label, tab_id, selectors, functions in chosen:
        select_tab(page, label, tab_id)
        wait_drawn(page, selectors, functions)
        s.shoot(f"present-{tab_id}")
    select_tab(page, "Attention", "attention")
    page.locator("#present input").uncheck()
    page.wait_for_function("() => !document.body.classList.contains('attn-present')")


def long_shots(s: Session) -> None:
    """A 100-token sentence (the longest the model takes): the page and its close-up."""
    page = s.page
    select_tab(page, "Attention", "attention")
    old = page.evaluate(f"() => JSON.stringify(({GD})('lines')?.layout?.yaxis?.ticktext)")
    page.fill("#source textarea", LONG)
    page.click("#run")
    page.wait_for_function(f"() => ({TEXT})(['#status', '100 source tokens'])")
    page.wait_for_function("() => document.querySelectorAll('#detail .xtick text').length > 0")
    # the warning that the sentence was cut (a toast) would cover the close-up's title: read, then closed
    page.locator(".toast-body").first.wait_for()
    for close in page.locator(".toast-close").all():
        close.click()
    page.wait_for_function("() => !document.querySelector('.toast-body')")
    lines_on_screen(page, old)  # the whole-page shot shows this sentence's alignment view
    page.locator("#detail").scroll_into_view_if_needed()
    s.shoot("long-100-tokens", "#detail")


def shoot_one(browser, url: str, width: int, height: int, theme: str, wanted: Callable[[str], bool],
              out: Path = SHOTS) -> Session:
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    s = Session(page, f"{width}x{height}", theme, wanted, out)
    page.on("console", lambda m: m.type == "error" and s.problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: s.problems.append(f"pageerror: {e}"))
    page.on("request", lambda r: None if is_loopback(r.url) else s.problems.append(f"off loopback: {r.url}"))
    try:
        page.goto(url + ("?__theme=dark" if theme == "dark" else ""))
        for plot_id in ("overview", "detail"):
            page.wait_for_function(HAS_HEATMAP, arg=plot_id)
        page.wait_for_function(FILLED, arg="translation")
        attention_shots(s)
        for label, tab_id, selectors, functions in TABS:
            if s.wanted(s.name(f"tab-{tab_id}")):
                select_tab(page, label, tab_id)
                wait_drawn(page, selectors, functions)
                s.shoot(f"tab-{tab_id}")
        present_shots(s)
        if s.wanted(s.name("long-100-tokens")):
            long_shots(s)
    finally:
        context.close()
    return s


SHOT_NAMES = ("tab-attention", "alignment", "present", *(f"tab-{tab[1]}" for tab in TABS),
              *(f"present-{tab[1]}" for tab in TABS), "long-100-tokens")


@contextlib.contextmanager
def app_url(url: str | None) -> Iterator[str]:
    if url:
        if not is_loopback(url):
            raise SystemExit(f"--url must be a loopback address, not {url}")
        yield url if url.endswith("/") else url + "/"
        return
    with app_process(("app.py",)) as app:
        yield app.url


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.screenshots", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="PATTERN",
                        help="shots whose name (e.g. tab-scaling-390x844-dark) matches; repeatable. Shots: "
                             + ", ".join(SHOT_NAMES))
    parser.add_argument("--out", type=Path, default=SHOTS, help="the folder to write to (default: screenshots/)")
    parser.add_argument("--url", help="an app already running on loopback (default: start `python app.py`)")
    args = parser.parse_args(argv)
    wanted = matcher(args.only)
    combos = [(w, h, theme) for w, h in SIZES for theme in THEMES
              if any(wanted(f"{shot}-{w}x{h}-{theme}") for shot in SHOT_NAMES)]
    if not combos:
        print(f"no shot matches {args.only}; shots: {', '.join(SHOT_NAMES)}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright  # a test requirement only

    start, sessions = time.perf_counter(), []
    with app_url(args.url) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for width, height, theme in combos:
                sessions.append(shoot_one(browser, url, width, height, theme, wanted, args.out))
        finally:
            browser.close()
    problems = [f"{s.size} {s.theme}: {p}" for s in sessions for p in s.problems]
    for line in problems:
        print(f"PROBLEM {line}", file=sys.stderr)
    n = sum(len(s.written) for s in sessions)
    print(f"{n} screenshots in {args.out}/ ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
