"""The heatmap specs of ``viz.heatmaps`` made for a room: the overview's size, the close-up's colour scale,
and presentation mode.

The overview (``fit_overview``): ``OVERVIEW_PX`` tall, so that it sits beside the close-up on one 1280×720
screen, with one tick label per layer and per head along its edges.

Colour scale of the close-up (``COLOUR_MODES``):
  fixed   0 → 1, the same for every map: colours compare across heads and layers;
  auto    0 → this map's largest weight: a diffuse map (long sentences, the mean of heads) gets contrast;
  row     each row 0 → its own largest weight: every row shows where it looks most, however flat it is.
The hover always shows the weight itself; only the colours change.

Presentation mode (``present_detail``, ``present_overview``): every title, axis title and tick label at
``PRESENT_PX`` or more (the figure title at ``TITLE_PX``); the close-up prints each weight ≥ ``CELL_MIN`` in
its cell when the map is small (``CELL_TOKENS``). Text colour is the page's (assets/web/app.css: ``.attn-present``).

Functions here take and return the spec dicts of ``viz.heatmaps`` (numpy arrays inside) and change them
in place; they never import gradio.
"""

from __future__ import annotations

import re

import numpy as np

from viz.heatmaps import HEAD_LABEL, LAYER_LABEL
from viz.views.inputs import shown

COLOUR_MODES = ("fixed", "auto", "row")
COLOUR_CHOICES = [("0 – 1", "fixed"), ("0 – largest", "auto"), ("per row", "row")]
PRESENT_PX = 16
TITLE_PX = 20
CELL_TOKENS = 10  # weights printed in the cells of maps up to this many tokens a side
CELL_MIN = 0.1  # smaller weights stay unprinted (they would only be noise on a projector)
OVERVIEW_PX = 360  # the overview's height beside the close-up, so both fit one 1280×720 screen (square cells)
_TILE_LABEL = re.compile(r"^L\d+ H\d+$")
_WEIGHT = "%{z:.3f}"


def check_colour(mode) -> str:
    if not isinstance(mode, str) or mode not in COLOUR_MODES:
        raise ValueError(f"Colour scale must be one of {', '.join(COLOUR_MODES)}; got {shown(mode)}.")
    return mode


def _heatmap(spec: dict) -> dict:
    return next(t for t in spec["data"] if t.get("type") == "heatmap")


def _ticks(top: float) -> tuple[list[float], list[str]]:
    values = [top * i / 4 for i in range(5)]
    return values, [f"{v:.2g}" for v in values]


def colour_scale(spec: dict, mode: str) -> dict:
    """The close-up ``spec`` (``viz.heatmaps.detail_spec``) with the colour scale ``mode``."""
    check_colour(mode)
    trace = _heatmap(spec)
    if mode == "fixed":
        return spec
    weights = np.asarray(trace["z"], dtype=np.float32)  # (Q, K)
    bar = trace.setdefault("colorbar", {})
    if mode == "auto":
        top = float(np.nanmax(weights)) or 1.0
        trace["zmin"], trace["zmax"] = 0, top
        bar["tickvals"], bar["ticktext"] = _ticks(top)
        return spec
    row_max = np.nanmax(weights, axis=1, keepdims=True)  # (Q, 1)
    trace["z"] = (weights / np.where(row_max > 0, row_max, 1)).astype(np.float32)  # (Q, K), each row's max = 1
    trace["zmin"], trace["zmax"] = 0, 1
    bar["tickvals"], bar["ticktext"] = [0, 0.5, 1], ["0", "½ row max", "row max"]
    # the hover keeps the weight itself: it moves from z into a new last column of customdata
    custom = np.asarray(trace["customdata"], dtype=object)  # (Q, K, C)
    weight_text = np.vectorize(lambda w: f"{w:.3f}", otypes=[object])(weights)[:, :, None]
    trace["customdata"] = np.concatenate([custom, weight_text], axis=2)
    trace["hovertemplate"] = trace["hovertemplate"].replace(_WEIGHT, f"%{{customdata[{custom.shape[2]}]}}")
    return spec


