"""Checkpoint folders: ``config.json`` + ``model.safetensors`` (+ ``tokenizer.model``). Nothing is unpickled.

Every fault (missing file, corrupt file, weights that do not fit the config) is one ``CheckpointError``
whose message names the file and the fault in one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from model.config import TransformerConfig
from model.transformer import EncoderDecoder

CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE = "config.json", "model.safetensors", "tokenizer.model"


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used; the message names the file and the fault."""


def atomic_save_tensors(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str] | None = None) -> None:
    tmp = path.with_name(path.name + ".tmp")
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp), metadata=metadata)
    os.replace(tmp, path)


def atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def save_model(model: EncoderDecoder, folder: str | Path, dtype: torch.dtype = torch.float32) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / CONFIG_FILE, model.cfg.to_json() + "\n")
    tensors = {k: v.to(dtype) for k, v in model.state_dict().items()}
    atomic_save_tensors(tensors, folder / WEIGHTS_FILE, metadata={"format": "pt"})


def load_config(folder: str | Path) -> TransformerConfig:
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: config file not found")
    try:
        return TransformerConfig.load(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from None
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: invalid config ({exc})") from None


def read_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: weights file not found")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: not a readable safetensors file ({exc})") from None


def load_state_into(model: EncoderDecoder, tensors: dict[str, torch.Tensor], path: Path) -> None:
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing (e.g. {missing[0]})")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected (e.g. {unexpected[0]})")
        raise CheckpointError(f"{path}: weights do not match the config: {', '.join(parts)}")
    for name, tensor in tensors.items():
        if tensor.shape != expected[name].shape:
            raise CheckpointError(
                f"{path}: weights do not match the config: {name} has shape {tuple(tensor.shape)}, "
                f"expected {tuple(expected[name].shape)}"
            )
        if not torch.is_floating_point(tensor) or not torch.isfinite(tensor).all():
            raise CheckpointError(f"{path}: {name} holds non-finite or non-float values")
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in tensors.items()})


def load_model(
    folder: str | Path, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
) -> EncoderDecoder:
    """Build the model from ``folder/config.json`` and fill it from ``folder/model.safetensors``; eval mode."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: checkpoint folder not found")
    cfg = load_config(folder)
    model = EncoderDecoder(cfg)
    path = folder / WEIGHTS_FILE
    load_state_into(model, read_tensors(path), path)
    return model.to(device=device, dtype=dtype).eval()
