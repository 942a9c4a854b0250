"""Train the Transformer on Multi30k En->De: ``python -m model.train --data DIR --out DIR [--resume]``.

The paper's recipe scaled down: Adam (0.9, 0.98, 1e-9) with lr = d_model^-0.5 * min(step^-0.5,
step * warmup^-1.5) (§5.3), dropout 0.1 and label smoothing 0.1 (§5.4), token-based batches.
A checkpoint is written every ``--checkpoint-minutes`` and at every epoch end; ``--resume`` continues
exactly (model, optimizer, schedule, RNG, position in the epoch). Nothing is pickled: tensors go to
safetensors, the rest to JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import sacrebleu
import torch
import torch.nn.functional as F
from tqdm import tqdm

from model.checkpoint import (
    TOKENIZER_FILE,
    atomic_save_tensors,
    atomic_write_text,
    load_state_into,
    read_tensors,
    save_model,
)
from model.config import PRESETS, TransformerConfig
from model.data import collate, encode_pairs, load_pairs, make_batches
from model.decode import greedy_decode
from model.tokenizer import Tokenizer, train_tokenizer
from model.transformer import EncoderDecoder, count_parameters


def learning_rate(step: int, d_model: int, warmup: int) -> float:
    step = max(step, 1)
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def scheduled_lr(step: int, d_model: int, args: argparse.Namespace) -> float:
    """The paper's schedule times ``--lr-scale``, then the optional linear ``--anneal`` to zero."""
    lr = args.lr_scale * learning_rate(step, d_model, args.warmup)
    if args.anneal:
        start, end = args.anneal
        lr *= min(1.0, max(0.0, (end - step) / max(end - start, 1)))
    return lr


def autocast(device: torch.device, precision: str):
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()


def batch_loss(model: EncoderDecoder, batch, device, precision: str, smoothing: float) -> tuple[torch.Tensor, int]:
    src, tgt_in, tgt_out = (t.to(device) for t in batch)
    with autocast(device, precision):
        logits = model(src, tgt_in)
    n_tokens = int((tgt_out != model.cfg.pad_id).sum())
    loss = F.cross_entropy(
        logits.float().view(-1, logits.size(-1)),
        tgt_out.view(-1),
        ignore_index=model.cfg.pad_id,
        label_smoothing=smoothing,
        reduction="sum",
    )
    return loss, n_tokens


@torch.no_grad()
def validate(model, pairs, refs, tok, device, precision, max_tokens) -> tuple[float, float]:
    """Validation loss per token (no smoothing) and cased sacreBLEU of greedy decoding."""
    model.eval()
    total, count = 0.0, 0
    batches = make_batches([(len(s), len(t)) for s, t in pairs], max_tokens, seed=0)
    for idx in batches:
        loss, n = batch_loss(
            model, collate([pairs[i] for i in idx], model.cfg.pad_id, model.cfg.bos_id), device, precision, 0.0
        )
        total, count = total + loss.item(), count + n
    hyps = [""] * len(pairs)
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
    for start in range(0, len(order), 128):
        idx = order[start : start + 128]
        src, _, _ = collate([pairs[i] for i in idx], model.cfg.pad_id, model.cfg.bos_id)
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


