"""A view as a link: its state in the page's URL query, read back when a link is opened.

    ?text=Two+dogs…&target=&kind=cross&layer=5&head=4&tab=attention&present=1&colour=row

``text`` and ``target`` are the sentence and the optional own translation, ``kind`` one of ``KINDS``,
``layer`` 1..N, ``head`` 0..h (0 = the mean of the layer's heads), ``tab`` a tab's id, ``present`` 1 for
presentation mode, ``colour`` the close-up's colour scale (``viz.views.attention.projector.COLOUR_MODES``). The page
script (assets/web/classroom.js) writes them as the view changes; ``parse`` reads them when a link is opened.

Every tab's view is in the link: ``kind``, ``layer`` and ``head`` are those of the tab shown (the Attention tab
takes them too), and a tab's own choices come beside them — ``step`` (Decoding, 1-based), ``query`` (Inside a head,
0-based) and ``show`` (Inside a head's view: ``query``, one query step by step, or ``matrix``, every query at once;
not ``view``, which Gradio reads itself: ``?view=api``), ``stat`` and ``scope`` (Head analysis), ``runs`` (the Lab's
curves, names joined by commas). Those whose values the tabs know (``show``, ``stat``, ``scope``, ``runs``) are
checked against ``choices``; each tab takes its part after
the Attention tab has opened the link (``viz.ui.wiring.on_link``).

A link may come from anyone: every value is checked, and one that is missing, malformed or hostile falls
back to its default, with a notice that names the parameter but never repeats its value (the value is
never shown, so it can never be run as markup). Other parameters (Gradio's ``__theme``) are left alone.
Without ``layer``/``head`` (or ``kind``) a link opens the sharp default: ``sharpest_head``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from model.terms import KINDS, MAX_TOKENS
from viz.views.attention.projector import COLOUR_MODES
from viz.vocab import MAX_CHARS

if TYPE_CHECKING:
    from model.network.config import TransformerConfig

PARAMS = ("text", "target", "kind", "layer", "head", "tab", "present", "colour", "step", "query", "stat", "scope",
          "runs", "show")
MAX_STEPS = 999  # a link's step, checked again against the sentence's own steps (Decoding)
DEFAULT_KIND = "cross"  # the sharp default looks at the encoder–decoder attention: the word alignment
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class View:
    text: str
    target: str = ""
    kind: str = DEFAULT_KIND
    layer: int | None = None  # None: the sharp default for this sentence (see ``sharpest_head``)
    head: int | None = None
    tab: str = "attention"
    present: bool = False
    colour: str = COLOUR_MODES[0]
    step: int | None = None  # a tab's own choices (None: the tab's default)
    query: int | None = None
    stat: str | None = None
    scope: str | None = None
    runs: tuple[str, ...] | None = None
    show: str | None = None

    def query_params(self) -> dict[str, str]:
        """The view as query parameters (what the page script writes; for tests and round trips)."""
        out = {"text": self.text, "target": self.target, "kind": self.kind, "layer": self.layer,
               "head": self.head, "tab": self.tab, "present": "1" if self.present else "", "colour": self.colour,
               "step": self.step, "query": self.query, "stat": self.stat, "scope": self.scope,
               "runs": None if self.runs is None else ",".join(self.runs), "show": self.show}
        return {k: str(v) for k, v in out.items() if v is not None and (v != "" or k == "runs")}  # runs=: none


def sharpest_head(maps: np.ndarray) -> tuple[int, int]:
    """The (layer, head), 1-based, whose rows are most confident: the largest mean over rows of the row's
    largest weight. ``maps`` is one kind's (L, H, Q, K) stack."""
    confidence = maps.max(axis=-1).mean(axis=-1)  # (L, H)
    layer, head = np.unravel_index(int(confidence.argmax()), confidence.shape)
    return int(layer) + 1, int(head) + 1


def _text(value: str | None, name: str, notices: list[str], default: str) -> str:
    if value is None:
        return default
    text = value.strip()
    if len(text) > MAX_CHARS or any(ord(ch) < 32 and ch not in "\t\n" for ch in text):
        notices.append(f"The link's {name} was too long or held control characters.")
        return default
    if name == "text" and not text:
        notices.append("The link's text was empty.")
        return default
    return text


