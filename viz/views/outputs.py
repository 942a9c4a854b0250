"""What a presenter returns, without gradio: finished figures for ``gr.Plot``, and updates of the other outputs.

``Figure`` / ``finish_figure``: one place for the layout rules every view's figures follow.

``Update``: an output a presenter leaves alone, or changes other than by its value. ``viz.ui.wiring.listener``
turns an ``Update`` into ``gr.update(**props)``: ``Update(selected="attention")`` for a ``gr.Tabs`` opens that tab,
``Update(choices=..., value=...)`` refills a ``gr.Radio``. ``SKIP``, an update of nothing, is ``gr.skip()``: the
output stays as it is.
"""

from __future__ import annotations

import json

from viz.encode import plotly_dict


class Figure(dict):
    """A finished figure: the plain-JSON dict (data, layout, config) that ``gr.Plot`` draws. Its own type, so
    that the app can tell the figures among a presenter's outputs."""


def finish_figure(fig, filename: str) -> Figure:
    """A plotly figure or a figure spec dict -> the ``Figure`` that ``gr.Plot`` draws.

    Spec dicts (the heatmaps) skip ``go.Figure`` validation on the hot path. Without a title, the layout
    loses its title entry (Gradio reserves 100 px of top margin for any layout title) and keeps at least
    30 px of top margin, clear of Gradio's label badge. The config's camera button downloads a PNG named
    ``filename``.
    """
    data = plotly_dict(fig) if isinstance(fig, dict) else json.loads(fig.to_json())
    if not (data["layout"].get("title") or {}).get("text"):
        data["layout"].pop("title", None)
        margin = data["layout"].setdefault("margin", {})
        margin["t"] = max(margin.get("t", 0), 30)
    data["config"] = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2}}
    return Figure(data)



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


def open_tab(tab_id: str) -> Update:
    """The update of the app's ``gr.Tabs`` that selects the tab ``tab_id``."""
    return Update(selected=tab_id)


def skipped(n: int) -> tuple[Update, ...]:
    """``n`` outputs left as they are."""
    return (SKIP,) * n
