"""ZeroGPU (a free Hugging Face Space): the batch-sized work on a lent GPU slice, everything else where it runs anyway.

On a ZeroGPU Space (``SPACES_ZERO_GPU`` true) a GPU exists only inside a call of a function decorated with
``spaces.GPU``: the call runs in a process forked from the app's (its arguments and answer pickled across; tensors the
app put on ``cuda`` at start-up are restored there on the GPU), and it is paid for from the visitor's daily quota:
ZeroGPU refuses it when the quota left is under the ``duration`` it asks for. Attaching a slice costs more than one
sentence's work (70–300 ms on the CPU, decoded with the classroom's other requests in the model process), so only the
work over the 200-sentence sample is decorated:

    LentGPU.scores_on_device   the head ablation's sample: greedy BLEU/chrF with every head on and with the chosen
                               heads off, on the GPU in float16 (6.7 s on the CPU, both scores; 3.4 s, one)

When ZeroGPU refuses the call (the quota is used up, the duration is not allowed, no slice is free) or the call fails,
the same work runs on the CPU and the answer says so in one line; nothing else changes. Measured CPU times of every
candidate, and why the rest stays on the CPU: model/serving/README.md, "On a ZeroGPU Space".
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping

import numpy as np
import torch

from model.network.inference import Translator
from model.probes.ablation import Progress, Sample, SampleScore, load_sample, sample_scores, score_sample

ENV = "SPACES_ZERO_GPU"
# What a decorated call asks ZeroGPU for, in seconds: the sample's two scores take 6.7 s on two CPU cores and well
# under that on a slice (bench/RESULTS.md, "ZeroGPU"); a cold slice adds its process's start (fork, CUDA, the weights
# restored) of a few seconds. A visitor's call is refused once the quota left is under this: 120 s a day unsigned.
SAMPLE_GPU_S = 20
LOG = logging.getLogger(__name__)

# ZeroGPU's refusals (``spaces`` 0.51: a gradio.Error, its title and message) -> what the visitor is told, first match
REFUSALS = (
    ("No GPU was available", "no GPU was free"),  # a queue timeout is titled "quota exceeded" too
    ("quota", "the GPU quota is used up"),
    ("credits", "the GPU quota is used up"),
    ("illegal duration", "this needs more GPU time than a visitor may ask for"),
    ("queue", "no GPU was free"),
    ("client error", "no GPU was free"),
)


def on_zerogpu(environ: Mapping[str, str] = os.environ) -> bool:
    """A ZeroGPU Space: ``SPACES_ZERO_GPU`` read as the ``spaces`` package reads it ("1", "t" or "true", any case)."""
    value = environ.get(ENV)
    return value is not None and value.lower() in ("1", "t", "true")


def refusal(exc: BaseException) -> str:
    """Why a decorated call gave no answer, in a few words, from ZeroGPU's error (its title, then its message)."""
    said = f"{getattr(exc, 'title', '')} {exc}".lower()
    return next((reason for needle, reason in REFUSALS if needle.lower() in said), "the GPU run failed")


def device_copy(translator: Translator) -> Translator:
    """The model decorated calls use: on ``cuda`` in float16 where torch says there is a GPU (on ZeroGPU the app's
    process holds it, and ``spaces`` restores it on the lent GPU in each call's process), else ``translator``."""
    return Translator(translator.folder, device="cuda") if torch.cuda.is_available() else translator


class LentGPU:
    """The head ablation's sample, scored in a call of ``gpu`` (``spaces.GPU``) on ``device_model``, or on
    ``translator`` (the CPU's) when that call gives no answer. Build it before the app launches: ZeroGPU packs the
    tensors on ``cuda`` then, and reports the decorated functions."""

    def __init__(self, translator: Translator, gpu: Callable, sample: Sample | None = None,
                 device_model: Translator | None = None):
        self.translator = translator
        self.device_model = device_copy(translator) if device_model is None else device_model
        self.sample = load_sample() if sample is None else sample
        self._baseline: SampleScore | None = None  # in the process that runs scores_on_device (no lock: see there)
        self.on_device = gpu(duration=SAMPLE_GPU_S)(self.scores_on_device)

    def scores_on_device(self, mask: np.ndarray | None) -> tuple[SampleScore, SampleScore, str]:
        """The decorated function (in ZeroGPU's process forked for the call): the sample's score with every head on
        (kept for the next call that process runs) and with ``mask``'s heads off, on ``device_model``; its device.
        No lock and no shared cache: a lock another thread held at the fork would stay held in the fork."""
        model = self.device_model
        if self._baseline is None:
            self._baseline = score_sample(model, self.sample)
        after = self._baseline if mask is None else score_sample(model, self.sample, mask)
        return self._baseline, after, model.device_label

    def scores(self, mask: np.ndarray | None, progress: Progress | None = None
               ) -> tuple[SampleScore, SampleScore, str]:
        """``model.probes.ablation.Scores``: the sample's scores from a decorated call, or from the CPU when ZeroGPU
        refuses it or it fails; and one line saying where they ran and how long that took."""
        n = len(self.sample.sources)
        if progress is not None:
            progress(0.0, f"the sample's {n} sentences on a lent GPU")
        start = time.perf_counter()
        try:
            before, after, device = self.on_device(mask)
        except Exception as exc:  # ZeroGPU's refusals are gradio.Errors, a failed call's too: the CPU answers instead
            reason = refusal(exc)
            LOG.warning("ZeroGPU: %s (%s: %s); the sample runs on the CPU", reason, type(exc).__name__,
                        " ".join(str(exc).split())[:200])
        else:
            seconds = time.perf_counter() - start
            if device.startswith("GPU"):
                return before, after, f"The sample ran on a lent {device} in {seconds:.1f} s."
            return before, after, f"No GPU is here; this ran on the {device} in {seconds:.1f} s."
        start = time.perf_counter()
        before, after, _ = sample_scores(self.translator, self.sample, mask, progress)
        seconds = time.perf_counter() - start
        return before, after, f"{reason[0].upper()}{reason[1:]}; this ran on the CPU in {seconds:.1f} s."