def _whole(value: str | None, name: str, lo: int, hi: int, notices: list[str]) -> int | None:
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit() and len(text) <= 3 and lo <= int(text) <= hi:
        return int(text)
    notices.append(f"The link's {name} must be a whole number from {lo} to {hi}.")
    return None


def _choice(value: str | None, name: str, allowed: Sequence[str], default: str | None,
            notices: list[str]) -> str | None:
    if value is None:
        return default
    if value.strip() in allowed:
        return value.strip()
    notices.append(f"The link's {name} must be one of: {', '.join(allowed)}.")
    return default


def _names(value: str | None, name: str, allowed: Sequence[str], notices: list[str]) -> tuple[str, ...] | None:
    """Names joined by commas, each one of ``allowed`` ("" = none of them); else None, with a notice."""
    if value is None:
        return None
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    if len(value) <= MAX_CHARS and all(n in allowed for n in names):
        return tuple(dict.fromkeys(names))
    notices.append(f"The link's {name} must be names among: {', '.join(allowed) or '(none here)'}.")
    return None


def parse(query: Mapping[str, str], cfg: TransformerConfig, tabs: Sequence[str], default_text: str,
          choices: Mapping[str, Sequence[str]] | None = None) -> tuple[View, list[str]]:
    """The view a link asks for, and one notice per parameter that could not be used (then its default).

    ``query`` is the page's query parameters (``dict(gr.Request.query_params)``), ``tabs`` the tab ids
    the app has, ``choices`` the values the tabs allow for ``show``, ``stat``, ``scope`` and ``runs`` (one missing: none
    allowed). Missing parameters are not notices. ``layer``/``head`` and a tab's own choices stay None unless given
    (and valid).
    """
    choices = choices or {}
    notices: list[str] = []
    get = {k: (v if isinstance(v, str) else None) for k, v in query.items() if k in PARAMS}.get
    text = _text(get("text"), "text", notices, default_text)
    target = _text(get("target"), "target", notices, "")
    kind = _choice(get("kind"), "kind", KINDS, DEFAULT_KIND, notices)
    layer = _whole(get("layer"), "layer", 1, cfg.n_layers, notices)
    head = _whole(get("head"), "head", 0, cfg.n_heads, notices)
    tab = _choice(get("tab"), "tab", tabs, tabs[0] if tabs else "attention", notices)
    present = get("present")
    if present is not None and present.strip().lower() not in _TRUE + _FALSE:
        notices.append("The link's present must be 1 or 0.")
    colour = _choice(get("colour"), "colour", COLOUR_MODES, COLOUR_MODES[0], notices)
    step = _whole(get("step"), "step", 1, MAX_STEPS, notices)  # the sentence's own number of steps: Decoding's
    at = _whole(get("query"), "query", 0, MAX_TOKENS - 1, notices)
    stat = _choice(get("stat"), "stat", choices.get("stat", ()), None, notices)
    scope = _choice(get("scope"), "scope", choices.get("scope", ()), None, notices)
    runs = _names(get("runs"), "runs", choices.get("runs", ()), notices)
    show = _choice(get("show"), "show", choices.get("show", ()), None, notices)
    view = View(text, target, kind, layer, head, tab, (present or "").strip().lower() in _TRUE, colour, step, at,
                stat, scope, runs, show)
    if notices:
        notices.append("Those parts of the link were left at their defaults.")
    return view, notices


def complete(view: View, maps: np.ndarray) -> tuple[int, int]:
    """(layer, head) of ``view``; a missing one is the sharp choice on ``maps`` (its kind's (L, H, Q, K)
    stack): with neither, ``sharpest_head``; with a layer, that layer's sharpest head; with a head, the
    layer where that head (or, for 0, the mean of the heads) is sharpest."""
    layer, head = view.layer, view.head
    if layer is None and head is None:
        return sharpest_head(maps)
    if head is None:
        return layer, int(maps[layer - 1].max(axis=-1).mean(axis=-1).argmax()) + 1
    if layer is None:
        per_layer = maps.mean(axis=1) if head == 0 else maps[:, head - 1]  # (L, Q, K)
        layer = int(per_layer.max(axis=-1).mean(axis=-1).argmax()) + 1
    return layer, head


def opens(link: View | None, tab: str) -> bool:
    """Whether the parsed link ``link`` (None: the page has none yet) opens the tab ``tab``: then that tab takes its
    part of it (``viz.ui.wiring.on_link``)."""
    return link is not None and link.tab == tab
