"""Cased sacreBLEU of the model on any parallel files (plain or .gz, one sentence a line).

    python -m model.evaluate [--src FILE --ref FILE] [--beam N] [--model DIR] [--limit N] [--loss]

Defaults to Multi30k test_2016_flickr En->De from ``--data``. Prints the score and its signature;
with ``--loss`` also the references' cross-entropy per token under teacher forcing (no label smoothing),
the figure that shows over-fitting when the training split scores far lower than ``val``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import sacrebleu
import torch
from tqdm import tqdm

from model.cli import ArgumentParser, beam_size, command, device_name
from model.network.inference import ASSETS, Translator
from model.training.data import MULTI30K, collate, read_lines, split_path
from model.training.loop import batch_loss


def translate_all(translator: Translator, sources: list[str], beam: int, batch_size: int = 64) -> list[str]:
    """Sorted by length into batches (less padding), returned in input order."""
    ids = [translator.token_ids(s) for s in sources]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    hyps = [""] * len(ids)
    for start in tqdm(range(0, len(order), batch_size), desc="translating", file=sys.stderr, mininterval=5):
        idx = order[start : start + batch_size]
        for i, hyp in zip(idx, translator.translate_batch([ids[i] for i in idx], beam=beam)):
            hyps[i] = hyp
    return hyps


@torch.inference_mode()
def reference_loss(translator: Translator, sources: list[str], refs: list[str], batch_size: int = 64) -> float:
    """Mean cross-entropy (nats per target token, EOS included) of ``refs`` given ``sources``."""
    cfg = translator.cfg
    pairs = [(translator.token_ids(s), translator.token_ids(r)) for s, r in zip(sources, refs)]
    total, count = 0.0, 0
    for start in range(0, len(pairs), batch_size):
        batch = collate(pairs[start : start + batch_size], cfg.pad_id, cfg.bos_id)
        loss, n_tokens = batch_loss(translator.model, batch, translator.device, "fp32", smoothing=0.0)
        total, count = total + loss.item(), count + n_tokens
    return total / max(count, 1)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = ArgumentParser(prog="python -m model.evaluate", description=__doc__.splitlines()[0])
    p.add_argument("--src", type=Path, help="English sources (default: DATA/test_2016_flickr.en.gz)")
    p.add_argument("--ref", type=Path, help="German references (default: DATA/test_2016_flickr.de.gz)")
    p.add_argument("--data", type=Path, default=MULTI30K, help="Multi30k folder for the defaults")
    p.add_argument("--beam", type=beam_size, default=4, help="beam size, 1-8 (1 = greedy)")
    p.add_argument("--model", type=Path, default=ASSETS)
    p.add_argument("--device", type=device_name, help="cpu, cuda or cuda:N (default: cuda when present)")
    p.add_argument("--hyp-out", type=Path, help="write the translations here")
    p.add_argument("--json", type=Path, help="write score, signature and settings here")
    p.add_argument("--limit", type=int, help="only the first N sentence pairs")
    p.add_argument("--loss", action="store_true", help="also print the references' cross-entropy per token")
    args = p.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be at least 1, not {args.limit}")
    return args


def read_pairs(args: argparse.Namespace) -> tuple[Path, list[str], list[str]]:
    """-> (source path, sources, references), the first ``--limit`` of them."""
    src_path = args.src or split_path(args.data, "test_2016_flickr", "en")
    ref_path = args.ref or split_path(args.data, "test_2016_flickr", "de")
    sources, refs = read_lines(src_path), read_lines(ref_path)
    if len(sources) != len(refs):
        raise ValueError(f"{src_path} has {len(sources)} lines but {ref_path} has {len(refs)}")
    return src_path, sources[: args.limit], refs[: args.limit]


@command
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    translator = Translator(args.model, args.device)
    src_path, sources, refs = read_pairs(args)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    hyps = translate_all(translator, sources, args.beam)
    seconds = time.perf_counter() - t0
    bleu = sacrebleu.metrics.BLEU()
    score = bleu.corpus_score(hyps, [refs])
    signature = str(bleu.get_signature())
    print(f"{score} (beam {args.beam}, {len(sources)} sentences, {seconds:.1f} s on {translator.device_label})")
    print(f"signature: {signature}")
    record = {"bleu": round(score.score, 2), "signature": signature, "beam": args.beam, "src": str(src_path),
              "sentences": len(sources), "seconds": round(seconds, 1), "device": translator.device_label}
    if args.loss:
        loss = reference_loss(translator, sources, refs)
        record["loss"] = round(loss, 4)
        print(f"reference cross-entropy: {loss:.3f} nats per token (teacher forcing, no label smoothing)")
    if args.hyp_out:
        args.hyp_out.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
