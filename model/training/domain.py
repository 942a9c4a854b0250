"""Calibrate the "far from the captions" rule (``model.probes.domain``) on the model's own training data, and write it
into the model folder (``DOMAIN.json``); then the model card's section on what the model is bad at.

    python -m model.domain [--data ../shared/data/multi30k] [--model assets/model] [--card | --card-only]

The thresholds: ``long_pieces`` = the 99th percentile of the training captions' English lengths (pieces, EOS not
counted); a piece is rare when the training captions' English has it fewer than ``RARE_SEEN`` times;
``rare_share`` = the 99th percentile of the rare pieces' share over the validation captions; ``low_confidence`` = the
1st percentile over the validation captions of the mean log-probability per token of the model's own greedy
translation. ``--card`` also rewrites the card's "What the model is bad at" section (``model.training.limits``);
``--card-only`` rewrites only that, from the folder's DOMAIN.json.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from model.cli import command
from model.network.decode import greedy_decode, padded
from model.network.inference import ASSETS, Translator
from model.probes.domain import RARE_MIN, RARE_SEEN, Calibration, confidences, flagged_share, rare_ids
from model.training.data import MULTI30K, read_lines, split_path


def english_counts(translator: Translator, lines: list[str]) -> np.ndarray:
    """(V,) how often each piece occurs in ``lines`` as the model reads them (EOS not counted)."""
    counts = np.zeros(translator.cfg.vocab_size, dtype=np.int64)
    for line in lines:
        np.add.at(counts, translator.token_ids(line)[:-1], 1)
    return counts


@torch.inference_mode()
def greedy_confidences(translator: Translator, lines: list[str], batch_size: int = 64) -> list[float]:
    """Each line's model translation (greedy, as the Attention tab shows it) and its mean log-probability per token,
    in batches sorted by length; in input order."""
    ids = [translator.token_ids(line) for line in lines]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = [0.0] * len(ids)
    for start in range(0, len(order), batch_size):
        idx = order[start: start + batch_size]
        src = [ids[i] for i in idx]
        outputs = greedy_decode(translator.model, padded(src, translator.cfg.pad_id, translator.device))
        for i, c in zip(idx, confidences(translator, src, outputs)):
            out[i] = c
        print(f"\rconfidence: {min(start + batch_size, len(order))}/{len(order)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return out


def calibrate(translator: Translator, train: list[str], val: list[str]) -> Calibration:
    """The thresholds of the rule, measured (see the module doc)."""
    counts = english_counts(translator, train)
    train_lengths = [len(translator.token_ids(line)) - 1 for line in train]
    probe = Calibration(long_pieces=int(np.percentile(train_lengths, 99)), rare_seen=RARE_SEEN, rare_min=RARE_MIN,
                        rare_share=1.0, low_confidence=-np.inf, val_flagged=0.0, train_sentences=len(train),
                        val_sentences=len(val), english_counts=counts.tolist())
    tok = translator.tokenizer
    pieces, rare = [], []
    for line in val:
        ids = translator.token_ids(line)[:-1]
        pieces.append(len(ids))
        rare.append(len(rare_ids(probe, ids, [tok.sp.IsByte(i) for i in ids])))
    shares = [r / max(p, 1) for p, r in zip(pieces, rare)]
    conf = greedy_confidences(translator, val)
    cal = Calibration(**{**probe.__dict__, "rare_share": round(float(np.percentile(shares, 99)), 4),
                         "low_confidence": round(float(np.percentile(conf, 1)), 4)})
    return Calibration(**{**cal.__dict__, "val_flagged": round(flagged_share(cal, pieces, rare, conf), 4)})


@command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m model.domain", description=__doc__.splitlines()[0])
    p.add_argument("--data", default=MULTI30K, help="Multi30k folder (train and val, English side)")
    p.add_argument("--model", default=ASSETS, help="the model folder to calibrate (DOMAIN.json goes there)")
    p.add_argument("--card", action="store_true", help="also rewrite the model card's section on its limits")
    p.add_argument("--card-only", action="store_true",
                   help="only rewrite that section, from the model folder's DOMAIN.json (no calibration)")
    args = p.parse_args(argv)
    translator = Translator(args.model, device="cpu")
    if args.card_only:
        cal = Calibration.load(args.model)
        if cal is None:
            raise FileNotFoundError(f"{args.model}: no DOMAIN.json; run python -m model.domain first")
    else:
        train = read_lines(split_path(args.data, "train", "en"))
        val = read_lines(split_path(args.data, "val", "en"))
        cal = calibrate(translator, train, val)
        path = cal.save(args.model)
        print(f"wrote {path}: long > {cal.long_pieces} pieces, rare share > {cal.rare_share:.3f} (pieces seen < "
              f"{cal.rare_seen} times), low confidence < {cal.low_confidence:.3f} nats/token; flags "
              f"{cal.val_flagged:.1%} of val")
    if args.card or args.card_only:
        from model.training.limits import update_card

        print(f"wrote {update_card(translator, cal, args.model)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
