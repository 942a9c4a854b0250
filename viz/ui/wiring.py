"""What every tab builder shares: the page (``Page``), the Attention tab's components that other tabs follow
(``AttentionView``), presenters as Gradio listeners (``listener``, ``page_and_api``), the settings events share
(``PRIVATE``, ``ABLATIONS``, ``LINES_STALE``), what the page does in the browser alone (``in_browser``) and the
components several tabs build alike. The tab modules (``viz.ui.tabs``) import this, never app.py."""

from __future__ import annotations

import functools
import html
import inspect
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import gradio as gr
import orjson
from gradio.components.plot import PlotData

from model.serving.runs import Runs, SessionResult
from viz.text import md_escape
from viz.ui.patches import escape_message
from viz.views import decode_steps, reading
from viz.views.attention import maps
from viz.views.outputs import SKIP, Figure, JSONText, Update, drawn_key, skipped
from viz.views.page import WEB
from viz.vocab import MAX_CHARS

# A head ablation decodes the shipped sample (~3 CPU-seconds): one at a time, in a queue of its own, so that it never
# takes more than one of the workers the other requests share (its page events and /ablate share the queue).
ABLATIONS = {"concurrency_id": "ablate", "concurrency_limit": 1}
PRIVATE = {"api_visibility": "private"}  # the page's own events: no endpoint
STALE = "*The figures still show the last good run.*"  # the end of a notice (page_and_api)


@dataclass
class Page:
    """What every tab builder gets: the model runs, the app, its tabs and the session's result."""

    runs: Runs
    demo: gr.Blocks
    tabs: gr.Tabs  # a presenter opens a tab by id: Update(selected="attention")
    result: gr.State  # the session's SessionResult (a key; listener hands presenters its AttentionResult), or None
    # A link (viz.views.attention.share): the Attention tab opens its view as the page loads (``opened``, that event)
    # and keeps the parsed link (``link``, a share.View; None without one); the tabs with a view of their own in it
    # take their part when it is set (a visit with a link only) and open themselves (``on_link``: ``linked``, by tab
    # id), with the values they allow (``link_choices``).
    link: gr.State | None = None
    opened: Any = None
    linked: dict[str, tuple] = field(default_factory=dict)
    link_choices: dict[str, Sequence[str]] = field(default_factory=dict)
    # The lecture's moves in place: the page writes the next stop's URL query in ``lecture_go`` and the link's view
    # opens again (``reopened``, that event: viz.ui.lecture), as ``opened`` does on a page load, from the Attention
    # tab's part (``open_view``: its function, outputs and what follows a run) and the other tabs' (``parts``)
    lecture_go: Any = None
    reopened: Any = None
    open_view: tuple | None = None
    parts: tuple | None = None


class AttentionView(SimpleNamespace):
    """The Attention tab's components by name (``build_attention`` sets them): its listeners take them, and so do the
    tabs that follow its sentence and choices (source, target, kind, layer, head, present, colour, row_click), and
    ``redraw(event)``, for a tab whose event sets its choices (its figures are drawn again after it)."""


# ------------------------------------------------------------------------------------- presenters as listeners
def listener(present, *args, **kwargs):
    """``present`` as a Gradio listener, ``args``/``kwargs`` bound first (like functools.partial). It gets the
    session's AttentionResult for its ``SessionResult`` (the gr.State keeps a key into the byte-bounded cache); a
    ``Figure`` it returns becomes a gr.Plot value, an ``Update`` a gr.update (``SKIP``: no change); a ValueError
    (bad input, an empty sentence) reaches the user as its message (as text: ``escape_message``), never as a
    traceback."""
    fn = functools.partial(present, *args, **kwargs) if args or kwargs else present

    def run(*inputs):
        try:
            out = fn(*(value.get() if isinstance(value, SessionResult) else value for value in inputs))
        except ValueError as exc:
            raise gr.Error(escape_message(str(exc))) from None
        return tuple(map(_shown, out)) if isinstance(out, tuple) else _shown(out)

    functools.update_wrapper(run, present)  # its name and docstring (the API page shows them)
    # Gradio 6.31.0 reads an event's inputs and the API page's types from inspect.signature(fn), which follows
    # __wrapped__: present's parameters without the bound arguments, and their type hints.
    run.__wrapped__ = fn
    kept = {*inspect.signature(fn).parameters, "return"}
    run.__annotations__ = {k: v for k, v in getattr(present, "__annotations__", {}).items() if k in kept}
    return run


