"""Any other plotly figure described from its own traces (``generic``): heatmaps, lines and bars, their values
as the table; every figure ``viz.views.outputs.finish_figure`` finishes without a description of its own."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence

import numpy as np

from viz.describe.core import MAX_EXPLICIT, TOP, Description, Table


# ------------------------------------------------------------------------------------------- any other figure
def plain(text) -> str:
    """Figure text (plotly markup: <br>, <b>, <sub>, entities) as plain text on one line."""
    text = re.sub(r"<br\s*/?>", " · ", "" if text is None else str(text))
    text = re.sub(r"<sub>(.*?)</sub>", r"_\1", text)
    text = re.sub(r"<sup>(.*?)</sup>", r"^\1", text)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", text))).strip()


def array(value) -> np.ndarray | None:
    """A plotly JSON array (a list, or a typed array {"dtype", "bdata", "shape"}) as numpy; None if absent."""
    if value is None:
        return None
    if isinstance(value, dict) and "bdata" in value:
        out = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]).newbyteorder("<"))
        shape = value.get("shape")
        return out.reshape([int(s) for s in str(shape).split(",")]) if shape else out
    if isinstance(value, np.ndarray):
        return value
    return np.asarray(value, dtype=object)


def _numbers(value) -> np.ndarray | None:
    arr = array(value)
    if arr is None:
        return None
    try:
        return np.asarray(np.where(arr == None, np.nan, arr), dtype=np.float64)  # noqa: E711 (elementwise)
    except (TypeError, ValueError):
        return None


def _title(layout: Mapping, fallback: str) -> str:
    """The figure's title, else its export title, else ``fallback`` and its panels' titles (annotations on paper)."""
    title = layout.get("title")
    text = plain(title.get("text") if isinstance(title, Mapping) else title)
    export = (layout.get("meta") or {}).get("export") if isinstance(layout.get("meta"), Mapping) else None
    panels = _panels(layout)
    return text or plain((export or {}).get("title")) or (f"{fallback}: {'; '.join(panels[:4])}" if panels
                                                          else fallback)


def _axis(layout: Mapping, trace: Mapping, letter: str) -> Mapping:
    ref = str(trace.get(f"{letter}axis") or letter)
    return layout.get(f"{letter}axis{ref[1:]}") or {}


def _axis_title(layout: Mapping, trace: Mapping, letter: str) -> str:
    title = _axis(layout, trace, letter).get("title")
    return plain(title.get("text") if isinstance(title, Mapping) else title)


def _labels(trace: Mapping, layout: Mapping, letter: str, n: int) -> list[str]:
    """The n positions of a heatmap axis as its tick labels say them (else the trace's coordinates, else 1..n)."""
    coords = array(trace.get(letter))
    coords = list(coords.tolist()) if coords is not None else list(range(n))
    axis = _axis(layout, trace, letter)
    ticks = dict(zip(axis.get("tickvals") or [], axis.get("ticktext") or []))
    return [plain(ticks.get(c, c)) for c in coords][:n] + [str(i + 1) for i in range(len(coords), n)]


def _heatmap(i: int, trace: Mapping, layout: Mapping, title: str) -> tuple[str, Table] | None:
    z = _numbers(trace.get("z"))
    if z is None or z.ndim != 2 or not z.size:
        return None
    rows, cols = _labels(trace, layout, "y", z.shape[0]), _labels(trace, layout, "x", z.shape[1])
    flat = np.nan_to_num(z, nan=-np.inf).ravel()
    top = [j for j in np.argsort(-flat, kind="stable")[:TOP] if np.isfinite(flat[j])]
    pairs = ", ".join(f"{rows[j // z.shape[1]]} → {cols[j % z.shape[1]]} {float(flat[j]):.3g}" for j in top)
    finite = z[np.isfinite(z)]
    said = (f"{z.shape[0]} rows × {z.shape[1]} columns, from {finite.min():.3g} to {finite.max():.3g}; "
            f"largest: {pairs}" if finite.size else f"{z.shape[0]} rows × {z.shape[1]} columns, empty")
    name = plain(trace.get("name")) or title
    values = {"trace": i} if z.size > MAX_EXPLICIT else [[None if not np.isfinite(v) else float(f"{v:.4g}")
                                                          for v in row] for row in z]
    return said, Table(f"{name}: the value of each cell", "row \\ column", cols, rows, values)


def _series(trace: Mapping, layout: Mapping) -> tuple[list, np.ndarray] | None:
    """A line or bar trace's (x, y), x as its axis's tick labels say it; horizontal bars turned the other way."""
    across, along = ("y", "x") if trace.get("type") == "bar" and trace.get("orientation") == "h" else ("x", "y")
    x, y = array(trace.get(across)), _numbers(trace.get(along))
    if y is None or y.ndim != 1 or not y.size:
        return None
    xs = list(x.tolist()) if x is not None else list(range(len(y)))
    axis = _axis(layout, trace, across)
    ticks = dict(zip(axis.get("tickvals") or [], axis.get("ticktext") or []))
    return [plain(ticks.get(v, v)) if isinstance(ticks.get(v, v), str) else v for v in xs], y


def _panels(layout: Mapping) -> list[str]:
    """The panels' titles: make_subplots writes them as annotations on the paper, in the order of the subplots."""
    return [plain(a.get("text")) for a in layout.get("annotations") or []
            if isinstance(a, Mapping) and a.get("xref") == "paper" and a.get("yref") == "paper" and a.get("text")]


def _in_panel(name: str, trace: Mapping, traces: Sequence[Mapping], layout: Mapping) -> str:
    """A line's name where several panels (y axes) share the figure: its panel's title (or its axis's) first, and a
    line style other than solid after it (a panel may draw two quantities of one run, solid and dotted)."""
    axes = sorted({str(t.get("yaxis") or "y") for t in traces}, key=lambda a: int(a[1:] or 1))
    dash = (trace.get("line") or {}).get("dash")
    name = f"{name} ({dash})" if dash and dash != "solid" else name
    if len(axes) < 2:
        return name
    panels, axis = _panels(layout), str(trace.get("yaxis") or "y")
    panel = panels[axes.index(axis)] if len(panels) == len(axes) else _axis_title(layout, trace, "y")
    return f"{panel}: {name}" if panel and panel != name else name


def _said(name: str, xs: list, y: np.ndarray, bars: bool) -> str:
    finite = np.isfinite(y)
    if not finite.any():
        return f"{name}: no value"
    if bars or len(y) <= TOP:
        return f"{name}: " + ", ".join(f"{x} {v:.3g}" for x, v in zip(xs, y) if np.isfinite(v))
    first, last = np.flatnonzero(finite)[[0, -1]]
    hi, lo = int(np.nanargmax(y)), int(np.nanargmin(y))
    return (f"{name}: {y[first]:.3g} at {xs[first]} to {y[last]:.3g} at {xs[last]}, "
            f"highest {y[hi]:.3g} at {xs[hi]}, lowest {y[lo]:.3g} at {xs[lo]}")


def generic(figure: Mapping, fallback: str = "Figure") -> Description | None:
    """Any plotly figure (plain JSON: lists or typed arrays) described from its own traces: each heatmap's size,
    range and largest cells; each line's or bar's values (first and last, highest and lowest). Its table: the
    first heatmap's cells, else one row per x value and one column per line or bar (every value drawn).
    None for a figure with nothing drawn."""
    layout, traces = figure.get("layout") or {}, figure.get("data") or []
    title = _title(layout, fallback)
    said, table, series = [], None, []
    for i, trace in enumerate(traces):
        kind = trace.get("type") or "scatter"
        if trace.get("visible") is False or (trace.get("meta") or None) == "legend-only":
            continue
        if kind == "heatmap":
            found = _heatmap(i, trace, layout, title)
            if found:
                said.append(found[0])
                table = table or found[1]
        elif kind in ("scatter", "scattergl", "bar"):
            found = _series(trace, layout)
            if found and any(v is not None for v in found[0]):
                value_axis = "x" if kind == "bar" and trace.get("orientation") == "h" else "y"
                name = plain(trace.get("name")) or _axis_title(layout, trace, value_axis) or f"series {len(series) + 1}"
                name = _in_panel(name, trace, traces, layout)
                if ((trace.get("marker") or {}).get("pattern") or {}).get("shape"):  # hatched: masked, not a value
                    said.append(f"{len(found[0])} masked (hatched)")
                    series.append(("masked", found[0], np.full(len(found[0]), np.nan)))
                    continue
                said.append(_said(name, *found, kind == "bar"))
                series.append((name, *found))
    if not said:
        return None
    if table is None:
        table = _series_table(title, series, layout)
    summary = "; ".join(said[:6]) + ("; …" if len(said) > 6 else ".")  # (an ellipsis ends it alone)
    return Description(title, summary, table)


def _series_table(title: str, series: list, layout: Mapping) -> Table:
    xs = list(dict.fromkeys(x for _, xs, _ in series for x in xs if x is not None))
    column = {name: dict(zip(xs_, ys.tolist())) for name, xs_, ys in series}
    values = [[None if (v := column[name].get(x)) is None or v != v else float(f"{v:.4g}") for name, _, _ in series]
              for x in xs]
    x_title = _axis_title(layout, {}, "x") or "x"
    return Table(f"{title}: the values drawn", x_title, [name for name, _, _ in series], [str(x) for x in xs],
                 values)
