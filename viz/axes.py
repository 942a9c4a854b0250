"""The axis every figure starts from: no grid, zero line, border or tick marks, tick labels drawn as they are; the rest
(and a grid, if wanted) from the caller."""


def bare_axis(**extra) -> dict:
    """A plotly axis without zero line, border or tick marks (and no grid unless asked); ``extra`` adds or overrides.

    ``ticklabeloverflow="allow"``: plotly's default ("hide past div") measures every tick label's box after drawing it,
    to hide those past the figure's edge: a forced layout of the page each time (in Chromium's profiler, ~8 % of a new
    query's six figures in Inside a head, ~1/6 of the Why tab's entropy figure). Every figure here makes room for its
    labels (plotly's automargin, or margins the server works out: ``viz.margins``), so none is past the edge."""
    return {"showgrid": False, "zeroline": False, "showline": False, "ticks": "", "ticklabeloverflow": "allow", **extra}
