"""The contract between the app's page and its script: element ids and label patterns, written once, here (``PAGE``;
the tabs, viz/ui/tabs/, give their components these ids), and the script itself, one file per feature under
assets/web/ joined in a fixed order (``SCRIPTS``, ``page_script``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from viz.heatmaps import HEAD_LABEL, LAYER_LABEL
from viz.lines import LINE_META, TOKEN_META
from viz.matrices import QUERY_ROWS, STAGES
from viz.views.attention.maps import KIND_CHOICES
from viz.views.head_analysis import STAT_CHOICES
from viz.views.inside_head import PLOT_LABELS as INSIDE_PLOTS
from viz.views.scaling import LIVE_PLOTS

PAGE = {"overview": "overview", "tileClick": "tile-click", "figure1": "figure1", "blockClick": "arch-click",
        "layerLabel": LAYER_LABEL, "headLabel": HEAD_LABEL,
        "lines": "lines", "lineMeta": LINE_META, "tokenMeta": TOKEN_META,  # the alignment view (viz.lines)
        "linesRequest": "lines-request",  # the page asks for the alignment view here when it is on screen
        "stepPrev": "step-prev", "stepNext": "step-next",  # the Decoding tab's buttons (and the arrow keys)
        "decodeAsk": "decode-ask",  # … and a head it holds no view of, asked of the server here (decoding.js)
        "decodeHold": "decode-hold",  # … and every head's view of the layer shown, asked for here once the page idles
        "labStep": "lab-step", "labPlay": "lab-play", "labNext": "lab-next",  # the Lab's time-lapse and its ▶ Play
        # the view in the URL (viz.views.attention.share): query parameter -> element id; the close-up; the Copy link
        # button
        "view": {"text": "source", "target": "target", "kind": "kind", "layer": "layer", "head": "head",
                 "present": "present", "colour": "colour"}, "detail": "detail", "copyLink": "copy-link",
        "guide": "guide",  # an example's caption (or a link's notice): on screen with the figures (classroom.js)
        "rowClick": "row-click",  # a click on a row of the close-up sends "row,time" here: "Inside a head" opens
        # Inside a head's whole matrices: a click on a row of a trace whose meta is queryRows sends "row,time" here
        "matrixPlots": [f"in-m-{name}" for name in ("projections", *STAGES, "output")],
        "matrixRowClick": "in-matrix-row-click", "queryRows": QUERY_ROWS,
        "insidePlots": [f"in-{name}" for name in INSIDE_PLOTS],  # the one-query view's figures: drawn once a new query
        # … and the tab's other choices (kind, layer, head, factor; the view): the visitor's hand on one of them ends
        # a query's drawing at its own input event until the next view's panels come (inside.js)
        "insideChoices": ["in-choices", "in-view"],
        "livePlots": list(LIVE_PLOTS),  # the Why tab's run (viz.views.scaling.live_frames): drawn in the figures shown
        "liveFrames": "live-frames",  # … from this hidden textbox (viz.ui.tabs.scaling)
        "cellGrid": "heads-grid", "cellClick": "heads-cell-click",  # Head analysis: a grid cell opens its head
        # Every other tab's view in the link too (share): of the tab shown, query parameter -> element id, written over
        # the Attention tab's (``view``); a dropdown shows a label (``labels``: label -> value); a group of checkboxes
        # is written as its checked names joined by commas
        "views": {"decoding": {"text": "decode-source", "layer": "decode-layer", "head": "decode-head",
                               "step": "decode-step"},
                  "inside": {"kind": "in-kind", "layer": "in-layer", "head": "in-head", "query": "in-query",
                             "show": "in-view"},
                  "heads": {"scope": "heads-scope", "stat": "heads-stat", "kind": "ablated-kind"},
                  "architecture": {"kind": "arch-kind", "layer": "arch-layer"},
                  "lab": {"runs": "lab-runs"}},
        "labels": {label: value for label, value in (*KIND_CHOICES, *STAT_CHOICES)},
        "lecture": "lecture",  # the lecture's caption bar (viz.views.lecture, lecture.js)
        # Figures walked cell by cell (a11y.js, viz.describe): Plot id -> where Enter on a cell sends, as a click does
        "gridClicks": {"overview": "tile-click", "detail": "row-click", "heads-grid": "heads-cell-click"},
        # Each tab's main figure, for its skip link: the first of its Plot ids that is shown (Inside a head: its first
        # panel, (a) of the one query or of the whole matrices; the panels follow in reading order)
        "mainFigures": {"attention": ["overview"], "decoding": ["decode-top5"], "scaling": ["variance"],
                        "inside": ["in-projections", "in-m-projections"], "heads": ["heads-grid"],
                        "architecture": ["figure1"], "lab": ["lab-curves"]},
        "germanText": ["target", "translation"],  # marked lang="de" (access.js)
        # Buttons that take no Tab stop: the keys of a stop before them do the same (a11y.js: the step's slider)
        "keyOnly": ["step-prev", "step-next"],
        # Rows that are one Tab stop, moved in with the arrow keys (stops.js): element id -> the row's name; choices
        # folded under a button that names them (stops.js): the button's id -> the folded row's
        "toolbars": {"action-row": "Run, examples, link and presentation mode"}, "folds": {"in-which": "in-choices"},
        # each tab's main figure, by tab id: a shared link opens scrolled to it (classroom.js)
        "linkFigures": {"attention": "detail", "decoding": "decode-cross", "inside": "in-scores",
                        "heads": "heads-grid", "architecture": "figure1", "lab": "lab-curves"}}


def plotly_module() -> str:
    """Gradio's plotly module by the page's own path ("assets/PlotlyPlot-….js"; "" where this Gradio has none by that
    name): the page fetches it as it loads (page.js), where Gradio would only with the first Plot it draws. Found
    without importing gradio (viz.views has no gradio)."""
    spec = importlib.util.find_spec("gradio")
    if spec is None or spec.origin is None:
        return ""
    found = sorted((Path(spec.origin).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    return f"assets/{found[0].name}" if found else ""


PAGE["plotly"] = plotly_module()
WEB = Path(__file__).resolve().parents[2] / "assets" / "web"  # the page's script and style (app.css)
# The page script, in the order it runs: page.js makes what the features share (messages to the server, the one
# MutationObserver); then one file per feature, each a function of (PAGE, what page.js shares); its comment says what
# it does. draw.js comes first: it wraps plotly before the first figure is drawn; a11y.js next: its keys come first.
SCRIPTS = ("page.js", "draw.js", "a11y.js", "stops.js", "export.js", "overview.js", "figure1.js", "lines.js",
           "decoding.js", "classroom.js", "inside.js", "live.js", "heads.js", "timelapse.js", "lecture.js", "access.js")


def page_script(web: Path = WEB) -> str:
    """The files of ``SCRIPTS`` joined into one expression that calls page.js's function with ``PAGE`` and each
    feature's with ``PAGE`` and what page.js returned. Gradio runs it once the page has loaded (``launch(js=...)``)."""
    shared, *features = (f"/* assets/web/{name} */\n{(web / name).read_text(encoding='utf-8').strip()}"
                         for name in SCRIPTS)
    joined = ",\n".join(f"(\n{feature}\n)" for feature in features)
    return (f"((page) => {{\nconst shared = (\n{shared}\n)(page);\n"
            f"for (const feature of [\n{joined}\n]) feature(page, shared);\n}})({json.dumps(PAGE)})")
