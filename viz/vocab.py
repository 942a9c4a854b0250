"""The words and constants that the app, the figures, the benchmark and the tests share, in one place.

Imports nothing (no torch, no gradio, no plotly), so any module may use it, and it is cheap to import
before gradio (the offline settings must be in the environment before gradio is imported).

Kinds of attention: the three attention sub-layers of §3.1, named as ``model.inference.AttentionResult``
names its arrays (``tests/test_views.py`` checks that ``KINDS`` is the model's). For each kind, its rows
(queries) and columns (keys) come from:

    encoder_self   source tokens       -> source tokens
    decoder_self   decoder positions   -> decoder positions (masked: row i sees columns <= i)
    cross          decoder positions   -> source tokens (K and V from the encoder output)
"""

from __future__ import annotations

import os

KINDS = ("encoder_self", "decoder_self", "cross")
KIND_LABELS = {
    "encoder_self": "Encoder self-attention",
    "decoder_self": "Decoder self-attention (masked)",
    "cross": "Encoder–decoder attention",
}
AXIS_LABELS = {  # (rows, columns) of each kind's maps: (query side, key side)
    "encoder_self": ("source token (query)", "source token (key)"),
    "decoder_self": ("decoder position: input token (query)", "decoder position (key)"),
    "cross": ("decoder position: input token (query)", "source token (key)"),
}

# Figures: transparent backgrounds and mid-grey text read on light and dark pages alike.
TEXT_COLOR = "#888888"
TRANSPARENT = "rgba(0,0,0,0)"

# Offline and quiet: nothing leaves loopback (gradio_client also needs analytics_enabled=False).
OFFLINE_ENV = {"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def set_offline_env() -> None:
    """Put ``OFFLINE_ENV`` into ``os.environ`` where a variable is not set already; call before importing gradio."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
