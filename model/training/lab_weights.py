"""The lab's shipped weights: a model folder per run that ships them, in float16 or 8 bits, with what lets anyone
check them.

``LIVE`` siblings ship float16 (the weights their records' BLEU and translations are of). The reference run
(``EIGHT_BIT``: h = 8, the time-lapse's default) ships in 8 bits (``model.network.quantise``: int8 per row,
dequantised on load), half the bytes, so that the lab fits its 64 MB. Its record keeps the float16 weights'
SHA-256 and BLEU (what was scored, like every other run's) and adds what the shipped file is: its format and
SHA-256, its own test BLEU (greedy, beam 4), and ``last_frame_gap``: the largest difference between the attention
of the shipped weights and the time-lapse's last frame as shipped (teacher-forced on the time-lapse sentences,
every kind, layer, head and cell), which ``LAST_FRAME_TOLERANCE`` bounds.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import torch

from model.network.checkpoint import (
    CONFIG_FILE,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    atomic_save_tensors,
    load_model,
    read_tensors,
)
from model.network.quantise import FORMAT, quantise
from model.terms import KINDS

LIVE = ("h1", "h1-unscaled", "h1-additive")  # the siblings a visitor can run on their own sentence
EIGHT_BIT = ("h8",)  # the reference: its weights ship in 8 bits, for checking its time-lapse and running it
SHIPS_WEIGHTS = LIVE + EIGHT_BIT
# The attention of shipped weights against the time-lapse's last frame (uint8, ±0.002 of the float32 training
# weights' own): float16 h1 0.0027, h1-additive 0.0023, h1-unscaled 0.025 (a saturated softmax magnifies
# rounding); h1's weights in 8 bits 0.016 (model/training/LAB.md).
LAST_FRAME_TOLERANCE = 0.03


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ship_weights(weights16: Path, target: Path, eight_bit: bool) -> dict:
    """The float16 model folder ``weights16`` -> ``target`` (config, tokenizer, weights as float16 or 8 bits);
    -> the record's ``format`` and ``file_sha256``."""
    target.mkdir(parents=True, exist_ok=True)
    for name in (CONFIG_FILE, TOKENIZER_FILE):
        shutil.copyfile(weights16 / name, target / name)
    if eight_bit:
        tensors = quantise(read_tensors(weights16 / WEIGHTS_FILE))
        atomic_save_tensors(tensors, target / WEIGHTS_FILE, metadata={"format": "pt", "quantised": FORMAT})
    else:
        shutil.copyfile(weights16 / WEIGHTS_FILE, target / WEIGHTS_FILE)
    return {"format": FORMAT if eight_bit else "float16", "file_sha256": sha256(target / WEIGHTS_FILE)}


@torch.no_grad()
def last_frame_gap(folder: Path, maps_npz: Path) -> float:
    """Largest |attention of ``folder``'s weights − the time-lapse's last frame| (``maps_npz``: (steps, L, H, Q,
    K) uint8 per sentence and kind), teacher-forced on the time-lapse sentences as the snapshots were."""
    from model.network.tokenizer import Tokenizer
    from model.training.recorder import TIMELAPSE, Probe

    model = load_model(folder)
    probe = Probe(Tokenizer(folder / TOKENIZER_FILE), list(TIMELAPSE), model.cfg.pad_id, model.cfg.bos_id)
    _, maps = probe.run(model, torch.device("cpu"))
    gap = 0.0
    with np.load(maps_npz) as z:
        for b, (src_tokens, tgt_tokens) in enumerate(probe.tokens):
            s, t = len(src_tokens), len(tgt_tokens)
            for kind, (q, k) in zip(KINDS, ((s, s), (t, t), (t, s))):
                w = torch.stack([m[b, :, :q, :k] for m in getattr(maps, kind)]).numpy()  # (L, H, Q, K)
                gap = max(gap, float(np.abs(w - z[f"{b}.{kind}"][-1] / 255).max()))
    return gap


def shipped_bleu(folder: Path, data: Path) -> dict[str, float]:
    """Cased sacreBLEU of ``folder``'s weights on test_2016_flickr, greedy and beam 4, on the CPU."""
    import sacrebleu

    from model.network.inference import Translator
    from model.training.data import load_pairs
    from model.training.evaluate import translate_all
    from model.training.lab_stats import DECODINGS, SPLIT

    translator = Translator(folder, "cpu")
    sources, refs = load_pairs(data, SPLIT)
    return {f"{SPLIT}.{decoding}": round(sacrebleu.corpus_bleu(translate_all(translator, sources, beam), [refs]).score,
                                         2) for decoding, beam in zip(DECODINGS, (1, 4))}
