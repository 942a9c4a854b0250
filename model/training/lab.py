"""The lab: sibling models that change one thing of the shipped recipe, to test §3.2's claims by training.

    python -m model.lab train [--runs DIR] [--data DIR] [--only NAME ...]   # resumable, in SIBLINGS' order
    python -m model.lab status [--runs DIR]
    python -m model.lab export [--runs DIR] [--out assets/lab]
    python -m model.lab translate [--out assets/lab]   # shipped weights' test translations, then export

``train`` runs ``python -m model.train`` for each sibling in turn, resuming a run from its last checkpoint
(stop it any time; start it again to go on), then scores the run's final weights (cased sacreBLEU on val and
test_2016_flickr, greedy and beam 4) into ``RUN/result.json``. ``export`` turns finished runs into the small
files the Lab tab reads (``model.training.lab_export``).

Every sibling shares the budget (``BUDGET``: epochs, schedule, batches, precision), the shipped vocabulary and
the recipe; ``seed`` sets both the initialisation and the data order. The budget is the shipped recipe
compressed to about 25 minutes a run on two quiet CPU cores (or ~200 s on one H200 GPU, four at a time): 6 epochs,
warm-up 800 steps to the shipped run's peak learning rate (~1.6e-3, reached there at step 2000), then a linear
cool-down to 0 over the second half. Which runs train where, the queue, and what ships: ``LAB.md`` beside this file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from model.cli import ArgumentParser, command
from model.network.checkpoint import TOKENIZER_FILE, atomic_write_text
from model.training.data import MULTI30K, encode_pairs, load_pairs, make_batches
from model.training.lab_export import INDEX, WEIGHTS_FILE, export_all, final_weights, sha256
from model.training.lab_stats import DECODINGS, SEARCH, SPLIT, translation_file, write_lines
from model.training.siblings import BUDGET, BY_NAME, EPOCHS, MAX_TOKENS, SIBLINGS, Sibling

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_TOKENIZER = ROOT / "assets" / "model" / TOKENIZER_FILE
RUNS = ROOT / "runs" / "lab"
def total_steps(data: Path, seed: int) -> int:
    """Updates in ``EPOCHS`` epochs of ``seed``'s batches (the cool-down ends exactly there)."""
    from model.network.tokenizer import Tokenizer

    tok = Tokenizer(SHIPPED_TOKENIZER)
    src, tgt = load_pairs(data, "train")
    lengths = [(len(s), len(t)) for s, t in encode_pairs(tok, src, tgt, 255)]
    return sum(len(make_batches(lengths, MAX_TOKENS, seed=seed * 100_003 + e)) for e in range(EPOCHS))


