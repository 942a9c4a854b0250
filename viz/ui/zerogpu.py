"""ZeroGPU's ``spaces.GPU``, on a ZeroGPU Space only (what it decorates, and why: ``model.serving.zerogpu``).

A ZeroGPU Space is told by ``SPACES_ZERO_GPU``, not by the ``spaces`` package being importable: off such a Space (a
paid CPU Space, your own machine with the package installed) the package is never imported and the app is the one
without it, batching included. On one, ``spaces`` must be imported before anything touches CUDA (it raises otherwise;
it makes torch say there is a GPU) and it imports gradio: hence here, and ``app.load_translator`` calls ``lent_gpu``
before the model loads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from model.serving.zerogpu import ENV, on_zerogpu


def lent_gpu(environ: Mapping[str, str] = os.environ) -> Callable | None:
    """``spaces.GPU`` on a ZeroGPU Space (``spaces`` imported now, if it was not), else None. On one without the
    package (it is preinstalled there): one line on stderr, and None (everything then runs on the CPU)."""
    if not on_zerogpu(environ):
        return None
    try:
        import spaces
    except ImportError as exc:
        print(f"{ENV} is set but the spaces package cannot be imported ({exc}): everything runs on the CPU",
              file=sys.stderr)
        return None
    return spaces.GPU
