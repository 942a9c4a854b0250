"""The classroom on the Attention tab: a link opens its view (``share``), an example opens its view with its
caption (``examples``). Both run ``attention.visualise`` in the same event, so that no figure ever shows
an older sentence than the controls.

Each returns the tab's ``CONTROLS`` (as the view sets them), the guide (a link's notices, an example's caption:
an ``Update`` of its text and visibility), then what ``visualise`` shows; ``open_link`` also the tab to open.
``focus``: the close-up's other choices (``viz.views.attention.focus``), passed on to ``visualise`` as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from viz.views.attention import examples, projector, share
from viz.views.attention import maps as attention
from viz.views.attention.focus import check_focus
from viz.views.outputs import SKIP, Update, open_tab, skipped

if TYPE_CHECKING:
    from model.serving.runs import Runs

CONTROLS = ("source", "target", "kind", "layer", "head", "present", "colour")  # the Attention tab's, in this order
N_OUTPUTS = len(CONTROLS) + 1 + len(attention.Visualised._fields)  # the controls, the guide, what a run shows
LINK_FAILED = "The link's sentence could not be shown; this is the default one."
Warn = Callable[[str], object]  # the app passes viz.ui.wiring.warn (gr.Warning, its text escaped)


def show(runs: Runs, warn: Warn, view: share.View, notes: list[str], *focus) -> tuple:
    """``view`` on the Attention tab, with ``notes`` (and an example's caption, if it is one) in the guide."""
    result = runs.attention(view.text, view.target)  # cached: visualise below reuses it
    layer, head = share.complete(view, result.maps(view.kind))
    picked = examples.find(view.text, view.kind, layer, head) if not view.target else None
    lines = ([" ".join(notes)] if notes else []) + ([picked.caption] if picked else [])  # notices, caption
    guide = Update(value=examples.markdown(lines), visible=bool(lines))
    return (view.text, view.target, view.kind, layer, head, view.present, view.colour, guide,
            *attention.visualise(runs, warn, view.text, view.target, view.kind, layer, head, view.present,
                                 view.colour, *focus))


def first_choice(runs: Runs) -> tuple[int, int] | None:
    """The layer and head a visit without a link opens (``open_link`` on no query: the default sentence's sharpest
    head), by the app's own copy of the model, once as the app is built: the Attention tab's first values, so that the
    page's first run changes neither (a change would draw the close-up a second time)."""
    view, _ = share.parse({}, runs.cfg, (), attention.DEFAULT_SOURCE)
    return share.complete(view, runs.translator.attention(view.text, view.target or None).maps(view.kind))


def open_link(runs: Runs, warn: Warn, tabs: Sequence[str], query: Mapping[str, str],
              choices: Mapping[str, Sequence[str]] | None = None, linked: Collection[str] = ()) -> tuple:
    """The view the page's URL asks for (``query``: its parameters; ``tabs``: the app's tab ids; ``choices``: what
    the tabs allow for their own parameters, ``share.parse``), its tab opened — unless it is one of ``linked``, the
    tabs that take their part of the link and open themselves (``viz.ui.wiring.on_link``) — and the parsed link for
    them (None for a visit without one). Anything unusable in it falls back, with a notice (also as a warning)."""
    view, notes = share.parse(query, runs.cfg, tabs, attention.DEFAULT_SOURCE, choices)
    try:
        shown = show(runs, warn, view, notes)
    except ValueError:  # a sentence the model refuses: the default one, said so
        notes = [*notes, LINK_FAILED]
        view = replace(view, text=attention.DEFAULT_SOURCE, target="", layer=None, head=None)
        shown = show(runs, warn, view, notes)
    if notes:
        warn(" ".join(notes))
    asked = any(key in share.PARAMS for key in query)  # a plain visit has no link: the other tabs keep their defaults
    return *shown, SKIP if view.tab in linked else open_tab(view.tab), view if asked else None


def pick_example(runs: Runs, warn: Warn, index, present, colour, *focus) -> tuple:
    """The example the menu's ``index`` names, in the presentation mode and colours chosen; the menu's prompt
    changes nothing, anything else is an error (``examples.check_example``)."""
    picked, colour = examples.check_example(index), projector.check_colour(colour)
    check_focus(*focus)  # checked even when nothing opens
    if picked is None:
        return skipped(N_OUTPUTS)
    view = share.View(picked.sentence, "", picked.kind, picked.layer, picked.head, present=present is True,
                      colour=colour)
    return show(runs, warn, view, [], *focus)
