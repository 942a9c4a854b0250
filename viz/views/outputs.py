"""What a presenter returns, without gradio: finished figures for ``gr.Plot``, and updates of the other outputs.

``Figure`` / ``finish_figure``: one place for the layout rules every view's figures follow.

``Update``: an output a presenter leaves alone, or changes other than by its value. ``viz.ui.wiring.listener``
turns an ``Update`` into ``gr.update(**props)``: ``Update(selected="attention")`` for a ``gr.Tabs`` opens that tab,
``Update(choices=..., value=...)`` refills a ``gr.Radio``. ``SKIP``, an update of nothing, is ``gr.skip()``: the
output stays as it is.
"""

from __future__ import annotations

import json

from viz import describe
from viz.encode import plotly_dict


class Figure(dict):
    """A finished figure: the plain-JSON dict (data, layout, config) that ``gr.Plot`` draws. Its own type, so
    that the app can tell the figures among a presenter's outputs."""


def finish_figure(fig, filename: str, description: describe.Description | None = None, *,
                  german: dict | None = None) -> Figure:
    """A plotly figure or a figure spec dict -> the ``Figure`` that ``gr.Plot`` draws.

    Spec dicts (the heatmaps) skip ``go.Figure`` validation on the hot path. Without a title, the layout
    loses its title entry (Gradio reserves 100 px of top margin for any layout title) and keeps at least
    30 px of top margin, clear of Gradio's label badge. The config's camera button downloads a PNG named
    ``filename``.

    Every figure carries what it says to someone who cannot see it (``viz.describe``): ``description``, else one
    read from its own traces (``describe.generic``); ``german``: where its German is (``Description.in_german``'s
    arguments: a generic description's table rows or columns, tick labels, quoted words).
    """
    data = plotly_dict(fig) if isinstance(fig, dict) else json.loads(fig.to_json())
    if not (data["layout"].get("title") or {}).get("text"):
        data["layout"].pop("title", None)
        margin = data["layout"].setdefault("margin", {})
        margin["t"] = max(margin.get("t", 0), 30)
    data["config"] = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2}}
    name = filename.replace("_", " ")  # a figure with no title of its own is named by its file
    said = description or describe.generic(data, name[:1].upper() + name[1:])
    return Figure(describe.attach(data, said.in_german(**german) if german else said))



class Update:
    """Properties of one output component to change (the value among them, if any)."""

    __slots__ = ("props",)

    def __init__(self, **props):
        self.props = props

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Update) and other.props == self.props

    __hash__ = None  # mutable props

    def __repr__(self) -> str:
        return f"Update({', '.join(f'{k}={v!r}' for k, v in self.props.items())})"


SKIP = Update()  # the output stays as it is


class JSONText:
    """An answer already written as JSON (UTF-8 bytes): the app sends it as it is, never walking or serialising it
    again (``viz.ui.wiring.listener``). The large /attention answer is written once per result and shared by every
    request for it (``model.serving.runs.Runs.attention_json``); as a dict of lists it cost ~80 MB of Python objects
    and seconds of the server's event loop per request."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    def __repr__(self) -> str:
        return f"JSONText({len(self.data):,} bytes)"


def open_tab(tab_id: str) -> Update:
    """The update of the app's ``gr.Tabs`` that selects the tab ``tab_id``."""
    return Update(selected=tab_id)


def skipped(n: int) -> tuple[Update, ...]:
    """``n`` outputs left as they are."""
    return (SKIP,) * n


def changes(base, other, path: tuple = ()) -> list[list]:
    """What turns the plain-JSON value ``base`` into ``other``, for a page that holds ``base`` and many views like it
    (assets/web/page.js, ``applyChanges``): ``[path, value]`` sets the value at ``path`` (keys and list indices; ``[]``
    is the whole), ``[path]`` deletes it. Dicts are followed key by key, lists of the same length that hold dicts or
    lists item by item; anything else that differs is replaced whole."""
    if isinstance(base, dict) and isinstance(other, dict):
        out = [[[*path, key]] for key in base if key not in other]
        for key, value in other.items():
            out += changes(base[key], value, (*path, key)) if key in base else [[[*path, key], value]]
        return out
    if (isinstance(base, list) and isinstance(other, list) and len(base) == len(other)
            and any(isinstance(item, dict | list) for item in base)):
        return [change for i, (a, b) in enumerate(zip(base, other)) for change in changes(a, b, (*path, i))]
    return [] if base == other and type(base) is type(other) else [[list(path), other]]


def drawn_key(*values) -> str:
    """The values a view was drawn from, as one string: the same values, the same view (``viz.ui.wiring.unless_drawn``;
    a link that draws the view sets it too)."""
    return repr(values)
