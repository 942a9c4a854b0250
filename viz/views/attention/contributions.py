"""The Attention tab's toggle "weights vs contributions" (Kobayashi et al., 2020, "Attention is not only a weight").

``WEIGHTS``: the heatmaps show α, the softmax's weights, as the model returned them. ``CONTRIBUTIONS``: they
show ‖α_j v_j W^O_h‖, how far key j moves head h's share of the sub-layer output, normalised per row
(``model.probes.inside.contribution_maps``; the app passes ``Runs.contributions(result, kind)``, cached per sentence).
They are computed when asked for, for one kind: never while ``/visualise`` runs. The figures are the
Attention tab's own (``viz.views.attention.closeup`` draws them: ``measured`` hands it the contributions in place of the
weights, ``relabel`` makes the colour bar, the hover and the title say so). The public endpoints keep drawing
weights: the app keeps the session's choice in a gr.State, which the API does not send (null = weights).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from viz import describe
from viz.views.inputs import shown
from viz.views.outputs import Figure

if TYPE_CHECKING:
    import numpy as np

    from model.network.inference import AttentionResult

WEIGHTS, CONTRIBUTIONS = "weights", "contributions"
CHOICES = [("weights α", WEIGHTS), ("contributions ‖α·v·W^O‖", CONTRIBUTIONS)]
VALUE_NAME = {WEIGHTS: "weight", CONTRIBUTIONS: "contribution"}  # the colour bar's title, the hover's word
TITLE_NOTE = " · contributions"  # short: the close-up's title has little room
Contributions = Callable[["AttentionResult", str], "np.ndarray"]  # (result, kind) -> (L, H, Q, K)


def check_measure(value, null: str | None = WEIGHTS) -> str:
    """WEIGHTS or CONTRIBUTIONS; null is ``null`` (WEIGHTS: the API sends none, nor a session before its first
    toggle; None: the toggle itself always sends one, null is an error)."""
    if value is None and null is not None:
        return null
    if not isinstance(value, str) or value not in VALUE_NAME:
        raise ValueError(f"The colour shows {WEIGHTS} or {CONTRIBUTIONS}; got {shown(value)}.")
    return value


def measured(contributions: Contributions, result: AttentionResult, kind: str, measure: str) -> AttentionResult:
    """``result`` itself for WEIGHTS; for CONTRIBUTIONS a copy whose ``kind`` maps are the contributions."""
    if measure == WEIGHTS:
        return result
    return dataclasses.replace(result, **{kind: contributions(result, kind)})


def relabel(figure: Figure | None, measure: str) -> Figure | None:
    """A drawn heatmap of contributions says so: colour bar title, hover word, title, file name (on a copy: a drawn
    figure may be kept for the next request, ``viz.views.memo``)."""
    if figure is None or measure == WEIGHTS:
        return figure
    figure = copy.deepcopy(figure)
    for trace in figure["data"]:
        if trace.get("type") == "heatmap":
            trace["colorbar"]["title"]["text"] = VALUE_NAME[measure]
            trace["hovertemplate"] = trace["hovertemplate"].replace("weight", VALUE_NAME[measure])
    layout = figure["layout"]
    if (layout.get("title") or {}).get("text"):
        layout["title"]["text"] += TITLE_NOTE
    export = (layout.get("meta") or {}).get("export")
    if export:
        export["title"] += TITLE_NOTE  # the title of a downloaded image
    describe.reword(figure, "weight", VALUE_NAME[measure])  # what it says without sight, too
    options = figure["config"]["toImageButtonOptions"]
    options["filename"] += f"_{measure}"
    return figure
