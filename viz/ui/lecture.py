"""The lecture's part of the page (``viz.views.lecture``): the "Lecture" entry and the caption bar, filled once the
link's view has opened. The stop's view itself is opened by the link machinery (``lecture.link_query`` widens the
page's query before the Attention tab parses it: viz/ui/tabs/attention.py); its mark, its action and Back / Next are
the page script's (assets/web/lecture.js)."""

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

    def caption(result: SessionResult | None, request: gr.Request) -> str:  # the stop's caption, marked for its run
        return lecture.caption_bar(dict(request.query_params), cfg, result.get() if result is not None else None,
                                   ranking, lab)

    page.link.change(caption, page.result, bar, queue=False, show_progress="hidden", **PRIVATE)
