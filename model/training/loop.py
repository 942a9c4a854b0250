"""The library half of training (§5.3–5.4): schedule, precision, loss, validation and the resumable state.

``python -m model.train`` drives these; ``model.evaluate`` reuses ``batch_loss``. A run folder holds
``config.json``, ``tokenizer.model``, ``last/`` (``model.safetensors``, ``optimizer.safetensors`` with the RNG
state, ``trainer.json``), ``epochs/epoch_NNN.safetensors``, ``best/`` and ``log.json``. Nothing is pickled.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path

import sacrebleu
import torch
import torch.nn.functional as F

from model.network.checkpoint import (
    CheckpointError,
    atomic_save_tensors,
    atomic_write_text,
    load_state_into,
    read_tensors,
)
from model.network.decode import greedy_decode
from model.network.tokenizer import Tokenizer
from model.network.transformer import EncoderDecoder
from model.training.data import collate, make_batches

PRECISIONS = ("auto", "fp32", "bf16")
TRAINER_FILE = "trainer.json"


def learning_rate(step: int, d_model: int, warmup: int) -> float:
    """§5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)."""
    step = max(step, 1)
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def scheduled_lr(
    step: int, d_model: int, warmup: int, lr_scale: float = 1.0, anneal: tuple[int, int] | None = None
) -> float:
    """The paper's schedule times ``lr_scale``, then (``anneal`` = (start, end), not in the paper) a linear
    cool-down from step start to 0 at step end."""
    lr = lr_scale * learning_rate(step, d_model, warmup)
    if anneal:
        start, end = anneal
        lr *= min(1.0, max(0.0, (end - step) / max(end - start, 1)))
    return lr


def native_bf16(device: torch.device, cpuinfo: str | None = None) -> bool:
    """Whether ``device`` computes bfloat16 natively: CUDA, or a CPU whose flags (``cpuinfo``, default the
    text of /proc/cpuinfo) include AMX or AVX-512 BF16 (ARM: bf16).

    Elsewhere torch emulates it: a bf16 matmul ran at ~1 GFLOPS against ~150 in float32 on an AMD EPYC
    without those instructions.
    """
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    lines = (line.split(":", 1) for line in cpuinfo.splitlines())
    flags = {flag for key, *rest in lines if key.strip() in ("flags", "Features") for flag in "".join(rest).split()}
    return bool(flags & {"amx_bf16", "avx512_bf16", "bf16"})


def resolve_precision(precision: str, device: torch.device, cpuinfo: str | None = None) -> str:
    """"auto" -> "bf16" where ``native_bf16(device, cpuinfo)``, else "fp32"; "fp32"/"bf16" stay as asked."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "auto":
        return "bf16" if native_bf16(device, cpuinfo) else "fp32"
    return precision


def autocast(device: torch.device, precision: str):
    """bf16 autocast, or nothing for fp32."""
    return torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()


def batch_loss(
    model: EncoderDecoder, batch, device: torch.device, precision: str, smoothing: float
) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy (with §5.4 label smoothing ``smoothing``) of one collated batch, and its
    count of target tokens (EOS included, padding not)."""
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    with autocast(device, precision):
        logits = model(src, tgt_in)  # (B, T, vocab)
    n_tokens = int((tgt_out != model.cfg.pad_id).sum())
    loss = F.cross_entropy(
        logits.float().view(-1, logits.size(-1)),  # (B*T, vocab)
        tgt_out.view(-1),
        ignore_index=model.cfg.pad_id,
        label_smoothing=smoothing,
        reduction="sum",
    )
    return loss, n_tokens


@torch.no_grad()
def validate(
    model: EncoderDecoder,
    pairs: list[tuple[list[int], list[int]]],
    refs: list[str],
    tok: Tokenizer,
    device: torch.device,
    precision: str,
    max_tokens: int,
) -> tuple[float, float]:
    """Validation loss per token (no smoothing) and cased sacreBLEU of greedy decoding."""
    model.eval()
    cfg = model.cfg
    total, count = 0.0, 0
    for idx in make_batches([(len(s), len(t)) for s, t in pairs], max_tokens, seed=0):
        batch = collate([pairs[i] for i in idx], cfg.pad_id, cfg.bos_id)
        loss, n = batch_loss(model, batch, device, precision, 0.0)
        total, count = total + loss.item(), count + n
    hyps = [""] * len(pairs)
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
    for start in range(0, len(order), 128):
        idx = order[start : start + 128]
        src, _, _ = collate([pairs[i] for i in idx], cfg.pad_id, cfg.bos_id)
        with autocast(device, precision):
            outs = greedy_decode(model, src.to(device))
        for i, ids in zip(idx, outs):
            hyps[i] = tok.decode(ids)
    model.train()
    return total / max(count, 1), sacrebleu.corpus_bleu(hyps, [refs]).score


def optimizer_tensors(opt: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    out = {}
    for i, st in opt.state_dict()["state"].items():
        for key, value in st.items():
            out[f"{i}.{key}"] = value if torch.is_tensor(value) else torch.tensor(value)
    return out


def restore_optimizer(opt: torch.optim.Optimizer, tensors: dict[str, torch.Tensor]) -> None:
    sd = opt.state_dict()
    state: dict[int, dict[str, torch.Tensor]] = {}
    for name, value in tensors.items():
        i, key = name.split(".", 1)
        state.setdefault(int(i), {})[key] = value
    sd["state"] = state
    opt.load_state_dict(sd)


def save_training_state(out: Path, model: EncoderDecoder, opt: torch.optim.Optimizer, trainer: dict) -> None:
    """``out/last``: weights, optimizer moments with the RNG state, and ``trainer`` (step, epoch, batch, log…)."""
    last = out / "last"
    last.mkdir(parents=True, exist_ok=True)
    atomic_save_tensors(model.state_dict(), last / "model.safetensors")
    rng = {"rng.cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["rng.cuda"] = torch.cuda.get_rng_state()
    atomic_save_tensors({**optimizer_tensors(opt), **rng}, last / "optimizer.safetensors")
    atomic_write_text(last / TRAINER_FILE, json.dumps(trainer, indent=2) + "\n")


def read_trainer(out: Path) -> dict:
    """``out/last/trainer.json``, or a one-line ``CheckpointError`` saying what is wrong with it."""
    path = out / "last" / TRAINER_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: nothing to resume; start the run without --resume")
    try:
        trainer = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc}); resume from a copy or start again") from None
    if not isinstance(trainer, dict) or not {"step", "epoch", "batch", "log", "args"} <= set(trainer):
        raise CheckpointError(f"{path}: not a trainer state (step, epoch, batch, log, args); start again")
    return trainer


def load_training_state(out: Path, model: EncoderDecoder, opt: torch.optim.Optimizer, device: torch.device) -> None:
    """Restore what ``save_training_state`` wrote: weights, optimizer, RNG (exact resume)."""
    path = out / "last" / "model.safetensors"
    load_state_into(model, read_tensors(path), path)
    path = out / "last" / "optimizer.safetensors"
    tensors = read_tensors(path)
    if "rng.cpu" not in tensors:
        raise CheckpointError(f"{path}: no rng.cpu tensor, so not a training state; start the run again")
    torch.set_rng_state(tensors.pop("rng.cpu"))
    cuda_rng = tensors.pop("rng.cuda", None)
    if cuda_rng is not None and device.type == "cuda":
        torch.cuda.set_rng_state(cuda_rng)
    restore_optimizer(opt, {k: v.to(device) if not k.endswith(".step") else v for k, v in tensors.items()})
