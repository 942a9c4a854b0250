"""Figure text that fits a phone: a long plotly label broken into lines no wider than a figure is on a 390-px phone.

The server draws one figure for every screen, so a title must fit the narrowest one it is shown on. On a 390 × 844
phone a full-width figure is about ``PHONE_FIGURE_PX`` wide; its plot area (where paper x runs from 0 to 1) is that less
the margins. ``fit_lines(text, font_px, width_px)`` breaks ``text`` (plotly's label markup: ``<sub>``, ``<span>``,
entities) where it reads best: after " · " first, then after a comma, then at a space, never inside a tag, an
entity or a shape such as "9 × 24"; widths are ``viz.margins.text_px``'s generous estimates. ``lines(text)``
counts the lines, for the room a title takes.
"""

from __future__ import annotations

import re

from viz.margins import text_px

# A full-width gr.Plot's figure is 364 px wide on a 390-px page (the page's 12-px padding on a phone, app.css, and the
# block's border); 14 px less leaves room for a 376-px phone.
PHONE_FIGURE_PX = 350
MARGIN_PX = 16  # the figures' own left and right margins (8 px each)
_KEEP = re.compile(r"<[^>]*>| × |“[^”]*”")  # kept whole: tags, shapes ("9 × 24"), quoted tokens
_HOLD = "\x00"


def phone_width(left_px: float = 0.0) -> float:
    """The width a full-width figure's plot area has on a phone, less ``left_px`` (tick labels left of it)."""
    return PHONE_FIGURE_PX - MARGIN_PX - left_px


def lines(text: str) -> int:
    return str(text).count("<br>") + 1


def _words(line: str, separator: str) -> list[str]:
    """``line`` cut at each ``separator``: a comma stays with the piece before it, " · " goes (a line break
    separates those pieces instead)."""
    pieces = line.split(separator)
    if separator == ", ":
        return [p + "," for p in pieces[:-1]] + [pieces[-1]]
    return pieces


def _join(words: list[str], separator: str) -> str:
    return (" " if separator == ", " else separator).join(words)


def fit_lines(text: str, font_px: float, width_px: float) -> str:
    """``text`` with ``<br>`` where a line would be wider than ``width_px`` (see the module docstring). A line
    already split by ``<br>`` keeps its breaks; a single word wider than the width stays whole."""
    held = _KEEP.sub(lambda m: m.group(0).replace(" ", _HOLD), str(text))
    out = []
    for line in held.split("<br>"):
        out += _break(line, font_px, width_px, (" · ", ", ", " "))
    return "<br>".join(out).replace(_HOLD, " ")


def _break(line: str, font_px: float, width_px: float, separators: tuple[str, ...]) -> list[str]:
    if text_px(line.replace(_HOLD, " "), font_px) <= width_px or not separators:
        return [line]
    separator, finer = separators[0], separators[1:]
    words = _words(line, separator)
    if len(words) == 1:
        return _break(line, font_px, width_px, finer)
    result, current = [], []
    for word in words:
        trial = _join([*current, word], separator)
        if current and text_px(trial.replace(_HOLD, " "), font_px) > width_px:
            result += _break(_join(current, separator), font_px, width_px, finer)
            current = [word]
        else:
            current.append(word)
    result += _break(_join(current, separator), font_px, width_px, finer)
    return result
