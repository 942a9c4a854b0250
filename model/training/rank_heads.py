"""Rank every head by the BLEU the shipped sample loses without it; also store the sample's head statistics.

    python -m model.rank_heads [--model DIR] [--sample DIR] [--limit N] [--ranking FILE] [--stats FILE] [--stats-only]

Writes ``assets/head_ranking.json`` (for each of the 3 × N × h heads, the sample's cased sacreBLEU BLEU and
chrF with that head alone switched off, greedy; sorted by the BLEU lost) and ``assets/head_stats_sample.json``
(``model.probes.analysis`` statistics over the sample, which the app reads instead of decoding the sample again).
Both files are reproducible: no dates or timings, and they name the weights (SHA-256) and sample they are of.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from model.cli import command
from model.network.checkpoint import WEIGHTS_FILE
from model.network.inference import ASSETS, Translator
from model.probes.ablation import RANKING_FILE, SAMPLE_DIR, SAMPLE_STATS_FILE, file_sha256, load_sample, rank_heads
from model.probes.analysis import sample_stats, stats_file_record

ROOT = Path(__file__).resolve().parents[2]


def _shown(path: Path) -> str:
    """A path relative to the repository when it lies inside it (the files stay machine-independent)."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _command(args: argparse.Namespace) -> str:
    parts = ["python -m model.rank_heads"]
    if args.model.resolve() != ASSETS.resolve():
        parts.append(f"--model {_shown(args.model)}")
    if args.sample.resolve() != SAMPLE_DIR.resolve():
        parts.append(f"--sample {_shown(args.sample)}")
    if args.limit is not None:
        parts.append(f"--limit {args.limit}")
    return " ".join(parts)


def _progress(fraction: float, message: str) -> None:
    if message.endswith(":1"):  # a line per layer of heads
        print(f"{fraction:6.1%}  {message}", file=sys.stderr, flush=True)


_INNERMOST = re.compile(r"([\[{])\s+([^\[\]{}]*?)\s+([\]}])")  # a list or object holding no list or object


def to_json_text(record: dict) -> str:
    """Indented JSON with each innermost list or object (a layer's heads, one head's scores) on one line."""
    text = json.dumps(record, indent=1, ensure_ascii=False)
    return _INNERMOST.sub(lambda m: m[1] + re.sub(r",\s+", ", ", m[2]) + m[3], text) + "\n"


def _write(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json_text(record), encoding="utf-8")


@command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m model.rank_heads", description=__doc__.splitlines()[0])
    p.add_argument("--model", type=Path, default=ASSETS, help="model folder (default: the shipped model)")
    p.add_argument("--sample", type=Path, default=SAMPLE_DIR, help="folder with val200.en and val200.de")
    p.add_argument("--limit", type=int, help="only the first N sentence pairs of the sample")
    p.add_argument("--ranking", type=Path, default=RANKING_FILE, help="where to write the ranking")
    p.add_argument("--stats", type=Path, default=SAMPLE_STATS_FILE, help="where to write the sample statistics")
    p.add_argument("--stats-only", action="store_true", help="write only the statistics (seconds, not minutes)")
    args = p.parse_args(argv)
    sample = load_sample(args.sample)
    if args.limit is not None:
        sample = sample.head(args.limit)
    translator = Translator(args.model, "cpu")
    weights = file_sha256(Path(args.model) / WEIGHTS_FILE)
    t0 = time.perf_counter()
    stats = sample_stats(translator, sample.sources)
    _write(args.stats, stats_file_record(stats, weights, sample))
    t1 = time.perf_counter()
    print(f"sample statistics of {len(sample.sources)} sentences: {t1 - t0:.1f} s -> {args.stats}", file=sys.stderr)
    if args.stats_only:
        return 0
    ranking = rank_heads(translator, sample, _progress)
    record = {
        "command": _command(args),
        "model": {"folder": _shown(args.model), "weights_sha256": weights},
        "sample": {"name": sample.name, "sentences": len(sample.sources)},
        **ranking,
    }
    _write(args.ranking, record)
    heads = len(ranking["heads"])
    print(f"ranked {heads} heads in {time.perf_counter() - t1:.0f} s -> {args.ranking}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
