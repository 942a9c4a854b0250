"""Model folders: ``config.json`` + ``model.safetensors`` (+ ``tokenizer.model``). Nothing is unpickled.

Every fault (missing folder or file, corrupt file, implausible config values, weights or tokenizer that do not
fit the config, a config too small for the app's inputs: ``check_servable``) is one ``CheckpointError`` whose
message is one line: the file, the fault, what to do.
Config values and the weights' shapes are checked *before* anything is allocated.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from model.network.config import TransformerConfig
from model.network.params import parameter_breakdown, state_dict_shapes
from model.network.quantise import SCALE_SUFFIX, dequantise, without_scales
from model.network.tokenizer import Tokenizer
from model.network.transformer import EncoderDecoder
from model.terms import MAX_TOKENS

CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE = "config.json", "model.safetensors", "tokenizer.model"
# Parameters plus the positional table, as float32: 8 GiB. Far beyond any model here; a config asking for more
# is corrupt, and is refused before the allocator sees it.
MAX_FLOATS = 2**31
REEXPORT = "re-export the model with `python -m model.export`"


class CheckpointError(RuntimeError):
    """A model folder or file that cannot be used; the message is one line: file, fault, what to do."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def atomic_save_tensors(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str] | None = None) -> None:
    """Written whole or not at all; a file that holds these tensors and metadata already is left as it is (safetensors
    writes its metadata in no fixed order: the same tensors gave other bytes, and a shipped file a new hash)."""
    if _holds(path, tensors, metadata or {}):
        return
    tmp = path.with_name(path.name + ".tmp")
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp), metadata=metadata)
    os.replace(tmp, path)


def _holds(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> bool:
    if not path.is_file():
        return False
    try:
        with safe_open(str(path), "pt") as f:
            if (f.metadata() or {}) != metadata or set(f.keys()) != set(tensors):
                return False
            return all(torch.equal(f.get_tensor(k), v.detach().cpu()) for k, v in tensors.items())
    except Exception:  # (unreadable: written anew)
        return False


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
    """``folder/config.json``, checked: known keys, sane values, a model small enough to allocate."""
    path = Path(folder) / CONFIG_FILE
    _check_file(path, "config file", f"copy it from the training run or {REEXPORT}")
    try:
        cfg = TransformerConfig.load(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({_one_line(exc)}); restore the file or {REEXPORT}") from None
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: invalid config ({_one_line(exc)}); fix the value or {REEXPORT}") from None
    floats = parameter_breakdown(cfg)["total"] + cfg.max_len * cfg.d_model
    if floats > MAX_FLOATS:
        raise CheckpointError(
            f"{path}: the config describes {floats:.3g} floats of weights and positions (vocab_size={cfg.vocab_size}, "
            f"d_model={cfg.d_model}, n_layers={cfg.n_layers}, max_len={cfg.max_len}), more than the {MAX_FLOATS:.3g} "
            f"this loader accepts; fix the value or {REEXPORT}"
        )
    return cfg


def check_servable(cfg: TransformerConfig, folder: str | Path) -> None:
    """``cfg`` fits what the app asks of a model: positions for a sentence and its translation at the input limit
    (``MAX_TOKENS`` tokens each, EOS included). A smaller ``max_len`` would cut every sentence to it (``max_len: 2``
    served one-word translations); one ``CheckpointError``."""
    if cfg.max_len < MAX_TOKENS:
        raise CheckpointError(
            f"{Path(folder) / CONFIG_FILE}: max_len={cfg.max_len} is below the app's input limit of {MAX_TOKENS} "
            f"tokens (a sentence and its translation need that many positions); fix the value or {REEXPORT}"
        )


def check_shapes(cfg: TransformerConfig, shapes: dict[str, tuple[int, ...]], path: Path) -> None:
    """Weights named ``shapes`` (name -> shape) fit ``cfg``, else one ``CheckpointError``."""
    expected = state_dict_shapes(cfg)
    missing = sorted(set(expected) - set(shapes))
    unexpected = sorted(set(shapes) - set(expected))
    fix = "the config and the weights come from different models: re-export them together"
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing (e.g. {missing[0]})")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected (e.g. {unexpected[0]})")
        raise CheckpointError(f"{path}: weights do not match config.json: {', '.join(parts)}; {fix}")
    for name, shape in shapes.items():
        if tuple(shape) != expected[name]:
            raise CheckpointError(
                f"{path}: weights do not match config.json: {name} has shape {tuple(shape)}, "
                f"expected {expected[name]}; {fix}"
            )


def read_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes from a safetensors header, without reading the tensors (an 8-bit file's row scales,
    ``model.network.quantise``, left out: its shapes are the model's)."""
    path = Path(path)
    _check_file(path, "weights file", REEXPORT)
    try:
        with safe_open(str(path), framework="pt") as f:
            return without_scales({name: tuple(f.get_slice(name).get_shape()) for name in f.keys()})
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: not a readable safetensors file ({_one_line(exc)}); {REEXPORT}") from None


def read_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    path = Path(path)
    read_shapes(path)  # a missing or corrupt file fails here, with its one-line message
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: not a readable safetensors file ({_one_line(exc)}); {REEXPORT}") from None
    return dequantise(tensors) if any(name.endswith(SCALE_SUFFIX) for name in tensors) else tensors


def load_state_into(model: EncoderDecoder, tensors: dict[str, torch.Tensor], path: Path) -> None:
    check_shapes(model.cfg, {name: tuple(t.shape) for name, t in tensors.items()}, path)
    for name, tensor in tensors.items():
        if not torch.is_floating_point(tensor) or not torch.isfinite(tensor).all():
            raise CheckpointError(f"{path}: {name} holds non-finite or non-float values; {REEXPORT}")
    expected = model.state_dict()
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in tensors.items()})


