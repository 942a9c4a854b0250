"""The words and constants that the app, the figures, the benchmark and the tests share, in one place.

Imports nothing (no torch, no gradio, no plotly), so any module may use it.

The kinds of attention themselves, the input limit and the special pieces are the model's words: ``model.terms``
(also torch-free). Here are the page's: how each kind is named, what its axes hold, the head selectors' mean, the
text boxes' limit and the figures' colours. The offline settings are ``viz.offline``.
"""

from __future__ import annotations

KIND_LABELS = {
    "encoder_self": "Encoder self-attention",
    "decoder_self": "Decoder self-attention (masked)",
    "cross": "Encoder–decoder attention",
}
# Which side of each kind's maps is German: (queries, keys), the target's tokens (a screen reader's language)
GERMAN_SIDES = {"encoder_self": (False, False), "decoder_self": (True, True), "cross": (True, False)}
AXIS_LABELS = {  # (rows, columns) of each kind's maps: (query side, key side)
    "encoder_self": ("source token (query)", "source token (key)"),
    "decoder_self": ("decoder position: input token (query)", "decoder position (key)"),
    "cross": ("decoder position: input token (query)", "source token (key)"),
}

MEAN = 0  # the head selectors' "mean over heads" (an API's null means it too)
MAX_CHARS = 2000  # per sentence, as the page's text boxes allow (the model reads the first MAX_TOKENS tokens)

# Figures: transparent backgrounds and mid-grey text read on light and dark pages alike. The page draws every figure's
# text in its own text colour (assets/web/draw.js, app.css: #888 is 3.54:1 on white, under WCAG's 4.5:1), an export in
# dark grey on white (assets/web/export.js); TEXT_COLOR stays the colour of lines and marks drawn in the text's grey.
TEXT_COLOR = "#888888"
# The edge of a mark filled in a light colour (bars in Okabe–Ito sky blue or orange, 2.3:1 on white): 3.54:1 on white,
# 4.20:1 on the dark theme's #27272a, over WCAG's 3:1 for graphics
MARK_EDGE = dict(color=TEXT_COLOR, width=1)
TRANSPARENT = "rgba(0,0,0,0)"
