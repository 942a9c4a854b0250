"""A figure made ready for ``gr.Plot``: one place for the layout rules every view's figures follow."""

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