def plot_value(figure: Figure) -> PlotData:
    """A finished figure as a gr.Plot's value (its value from the start, as an output's: ``_shown``)."""
    return _shown(figure)


def _shown(value):
    """A presenter's output as Gradio takes it. Gradio 6.31.0's gr.Plot wants a plotly Figure, whose ``to_json`` it
    calls in ``postprocess``; a ``Figure`` is the finished plain-JSON dict, so it goes as the ``PlotData`` that
    ``postprocess`` would have made (which it passes on as it is). A ``JSONText`` goes as an ``orjson.Fragment``."""
    if isinstance(value, Figure):
        return PlotData(type="plotly", plot=json.dumps(value, separators=(",", ":")))
    if isinstance(value, JSONText):  # sent as written (viz.ui.limits.raw_json_answers)
        return orjson.Fragment(value.data)
    return gr.update(**value.props) if isinstance(value, Update) else value


def page_and_api(triggers: list, present, *args, inputs: list, outputs: list, notice: gr.Markdown, api_name: str,
                 page_outputs: list | None = None, to_page: Callable | None = None, stream: Callable | None = None,
                 **event):
    """Wire ``present`` (``args`` bound first) twice, both in one queue: as the endpoint ``api_name`` for scripts
    (``listener``: bad input is an error with its message), an event with no trigger on the page; and for the
    page's ``triggers`` with one more output, ``notice``: there a bad input leaves the other outputs as they are —
    the last good view stays, with no red "Error" badges over it — and the notice says what to change; a good run
    clears it. The page's outputs may differ from the endpoint's: ``page_outputs``, given ``to_page(answer)`` (e.g.
    figures as JSON for the page to draw in those it shows), or ``stream``, a generator of the page's outputs in
    ``present``'s place (answers in parts: the first drawn while the rest is computed). Returns the page's event (to
    chain on)."""
    gr.on([], listener(present, *args), inputs, outputs, api_name=api_name, concurrency_id=api_name, **event)
    if stream is not None:
        return gr.on(triggers, _streamed(stream, *args, n_outputs=len(page_outputs)), inputs, [*page_outputs, notice],
                     api_visibility="private", concurrency_id=api_name, show_progress="minimal", **event)
    if to_page is not None:  # (before ``listener`` turns the answer's figures into Plot values)
        present = functools.wraps(present)(lambda *values, _present=present: to_page(_present(*values)))
    run = listener(present, *args)
    shown = outputs if page_outputs is None else page_outputs

    @functools.wraps(run)
    def on_page(*values):
        try:
            out = run(*values)
        except gr.Error as exc:  # its message is HTML text (escape_message); the notice is Markdown
            notice = md_escape(html.unescape(exc.message))
            return (*(gr.skip(),) * len(shown), f"⚠️ {notice} {STALE}")
        return (*(out if isinstance(out, tuple) else (out,)), "")

    return gr.on(triggers, on_page, inputs, [*shown, notice], api_visibility="private", concurrency_id=api_name,
                 show_progress="minimal", **event)


def _streamed(stream: Callable, *args, n_outputs: int):
    """``page_and_api``'s page event for a generator ``stream`` (``n_outputs`` outputs): each of its answers with
    the notice cleared; bad input (a ValueError at any point) a notice, the figures left as they were."""
    fn = functools.partial(stream, *args)

    def on_page(*inputs):
        try:
            for out in fn(*(value.get() if isinstance(value, SessionResult) else value for value in inputs)):
                yield *map(_shown, out), ""
        except (ValueError, gr.Error) as exc:
            notice = md_escape(html.unescape(exc.message) if isinstance(exc, gr.Error) else str(exc))
            yield *(gr.skip(),) * n_outputs, f"⚠️ {notice} {STALE}"

    on_page.__name__, on_page.__doc__, on_page.__wrapped__ = stream.__name__, stream.__doc__, fn
    return on_page