def fit_overview(spec: dict) -> dict:
    """The overview (``viz.heatmaps.overview_spec``) made to sit beside the close-up on one 1280×720 screen:
    ``OVERVIEW_PX`` tall, and, instead of an "L1 H1" label on every tile (at this size they would run into
    the tiles above), one tick label per layer ("L1") on the left and per head ("H1") along the bottom."""
    trace, layout = _heatmap(spec), spec["layout"]
    layout["height"] = OVERVIEW_PX
    layout["annotations"] = [a for a in layout.get("annotations", []) if not _TILE_LABEL.match(str(a.get("text")))]
    for axis, labels, pattern, name in (("xaxis", trace["x"], HEAD_LABEL, "H"),
                                        ("yaxis", trace["y"], LAYER_LABEL, "L")):
        tickvals, ticktext = _group_ticks(list(labels), pattern, name)
        layout.setdefault(axis, {}).update(showticklabels=True, tickmode="array", tickvals=tickvals, ticktext=ticktext)
    layout["margin"] = {**layout.get("margin", {}), "l": 36, "b": 28}
    return spec


def _font(where: dict, px: int) -> None:
    where.setdefault("font", {})["size"] = px


def _present_axes(layout: dict, trace: dict) -> None:
    for axis in ("xaxis", "yaxis"):
        ax = layout.setdefault(axis, {})
        ax.setdefault("tickfont", {})["size"] = PRESENT_PX
        if isinstance(ax.get("title"), dict):
            _font(ax["title"], PRESENT_PX)
    bar = trace.setdefault("colorbar", {})
    bar.setdefault("tickfont", {})["size"] = PRESENT_PX
    if isinstance(bar.get("title"), dict):
        _font(bar["title"], PRESENT_PX)
    _font(layout, PRESENT_PX)
    if isinstance(layout.get("legend"), dict):  # the masked cells' legend entry (decoder self-attention)
        _font(layout["legend"], PRESENT_PX)
    if isinstance(layout.get("title"), dict):
        _font(layout["title"], TITLE_PX)
        layout["title"].update(xref="container", x=0.01, xanchor="left")  # the whole width for the longer title


def cell_text(weight: float) -> str:
    """A weight as its cell shows it: ".97", "1" (short enough for a cell), "" below ``CELL_MIN``."""
    if weight < CELL_MIN:
        return ""
    text = f"{weight:.2f}"
    return "1" if text == "1.00" else text.removeprefix("0")


def present_detail(spec: dict, weights) -> dict:
    """The close-up for a projector: large text, and in the cells of a small map the ``weights`` (Q, K)
    it shows (printed from these, whatever the colour scale did to z)."""
    _present_axes(spec["layout"], _heatmap(spec))
    margin = spec["layout"].setdefault("margin", {})
    margin["t"] = max(margin.get("t", 0), 60)  # the larger title clear of the plot's label badge
    weights = np.asarray(weights, dtype=np.float32)  # (Q, K)
    if max(weights.shape) <= CELL_TOKENS:
        trace = _heatmap(spec)
        trace["text"] = np.vectorize(cell_text, otypes=[object])(weights)  # (Q, K)
        trace["texttemplate"] = "%{text}"
        trace["textfont"] = {"size": PRESENT_PX}
    return spec


def _group_ticks(labels: list[str], pattern: str, name: str) -> tuple[list[str], list[str]]:
    """One tick per layer (or head): the middle label of its rows (columns), and the text "L3" ("H3")."""
    groups: dict[int, list[str]] = {}
    rx = re.compile(pattern)
    for label in labels:
        match = rx.match(label)
        if match:
            groups.setdefault(int(match.group(1)), []).append(label)
    numbers = sorted(groups)
    return [groups[n][len(groups[n]) // 2] for n in numbers], [f"{name}{n}" for n in numbers]


def present_overview(spec: dict) -> dict:
    """The overview (after ``fit_overview``) for a projector: every text at ``PRESENT_PX`` or more."""
    _present_axes(spec["layout"], _heatmap(spec))
    spec["layout"]["margin"] = {**spec["layout"].get("margin", {}), "l": 44, "b": 34}
    return spec
