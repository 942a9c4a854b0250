"""A stand-in for the ``spaces`` package (PyPI, 0.51.3) as it behaves on a ZeroGPU Space, where the tests can imitate
it; put ``tests/helpers/standin`` first on the path (and ``SPACES_ZERO_GPU=true``) and ``import spaces`` finds it.

- ``GPU`` (``spaces.zero.decorator``): off ZeroGPU the function itself; on it the function is recorded in
  ``decorated_cache``, and each call runs in a process forked for it, its arguments and answer pickled across, or is
  refused as ZeroGPU refuses one (``decorator.refuse``), with the package's own titles and messages;
- at launch (``gr.Blocks.launch``, once): an app with no decorated function is stopped, as ZeroGPU's supervisor
  stops it ("No @spaces.GPU function detected during startup");
- imported after CUDA was initialised, it raises as the package does.

What it cannot imitate: a GPU (there is none here), and the fake ``cuda`` tensors the package makes in the app's
process; quotas and their accounting.
"""

import sys

# The package's own guard: gradio tries `import spaces` while it is itself being imported
if (gr := sys.modules.get("gradio")) is not None and not hasattr(gr, "Blocks"):
    raise ImportError("gradio is being imported")

from .zero.decorator import GPU  # noqa: E402

__all__ = ["GPU"]