def unless_drawn(present: Callable, n_outputs: int) -> Callable:
    """``present`` (``n_outputs`` outputs) for outputs that only its events write (and a link's: ``drawn_key``), as
    ``(drawn, *values) -> (*outputs, drawn)``: ``drawn``, a gr.State, the key of the values they show; the same values
    again (a tab opened again, a control set to what it was) change nothing — each answer costs the page its status
    work, and figures their drawing."""

    def run(drawn: str | None, *values):
        key = drawn_key(*values)
        if drawn == key:
            return (*skipped(n_outputs), SKIP)
        out = present(*values)
        return (*(out if isinstance(out, tuple) else (out,)), key)

    run.__name__, run.__doc__ = getattr(present, "__name__", "present"), present.__doc__
    return run


# A lecture's move in place brings a tab's whole view in its own answer (``on_link``): a listener of the tab's own
# opening that would draw it again takes ``page.lecture_go`` as its first input, ``WHILE_MOVING`` as its js, and
# ``unless_moving``: asked while a move is on its way (the page sends ``MOVING`` in its place), it changes nothing. (Its
# other inputs were read as the page showed the last stop, and a state it reads may already be the next one's: the
# previous stop's view, drawn over the next one's, had left Inside a head showing stop 3's whole matrices at stop 4.)
MOVING = "moving"


def unless_moving(present: Callable, n_outputs: int) -> Callable:
    """``present`` (``n_outputs`` outputs) as ``(asked, *values)``: no change where ``asked`` is ``MOVING``."""

    def run(asked: str | None, *values):
        if asked is not None and not isinstance(asked, str):  # (the page sends the lecture's query: text)
            raise ValueError(f"the lecture's query must be text, got {json.dumps(asked)[:40]}")
        return tuple(skipped(n_outputs)) if asked == MOVING else present(*values)

    named = getattr(present, "func", present)  # (a functools.partial: its function's name)
    run.__name__, run.__doc__ = getattr(named, "__name__", "present"), named.__doc__
    return run


def warn(message: str) -> None:
    """A warning popup (gr.Warning) that shows ``message`` as text (``escape_message``): what presenters get to warn."""
    gr.Warning(escape_message(message))


def on_link(page: Page, tab_id: str, present, *args, inputs: list, outputs: list, **choices: Sequence[str]) -> None:
    """Tab ``tab_id``'s part of a link: ``present(*args, link, *inputs)`` gets the parsed link (a share.View; None
    before one) and the values of ``inputs``, and returns the values of ``outputs`` (this tab's controls and figures)
    and then the update of ``page.tabs`` that opens this tab when the link names it (all ``SKIP`` otherwise).
    ``choices``: the values this tab allows for its own parameters (``stat=...``). ``open_linked_tabs`` wires them."""
    page.linked[tab_id] = (functools.partial(present, *args), inputs, outputs)
    page.link_choices.update(choices)


def open_linked_tabs(page: Page) -> None:
    """Every tab's part of a link (``on_link``) as one event once the Attention tab has opened the link's view and
    set ``page.link`` (a visit with a link only): one request, not one per tab, while the page loads (a hall of
    pages loading the same link at once shares the queue's places: viz.ui.shares); and in each of the lecture's
    moves in place (``page.parts``: viz.ui.lecture)."""
    parts = list(page.linked.values())
    inputs = list({id(c): c for _, ins, _ in parts for c in ins}.values())
    outputs = [c for _, _, outs in parts for c in outs]

    def open_parts(link, *values):  # each part skips unless the link names its tab; at most one opens its tab
        value = dict(zip(map(id, inputs), values, strict=True))
        out, tab = [], SKIP
        for present, ins, _ in parts:
            *shown, opened = present(link, *(value[id(c)] for c in ins))
            out += shown
            tab = opened if opened is not SKIP else tab
        return (*out, tab)

    def open_linked(moved, link, *values):  # a lecture's move in place opens the parts itself, below
        return skipped(len(outputs) + 1) if moved else open_parts(link, *values)

    page.link.change(listener(open_linked), [page.lecture_go, page.link, *inputs], [*outputs, page.tabs],
                     show_progress="hidden", **PRIVATE)
    # a move in place: the parts with the Attention tab's, in the lecture's one event (even a link as it was: the next
    # stop's figures drawn anew)
    page.parts = (open_parts, inputs, outputs)


