"""The lecture's part of the page (``viz.views.lecture``): the "Lecture" entry and the caption bar, filled once the
link's view has opened (a page load) or the page has opened another stop in place (``page.reopened``: Back / Next
send its query). The stop's view itself is opened by the link machinery (``lecture.link_query`` widens the page's query
before the Attention tab parses it: viz/ui/tabs/attention.py); its mark, its action and Back / Next are the page
script's (assets/web/lecture.js)."""

from __future__ import annotations

import gradio as gr

from model.probes.ablation import load_ranking
from model.serving.runs import SessionResult
from viz.ui.wiring import PRIVATE, Page
from viz.views import lecture
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
    page.reopened.then(stop_caption, [page.result, page.lecture_go], bar, **hidden)  # the next stop, in place
