"""The contract between app.py's page and its script (assets/web/app.js, which gets ``PAGE`` as its argument):
element ids and label patterns, written once, here. app.py gives its components these ids."""

from __future__ import annotations

from viz.heatmaps import HEAD_LABEL, LAYER_LABEL
from viz.lines import LINE_META, TOKEN_META

PAGE = {"overview": "overview", "tileClick": "tile-click", "figure1": "figure1", "blockClick": "arch-click",
        "layerLabel": LAYER_LABEL, "headLabel": HEAD_LABEL,
        "lines": "lines", "lineMeta": LINE_META, "tokenMeta": TOKEN_META,  # the alignment view (viz.lines)
        "linesRequest": "lines-request",  # the page asks for the alignment view here when it is on screen
        "stepPrev": "step-prev", "stepNext": "step-next",  # the Decoding tab's buttons (and the arrow keys)
        # the view in the URL (viz.views.share): query parameter -> element id; the close-up; the Copy link button
        "view": {"text": "source", "target": "target", "kind": "kind", "layer": "layer", "head": "head",
                 "present": "present", "colour": "colour"}, "detail": "detail", "copyLink": "copy-link",
        "rowClick": "row-click",  # a click on a row of the close-up sends "row,time" here: "Inside a head" opens
        "cellGrid": "heads-grid", "cellClick": "heads-cell-click"}  # Head analysis: a grid cell opens its head