def save_training_state(out: Path, model, opt, trainer: dict) -> None:
    last = out / "last"
    last.mkdir(parents=True, exist_ok=True)
    atomic_save_tensors(model.state_dict(), last / "model.safetensors")
    rng = {"rng.cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["rng.cuda"] = torch.cuda.get_rng_state()
    atomic_save_tensors({**optimizer_tensors(opt), **rng}, last / "optimizer.safetensors")
    atomic_write_text(last / "trainer.json", json.dumps(trainer, indent=2) + "\n")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m model.train", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="folder with train/val .en/.de(.gz)")
    p.add_argument("--out", required=True, help="run folder (checkpoints, log.json)")
    p.add_argument("--preset", default="multi30k_small", choices=sorted(PRESETS))
    p.add_argument("--vocab-size", type=int, help="override the preset's vocabulary size")
    p.add_argument("--d-model", type=int, help="override the preset's d_model")
    p.add_argument("--d-ff", type=int, help="override the preset's d_ff")
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
    p.add_argument("--precision", choices=["fp32", "bf16"], default="bf16", help="autocast dtype")
    p.add_argument("--checkpoint-minutes", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.threads:
        torch.set_num_threads(args.threads)

    src_train, tgt_train = load_pairs(args.data, "train")
    src_val, tgt_val = load_pairs(args.data, "val")
    if args.resume:
        if not (out / "last" / "trainer.json").is_file():
            print(f"{out / 'last' / 'trainer.json'}: nothing to resume", file=sys.stderr)
            return 2
        trainer = json.loads((out / "last" / "trainer.json").read_text())
        cfg = TransformerConfig.load(out / "config.json")
        tok = Tokenizer(out / TOKENIZER_FILE)
    else:
        cfg = PRESETS[args.preset]
        overrides = {"vocab_size": args.vocab_size, "d_model": args.d_model, "d_ff": args.d_ff, "dropout": args.dropout,
                     "attn_dropout": args.attn_dropout, "relu_dropout": args.relu_dropout}
        cfg = cfg.with_(**{k: v for k, v in overrides.items() if v is not None})
        out.mkdir(parents=True, exist_ok=True)
        # The vocabulary comes from the training split only.
        tok = train_tokenizer(src_train + tgt_train, out / TOKENIZER_FILE, cfg.vocab_size)
        if tok.vocab_size != cfg.vocab_size:
            print(f"vocabulary: {tok.vocab_size} pieces (the text is too small for {cfg.vocab_size})", flush=True)
            cfg = cfg.with_(vocab_size=tok.vocab_size)
        cfg.save(out / "config.json")
        trainer = {
            "step": 0,
            "epoch": 0,
            "batch": 0,
            "elapsed_s": 0.0,
            "best_bleu": -1.0,
            "log": [],
            "args": vars(args),
        }
    tok.check_matches(cfg)

    torch.manual_seed(args.seed)
    model = EncoderDecoder(cfg).to(device)
    if not args.resume and args.branch_init_gain != 1.0:
        model.scale_branch_init(args.branch_init_gain)
    opt = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    if args.resume:
        path = out / "last" / "model.safetensors"
        load_state_into(model, read_tensors(path), path)
        tensors = read_tensors(out / "last" / "optimizer.safetensors")
        torch.set_rng_state(tensors.pop("rng.cpu"))
        cuda_rng = tensors.pop("rng.cuda", None)
        if cuda_rng is not None and device.type == "cuda":
            torch.cuda.set_rng_state(cuda_rng)
        restore_optimizer(opt, {k: v.to(device) if not k.endswith(".step") else v for k, v in tensors.items()})
        print(f"resumed at epoch {trainer['epoch']}, batch {trainer['batch']}, step {trainer['step']}", flush=True)
    print(f"{count_parameters(model):,} parameters on {device} ({args.precision})", flush=True)

    train_pairs = encode_pairs(tok, src_train, tgt_train, cfg.max_len - 1)
    val_pairs = encode_pairs(tok, src_val, tgt_val, cfg.max_len - 1)
    lengths = [(len(s), len(t)) for s, t in train_pairs]
    model.train()
    last_save, t_session = time.monotonic(), time.monotonic()
    elapsed0 = trainer["elapsed_s"]
    tty = sys.stderr.isatty()
    # SIGTERM / Ctrl-C: finish the current step, write a checkpoint, exit. Nothing is lost.
    stop_requested: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: stop_requested.append(signum))
    last_step = min(args.max_steps or math.inf, args.anneal[1] if args.anneal else math.inf)
    while trainer["epoch"] < args.epochs:
        epoch = trainer["epoch"]
        batches = make_batches(lengths, args.max_tokens, seed=args.seed * 100_003 + epoch)
        bar = tqdm(
            total=len(batches),
            initial=trainer["batch"],
            desc=f"epoch {epoch + 1}",
            mininterval=1 if tty else 30,
            file=sys.stderr,
        )
        loss_sum, tok_sum = 0.0, 0
        for bi in range(trainer["batch"], len(batches)):
            batch = collate([train_pairs[i] for i in batches[bi]], cfg.pad_id, cfg.bos_id)
            loss, n_tokens = batch_loss(model, batch, device, args.precision, args.label_smoothing)
            lr = scheduled_lr(trainer["step"] + 1, cfg.d_model, args)
            for group in opt.param_groups:
                group["lr"] = lr
            opt.zero_grad(set_to_none=True)
            (loss / n_tokens).backward()
            opt.step()
            trainer["step"] += 1
            trainer["batch"] = bi + 1
            loss_sum, tok_sum = loss_sum + loss.item(), tok_sum + n_tokens
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item() / n_tokens:.3f}", lr=f"{lr:.2e}", refresh=False)
            trainer["elapsed_s"] = elapsed0 + time.monotonic() - t_session
            stop = bool(stop_requested) or trainer["step"] >= last_step
            if stop or time.monotonic() - last_save > 60 * args.checkpoint_minutes:
                save_training_state(out, model, opt, trainer)
                last_save = time.monotonic()
            if stop and (stop_requested or bi < len(batches) - 1):  # else: validate and log the epoch first
                bar.close()
                why = "signal" if stop_requested else "--max-steps" if trainer["step"] == args.max_steps else "--anneal"
                print(f"stopped at step {trainer['step']} ({why}); resume with --resume", flush=True)
                return 0
        bar.close()
        val_loss, val_bleu = validate(
            model, val_pairs, tgt_val[: len(val_pairs)], tok, device, args.precision, args.max_tokens
        )
        record = {
            "epoch": epoch + 1,
            "step": trainer["step"],
            "train_loss": loss_sum / max(tok_sum, 1),
            "val_loss": val_loss,
            "val_ppl": math.exp(min(val_loss, 50)),
            "val_bleu": val_bleu,
            "lr": scheduled_lr(trainer["step"], cfg.d_model, args),
            "lr_scale": args.lr_scale,
            "dropout": cfg.dropout,
            "elapsed_s": round(elapsed0 + time.monotonic() - t_session, 1),
        }
        trainer["log"].append(record)
        trainer["epoch"], trainer["batch"] = epoch + 1, 0
        trainer["elapsed_s"] = record["elapsed_s"]
        print(json.dumps(record), flush=True)
        (out / "epochs").mkdir(exist_ok=True)
        atomic_save_tensors(model.state_dict(), out / "epochs" / f"epoch_{epoch + 1:03d}.safetensors")
        if val_bleu > trainer["best_bleu"]:
            trainer["best_bleu"] = val_bleu
            save_model(model, out / "best")
            (out / "best" / TOKENIZER_FILE).write_bytes((out / TOKENIZER_FILE).read_bytes())
        save_training_state(out, model, opt, trainer)
        atomic_write_text(out / "log.json", json.dumps(trainer["log"], indent=2) + "\n")
        last_save = time.monotonic()
        if trainer["step"] >= last_step:
            print(f"stopped at step {trainer['step']}, the end of epoch {trainer['epoch']}", flush=True)
            return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
