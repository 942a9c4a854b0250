"""Every figure speaks, in Chromium at a projector's 1280×720, on one page for the module: each figure's accessible
name and description are what the server computed for it (the Attention tab's recomputed here from /attention's
numbers), "As a table" shows exactly its values with a CSV of them, the Attention tab's core task done with the
keyboard alone (no mouse event sent), and the Tab presses from each tab's first control to its main figure."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
from helpers.a11y import ACTIVE, COUNT_POINTER, MOVING, accessibility_tree, open_by_keys, tab_until
from helpers.browser import KeptPages, select_tab, wait_idle, wait_tab
from helpers.raw_api import RawClient
from helpers.scripts import TITLE, VALUE
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from viz import describe
from viz.vocab import GERMAN_SIDES, KIND_LABELS

WIDTH, HEIGHT = 1280, 720
SENTENCE = "A man rides a horse on the beach."
SAID = "() => document.getElementById('attn-announce').textContent"
# Everything the live region said since ``RECORD`` ran
RECORD = """() => { window.attnSaid = []; const live = document.getElementById('attn-announce');
    new MutationObserver(() => live.textContent && window.attnSaid.push(live.textContent))
        .observe(live, {childList: true, characterData: true, subtree: true}); }"""
# The figure of a Plot as its page holds it: what it was sent to say (viz.describe), and the element that says it
SENT = """(id) => {
    const block = document.getElementById(id), gd = block.querySelector('.js-plotly-plot');
    const d = gd && gd.layout && gd.layout.meta && gd.layout.meta.describe;
    return d ? {name: d.name, summary: d.summary, table: d.table, grid: !!d.grid, lang: d.lang || null} : null;
}"""
STATE = """() => ({kind: document.querySelector('#kind input:checked').value,
                  layer: Number(document.querySelector('#layer input[type=number]').value),
                  head: Number(document.querySelector('#head input:checked').value)})"""
# The languages a figure's tick labels are marked in: {y: [...], x: [...]} (null: none)
TICK_LANGS = """(id) => { const ticks = (axis) => [...new Set([...document.querySelectorAll(`#${id} .${axis}tick text`)]
    .map((t) => t.getAttribute('lang')))]; return {y: ticks('y'), x: ticks('x')}; }"""
# A figure's German as the page marks it: its tick labels' languages, the spans its description (the summary its
# picture's aria-describedby names) marks German, and what its description says is German
GERMAN = """(id) => { const gd = document.querySelector(`#${id} .js-plotly-plot`), d = gd.layout.meta.describe;
    const lang = d.lang || {}, said = document.getElementById(document.querySelector(`#${id} [aria-describedby]`)
        .getAttribute('aria-describedby'));
    const ticks = (axis) => [...new Set([...gd.querySelectorAll(`.${axis}tick text`)]
        .map((t) => t.getAttribute('lang')))];
    return {y: ticks('y'), x: ticks('x'), want: {y: lang.y ?? lang.rows ?? null, x: lang.x ?? lang.columns ?? null},
            spans: [...said.querySelectorAll('span')].map((e) => [e.lang, e.textContent]), words: lang.words || [],
            summary: d.summary}; }"""
# Figures whose German the sweep must meet: figure -> {axis: language of its tick labels}
GERMAN_FIGURES = {"decode-top5": {"y": "de"}, "decode-self": {"x": "de"}, "rollout-cross": {"y": "de", "x": None},
                  "rollout-cross-raw": {"y": "de", "x": None}, "heads-grid": {"y": None, "x": None}}


def assert_german_marked(page: Page, plot_id: str) -> dict:
    """The figure's tick labels in the language its description gives them, and in the summary that describes it
    exactly the German words it quotes in <span lang="de"> (whole words, as a screen reader takes them)."""
    got = page.evaluate(GERMAN, plot_id)
    assert set(got["y"]) <= {got["want"]["y"]} and set(got["x"]) <= {got["want"]["x"]}, (plot_id, got)
    words = "|".join(re.escape(w) for w in got["words"])
    quoted = [m.group(0) for m in re.finditer(rf"(?<!\w)(?:{words})(?!\w)", got["summary"])] if words else []
    assert got["spans"] == [["de", w] for w in quoted], (plot_id, got)
    return got


# (tab name, its main figure's Plot id) for every tab with a figure
TABS = [("Attention", "overview"), ("Decoding, step by step", "decode-top5"), ("Why 1/√d_k", "variance"),
        ("Inside a head", "in-projections"), ("Head analysis", "heads-grid"), ("Architecture", "figure1"),
        ("Lab", "lab-curves")]


# The most Tab presses from each tab's first control (its skip link, whose Enter is the one-press way) to its main
# figure, with Tab alone: 5 on every tab. Each tab puts its main figure right after the controls that make it (the
# Attention tab: the sentences and its row of actions, one stop; the choices that refine the figures after them),
# folds what is set rarely (Inside a head's head and scale, which the Attention tab's close-up sets), and makes each
# group one stop (a radio group, a slider, a group of check boxes, a row of actions: the arrow keys move within it)
MOST_TABS = dict.fromkeys(("Attention", "Decoding, step by step", "Why 1/√d_k", "Inside a head", "Head analysis",
                           "Architecture", "Lab", "Model card"), 5)


def opened(kept: KeptPages, server: str) -> Page:
    return kept.open(server, WIDTH, HEIGHT)


def speaker(page: Page, plot_id: str):
    """The element that names a figure: the layer over a figure walked by keys, else its picture."""
    return page.locator(f"#{plot_id} .attn-grid, #{plot_id} svg.main-svg[role=img], #{plot_id} svg.tf-figure").first


def wait_described(page: Page, plot_id: str) -> dict:
    named = "document.querySelector(`#${id} [aria-describedby]`)"
    page.wait_for_function(f"(id) => {{ const d = ({SENT})(id), el = {named};"
                           " return d && el && el.getAttribute('aria-label') === d.name; }", arg=plot_id)
    return page.evaluate(SENT, plot_id)


def assert_speaks(page: Page, plot_id: str, name: str, summary: str) -> None:
    expect(speaker(page, plot_id)).to_have_accessible_name(name)
    expect(speaker(page, plot_id)).to_have_accessible_description(summary)


def assert_table_is_the_figures(page: Page, plot_id: str, table: dict, lang: dict | None = None) -> None:
    """"As a table" opens a table of exactly the figure's values (headers th scope=col / row) and its CSV; ``lang``:
    the language its row and column headers are marked in ({"rows": "de", "columns": None}; None: none marked)."""
    toggle = page.locator(f"#{plot_id} .attn-table-toggle")
    if toggle.get_attribute("aria-expanded") != "true":
        toggle.press("Enter")  # (a keyboard press: no pointer)
    region = page.locator(f"#{plot_id} .attn-table-region")
    expect(region).to_be_visible()
    got = region.evaluate("""(r) => { const langs = (ths) => [...new Set([...ths].map(th => th.getAttribute('lang')))];
    return {
        cols: [...r.querySelectorAll('thead th[scope=col]')].map(th => th.textContent),
        rows: [...r.querySelectorAll('tbody th[scope=row]')].map(th => th.textContent),
        cells: [...r.querySelectorAll('tbody tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent)),
        csvUrl: r.querySelector('a.attn-csv').href,
        lang: {rows: langs(r.querySelectorAll('tbody th')), columns: langs(r.querySelectorAll('thead th + th'))}}; }""")
    assert got["lang"] == {side: [(lang or {}).get(side)] for side in ("rows", "columns")}, got["lang"]
    assert got["cols"] == [table["corner"], *table["columns"]] and got["rows"] == table["rows"]
    if isinstance(table["values"], list):
        text = [["" if v is None else (str(v) if isinstance(v, str) else f"{v:g}") for v in row]
                for row in table["values"]]
        assert [[c if not c.replace(".", "").replace("-", "").isdigit() else f"{float(c):g}" for c in row]
                for row in got["cells"]] == text
    csv_text = page.evaluate("(url) => fetch(url).then(r => r.text())", got["csvUrl"])
    assert list(csv.reader(io.StringIO(csv_text))) == [got["cols"], *[[r, *c] for r, c in zip(got["rows"],
                                                                                             got["cells"])]]
    toggle.press("Enter")  # closed again
    expect(region).to_be_hidden()


def test_the_attention_figures_say_what_the_apis_numbers_say(kept: KeptPages, server: str):
    page = opened(kept, server)
    wait_idle(page)
    state, text = page.evaluate(STATE), page.evaluate(VALUE, "source")
    client = RawClient(server)
    try:
        answer = client.call("attention", [text, "", None])
    finally:
        client.close()
    assert answer.event == "complete", answer.data
    maps = answer.data[0]
    kind, layer, head = state["kind"], state["layer"], state["head"]
    q, k = {"encoder_self": ("source_tokens", "source_tokens"), "decoder_self": ("target_tokens", "target_tokens"),
            "cross": ("target_tokens", "source_tokens")}[kind]
    w = np.asarray(maps[kind], dtype=np.float64)  # (L, H, Q, K), as /attention gives it (5 decimals)
    expected = describe.overview(KIND_LABELS[kind], w, maps[q], maps[k])
    assert_speaks(page, "overview", expected.name, expected.summary)
    one = w[layer - 1].mean(0) if head == 0 else w[layer - 1, head - 1]
    which = "mean of 8 heads" if head == 0 else f"head {head}"
    masked = np.triu(np.ones(one.shape, dtype=bool), 1) if kind == "decoder_self" else None
    close = describe.attention_map(f"{KIND_LABELS[kind]}, layer {layer}, {which}", one, maps[q], maps[k],
                                   masked=masked)
    assert_speaks(page, "detail", close.name, close.summary)
    # German marked German: the translation, the close-up's German tokens in its table and its tick labels
    rows_de, columns_de = GERMAN_SIDES[kind]
    lang = {"rows": "de" if rows_de else None, "columns": "de" if columns_de else None}
    assert_table_is_the_figures(page, "detail", wait_described(page, "detail")["table"], lang)
    assert page.evaluate(TICK_LANGS, "detail") == {"y": [lang["rows"]], "x": [lang["columns"]]}
    assert bool(assert_german_marked(page, "detail")["spans"]) == (kind != "encoder_self")  # its German pairs
    assert page.evaluate("() => ['target', 'translation'].map((id) => document.querySelector(`#${id} textarea`)"
                         ".lang)") == ["de", "de"]
    assert_table_is_the_figures(page, "overview", wait_described(page, "overview")["table"])


def test_the_keyboard_alone_types_runs_picks_heads_and_opens_inside_a_head(kept: KeptPages, server: str):
    page = opened(kept, server)
    wait_idle(page)
    page.evaluate(COUNT_POINTER)
    page.evaluate(RECORD)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    for _ in range(30):  # from the page's start: Tab to the Attention tab's skip link
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.classList.contains('attn-skip')"):
            break
    page.keyboard.press("Tab")  # the sentence
    assert page.evaluate(ACTIVE)["id"] == "source"
    before = page.evaluate(VALUE, "translation")
    page.keyboard.press("Control+A")
    page.keyboard.type(SENTENCE)
    page.keyboard.press("Enter")  # runs it
    page.wait_for_function(f"(old) => ({VALUE})('translation') && ({VALUE})('translation') !== old", arg=before)
    wait_idle(page)
    page.keyboard.press("Tab")  # the own translation
    page.keyboard.press("Tab")  # the row of actions, one stop (ARIA's toolbar): at its Run button
    assert page.evaluate(ACTIVE)["id"] == "run"
    assert page.evaluate("() => document.querySelector('#action-row').getAttribute('role')") == "toolbar"
    page.keyboard.press("End")  # its last control
    assert page.evaluate(ACTIVE)["id"] == "present"
    page.keyboard.press("ArrowRight")  # round to the first
    page.keyboard.press("ArrowRight")
    assert page.evaluate(ACTIVE)["id"] == "example"
    page.keyboard.press("Tab")  # out of the row: the overview, before the choices that refine it
    assert page.evaluate(ACTIVE) == {"id": "overview", "tag": "DIV", "cls": "attn-grid"}
    labels = page.evaluate("() => document.querySelector('#overview .js-plotly-plot').layout.meta.describe"
                           ".grid.blocks[0].labels")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"(want) => ({SAID})() === want", arg=labels[1][1])  # layer 2, head 2 announced
    page.keyboard.press("Enter")  # does what a click does: the close-up shows that head
    page.wait_for_function(f"() => ({TITLE})('detail').endsWith('layer 2 · head 2')")
    page.keyboard.press("ArrowRight")  # across heads
    page.wait_for_function(f"(want) => ({SAID})() === want", arg=labels[1][2])
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => ({TITLE})('detail').endsWith('layer 2 · head 3')")
    close = wait_described(page, "detail")
    assert close["name"].startswith(f"{KIND_LABELS[page.evaluate(STATE)['kind']]}, layer 2, head 3")
    said = f"{close['name']}. {close['summary']}"  # announced once drawn, after the visitor's own key
    try:
        page.wait_for_function("(want) => window.attnSaid.some((s) => s.startsWith(want))", arg=said, timeout=20_000)
    except Exception:
        raise AssertionError((said, page.evaluate("() => window.attnSaid"))) from None
    page.keyboard.press("Tab")  # the overview's "As a table"
    page.keyboard.press("Tab")  # the close-up
    assert page.evaluate(ACTIVE) == {"id": "detail", "tag": "DIV", "cls": "attn-grid"}
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    t = close["table"]
    page.wait_for_function(f"(want) => ({SAID})() === want", arg=f"'{t['rows'][2]}' → '{t['columns'][1]}': "
                                                                 f"{t['values'][2][1]}")
    page.keyboard.press("Enter")  # the row's query, inside the head
    wait_tab(page, "Inside a head")
    page.wait_for_function("() => document.querySelector('#in-query input:checked')?.value === '2'")
    assert page.evaluate("() => window.attnPointer") == 0
    select_tab(page, "Attention")
    wait_idle(page)


LATER_FIGURES = {"Head analysis": ("rollout-cross", "rollout-cross-raw")}


def test_every_tab_s_figures_say_what_the_server_sent_and_its_main_figure_is_a_few_tab_presses_away(
        kept: KeptPages, server: str):
    """Each tab's figures: named and described by what the server computed beside them, toolbar buttons out of the
    Tab order, the main figure's table exactly its values. From each tab's own first control (its skip link, the first
    Tab stop after the tab) at most 5 Tab presses reach its main figure (Enter on the skip link goes there); Head
    analysis's grid opens a head with the keys. Prints the Tab-only counts and what Chromium's accessibility tree gives
    for the Attention tab's figures and the Lab curves."""
    page = opened(kept, server)
    counts, german = {}, {}
    for tab, main in TABS:
        select_tab(page, tab)
        page.locator(f"#{main}").wait_for(state="visible")
        if main == "figure1":
            expect(speaker(page, main)).to_have_accessible_name(
                page.locator("#figure1 svg.tf-figure").get_attribute("aria-label"))
        else:
            wait_described(page, main)
            for later in LATER_FIGURES.get(tab, ()):  # drawn by an event of their own after the main figure's
                wait_described(page, later)
            wait_idle(page)
            ids = page.evaluate("() => [...document.querySelectorAll('.block:has(> .js-plotly-plot)')]"
                                ".filter(b => b.offsetParent !== null && b.id).map(b => b.id)")
            for plot_id in ids:
                sent = wait_described(page, plot_id)
                assert_speaks(page, plot_id, sent["name"], sent["summary"])
                german[plot_id] = assert_german_marked(page, plot_id)
                assert page.evaluate(f"() => [...document.querySelectorAll('#{plot_id} .modebar-btn')]"
                                     ".every(b => b.tabIndex === -1)")
            sent = wait_described(page, main)
            assert_table_is_the_figures(page, main, sent["table"], sent["lang"])
        if tab in ("Attention", "Lab"):  # what a screen reader gets (Chromium's accessibility tree), for the notes
            print(tab, json.dumps(accessibility_tree(page, main if tab == "Lab" else "plots-row"), ensure_ascii=False))
        page.get_by_role("tab", name=tab).focus()
        presses = 0
        while not page.evaluate("() => document.activeElement.classList.contains('attn-skip')"):
            page.keyboard.press("Tab")
            presses += 1
            assert presses <= 5, tab
        page.keyboard.press("Enter")
        assert page.evaluate(f"() => !!document.activeElement.closest('#{main}')"), tab
        page.get_by_role("tab", name=tab).focus()  # Tab only: to the figure's first stop (its grid, "As a table")
        page.keyboard.press("Tab")
        alone = 0
        while not page.evaluate(f"() => !!document.activeElement.closest('#{main}')") and alone < 80:
            page.keyboard.press("Tab")
            alone += 1
        counts[tab] = {"with the skip link": presses, "Tab only": alone}
    select_tab(page, "Model card")  # no figure: its tables, in a box that scrolls (a Tab stop of its own)
    page.get_by_role("tab", name="Model card").focus()
    counts["Model card"] = {"Tab only": tab_until(page, "() => !!document.activeElement.querySelector('table')")}
    print(json.dumps(counts, ensure_ascii=False))
    assert {plot_id: {axis: german[plot_id]["want"][axis] for axis in want} for plot_id, want in GERMAN_FIGURES.items()
            if plot_id in german} == GERMAN_FIGURES
    assert german["decode-top5"]["spans"] and german["rollout-cross"]["spans"]  # (their summaries quote German)
    assert {tab: c["Tab only"] for tab, c in counts.items() if c["Tab only"] > MOST_TABS[tab]} == {}, counts
    select_tab(page, "Attention")


# What a figure says now, in one string: its name, summary and table's columns (a Lab run more or less: a column)
SAYS = f"(id) => {{ const d = ({SENT})(id); return d ? JSON.stringify([d.name, d.summary, d.table.columns]) : ''; }}"


def sent_now(page: Page, plot_id: str) -> str:
    return page.evaluate(SAYS, plot_id)


def changed(page: Page, plot_id: str, before: str) -> None:
    """Until the figure ``plot_id`` says something else than ``before`` (``sent_now``): it was drawn anew."""
    page.wait_for_function(f"([id, old]) => {{ const now = ({SAYS})(id); return now && now !== old; }}",
                           arg=[plot_id, before])


def test_each_tab_s_core_task_with_the_keyboard_alone(kept: KeptPages, server: str):
    """After the Attention tab's (above), each other tab's core task with keys only: no mouse or pointer event is sent,
    the tabs are opened with the arrow keys and Enter. Decoding: type, run, step; Why: the factor to × 0; Inside a head:
    another query; Head analysis: a cell of the grid opens its head; Architecture: a Figure 1 block opens its
    heatmaps; Lab: another run's curves, the time-lapse played and stopped; Model card: its tables reached."""
    page = opened(kept, server)
    wait_idle(page)
    page.evaluate(COUNT_POINTER)
    page.emulate_media(reduced_motion="reduce")  # and all of it with the system's "reduce motion" on
    done = {}
    slider = "(id) => document.activeElement.matches(`#${id} input[type=range]`)"
    number = "(id) => Number(document.querySelector(`#${id} input[type=number]`).value)"

    open_by_keys(page, "Decoding, step by step")
    wait_idle(page)
    before = sent_now(page, "decode-top5")
    tab_until(page, "() => document.activeElement.matches('#decode-source textarea')")
    page.keyboard.press("Control+A")
    page.keyboard.type("A dog runs in the park.")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # runs it: its step 1 drawn
    changed(page, "decode-top5", before)
    wait_idle(page)
    before = sent_now(page, "decode-top5")
    tab_until(page, f"() => ({slider})('decode-step')")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => ({number})('decode-step') === 2")
    changed(page, "decode-top5", before)
    done["Decoding: a sentence typed, run, step 1 → 2"] = "passes"

    open_by_keys(page, "Why 1/√d_k")
    note = page.inner_text("#factor-note")
    tab_until(page, f"() => ({slider})('scale-factor')")
    page.keyboard.press("Home")  # × 0: every q·k is 0, the softmax uniform
    page.wait_for_function(f"() => ({number})('scale-factor') === 0")
    page.wait_for_function("(old) => document.querySelector('#factor-note').innerText !== old", arg=note)
    done["Why 1/√d_k: the factor to × 0"] = "passes"

    open_by_keys(page, "Inside a head")
    wait_idle(page)
    query = "() => document.querySelector('#in-query input:checked')?.value"
    first, before = page.evaluate(query), sent_now(page, "in-scores")
    tab_until(page, "() => document.activeElement.matches('#in-query input')")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"(old) => ({query})() !== old", arg=first)
    changed(page, "in-scores", before)
    done["Inside a head: another query"] = "passes"

    open_by_keys(page, "Head analysis")
    wait_described(page, "heads-grid")
    wait_idle(page)
    tab_until(page, "() => document.activeElement.classList.contains('attn-skip')")
    page.keyboard.press("Enter")  # the skip link: on the grid
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")  # opens layer 1, head 2 on the Attention tab, as a click does
    wait_tab(page, "Attention")
    page.wait_for_function(f"() => ({TITLE})('detail').endsWith('layer 1 · head 2')")
    done["Head analysis: a cell of the grid opens its head"] = "passes"

    open_by_keys(page, "Architecture")
    assert page.evaluate("() => getComputedStyle(document.querySelector('#figure1 .tf-block > rect'))"
                         ".transitionDuration") in ("1e-05s", "0s")  # its fades: none (app.css)
    tab_until(page, "() => document.activeElement.matches('#figure1 [data-attention]')")
    kind = page.evaluate("() => document.activeElement.dataset.attention")
    page.keyboard.press("Enter")
    wait_tab(page, "Attention")
    page.wait_for_function("(kind) => document.querySelector('#kind input:checked')?.value === kind", arg=kind)
    done["Architecture: a Figure 1 block opens its heatmaps"] = "passes"

    open_by_keys(page, "Lab")
    page.locator("#lab-curves .main-svg").first.wait_for(state="visible")
    before = sent_now(page, "lab-curves")
    tab_until(page, "() => document.activeElement.matches('#lab-runs input[type=checkbox]')")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Space")  # another run ticked (or unticked)
    changed(page, "lab-curves", before)
    step = page.evaluate(number, "lab-step")
    assert page.evaluate("() => document.querySelector('#lab-play').getAttribute('aria-pressed')") != "true"
    tab_until(page, "() => document.activeElement.closest('#lab-play') !== null")
    page.keyboard.press("Enter")  # ▶ Play
    page.wait_for_function(f"(old) => ({number})('lab-step') !== old", arg=step)
    page.keyboard.press("Enter")  # stopped
    page.wait_for_function("() => document.querySelector('#lab-play').getAttribute('aria-pressed') !== 'true'")
    done["Lab: another run's curves; the time-lapse played and stopped"] = "passes"

    open_by_keys(page, "Model card")
    tab_until(page, "() => !!document.activeElement.querySelector('table')")
    done["Model card: its tables reached"] = "passes"
    print(json.dumps(done, ensure_ascii=False))
    assert page.evaluate("() => window.attnPointer") == 0
    try:  # nothing moves by itself: a one-off animation (a status appearing) ends; a loop never does
        page.wait_for_function(f"() => ({MOVING})().length === 0", timeout=10_000)
    except PlaywrightTimeout:
        raise AssertionError(page.evaluate(MOVING)) from None
    page.emulate_media(reduced_motion="no-preference")
    select_tab(page, "Attention")
    wait_idle(page)
