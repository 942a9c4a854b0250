"""On ZeroGPU: the package's check that CUDA was not initialised first, and its start-up report at launch."""

import sys

from ..config import ZERO_GPU
from . import decorator

startup: dict = {}  # at launch: the decorated functions ZeroGPU was told about

if ZERO_GPU:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("CUDA has been initialized before importing the `spaces` package. "
                           "Try importing `spaces` before any other CUDA-related package.")

    import gradio as gr

    _launch = gr.Blocks.launch

    def launch(*args, **kwargs):
        gr.Blocks.launch = _launch  # once, as spaces.zero.gradio.one_launch
        if not decorator.decorated_cache:
            raise RuntimeError("No @spaces.GPU function detected during startup")
        startup["decorated"] = sorted({f.__name__ for f in decorator.decorated_cache.values()})
        return _launch(*args, **kwargs)

    gr.Blocks.launch = launch