def train_command(sib: Sibling, run: Path, data: Path, steps: int) -> list[str]:
    cmd = [sys.executable, "-m", "model.train", "--data", str(data), "--out", str(run), *BUDGET, *sib.args,
           "--anneal", str(steps // 2), str(steps), "--tokenizer", str(SHIPPED_TOKENIZER)]
    return cmd + (["--resume"] if (run / "last" / "trainer.json").is_file() else [])


def trained_steps(run: Path) -> int:
    path = run / "last" / "trainer.json"
    return json.loads(path.read_text(encoding="utf-8"))["step"] if path.is_file() else 0


def score(run: Path, data: Path) -> dict:
    """Cased sacreBLEU of the run's final float16 weights on val and test_2016_flickr, greedy and beam 4; the
    translations are kept in ``RUN/translations/SPLIT.DECODING.de``."""
    import sacrebleu
    import torch

    from model.network.inference import Translator
    from model.training.evaluate import translate_all

    # The float16 weights that are hashed (and shipped, for a live sibling) are the ones scored: the record's
    # BLEU, its translations and its hash all name one set of weights.
    translator = Translator(final_weights(run), "cpu")
    torch.manual_seed(0)
    bleu, signature = {}, ""
    for split in ("val", "test_2016_flickr"):
        sources, refs = load_pairs(data, split)
        for beam in (1, 4):
            t0 = time.perf_counter()
            metric = sacrebleu.metrics.BLEU()
            hyps = translate_all(translator, sources, beam)
            result = metric.corpus_score(hyps, [refs])
            key = f"{split}.{'greedy' if beam == 1 else 'beam4'}"
            # The translations themselves, beside the record: anyone can recompute the BLEU and its interval.
            (run / "translations").mkdir(exist_ok=True)
            atomic_write_text(run / "translations" / f"{key}.de", "\n".join(hyps) + "\n")
            bleu[key] = round(result.score, 2)
            signature = str(metric.get_signature())
            print(f"{run.name}: {key} BLEU {result.score:.2f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    # The float16 weights' hash is kept with the scores: a run trained elsewhere (a GPU machine) comes back
    # without its weights, and its record still names exactly which weights these numbers are of.
    return {"bleu": bleu, "signature": signature, "search": SEARCH,
            "weights_sha256": sha256(final_weights(run) / WEIGHTS_FILE)}


def train_all(runs: Path, data: Path, only: list[str]) -> int:
    """Each sibling in turn (``only``: those, in that order), resuming, then scored."""
    for sib in [BY_NAME[name] for name in only] if only else SIBLINGS:
        run = runs / sib.name
        if (run / "result.json").is_file():
            continue
        steps = total_steps(data, sib.seed)
        if trained_steps(run) < steps:
            print(f"== {sib.name} ({sib.label}): step {trained_steps(run)} of {steps}", flush=True)
            code = subprocess.call(train_command(sib, run, data, steps), cwd=ROOT)
            if code != 0 or trained_steps(run) < steps:
                print(f"== {sib.name} stopped at step {trained_steps(run)} (exit {code}); run again to go on",
                      flush=True)
                return code or 1
        result = {"sibling": asdict(sib), "steps": steps, **score(run, data)}
        atomic_write_text(run / "result.json", json.dumps(result, indent=2) + "\n")
    return 0


def scored_now(run: Path, data: Path) -> dict:
    """``RUN/result.json``, scored again (``score``) if an older search (``SEARCH``) made its translations."""
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    if result.get("search") != SEARCH:
        print(f"== {run.name}: scored by an older search; scoring again", flush=True)
        result = {**result, **score(run, data)}
        atomic_write_text(run / "result.json", json.dumps(result, indent=2) + "\n")
    return result


def translate_shipped(out: Path, data: Path) -> None:
    """Every shipped run whose weights ship and whose translations are missing or were made by an older search
    (``SEARCH``): its test_2016_flickr translations (greedy, beam 4) from those float16 weights, and its record's
    val and test BLEU of them, the float32 numbers of its training kept beside."""
    from sacrebleu.metrics import BLEU

    from model.network.inference import Translator
    from model.training.evaluate import translate_all

    index = json.loads((out / INDEX).read_text(encoding="utf-8"))
    for name in index["live"]:
        path = out / f"{name}.json"
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("search") == SEARCH and all(translation_file(out, name, d).is_file() for d in DECODINGS):
            continue
        translator = Translator(out / record["weights"]["folder"], "cpu")
        record.setdefault("bleu_float32", dict(record["bleu"]))
        for split in ("val", SPLIT):
            sources, refs = load_pairs(data, split)
            for decoding, beam in zip(DECODINGS, (1, 4)):
                hyps = translate_all(translator, sources, beam)
                if split == SPLIT:
                    write_lines(translation_file(out, name, decoding), hyps)
                bleu = record["bleu"][f"{split}.{decoding}"] = round(BLEU().corpus_score(hyps, [refs]).score, 2)
                print(f"{name}: {split}.{decoding} BLEU {bleu:.2f}", flush=True)
        record["search"] = SEARCH
        atomic_write_text(path, json.dumps(record, separators=(",", ":")) + "\n")


def status(runs: Path) -> None:
    for sib in SIBLINGS:
        run = runs / sib.name
        if (run / "result.json").is_file():
            bleu = json.loads((run / "result.json").read_text(encoding="utf-8"))["bleu"]
            state = "done: " + ", ".join(f"{k} {v}" for k, v in bleu.items())
        else:
            state = f"step {trained_steps(run)}" if run.exists() else "not started"
        print(f"{sib.name:18} {sib.label:42} {state}")


@command
def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m model.lab", description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("train", "status", "export", "translate"))
    p.add_argument("--runs", type=Path, default=RUNS, help="where the runs live (default runs/lab)")
    p.add_argument("--data", type=Path, default=MULTI30K, help="Multi30k folder")
    p.add_argument("--only", nargs="*", default=[], choices=sorted(BY_NAME),
                   help="train these siblings only, in this order")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "lab", help="export: the Lab tab's folder")
    args = p.parse_args(argv)
    if args.action == "status" and not args.runs.is_dir():
        raise ValueError(f"{args.runs}: not a folder of lab runs (--runs; `python -m model.lab train` makes them)")
    if args.action == "train":
        return train_all(args.runs, args.data, args.only)
    if args.action == "status":
        status(args.runs)
        return 0
    if args.runs.is_dir():  # finished runs scored before the search that ships (SEARCH): scored again
        for run in sorted(p.parent for p in args.runs.glob("*/result.json") if p.parent.name in BY_NAME):
            scored_now(run, args.data)
    if args.action == "translate":
        translate_shipped(args.out, args.data)
    export_all(args.runs, args.out, card=ROOT / "assets" / "model" / "MODEL_CARD.md", data=args.data,
               readme=ROOT / "README.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
