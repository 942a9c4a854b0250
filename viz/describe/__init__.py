"""What every figure says to someone who cannot see it: its name, a short summary of what stands out, the table of
the values it draws and, for the figures one walks cell by cell, the grid the arrow keys move over.

One description per figure, computed on the server from the same numbers as the figure, and carried inside it
(``attach``: ``layout.meta.describe``), so that it is replaced whenever the figure is: the page script
(assets/web/a11y.js) gives the figure its accessible name and description, the "As a table" toggle with its CSV
download, announces it after the visitor's own action, and walks its grid with the arrow keys.

``describe.overview`` (every layer × head), ``describe.attention_map`` (one map: the close-up, rollout, a step),
``describe.stats_grid`` (Head analysis) are written for their figures; ``describe.generic`` reads any other plotly
figure's own traces (heatmaps, lines, bars): every figure ``viz.views.outputs.finish_figure`` finishes gets one.

The meta's shape (a contract with assets/web/a11y.js):
  {"name": str, "summary": str,
   "table": {"caption": str, "corner": str, "columns": [str], "rows": [str],
             "values": [[number | str | null]] | {"trace": i}},      # {"trace": i}: trace i's z, as drawn
   "grid": {"blocks": [{"xaxis": "x", "yaxis": "y", "x": [[lo, hi]], "y": [[lo, hi]],   # cells in axis units
                        "labels": [[str]] | null,   # null: "'row' → 'column': value", the table's cell
                        "send": [[str]] | [str]}]},     # per cell (or per row): what Enter sends, as a click does
   "lang": {"rows": "de" | null, "columns": "de" | null,   # German table headers (absent: none)
            "y": "de" | null, "x": "de" | null,             # German tick labels
            "words": [str]}}                                # German words the summary and table cells quote
Text is plain (tokens as the figures show them, unescaped): the page writes it as text, never as markup.
Gradio-free: numbers, tokens and plain dicts in, plain dicts out. The parts: ``core`` (the description, its table,
how a figure carries it), ``attention`` (the attention maps' and Head analysis's), ``figures`` (any other figure,
read from its own traces).
"""

from viz.describe.attention import (
    HeadSummary,
    alignment,
    attention_map,
    head_summary,
    mean_row_max,
    overview,
    stats_grid,
    strongest_pairs,
)
from viz.describe.core import MAX_EXPLICIT, META, SINK, TOP, Description, Table, attach, fmt, of, reword, tokens
from viz.describe.figures import array, generic, plain

__all__ = ["MAX_EXPLICIT", "META", "SINK", "TOP", "Description", "HeadSummary", "Table", "alignment", "array",
           "attach", "attention_map", "fmt", "generic", "head_summary", "mean_row_max", "of", "overview", "plain",
           "reword", "stats_grid", "strongest_pairs", "tokens"]
