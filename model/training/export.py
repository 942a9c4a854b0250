"""Ship a training run: average its last epochs, store float16 safetensors, write the model card.

    python -m model.export --run runs/m30k --out assets/model [--average 5] [--bleu score.json]

``--bleu`` is the JSON that ``python -m model.evaluate --json`` wrote for the exported weights; the
card quotes it (score and sacreBLEU signature) verbatim.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

from model.cli import command
from model.network.checkpoint import (
    TOKENIZER_FILE,
    CheckpointError,
    check_shapes,
    load_config,
    load_state_into,
    load_tokenizer,
    read_shapes,
    read_tensors,
    save_model,
)
from model.network.config import PRESETS, TransformerConfig
from model.network.params import parameter_breakdown
from model.network.transformer import EncoderDecoder
from model.training.loop import read_trainer

CARD = "MODEL_CARD.md"


def average_epochs(run: Path, n: int, cfg: TransformerConfig) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Mean of the last ``n`` epoch checkpoints' weights (checkpoint averaging, as in §6.1), each checked
    against ``cfg`` before it is read."""
    if n < 1:
        raise ValueError(f"--average must be at least 1, not {n}")
    files = sorted((run / "epochs").glob("epoch_*.safetensors"))[-n:]
    if not files:
        raise CheckpointError(f"{run / 'epochs'}: no epoch checkpoints; train at least one epoch first")
    total: dict[str, torch.Tensor] = {}
    for f in files:
        check_shapes(cfg, read_shapes(f), f)
        for k, v in read_tensors(f).items():
            total[k] = total.get(k, 0) + v.double()
    return {k: (v / len(files)).float() for k, v in total.items()}, [f.name for f in files]


def read_json(path: Path, what: str):
    """A JSON file the run wrote, or a one-line error naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: {what} not found; is this a run folder of `python -m model.train`?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc}); restore the file") from None


def human_hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def model_card(cfg, log: list[dict], args: dict, averaged: list[str], bleu: dict | None,
               byte_fallback: bool = False) -> str:
    """The card's Markdown; ``byte_fallback``: the tokenizer spells unseen characters as bytes (no <unk>)."""
    params = parameter_breakdown(cfg)["total"]
    pieces = "joint En+De SentencePiece unigram" + (", byte fallback: no `<unk>`" if byte_fallback else "")
    last = log[-1] if log else {}
    # Runs started before the log recorded dropout used the first invocation's (preset or --dropout).
    first_dropout = args.get("dropout") or PRESETS[args.get("preset", "multi30k_small")].dropout
    # The log records each epoch's precision (a resumed run may change it); older logs only the first invocation's.
    precisions = [r.get("precision", args.get("precision")) for r in log] or [args.get("precision")]
    precision = " then ".join(dict.fromkeys(precisions))
    lines = [
        "# Model card: Transformer (N=6, h=8) for Multi30k English→German",
        "",
        "A from-scratch PyTorch implementation of the encoder–decoder Transformer of Vaswani et al. (2017),",
        "post-LN, sinusoidal positions, one embedding matrix shared by encoder, decoder and output layer.",
        "",
        "## Configuration",
        "",
        "| N | d_model | h | d_k | d_ff | vocabulary | parameters |",
        "|---|---|---|---|---|---|---|",
        f"| {cfg.n_layers} | {cfg.d_model} | {cfg.n_heads} | {cfg.d_k} | {cfg.d_ff} | {cfg.vocab_size} "
        f"({pieces}) | {params:,} |",
        "",
        f"d_model is {cfg.d_model} rather than the paper's 512: narrow enough to train on two CPU cores.",
        "Weights are stored as float16 safetensors and run in float32 on a CPU, float16 on a GPU.",
        "",
        "## Training",
        "",
        "- Data: Multi30k task 1 (Elliott et al., 2016), 29,000 training pairs; the tokenizer saw the",
        "  training split only. Tuned on `val`; scored on `test_2016_flickr`.",
        f"- Recipe (§5.3–5.4): Adam β=(0.9, 0.98), ε=1e-9, lr = scale·d_model^-0.5·min(step^-0.5, step·"
        f"{args.get('warmup')}^-1.5) with the scale per epoch in the table below (and, where the lr falls to 0, a "
        f"linear cool-down: `--anneal`), dropout (P_drop) per epoch in the table, "
        f"label smoothing {args.get('label_smoothing')}, "
        f"batches of ≤{args.get('max_tokens')} padded tokens per side, precision {precision}.",
        *(
            [
                f"- Initialisation: Xavier, with W^V, W^O and the FFN's W_2 scaled by {args['branch_init_gain']:g}",
                "  (`--branch-init-gain`, not in the paper): it keeps the encoder's positions apart at the start;",
                "  without it the encoder collapsed to one vector per sentence and cross-attention stayed uniform.",
            ]
            if args.get("branch_init_gain", 1.0) != 1.0
            else []
        ),
        f"- {last.get('epoch', '?')} epochs, {last.get('step', '?')} steps, "
        f"{human_hours(last.get('elapsed_s', 0))} on {platform.machine()} CPU (2 cores, no GPU).",
        f"- Shipped weights: the mean of the last {len(averaged)} epoch checkpoints ({', '.join(averaged)}).",
        "",
        "| epoch | dropout | lr scale | lr at its end | train loss | val loss | val BLEU (greedy) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['epoch']} | {r.get('dropout', first_dropout):g} | {r.get('lr_scale', 1.0):g} | {r['lr']:.2e} "
        f"| {r['train_loss']:.3f} | {r['val_loss']:.3f} | {r['val_bleu']:.2f} |"
        for r in log
    ]
    lines += ["", "## Quality", ""]
    if bleu:
        lines += [
            f"Cased sacreBLEU on Multi30k test_2016_flickr, beam {bleu['beam']}, length penalty α=0.6: "
            f"**{bleu['bleu']:.1f}**",
            "",
            f"Signature: `{bleu['signature']}`",
            "",
            "Reproduce: `python -m model.evaluate --beam 4` (reads `../shared/data/multi30k` or `--data`).",
        ]
    else:
        lines.append("Not evaluated yet: run `python -m model.evaluate --beam 4`.")
    lines += [
        "",
        "## Intended use and limits",
        "",
        "Teaching and exploring attention. It translates short, literal image descriptions well and",
        "everyday sentences outside that domain poorly: Multi30k is small and narrow (examples, and the rule by",
        "which the app says so beside a translation: “What the model is bad at”, `python -m model.domain --card`).",
        "Multi30k derives from Flickr30k: for non-commercial research and educational use.",
        "",
        "## Citation",
        "",
        "- Vaswani et al. (2017). Attention Is All You Need. NeurIPS.",
        "- Elliott, Frank, Sima'an, Specia (2016). Multi30K: Multilingual English-German Image Descriptions.",
        "  Proceedings of the 5th Workshop on Vision and Language, ACL.",
        "",
    ]
    return "\n".join(lines)


