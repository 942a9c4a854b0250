"""The accessibility tests' parts: axe-core in the page (the copy the PyPI package ``axe-playwright-python`` bundles,
injected once per document), the views the sweep measures a tab in, switched in place on one loaded page, the check
that a page reflows at 320 CSS px (WCAG 1.4.10: 1280 px at 400 % zoom), and the keyboard alone's steps (Tab to an
element, a tab opened by its keys, the pointer events counted, what moves, Chromium's accessibility tree).

A view is a theme (light, dark: the system's colour scheme, which Gradio follows while the page is open) and a size (a
projector's 1280×720, a phone's 390×844), in presentation mode or not (the Attention tab's checkbox). ``VIEWS`` orders
the four of a mode so that each differs from the one before it in one thing (the page redraws its figures once per
change); a tab goes through them forwards or backwards, handing its last view on to the next tab.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import axe_playwright_python
from playwright.sync_api import Page

from helpers.browser import wait_idle, wait_tab
from helpers.scripts import still

AXE_JS = Path(axe_playwright_python.__file__).parent / "axe.min.js"
AXE_VERSION = re.search(r"axe v([\d.]+)", AXE_JS.read_text()[:200]).group(1)
# WCAG 2.0 and 2.1, levels A and AA: the rules axe runs (its best practices and AAA rules are left out)
WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
WIDE, PHONE, NARROW = (1280, 720), (390, 844), (320, 640)
# What is drawn behind the figures (their blocks' background; the figures' own is transparent), per theme
BACKGROUNDS = {"light": "#ffffff", "dark": "#27272a"}
# Figures, their texts, the Markdown and the tab names keeping still
STILL = still(".js-plotly-plot .main-svg, svg text, .prose, [role=tablist]")


class View(NamedTuple):
    dark: bool
    size: tuple[int, int]

    def __str__(self) -> str:
        return f"{'dark' if self.dark else 'light'} {self.size[0]}x{self.size[1]}"


VIEWS = (View(False, WIDE), View(True, WIDE), View(True, PHONE), View(False, PHONE))


def route(page: Page, views: tuple[View, ...]) -> tuple[View, ...]:
    """``views`` forwards or backwards: from the end nearest to the page's view now (the same, else the same size)."""
    now = View(page.evaluate("() => document.body.classList.contains('dark')"),
               (page.viewport_size["width"], page.viewport_size["height"]))
    near = lambda view: (view == now, view.size == now.size)  # noqa: E731
    return views if near(views[0]) >= near(views[-1]) else views[::-1]

# axe on the page as shown: the other tabs' panels left out (hidden, they are not what anyone meets; leaving them out
# takes a third off each run)
AXE_RUN = """async ([tags, contrast]) => {
    const hidden = [...document.querySelectorAll('[role=tabpanel]')].filter((p) => !p.offsetParent);
    const found = await axe.run({exclude: hidden}, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations'],
                                                   rules: {'color-contrast': {enabled: contrast}}});
    return found.violations.map((v) => ({id: v.id, nodes: v.nodes.map((n) => [n.target.join(' '),
                                                                              n.failureSummary.slice(0, 200)])}));
}"""


