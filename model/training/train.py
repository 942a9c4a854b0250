"""Train the Transformer on Multi30k En->De: ``python -m model.train --data DIR --out DIR [--resume]``.

The paper's recipe scaled down: Adam (0.9, 0.98, 1e-9) with lr = d_model^-0.5 * min(step^-0.5,
step * warmup^-1.5) (§5.3), dropout 0.1 and label smoothing 0.1 (§5.4), token-based batches.
A checkpoint is written every ``--checkpoint-minutes`` and at every epoch end; ``--resume`` continues
exactly (model, optimizer, schedule, RNG, position in the epoch); SIGTERM or Ctrl-C stops at the next step
boundary with a checkpoint. The pieces live in ``model.training.loop``; this module is the command.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from tqdm import tqdm

from model.cli import command
from model.network.checkpoint import (
    TOKENIZER_FILE,
    atomic_save_tensors,
    atomic_write_text,
    load_config,
    load_tokenizer,
    save_model,
)
from model.network.config import ATTENTIONS, PRESETS, TransformerConfig
from model.network.tokenizer import Tokenizer, train_tokenizer
from model.network.transformer import EncoderDecoder, count_parameters
from model.probes.ablation import SAMPLE_DIR
from model.training.data import collate, encode_pairs, load_pairs, make_batches, read_lines, split_path
from model.training.loop import (
    PRECISIONS,
    batch_loss,
    load_training_state,
    read_trainer,
    resolve_precision,
    save_training_state,
    scheduled_lr,
    validate,
)
from model.training.recorder import Recorder

Pairs = list[tuple[list[int], list[int]]]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m model.train", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="folder with train/val .en/.de(.gz)")
    p.add_argument("--out", required=True, help="run folder (checkpoints, log.json)")
    p.add_argument("--preset", default="multi30k_small", choices=sorted(PRESETS))
    p.add_argument("--vocab-size", type=int, help="override the preset's vocabulary size")
    p.add_argument("--d-model", type=int, help="override the preset's d_model")
    p.add_argument("--d-ff", type=int, help="override the preset's d_ff")
    p.add_argument("--heads", type=int, help="override the preset's h (d_k = d_v = d_model / h)")
    p.add_argument("--no-scale", dest="scaled", action="store_false", default=None,
                   help="train without §3.2.1's 1/sqrt(d_k) (footnote 4's unscaled dot product)")
    p.add_argument("--scale", dest="scaled", action="store_true", help="train with 1/sqrt(d_k) (the default)")
    p.add_argument("--attention", choices=ATTENTIONS, help="score function: dot (§3.2.1, the default) or additive")
    p.add_argument("--tokenizer", type=Path,
                   help="use this SentencePiece model (e.g. the shipped one) instead of training one on the split")
    p.add_argument("--dropout", type=float, help="override the preset's P_drop")
    p.add_argument("--attn-dropout", type=float, help="dropout on attention weights (not in the paper; default 0)")
    p.add_argument("--relu-dropout", type=float, help="dropout on the FFN's ReLU output (not in the paper; default 0)")
    p.add_argument("--branch-init-gain", type=float, default=0.5,
                   help="scale the Xavier init of W^V, W^O and the FFN's W_2 (not in the paper, whose plain Xavier "
                        "init is 1; 0.5 avoids the encoder's rank collapse, see EncoderDecoder.scale_branch_init)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/last")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--max-steps", type=int, help="stop (with a checkpoint) after this many updates")
    p.add_argument("--max-tokens", type=int, default=2000, help="padded tokens per side per batch")
    p.add_argument("--warmup", type=int, default=2000)
    p.add_argument("--lr-scale", type=float, default=1.0,
                   help="multiply the paper's schedule d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)")
    p.add_argument("--anneal", nargs=2, type=int, metavar=("START", "END"),
                   help="cool-down (not in the paper): from step START the learning rate falls linearly to 0 "
                        "at step END, where training stops")
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--precision", choices=PRECISIONS, default="auto",
                   help="bf16 autocast or plain fp32; auto: bf16 where the device computes it natively (CUDA, or a "
                        "CPU with AMX / AVX-512 BF16), else fp32 (emulated bf16 is ~100x slower); the log records it")
    p.add_argument("--checkpoint-minutes", type=float, default=10.0)
    p.add_argument("--record-every", type=int, default=0, metavar="N",
                   help="every N steps record curves into log.json: losses, ‖∇W^Q‖, ‖∇W^K‖, attention entropy "
                        "and largest weight per kind and layer on --probe (model.training.recorder); 0: off")
    p.add_argument("--snapshots", action="store_true",
                   help="with --record-every: the attention time-lapse at log-spaced steps, in OUT/snapshots")
    p.add_argument("--probe", type=Path, default=SAMPLE_DIR / "val200",
                   help="sentence pairs PROBE.en / PROBE.de (or .gz) the recorder measures (default: the sample)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    return p.parse_args(argv)



def new_run(out: Path, args: argparse.Namespace, train_text: list[str]) -> tuple[TransformerConfig, Tokenizer, dict]:
    """A fresh run folder: the preset with the command line's overrides, a tokenizer of the training split."""
    overrides = {"vocab_size": args.vocab_size, "d_model": args.d_model, "d_ff": args.d_ff, "dropout": args.dropout,
                 "attn_dropout": args.attn_dropout, "relu_dropout": args.relu_dropout, "n_heads": args.heads,
                 "scaled": args.scaled, "attention": args.attention}
    cfg = replace(PRESETS[args.preset], **{k: v for k, v in overrides.items() if v is not None})
    out.mkdir(parents=True, exist_ok=True)
    if args.tokenizer:  # e.g. the shipped vocabulary, so that siblings differ in one thing only
        shutil.copyfile(args.tokenizer, out / TOKENIZER_FILE)
        tok = Tokenizer(out / TOKENIZER_FILE)
        cfg = replace(cfg, vocab_size=tok.vocab_size)
    else:
        tok = train_tokenizer(train_text, out / TOKENIZER_FILE, cfg.vocab_size)  # the training split only
    if tok.vocab_size != cfg.vocab_size:
        print(f"vocabulary: {tok.vocab_size} pieces (the text is too small for {cfg.vocab_size})", flush=True)
        cfg = replace(cfg, vocab_size=tok.vocab_size)
    tok.check_matches(cfg)
    cfg.save(out / "config.json")
    trainer = {"step": 0, "epoch": 0, "batch": 0, "elapsed_s": 0.0, "best_bleu": -1.0, "log": [],
               "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}}
    return cfg, tok, trainer


def resumed_run(out: Path) -> tuple[TransformerConfig, Tokenizer, dict]:
    """The config, tokenizer and trainer state of an existing run folder (its weights load later)."""
    trainer = read_trainer(out)
    cfg = load_config(out)
    return cfg, load_tokenizer(out, cfg), trainer


def device_name(device: torch.device) -> str:
    """The epoch log's device: "cpu", or "cuda: " and the card's name."""
    return device.type if device.type != "cuda" else f"cuda: {torch.cuda.get_device_name(device)}"


@dataclass
class Session:
    """One invocation of a run: what it trains, on what, and the clocks and signals it watches."""

    args: argparse.Namespace
    out: Path
    device: torch.device
    model: EncoderDecoder
    opt: torch.optim.Optimizer
    tok: Tokenizer
    trainer: dict  # saved as last/trainer.json: step, epoch, batch, elapsed_s, best_bleu, log, args
    train_pairs: Pairs
    val_pairs: Pairs
    val_refs: list[str]
    started: float = field(default_factory=time.monotonic)
    last_save: float = field(default_factory=time.monotonic)
    stop_signals: list[int] = field(default_factory=list)
    recorder: Recorder | None = None

    def __post_init__(self) -> None:
        self.elapsed0 = self.trainer["elapsed_s"]

    @property
    def last_step(self) -> float:
        """--max-steps or the end of --anneal, whichever comes first."""
        args = self.args
        return min(args.max_steps or math.inf, args.anneal[1] if args.anneal else math.inf)

    def elapsed(self) -> float:
        return self.elapsed0 + time.monotonic() - self.started

    def lr(self, step: int) -> float:
        args = self.args
        return scheduled_lr(step, self.model.cfg.d_model, args.warmup, args.lr_scale, args.anneal)

    def checkpoint(self) -> None:
        save_training_state(self.out, self.model, self.opt, self.trainer)
        if "curves" in self.trainer:  # the recorder's curves so far, beside log.json
            atomic_write_text(self.out / "curves.json", json.dumps(self.trainer["curves"]) + "\n")
        self.last_save = time.monotonic()


def train_step(s: Session, batch) -> tuple[float, int, float]:
    """One Adam update on one batch -> (summed loss, target tokens, learning rate used)."""
    loss, n_tokens = batch_loss(s.model, batch, s.device, s.args.precision, s.args.label_smoothing)
    lr = s.lr(s.trainer["step"] + 1)
    for group in s.opt.param_groups:
        group["lr"] = lr
    s.opt.zero_grad(set_to_none=True)
    (loss / n_tokens).backward()
    if s.recorder is not None:
        s.recorder.after_backward()
    s.opt.step()
    return loss.item(), n_tokens, lr


def train_epoch(s: Session) -> tuple[float, int, str | None]:
    """The rest of the current epoch -> (summed loss, tokens, why it stopped early or None)."""
    cfg, trainer, epoch = s.model.cfg, s.trainer, s.trainer["epoch"]
    lengths = [(len(src), len(tgt)) for src, tgt in s.train_pairs]
    batches = make_batches(lengths, s.args.max_tokens, seed=s.args.seed * 100_003 + epoch)
    bar = tqdm(total=len(batches), initial=trainer["batch"], desc=f"epoch {epoch + 1}",
               mininterval=1 if sys.stderr.isatty() else 30, file=sys.stderr)
    loss_sum, tok_sum = 0.0, 0
    for bi in range(trainer["batch"], len(batches)):
        batch = collate([s.train_pairs[i] for i in batches[bi]], cfg.pad_id, cfg.bos_id)
        loss, n_tokens, lr = train_step(s, batch)
        trainer["step"] += 1
        trainer["batch"] = bi + 1
        trainer["elapsed_s"] = s.elapsed()
        loss_sum, tok_sum = loss_sum + loss, tok_sum + n_tokens
        if s.recorder is not None:
            s.recorder.on_step(trainer["step"], loss, n_tokens, trainer)
        bar.update(1)
        bar.set_postfix(loss=f"{loss / n_tokens:.3f}", lr=f"{lr:.2e}", refresh=False)
        stop = bool(s.stop_signals) or trainer["step"] >= s.last_step
        if stop or time.monotonic() - s.last_save > 60 * s.args.checkpoint_minutes:
            s.checkpoint()
        if stop and (s.stop_signals or bi < len(batches) - 1):  # else: validate and log the epoch first
            bar.close()
            return loss_sum, tok_sum, "signal" if s.stop_signals else (
                "--max-steps" if trainer["step"] == s.args.max_steps else "--anneal")
    bar.close()
    return loss_sum, tok_sum, None


def end_epoch(s: Session, loss_sum: float, tok_sum: int) -> None:
    """Validate, log, and write the epoch's checkpoint, ``best/`` when BLEU improved, and ``log.json``."""
    args, cfg, trainer, out = s.args, s.model.cfg, s.trainer, s.out
    epoch = trainer["epoch"] + 1
    val_loss, val_bleu = validate(s.model, s.val_pairs, s.val_refs, s.tok, s.device, args.precision, args.max_tokens)
    record = {
        "epoch": epoch,
        "step": trainer["step"],
        "train_loss": loss_sum / max(tok_sum, 1),
        "val_loss": val_loss,
        "val_ppl": math.exp(min(val_loss, 50)),
        "val_bleu": val_bleu,
        "lr": s.lr(trainer["step"]),
        "lr_scale": args.lr_scale,
        "dropout": cfg.dropout,
        "precision": args.precision,
        "device": device_name(s.device),
        "elapsed_s": round(s.elapsed(), 1),
    }
    trainer["log"].append(record)
    trainer["epoch"], trainer["batch"] = epoch, 0
    trainer["elapsed_s"] = record["elapsed_s"]
    print(json.dumps(record), flush=True)
    (out / "epochs").mkdir(exist_ok=True)
    atomic_save_tensors(s.model.state_dict(), out / "epochs" / f"epoch_{epoch:03d}.safetensors")
    if val_bleu > trainer["best_bleu"]:
        trainer["best_bleu"] = val_bleu
        save_model(s.model, out / "best")
        (out / "best" / TOKENIZER_FILE).write_bytes((out / TOKENIZER_FILE).read_bytes())
    s.checkpoint()
    atomic_write_text(out / "log.json", json.dumps(trainer["log"], indent=2) + "\n")


def start_session(args: argparse.Namespace) -> Session:
    """Data, run folder (new or resumed), model and optimizer, ready to train."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args.precision = resolve_precision(args.precision, device)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    src_train, tgt_train = load_pairs(args.data, "train")
    src_val, tgt_val = load_pairs(args.data, "val")
    cfg, tok, trainer = resumed_run(out) if args.resume else new_run(out, args, src_train + tgt_train)
    torch.manual_seed(args.seed)
    model = EncoderDecoder(cfg).to(device)
    if not args.resume and args.branch_init_gain != 1.0:
        model.scale_branch_init(args.branch_init_gain)
    opt = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)  # §5.3
    if args.resume:
        load_training_state(out, model, opt, device)
        print(f"resumed at epoch {trainer['epoch']}, batch {trainer['batch']}, step {trainer['step']}", flush=True)
    print(f"{count_parameters(model):,} parameters on {device} ({args.precision})", flush=True)
    val_pairs = encode_pairs(tok, src_val, tgt_val, cfg.max_len - 1)
    s = Session(args, out, device, model, opt, tok, trainer,
                train_pairs=encode_pairs(tok, src_train, tgt_train, cfg.max_len - 1),
                val_pairs=val_pairs, val_refs=tgt_val[: len(val_pairs)])
    if args.record_every:
        probe = list(zip(*(read_lines(split_path(args.probe.parent, args.probe.name, lang)) for lang in ("en", "de"))))
        # The time-lapse ends where the schedule ends (not at a --max-steps pause).
        last = args.anneal[1] if args.anneal else args.epochs * len(
            make_batches([(len(a), len(b)) for a, b in s.train_pairs], args.max_tokens, seed=0))
        s.recorder = Recorder(model, tok, device, args.record_every, probe,
                              out / "snapshots" if args.snapshots else None, int(last))
        if trainer["step"] == 0 and args.snapshots:
            s.recorder.snapshot(0)
    return s


@command
def main(argv: list[str] | None = None) -> int:
    s = start_session(parse_args(argv))
    s.model.train()
    for sig in (signal.SIGTERM, signal.SIGINT):  # finish the current step, write a checkpoint, exit
        signal.signal(sig, lambda signum, _frame: s.stop_signals.append(signum))
    while s.trainer["epoch"] < s.args.epochs:
        loss_sum, tok_sum, stopped = train_epoch(s)
        if stopped:
            print(f"stopped at step {s.trainer['step']} ({stopped}); resume with --resume", flush=True)
            return 0
        end_epoch(s, loss_sum, tok_sum)
        if s.trainer["step"] >= s.last_step:
            print(f"stopped at step {s.trainer['step']}, the end of epoch {s.trainer['epoch']}", flush=True)
            return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
