"""8-bit weights: every matrix (a ``*.weight`` of two dimensions: the projections, the feed-forward layers and the
tied embedding) as int8 with one float32 scale per row, the rest (biases, layer norms) in float16; dequantised
to floats on load (``model.network.checkpoint.read_tensors`` does it for any file saved so).

Per row, symmetric: scale = max |w| / 127 of that output row, w ≈ round(w / scale) · scale, so each weight is
off by at most scale / 2 (half a step of its own row, not of the whole matrix). A float16 file of the lab's
siblings (15.6 MB) becomes ~7.9 MB; how close the attention stays is measured where such weights ship
(``model/training/LAB.md``).
"""

from __future__ import annotations

import torch

FORMAT = "int8 per row"  # safetensors metadata["quantised"] of such a file
SCALE_SUFFIX = ".row_scale"  # name + this: the float32 scales of matrix ``name``, one per row


def quantisable(name: str, tensor: torch.Tensor) -> bool:
    return tensor.dim() == 2 and name.endswith(".weight") and torch.is_floating_point(tensor)


def quantise(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Float tensors -> int8 matrices with their row scales (``name + SCALE_SUFFIX``), the rest float16."""
    out = {}
    for name, tensor in tensors.items():
        if not quantisable(name, tensor):
            out[name] = tensor.to(torch.float16)
            continue
        w = tensor.float()
        scale = w.abs().amax(dim=1) / 127  # (rows,)
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # an all-zero row (padding) stays zero
        out[name] = (w / scale[:, None]).round().clamp(-127, 127).to(torch.int8)
        out[name + SCALE_SUFFIX] = scale
    return out


def dequantise(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``quantise``'s output -> the original names, matrices as float32 (scales consumed), the rest as stored."""
    out = {}
    for name, tensor in tensors.items():
        if name.endswith(SCALE_SUFFIX):
            continue
        scale = tensors.get(name + SCALE_SUFFIX)
        # an int8 matrix without its scales stays int8, which loading refuses (never read as if scaled by 1)
        out[name] = tensor if scale is None else tensor.float() * scale.float()[:, None]
    return out


def without_scales(names: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """A quantised file's tensor shapes as the model's: the row scales left out."""
    return {name: shape for name, shape in names.items() if not name.endswith(SCALE_SUFFIX)}
