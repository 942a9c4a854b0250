"""What a figure needs so that it cannot be misread: the decoder's one-position shift, and an export's context.

- The §3.1 shift: decoder row i is fed token i (BOS first) and predicts token i+1. ``next_tokens`` names, per
  row, the token it predicts (the hover of the close-up shows it) and ``shift_note`` says it beside the views.
- Exports: a figure saved as PNG or SVG leaves the page, and with it the sentence box, the kind radio and the
  sliders that said what it shows. ``with_export`` puts that context into the figure, as
  ``layout.meta.export``: the page script (assets/web/export.js, ``exportLayout``) draws the exported copy with
  ``title`` as its title, an opaque white background and dark text, and, given ``categoryTicks``, the tokens
  as tick labels (the overview's hover labels "L1 query 3: Hunde" -> "Hunde"). The screen keeps its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.terms import EOS_PIECE
from viz.text import escape_text
from viz.views.outputs import Figure

if TYPE_CHECKING:
    from model.network.inference import AttentionResult

CUT_OFF = "…"  # what the last row of a translation cut off at the length limit predicts: not among the rows
DECODER_KINDS = ("decoder_self", "cross")  # their rows are decoder positions
EXPORT_TEXT_CHARS = 70  # a sentence in an export title is cut to this many characters
# Beside figures whose sentence box was edited but not yet run (Markdown):
EDITED = "✎ The figures still show the last run: press **Translate and show attention** (or Enter) to update them."
EDITED_LIVE = "✎ The maps still show the last sentence run: press **Run the model** (or Enter) to update them."


def next_tokens(result: AttentionResult) -> list[str]:
    """Per decoder row, the token it predicts: the next row's input token, and EOS after the last row.

    A greedy translation cut off at the length limit wrote a last token that is no row's input: its last row
    gets ``CUT_OFF``. (A finished run has one row more than its translation has tokens: BOS, then each token.)
    """
    rows = result.target_tokens
    finished = len(result.target_ids) < len(rows)
    return list(rows[1:]) + [EOS_PIECE if finished else CUT_OFF]


def shift_note(kind: str) -> str:
    """Markdown for beside the views: how to read a decoder row (empty for the encoder's self-attention)."""
    if kind not in DECODER_KINDS:
        return ""
    note = ("**Decoder rows (§3.1):** row *i* is fed token *i* and predicts token *i*+1; the close-up's hover "
            "names that token.")
    if kind == "decoder_self":
        note += " Grey cells are **masked**: −∞ before the softmax, so a position never sees a later one."
    return note


def _quoted(text: str) -> str:
    text = " ".join(str(text).split())
    return "“" + (text if len(text) <= EXPORT_TEXT_CHARS else text[: EXPORT_TEXT_CHARS - 1] + "…") + "”"


def export_title(result: AttentionResult, what: str) -> str:
    """Three lines of plotly title text, escaped: the sentence, its translation, then ``what`` the figure shows
    (kind, layer, head). A translation the user gave says so."""
    given = " (your translation, teacher forcing)" if result.teacher_forced else ""
    lines = (_quoted(result.source_text), f"→ {_quoted(result.translation or '(empty)')}{given}", what)
    return "<br>".join(map(escape_text, lines))


def with_export(figure: Figure, title: str, category_ticks: bool = False) -> Figure:
    """``figure`` with its export context (see the module docstring); ``title`` is plotly text, already escaped."""
    meta = figure["layout"].setdefault("meta", {})
    meta["export"] = {"title": title, **({"categoryTicks": True} if category_ticks else {})}
    return figure