KEPT = ("limits", "lab")  # the card's sections other commands write (model.domain --card, model.lab export)


def kept_sections(old: str, new: str) -> str:
    """``new`` with the sections of the ``old`` card that other commands wrote (``<!-- name: start -->`` … ``end``):
    each in its old place before "## Citation" (limits) or at the end (the lab)."""
    for name in KEPT:
        start, end = f"<!-- {name}: start -->", f"<!-- {name}: end -->"
        if start not in old or end not in old or start in new:
            continue
        part = old[old.index(start): old.index(end) + len(end)]
        if name == "limits" and "## Citation" in new:
            new = new.replace("## Citation", part + "\n\n## Citation", 1)
        else:
            new = new.rstrip("\n") + "\n\n" + part + "\n"
    return new


@command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m model.export", description=__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--average", type=int, default=5, help="average this many last epochs (1 = last only)")
    p.add_argument("--bleu", type=Path, help="evaluate --json output to quote in the card")
    p.add_argument("--card-only", action="store_true", help="rewrite MODEL_CARD.md, keep the weights")
    args = p.parse_args(argv)
    if not args.run.is_dir():
        raise CheckpointError(f"{args.run}: run folder not found; pass the --out folder of `python -m model.train`")
    cfg = load_config(args.run)
    tokenizer = load_tokenizer(args.run, cfg)
    trainer = read_trainer(args.run)
    log = read_json(args.run / "log.json", "training log") if (args.run / "log.json").is_file() else []
    tensors, averaged = average_epochs(args.run, args.average, cfg)
    bleu = read_json(args.bleu, "BLEU record") if args.bleu else None
    if not args.card_only:
        model = EncoderDecoder(cfg)
        load_state_into(model, tensors, args.run / "epochs")
        save_model(model, args.out, dtype=torch.float16)
        (args.out / TOKENIZER_FILE).write_bytes((args.run / TOKENIZER_FILE).read_bytes())
    card = model_card(cfg, log, trainer["args"], averaged, bleu, tokenizer.byte_fallback)
    old = args.out / CARD
    (args.out / CARD).write_text(kept_sections(old.read_text(encoding="utf-8") if old.is_file() else "", card),
                                 encoding="utf-8")
    print(f"wrote {args.out} (averaged {', '.join(averaged)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
