"""A figure's description (name, summary, table, grid, language) and how a figure carries it (``attach``, ``of``):
the shape assets/web/a11y.js reads (viz/describe/__init__.py gives it in full)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from viz.text import plain_token

META = "describe"  # the key of layout.meta that holds a figure's description
TOP = 3  # pairs or heads a summary names
MAX_EXPLICIT = 4000  # table cells written out; a larger heatmap's table is its trace's z ({"trace": i})
SINK = 0.5  # a head that puts this share of its weight or more on </s> (or <s>) is named as a sink


@dataclass
class Table:
    caption: str
    corner: str  # the header of the row headers' column
    columns: list[str]
    rows: list[str]
    values: list[list] | dict  # rows × columns, or {"trace": i}: that trace's z as drawn


@dataclass
class Description:
    name: str
    summary: str
    table: Table
    grid: dict | None = field(default=None)
    # where it is not the page's English (German tokens): {"rows", "columns"}: the table's row and column headers;
    # {"y", "x"}: the figure's tick labels; {"words"}: the German words its summary and table cells quote
    lang: dict | None = field(default=None)

    def meta(self) -> dict:
        """As plain dicts for ``layout.meta``. Its lists are the description's own, not copies (``dataclasses.asdict``
        copied every cell: a third of drawing an overview); a description is made for one figure and dropped."""
        out = {"name": self.name, "summary": self.summary, "table": dict(vars(self.table))}
        out.update({key: value for key in ("grid", "lang") if (value := getattr(self, key)) is not None})
        return out

    def in_german(self, rows: bool, columns: bool, *, y: bool | None = None, x: bool | None = None,
                  words: Sequence[str] | None = None) -> Description:
        """This description with its German marked: the table's rows (queries) and columns (keys) where they are,
        the figure's y and x tick labels (by default as the rows and columns: a heatmap's), and the ``words`` its
        summary and table cells quote (by default the German headers, less the tokens the English headers also have:
        "in", "</s>", "." say nothing of a language)."""
        y, x = rows if y is None else y, columns if x is None else x
        if words is None:
            german = [*(self.table.rows if rows else ()), *(self.table.columns if columns else ())]
            english = {*(self.table.rows if not rows else ()), *(self.table.columns if not columns else ())}
            words = [w for w in german if w not in english]
        words = sorted({w for w in words if any(c.isalpha() for c in w) and not w.startswith("<")}, key=len,
                       reverse=True)
        if rows or columns or y or x or words:
            de = lambda on: "de" if on else None  # noqa: E731
            self.lang = {"rows": de(rows), "columns": de(columns), "y": de(y), "x": de(x), "words": words}
        return self


def attach(figure: dict, description: Description | None) -> dict:
    """``figure`` (a plotly dict) carrying ``description`` in ``layout.meta.describe``; returns it."""
    if description is not None:
        layout = figure.setdefault("layout", {})
        meta = layout.get("meta") if isinstance(layout.get("meta"), dict) else {}
        layout["meta"] = {**meta, META: description.meta()}
    return figure


def of(figure: dict) -> dict | None:
    """The description a figure carries (``attach``), or None."""
    meta = (figure.get("layout") or {}).get("meta")
    return meta.get(META) if isinstance(meta, dict) else None


def reword(figure: dict, word: str, new: str) -> None:
    """The figure's description with ``word`` said as ``new`` (the close-up of contributions instead of weights)."""
    said = of(figure)
    if said is None:
        return

    def swap(text):
        return re.sub(rf"\b{word}\b", new, text) if isinstance(text, str) else text

    for key in ("name", "summary"):
        said[key] = swap(said[key])
    said["table"]["caption"] = swap(said["table"]["caption"])
    said["table"]["columns"] = [swap(c) for c in said["table"]["columns"]]
    for block in (said.get("grid") or {}).get("blocks", []):
        if block.get("labels"):
            block["labels"] = [[swap(label) for label in row] for row in block["labels"]]


def fmt(value: float, digits: int = 2) -> str:
    """A number as a summary says it: weights with ``digits`` decimals."""
    return f"{value:.{digits}f}"


def _round(values: np.ndarray, digits: int = 3) -> list:
    """Rows of values rounded as Python rounds them, None where not finite (as plain floats: no numpy per cell)."""
    return [[round(v, digits) if math.isfinite(v) else None for v in row]
            for row in np.asarray(values, dtype=np.float64).tolist()]


def tokens(pieces: Sequence[str]) -> list[str]:
    """Pieces as the figures show them ("▁dogs" -> "dogs", "m" -> "·m"), as plain text."""
    return [plain_token(p) for p in pieces]
