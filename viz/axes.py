"""The axis every figure starts from: no grid, zero line, border or tick marks; the rest (and a grid, if wanted)
from the caller."""


def bare_axis(**extra) -> dict:
    """A plotly axis without zero line, border or tick marks (and no grid unless asked); ``extra`` adds or overrides."""
    return {"showgrid": False, "zeroline": False, "showline": False, "ticks": "", **extra}
