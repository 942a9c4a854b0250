"""The lecture's part of the page (``viz.views.lecture``): the "Lecture" entry and the caption bar, filled once the
link's view has opened (a page load), or with the next stop's view when the page moves in place (``page.reopened``:
Back / Next send its query). A stop's view itself is opened by the link machinery (``lecture.link_query`` widens the
page's query before the Attention tab parses it: viz/ui/tabs/attention.py); its mark, its action and Back / Next are
the page script's (assets/web/lecture.js).

A move in place is one event: the Attention tab's view, every other tab's part and the caption in one answer (each a
round trip of its own had been ~0.4 s a move on the 2-core machine, in a row); what follows a run (the translation's
notes, the alignment view) after it."""

from __future__ import annotations

import gradio as gr

from model.probes.ablation import load_ranking
from model.serving.runs import SessionResult
from viz.ui.wiring import LINES_STALE, PRIVATE, Page, listener
from viz.views import lecture
from viz.views.outputs import SKIP
from viz.views.page import PAGE


def build_lecture(page: Page) -> None:
    """The entry (a link: lecture.js puts it beside the page's title) and the caption bar (fixed at the bottom of the
    screen, empty outside the lecture), once the link's view has opened (``page.link`` set: a stop is a link)."""
    gr.HTML(f'<a id="lecture-start" href="{lecture.ENTRY}">▶ Lecture: §3.1–3.2 in {len(lecture.STOPS)} stops</a>',
            elem_id="lecture-entry", padding=False)
    bar = gr.HTML("", elem_id=PAGE["lecture"], padding=False)
    cfg, ranking, lab = page.runs.cfg, load_ranking(), page.runs.lab.runs_payload()

    def stop_caption(result: SessionResult | None, asked: str, request: gr.Request) -> str:  # the stop's, marked
        query = lecture.asked_query(asked) if asked else dict(request.query_params)  # (the page's move, or its URL)
        return lecture.caption_bar(query, cfg, result.get() if result is not None else None, ranking, lab)

    def caption(result: SessionResult | None, asked: str, request: gr.Request) -> str:  # a page load's stop
        return gr.skip() if asked else stop_caption(result, asked, request)  # (after a move: ``page.reopened``'s)

    hidden = {"queue": False, "show_progress": "hidden", **PRIVATE}
    page.link.change(caption, [page.result, page.lecture_go], bar, **hidden)
    move_in_place(page, bar, stop_caption)


def move_in_place(page: Page, bar: gr.HTML, stop_caption) -> None:
    """The next stop in one event (``page.reopened``): the Attention tab opens its view (``page.open_view``) with what
    follows a run, the other tabs take their part (``page.parts``) with the values it set (the sentence's run, the
    kind, layer and head), and ``stop_caption`` writes the bar; keys pressed fast: the last. The parsed link
    (``page.link``) is read here, not sent: its change would start two more events that a move skips."""
    open_view, view_outputs, (after_inputs, after_outputs, follow) = page.open_view
    open_parts, part_inputs, part_outputs = page.parts
    inputs = list({id(c): c for c in [*part_inputs, *after_inputs]}.values())
    outputs = list({id(c): c for c in [*view_outputs, *after_outputs, *part_outputs, bar]
                    if c is not page.link}.values())  # (page.tabs once)

    def move(request: gr.Request, asked: str, *values):
        shown = dict(zip(map(id, view_outputs), open_view(request, asked), strict=True))
        received = dict(zip(map(id, inputs), values, strict=True))
        given = {**received, **{key: value for key, value in shown.items() if key in received}}
        for key, value in given.items():  # what the Attention tab set, as the parts read it
            if isinstance(value, SessionResult):
                given[key] = value.get()
        out = {**shown, **follow(shown, received)}
        *parts, tab = open_parts(shown[id(page.link)], *(given[id(c)] for c in part_inputs))
        out.update(zip(map(id, part_outputs), parts, strict=True))
        out[id(page.tabs)] = shown[id(page.tabs)] if tab is SKIP else tab
        out[id(bar)] = stop_caption(shown[id(page.result)], asked, request)
        return tuple(out[id(c)] for c in outputs)

    page.reopened = page.lecture_go.change(listener(move), [page.lecture_go, *inputs], outputs,
                                           show_progress="hidden", trigger_mode="always_last", **PRIVATE)
    page.reopened.success(None, js=LINES_STALE)  # (the alignment view: lines.js asks for it once it is on screen)
