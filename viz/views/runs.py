"""The model runs the presenters ask for, over the one shared model (its forward passes keep no state on it).

``gpu`` wraps every run (the app passes ``spaces.GPU`` on ZeroGPU hardware, where the GPU exists only
inside such a call); then the footnote-4 demo computes on the CPU, elsewhere where the model runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from model.inference import AttentionResult, Translator


class Runs:
    def __init__(self, translator: Translator, gpu: Callable | None = None):
        self.translator, self.cfg = translator, translator.cfg
        wrap = gpu or (lambda fn: fn)

        @wrap
        def attention(text: str, target: str | None = None, scale: float | None = None) -> AttentionResult:
            return translator.attention(text, target=target or None, scale=scale)

        @wrap
        def translate(text: str, beam: int) -> str:
            return translator.translate(text, beam=beam)

        self.attention, self.translate = attention, translate
        self.trained = functools.lru_cache(maxsize=64)(attention)  # the model as trained, per sentence
        self.toy_device = "cpu" if gpu else translator.device
