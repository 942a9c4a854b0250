"""Multi30k loading and token-based batching for training."""

from __future__ import annotations

import gzip
from pathlib import Path

import torch

from model.network.decode import padded
from model.network.tokenizer import Tokenizer

# Where the Multi30k files (train/val/test_2016_flickr .en/.de, gzipped) sit beside this checkout.
MULTI30K = Path(__file__).resolve().parents[3] / "shared" / "data" / "multi30k"


def read_lines(path: str | Path) -> list[str]:
    """One sentence a line, plain or .gz. A missing or unreadable file is an error naming it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        kind = "gzipped UTF-8 text" if opener is gzip.open else "UTF-8 text"
        raise ValueError(f"{path}: not readable as {kind} ({exc})") from None


def split_path(data_dir: str | Path, split: str, lang: str) -> Path:
    data_dir = Path(data_dir)
    for name in (f"{split}.{lang}.gz", f"{split}.{lang}"):
        if (data_dir / name).is_file():
            return data_dir / name
    raise FileNotFoundError(f"{data_dir}: no {split}.{lang}(.gz)")


def load_pairs(data_dir: str | Path, split: str, src: str = "en", tgt: str = "de") -> tuple[list[str], list[str]]:
    s, t = read_lines(split_path(data_dir, split, src)), read_lines(split_path(data_dir, split, tgt))
    if len(s) != len(t):
        raise ValueError(f"{data_dir}/{split}: {len(s)} {src} lines but {len(t)} {tgt} lines")
    return s, t


def encode_pairs(tok: Tokenizer, src: list[str], tgt: list[str], max_len: int) -> list[tuple[list[int], list[int]]]:
    """Source ids + EOS and target ids + EOS; pairs longer than max_len are dropped."""
    pairs = []
    for s, t in zip(src, tgt):
        si, ti = tok.encode(s) + [tok.sp.eos_id()], tok.encode(t) + [tok.sp.eos_id()]
        if len(si) <= max_len and len(ti) < max_len:
            pairs.append((si, ti))
    return pairs


def make_batches(lengths: list[tuple[int, int]], max_tokens: int, seed: int) -> list[list[int]]:
    """Group example indices into batches of at most ``max_tokens`` padded tokens per side.

    Examples are sorted by length (with a seeded random tie-break) so padding stays small, then the
    batches are shuffled. The same seed always gives the same batches: resuming needs only the index.
    """
    g = torch.Generator().manual_seed(seed)
    noise = torch.rand(len(lengths), generator=g).tolist()
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i][1], lengths[i][0], noise[i]))
    batches, cur, longest = [], [], 0
    for i in order:
        longest_new = max(longest, *lengths[i])
        if cur and longest_new * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, longest_new = [], max(lengths[i])
        cur.append(i)
        longest = longest_new
    if cur:
        batches.append(cur)
    perm = torch.randperm(len(batches), generator=g).tolist()
    return [batches[p] for p in perm]


def collate(
    pairs: list[tuple[list[int], list[int]]], pad_id: int, bos_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """-> src (B, S), decoder input = BOS + target (B, T), decoder output = target + EOS (B, T) (§3.1 offset)."""
    src = padded([s for s, _ in pairs], pad_id)
    tgt_in = padded([[bos_id] + t[:-1] for _, t in pairs], pad_id)
    tgt_out = padded([t for _, t in pairs], pad_id)
    return src, tgt_in, tgt_out