def axe(page: Page, contrast: bool = True) -> dict[str, list[tuple[str, str]]]:
    """axe-core's WCAG 2.0/2.1 A + AA violations on the page as it shows now: rule id -> [(element, why)].
    ``contrast=False`` leaves out its color-contrast rule (over half of a run's time)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=AXE_JS.read_text())
    return {v["id"]: [tuple(n) for n in v["nodes"]] for v in page.evaluate(AXE_RUN, [list(WCAG_TAGS), contrast])}


def set_view(page: Page, view: View) -> None:
    """The page switched to ``view`` in place (only what differs), until its figures and texts keep still."""
    if page.viewport_size != {"width": view.size[0], "height": view.size[1]}:
        page.set_viewport_size({"width": view.size[0], "height": view.size[1]})
    if page.evaluate("() => document.body.classList.contains('dark')") != view.dark:
        page.emulate_media(color_scheme="dark" if view.dark else "light")
        page.wait_for_function("(dark) => document.body.classList.contains('dark') === dark", arg=view.dark)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.evaluate(STILL)


def set_present(page: Page, on: bool) -> None:
    """Presentation mode switched by its checkbox, on the Attention tab (where it is, open), until drawn and still."""
    box = page.locator("#present input[type=checkbox]")
    if box.is_checked() != on:
        box.click()
    page.wait_for_function("(on) => document.body.classList.contains('attn-present') === on", arg=on)
    wait_idle(page)  # (the Attention tab's figures come again, drawn for a projector or not)
    page.evaluate(STILL)


# What sticks out past a page's width (its own horizontal scrolling): the elements that end right of the viewport and
# are not inside a box that scrolls or clips them. [] when the page reflows.
OVERFLOW = """() => {
    const root = document.documentElement;
    if (root.scrollWidth <= root.clientWidth + 1) return [];
    const held = (e) => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement)
        if (getComputedStyle(p).overflowX !== 'visible') return true; return false; };
    return [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 1
        && e.checkVisibility() && !held(e)).slice(0, 5)
        .map((e) => `${e.tagName}#${e.id}.${String(e.className).slice(0, 40)} to ${e.getBoundingClientRect().right}`);
}"""


def overflow(page: Page) -> list[str]:
    """At 320 CSS px wide: what makes the open tab scroll sideways (WCAG 1.4.10); [] when it reflows."""
    page.set_viewport_size({"width": NARROW[0], "height": NARROW[1]})
    page.evaluate(STILL)
    return page.evaluate(OVERFLOW)


# At 320 CSS px, what is cut off in the open tab (WCAG 1.4.10: no content lost): a text that reaches past the screen
# or past a box that clips it (overflow hidden, an SVG's edge) by more than 2 px, unless a box that scrolls holds it;
# and a box that scrolls sideways with no cue that it does (a scroll bar that takes room, or a "scroll sideways" line
# of its own). Screen-reader-only text and plotly's hover and toolbar layers are not shown, so not measured.
CLIPPED = """() => {
    const panel = [...document.querySelectorAll('[role=tabpanel]')].find((p) => p.offsetParent), out = [];
    const unseen = (e) => e.closest('.attn-sr, .attn-skip, .hoverlayer, .modebar')
        || !e.checkVisibility({visibilityProperty: true, opacityProperty: true});
    const scrolls = (p) => /auto|scroll/.test(getComputedStyle(p).overflowX);
    const clips = (p) => p.tagName === 'svg' || /hidden|clip/.test(getComputedStyle(p).overflowX);
    const name = (p) => `${p.tagName}#${p.id}.${String(p.className.baseVal ?? p.className).slice(0, 30)}`;
    const check = (e, r, what) => {
        if (!r.width || !r.height) return;
        const within = (b) => r.left >= b.left - 2 && r.right <= b.right + 2;
        for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
            if (scrolls(p)) return;  // a box that scrolls: its own region
            if (clips(p) && !within(p.getBoundingClientRect())) { out.push(`${what} cut by ${name(p)}`); return; }
        }
        if (!within({left: 0, right: innerWidth})) out.push(`${what} past the screen`);
    };
    const texts = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
    for (let n = texts.nextNode(); n; n = texts.nextNode()) {
        const e = n.parentElement, what = `"${n.textContent.trim().slice(0, 40)}"`;
        if (!n.textContent.trim() || !e || unseen(e)) continue;
        if (e.closest('svg')) {
            if (e.matches('text, tspan') && !e.querySelector('tspan')) check(e, e.getBoundingClientRect(), what);
            continue;
        }
        const range = document.createRange();
        range.selectNodeContents(n);
        for (const r of range.getClientRects()) check(e, r, what);
    }
    for (const box of panel.querySelectorAll('*')) {
        if (!scrolls(box) || box.scrollWidth <= box.clientWidth + 2 || unseen(box)) continue;
        const bar = box.offsetHeight - box.clientHeight - parseFloat(getComputedStyle(box).borderTopWidth)
            - parseFloat(getComputedStyle(box).borderBottomWidth);
        const said = /scroll/.test(getComputedStyle(box, '::before').content);
        if (bar <= 0 && !said) out.push(`${name(box)} scrolls sideways with no cue`);
    }
    return [...new Set(out)].slice(0, 12);
}"""


def clipped(page: Page) -> list[str]:
    """At 320 CSS px wide (``overflow`` sets it): what the open tab cuts off, and its sideways scroll boxes with no cue
    that they scroll; [] when nothing is lost."""
    return page.evaluate(CLIPPED)


# The tabs in the order visited (and two more views of two of them, each visited from its tab: ``OTHER_VIEWS``), and
# what shows that each is drawn (selectors; Lab: its summary, with or without its training curves)
TABS = {
    "attention": ("#overview .main-svg", "#detail .main-svg"),
    "attention-masked": ("#overview .legend text", "#detail .legend text"),  # decoder self-attention: its mask's key
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
}
OTHER_VIEWS = {"attention-masked", "inside-matrix"}  # their texts measured too (axe: as their tab)
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
    """Open ``tab`` by its button (Inside a head's whole matrices and the Attention tab's decoder self-attention: by
    their choice on their tab, which is open), until it is drawn and still."""
    if tab == "inside-matrix":
        page.locator("#in-view label", has_text="Whole matrices").click()
    elif tab == "attention-masked":
        page.locator("#kind input[value='decoder_self']").check()
    else:
        page.locator(f"[role=tab][data-tab-id='{tab}']").click()
        page.wait_for_function(f"() => document.querySelector(\"[role=tab][data-tab-id='{tab}']\")"
                               "?.getAttribute('aria-selected') === 'true'")
        own = {"inside": "#in-view input[value='query']", "attention": "#kind input[value='cross']"}
        if tab in own and not page.locator(own[tab]).is_checked():  # (as the tab opens: one query; cross-attention)
            page.locator(own[tab]).check()
    for selector in TABS[tab]:
        page.locator(selector).first.wait_for(state="visible")
    if tab in DRAWN:
        page.wait_for_function(DRAWN[tab])
    open_how_to_read(page)
    wait_idle(page)  # (the tab's other answers: a Markdown waiting for one is dimmed)
    page.evaluate(STILL)


# ------------------------------------------------------------------------------------------- the keyboard alone
ACTIVE = """() => { const e = document.activeElement, block = e && e.closest('[id]');
    return {id: block ? block.id : '', tag: e.tagName, cls: String(e.className.baseVal ?? e.className)}; }"""
# What moves: the page's running animations and transitions longer than a hundredth of a millisecond
MOVING = """() => document.getAnimations().filter((a) => a.playState === 'running'
    && a.effect.getComputedTiming().duration > 0.01)
    .map((a) => `${a.animationName || a.transitionProperty} on ${a.effect.target?.tagName}`)"""
# Counts the pointer events a visitor (the test) sends from now on: a page script's own (a slider's release) is not one
COUNT_POINTER = """() => { window.attnPointer = 0; if (window.attnCounting) return;
    window.attnCounting = true;
    for (const type of ['mousedown', 'mouseup', 'pointerdown', 'pointerup', 'mousemove'])
        document.addEventListener(type, (ev) => { if (ev.isTrusted) window.attnPointer += 1; }, true); }"""


def tab_until(page: Page, reached: str, most: int = 40) -> int:
    """Tab presses until the page function ``reached`` holds for the focused element (at most ``most``)."""
    for presses in range(1, most + 1):
        page.keyboard.press("Tab")
        if page.evaluate(reached):
            return presses
    raise AssertionError(f"not reached in {most} Tab presses: {reached}; at {page.evaluate(ACTIVE)}")


def open_by_keys(page: Page, name: str) -> None:
    """Open the tab ``name`` from the keyboard: the tab shown focused (the tabs are one Tab stop: a Shift+Tab from
    the tab's first control gets there), the arrow keys to ``name``, Enter."""
    page.locator("[role=tab][aria-selected=true]").focus()
    for _ in range(10):
        if page.evaluate("() => document.activeElement.textContent.trim()") == name:
            break
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    wait_tab(page, name)


def accessibility_tree(page: Page, elem_id: str) -> list:
    """The named nodes of Chromium's accessibility tree under the element ``elem_id``: role, name, description."""
    session = page.context.new_cdp_session(page)
    try:
        root = session.send("DOM.describeNode", {"objectId": session.send("Runtime.evaluate", {
            "expression": f"document.getElementById('{elem_id}')"})["result"]["objectId"]})["node"]["backendNodeId"]
        nodes = session.send("Accessibility.getPartialAXTree", {"backendNodeId": root, "fetchRelatives": False})
        tree = session.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        session.detach()
    start = nodes["nodes"][0]["nodeId"]
    by_id = {n["nodeId"]: n for n in tree}
    out, todo = [], [start]
    while todo:
        node = by_id.get(todo.pop(0))
        if node is None:
            continue
        todo += node.get("childIds", [])
        role, name = node.get("role", {}).get("value"), node.get("name", {}).get("value", "")
        if not node.get("ignored") and name and role not in ("StaticText", "InlineTextBox"):
            out.append([role, name, node.get("description", {}).get("value", "")])
    return out