# --------------------------------------------------------------------------------------------- in the browser
@functools.cache
def _browser_functions() -> dict[str, str]:
    """assets/web/events.js's functions by name (one entry a line: ``  name: function,``)."""
    return dict(re.findall(r"^  (\w+): (.+),$", (WEB / "events.js").read_text(encoding="utf-8"), flags=re.MULTILINE))


def in_browser(name: str, *bound) -> str:
    """The ``js`` of a listener that runs assets/web/events.js's function ``name`` in the browser: it gets
    ``bound`` (JSON values) first, then the listener's input values."""
    function = _browser_functions()[name]
    if not bound:
        return function
    return f"(...inputs) => ({function})({', '.join(json.dumps(value) for value in bound)}, ...inputs)"


# The page script (assets/web/lines.js) asks for the alignment view through v.lines_request once the view is on screen,
# and again after this says it is out of date: a run, or a new kind, layer or head.
LINES_STALE = in_browser("linesStale")
# (``unless_moving``'s js: the page sends ``MOVING`` in place of the first input while a lecture's move is on its way)
WHILE_MOVING = in_browser("whileMoving", MOVING)


# ------------------------------------------------------------------------------------ what several tabs build
def how_to_read(tab_id: str) -> None:
    """The tab's folded "How to read this" (``viz.views.reading``)."""
    with gr.Accordion(reading.TITLE, open=False, elem_classes="how-to-read"):
        gr.Markdown(reading.HOW_TO_READ[tab_id])


def sentence_box(label: str, **kwargs) -> gr.Textbox:
    return gr.Textbox(label=label, value=maps.DEFAULT_SOURCE, max_length=MAX_CHARS, **kwargs)


def following(page: Page, tab: gr.Tab, text: gr.Textbox, elem_id: str) -> gr.Textbox:
    """A tab's own sentence box ``text`` follows the Attention tab's sentence as ``tab`` opens, unless the visitor typed
    another there (``decode_steps.take_sentence``). Returns a hidden box set once that is done: the tab's run listens
    to it rather than to ``tab.select`` (which would run the sentence the box had)."""
    followed, opened = gr.State(""), hidden_box(elem_id)
    tab.select(listener(lambda result, last: decode_steps.take_sentence(result, last, f"{time.time():.6f}")),
               [page.result, followed], [text, followed, opened], show_progress="hidden", **PRIVATE)
    return opened


def layer_slider(cfg, value: int = 1, **kwargs) -> gr.Slider:
    return gr.Slider(1, cfg.n_layers, value=value, step=1, label="Layer", **kwargs)


def hidden_box(elem_id: str) -> gr.Textbox:
    """A hidden textbox that carries text between the page script and the server (figures as JSON, a click).
    ``lines == max_lines``: Gradio 6.31.0's Textbox otherwise fits its height to its text at every new value (a
    forced layout of the whole text: ~5 ms for a Why-tab run's 29 kB of JSON, on the way to drawing it); two lines,
    not one, keep it a <textarea> (one is an <input>), which the page script reads."""
    return gr.Textbox(visible="hidden", elem_id=elem_id, lines=2, max_lines=2)


def click_box(elem_id: str) -> gr.Textbox:
    """Hidden: the page script writes a click on a figure here (``PAGE``). Listen with .change, not .input: Gradio
    6.31.0 fires .input only on a keypress, never for a value set by the page script."""
    return hidden_box(elem_id)