def load_tokenizer(folder: str | Path, cfg: TransformerConfig) -> Tokenizer:
    """``folder/tokenizer.model``, checked against the config's vocabulary size and special ids."""
    path = Path(folder) / TOKENIZER_FILE
    fix = "copy tokenizer.model from the same training run"
    _check_file(path, "tokenizer file", fix)
    try:
        tokenizer = Tokenizer(path)
        tokenizer.check_matches(cfg)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{_one_line(exc)}; {fix}") from None
    return tokenizer


def _check_file(path: Path, what: str, fix: str) -> None:
    """``path`` is a regular file (a link to one is), else a CheckpointError that says what it is instead: "not found"
    only when nothing is there."""
    if path.is_file():
        return
    if path.exists():
        fault = f"{what} is not a regular file (a folder, a device or a pipe)"
    elif path.is_symlink():
        fault = f"{what} is a link to nothing ({os.readlink(path)})"
    else:
        fault = f"{what} not found"
    raise CheckpointError(f"{path}: {fault}; {fix}")


def _check_folder(folder: str | Path) -> Path:
    folder = Path(folder)
    if not folder.is_dir():
        fault = "not a folder" if folder.exists() else "model folder not found"
        raise CheckpointError(
            f"{folder}: {fault}; pass a folder written by `python -m model.export` "
            f"({CONFIG_FILE}, {WEIGHTS_FILE}, {TOKENIZER_FILE})"
        )
    return folder


def check_model_folder(folder: str | Path) -> TransformerConfig:
    """Everything ``Translator(folder)`` needs, checked without loading the weights (milliseconds).

    Raises ``CheckpointError`` (one line: the file, the fault, what to do); returns the config.
    """
    folder = _check_folder(folder)
    cfg = load_config(folder)
    check_shapes(cfg, read_shapes(folder / WEIGHTS_FILE), folder / WEIGHTS_FILE)
    load_tokenizer(folder, cfg)
    return cfg


def load_model(
    folder: str | Path, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
) -> EncoderDecoder:
    """Build the model from ``folder/config.json`` and fill it from ``folder/model.safetensors``; eval mode.

    The config and the weights' shapes are checked before the model is allocated.
    """
    folder = _check_folder(folder)
    cfg = load_config(folder)
    path = folder / WEIGHTS_FILE
    check_shapes(cfg, read_shapes(path), path)
    model = EncoderDecoder(cfg)
    load_state_into(model, read_tensors(path), path)
    return model.to(device=device, dtype=dtype).eval()


def transpose_matrices(model: torch.nn.Module) -> torch.nn.Module:
    """Store every matrix that multiplies activations (each ``nn.Linear``'s weight and the tied embedding, which
    is also the output layer) transposed, (in, out) row-major, behind an (out, in) view: same values, same
    shapes, so ``F.linear(x, W)`` computes ``x @ Wᵀ`` on a row-major matrix. On a CPU that is the fast path for
    decoding's products of one or a few rows (bench/RESULTS.md has the model rows before and after), with
    the same numbers to ~1e-6 (a different summation order). ``Translator`` does this on the CPU; a GPU keeps the
    usual layout."""
    moved: dict[int, tuple] = {}  # id -> (old, new): a matrix shared by two modules stays shared (old kept alive)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
                w = module.weight
                if id(w) not in moved:
                    moved[id(w)] = (w, torch.nn.Parameter(w.t().contiguous().t(), requires_grad=w.requires_grad))
                module.weight = moved[id(w)][1]
    return model
