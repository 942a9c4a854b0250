"""Figure specs (plain dicts) to plotly JSON, without building a `plotly.graph_objects.Figure`.

`go.Figure` validates every property on construction; for the 48-tile overview (~2,000 axis labels,
48 annotations) that costs more than the model's forward pass. The app builds the same dicts the
figure functions validate (`overview_spec`, `detail_spec`) and serialises them here, in the encoding
`Figure.to_json()` uses:

- a numeric numpy array becomes a plotly.js typed array `{"dtype", "bdata", "shape"}` (base64 of the
  raw little-endian bytes; integers in the smallest type that holds them, as plotly.py does);
- an object array (hover text, customdata) becomes nested lists;
- numpy scalars become Python numbers.

`tests/test_viz_heatmaps.py` checks that this JSON decodes to exactly what `Figure.to_json()` gives.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import orjson

_SIGNED = (np.int8, np.int16, np.int32)  # plotly.js has no 64-bit integers
_UNSIGNED = (np.uint8, np.uint16, np.uint32)
_DTYPES = [np.dtype(t) for t in (*_SIGNED, *_UNSIGNED, np.float32, np.float64)]
_CODES = {d: f"{d.kind}{d.itemsize}" for d in _DTYPES}  # "u1", "f4", ...


def typed_array(arr: np.ndarray) -> dict | list:
    """One numpy array as a plotly.js typed-array spec, exactly as plotly.py encodes it (else a list)."""
    if arr.size and arr.dtype in (np.int64, np.uint64):  # the smallest type that holds the values
        lo, hi = int(arr.min()), int(arr.max())
        types = _SIGNED if arr.dtype == np.int64 else _UNSIGNED
        fits = [t for t in types if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max]
        if fits:
            arr = arr.astype(fits[0])
    if not arr.size or arr.dtype not in _CODES:  # object, text, empty: plain JSON
        return arr.tolist()
    raw = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    spec = {"dtype": _CODES[arr.dtype], "bdata": base64.b64encode(raw).decode("ascii")}
    if arr.ndim > 1:
        spec["shape"] = ", ".join(map(str, arr.shape))
    return spec


def _default(value):
    if isinstance(value, np.ndarray):
        return typed_array(value)
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot encode {type(value).__name__} in a plotly figure")


def plotly_json(spec: dict) -> str:
    """A figure spec `{"data": [...], "layout": {...}}` (numpy arrays allowed) as compact JSON."""
    return json.dumps(spec, default=_default, separators=(",", ":"), ensure_ascii=False)


def plotly_dict(spec: dict) -> dict:
    """The same as `plotly_json`, decoded again: plain JSON types only (through orjson: several times faster;
    a float NaN outside an array becomes None, as `Figure.to_json()` writes it)."""
    return orjson.loads(orjson.dumps(spec, default=_default, option=orjson.OPT_NON_STR_KEYS))
