"""Our encode + greedy decode WITH attention capture against ``torch.nn.Transformer`` of the same size.

Ours: ``greedy_decode(model, src, maps=AttentionMaps())`` on the shipped model (loaded by ``Translator``),
with its KV cache. Baseline: ``nn.Transformer`` (dropout 0, batch_first, post-LN) between an
``nn.Embedding`` (+ the same sinusoidal positions) and an output ``nn.Linear`` of the same vocabulary,
random weights, no attention capture, and greedy decoding as torch ships it: no KV cache, so step t
reruns the decoder on the whole prefix. Both do exactly the same number of steps: EOS is ignored (ours
runs on a shallow copy of the model whose config has an EOS id no step can produce; every forward pass is
the shipped code path). Same thread count, same dtype, repeats interleaved, median reported.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import statistics
import time
import warnings
from collections.abc import Callable

import torch
from torch import Tensor, nn

from bench.common import words
from model.network.decode import greedy_decode
from model.network.inference import Translator
from model.network.transformer import AttentionMaps, PositionalEncoding

# (source tokens incl. EOS, most greedy steps): ~25 steps as the app typically decodes, then a long input.
LENGTHS = ((20, 25), (60, 75))


class TorchSeq2Seq(nn.Module):
    """nn.Transformer with embeddings and an output projection: the same sizes as our model's config."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.pos = PositionalEncoding(cfg.d_model, cfg.max_len, dropout=0.0)
        self.transformer = nn.Transformer(
            d_model=cfg.d_model, nhead=cfg.n_heads, num_encoder_layers=cfg.n_layers,
            num_decoder_layers=cfg.n_layers, dim_feedforward=cfg.d_ff, dropout=0.0,
            batch_first=True, norm_first=False,
        )
        self.out = nn.Linear(cfg.d_model, cfg.vocab_size)

    def embed_tokens(self, ids: Tensor) -> Tensor:
        return self.pos(self.embed(ids) * math.sqrt(self.cfg.d_model))  # (B, L, d_model)

    @torch.inference_mode()
    def greedy(self, src: Tensor, steps: int) -> Tensor:
        pad = src == self.cfg.pad_id  # (B, S), True = ignore
        with warnings.catch_warnings():  # the encoder's fast path warns that nested tensors are a prototype
            warnings.simplefilter("ignore", UserWarning)
            memory = self.transformer.encoder(self.embed_tokens(src), src_key_padding_mask=pad)
        ys = torch.full((src.size(0), 1), self.cfg.bos_id, dtype=torch.long, device=src.device)
        for _ in range(steps):
            t = ys.size(1)
            mask = nn.Transformer.generate_square_subsequent_mask(t, device=src.device, dtype=memory.dtype)
            x = self.transformer.decoder(self.embed_tokens(ys), memory, tgt_mask=mask, tgt_is_causal=True,
                                         memory_key_padding_mask=pad)  # (B, t, d_model): the whole prefix again
            token = self.out(x[:, -1]).argmax(-1, keepdim=True)  # (B, 1)
            ys = torch.cat([ys, token], dim=1)
        return ys[:, 1:]


def timed(fn: Callable[[], object], device: torch.device) -> tuple[object, float]:
    """(what ``fn()`` returns, its seconds); on a GPU its queued work is finished before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    value = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return value, time.perf_counter() - t0


def source_ids(translator: Translator, n_tokens: int) -> list[int]:
    """Exactly ``n_tokens`` ids (EOS last) from the fixed caption pool."""
    ids = translator.tokenizer.encode(words(120))
    if len(ids) < n_tokens - 1:
        raise ValueError(f"the caption pool has only {len(ids)} tokens")
    return ids[: n_tokens - 1] + [translator.cfg.eos_id]


def compare(translator: Translator, baseline: TorchSeq2Seq, n_src: int, max_steps: int, repeats: int) -> dict:
    device = translator.device
    model = copy.copy(translator.model)  # shares every module and weight; only its config differs
    model.cfg = dataclasses.replace(model.cfg, eos_id=-1)  # greedy_decode stops at EOS: make it run all max_steps steps
    src = torch.tensor([source_ids(translator, n_src)], device=device)
    maps = AttentionMaps()
    greedy_decode(model, src, max_len=max_steps, maps=maps)
    steps = maps.cross[0].size(2)  # (B, H, T, S): T = steps taken
    runs: dict[str, Callable[[], object]] = {
        "ours_capture": lambda: greedy_decode(model, src, max_len=max_steps, maps=AttentionMaps()),
        "ours_no_capture": lambda: greedy_decode(model, src, max_len=max_steps),
        "torch_nn_transformer": lambda: baseline.greedy(src, steps),
    }
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for fn in runs.values():  # warm-up
        fn()
    names = list(runs)
    for rep in range(repeats):
        for name in names if rep % 2 == 0 else names[::-1]:  # interleaved, alternating order
            samples[name].append(timed(runs[name], device)[1])
    med = {name: statistics.median(s) for name, s in samples.items()}
    return {
        "device": device.type, "dtype": str(translator.dtype).replace("torch.", ""), "src_tokens": n_src,
        "steps": steps, "repeats": repeats, **{f"{name}_ms": 1000 * v for name, v in med.items()},
        "ratio": med["ours_capture"] / med["torch_nn_transformer"],
        "capture_overhead": med["ours_capture"] / med["ours_no_capture"],
    }


def run(quick: bool, threads: int, log: Callable[[str], None] = print) -> dict:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    repeats = 3 if quick else 15
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows, load = [], {}
    for dev in devices:
        times = []
        for _ in range(3):  # the model loads in under a second once torch is imported
            t0 = time.perf_counter()
            translator = Translator(device=dev)
            times.append(time.perf_counter() - t0)
        load[dev] = statistics.median(times)
        log(f"  model {dev}: Translator() loads in {load[dev]:.2f} s (median of 3)")
        baseline = TorchSeq2Seq(translator.cfg).to(translator.device, translator.dtype).eval()
        for n_src, max_steps in LENGTHS:
            row = compare(translator, baseline, n_src, max_steps, repeats)
            log(f"  model {dev} {n_src} tokens / {row['steps']} steps: ours {row['ours_capture_ms']:.1f} ms, "
                f"nn.Transformer {row['torch_nn_transformer_ms']:.1f} ms, ratio {row['ratio']:.2f}")
            rows.append(row)
        del translator, baseline
    return {"threads": torch.get_num_threads(), "rows": rows, "load_s": load}
