"""Figures as they travel: a gr.Plot payload's plotly JSON, and its arrays back as numpy.

plotly 7 writes numpy arrays as base64 typed arrays, ``{"dtype": "f4", "bdata": "...", "shape": "6, 8"}`` (little
endian; ``shape`` only for 2-D and more); Python lists stay plain JSON lists. ``array`` reads either.
"""

from __future__ import annotations

import base64
import json

import numpy as np


def array(value) -> np.ndarray:
    """A plotly array as numpy: a typed array (``dtype``, ``bdata``, maybe ``shape``) or a plain list."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]).newbyteorder("<"))
        shape = value.get("shape")
        if shape is not None:
            arr = arr.reshape([int(n) for n in shape.split(",")] if isinstance(shape, str) else list(shape))
        return arr
    return np.asarray(value)


def figure(payload: dict) -> dict:
    """A gr.Plot payload (an endpoint's output) -> the plotly figure dict."""
    assert isinstance(payload, dict) and payload["type"] == "plotly", payload
    return json.loads(payload["plot"])


def apply_changes(base, changes):
    """The page's applyChanges (assets/web/page.js), in Python: a copy of ``base`` with each change of
    ``viz.views.outputs.changes`` made (the views the page draws without a round trip: decoding steps, statistics)."""
    root = {"view": json.loads(json.dumps(base))}
    for path, *value in changes:
        *keys, last = ["view", *path]
        at = root
        for key in keys:
            at = at[key]
        if value:
            at[last] = value[0]
        else:
            del at[last]
    return root["view"]
