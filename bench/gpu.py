"""The GPU path: the shipped model in float16 on CUDA against float32 on the CPU.

On the 200 validation sentences the app ships (``assets/sample/val200.en``; the model never trained on them):

- translations: greedy (what /visualise decodes) and beam 4 (what /translate answers), in padded batches of
  ``BATCH`` as the app's batcher runs them (``model.serving.batching``), on the GPU and on the CPU; how many are the
  same string (a sentence refused on either side counts as different);
- the attention maps the app would show (``attention_requests``, batches of ``BATCH``, and ``Translator.attention``
  one at a time): the largest |row sum − 1| of any row of any map of any kind on the GPU, and where a sentence's
  tokens are the same on both, the largest |GPU − CPU| weight;
- time: the 200 greedy /visualise-style requests one at a time on the CPU (one thread, as the app) and on the GPU,
  and batched on the GPU.

Without CUDA the section reports that and measures nothing (it never fails for want of a GPU).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch

from bench.model_speed import timed
from model.network.inference import Translator
from model.serving.batches import attention_requests, translate_requests
from model.terms import KINDS

SAMPLE = Path(__file__).resolve().parent.parent / "assets" / "sample"
BATCH = 32  # the app's ATTN_MAX_BATCH default
GOALS = {"agreement": 0.98, "row_sum": 1e-3}


def sample(n: int = 200) -> tuple[list[str], list[str]]:
    """The first ``n`` shipped validation pairs (English, German)."""
    en = (SAMPLE / "val200.en").read_text(encoding="utf-8").splitlines()[:n]
    de = (SAMPLE / "val200.de").read_text(encoding="utf-8").splitlines()[:n]
    return en, de


def row_sum_error(result) -> float:
    """The largest |sum of a row − 1| over every map of one ``AttentionResult`` (float64 sums of its weights)."""
    return max(float(np.abs(result.maps(kind).astype(np.float64).sum(-1) - 1.0).max()) for kind in KINDS)


def in_batches(fn: Callable[[list], list], items: list, size: int) -> list:
    """``fn`` on ``items`` in slices of ``size``, the answers joined."""
    out: list = []
    for i in range(0, len(items), size):
        out += fn(items[i:i + size])
    return out


def compare(cpu: Translator, gpu: Translator, texts: list[str], log: Callable[[str], None] = print) -> dict:
    """Every figure of the module docstring for ``texts``."""
    n = len(texts)
    if not n:
        raise ValueError("no sentences to compare")
    device = torch.cuda.get_device_name(gpu.device) if gpu.device.type == "cuda" else str(gpu.device)
    out: dict = {"device": device, "dtype": str(gpu.dtype).replace("torch.", ""), "sentences": n}
    for name, beam in (("greedy", 1), ("beam4", 4)):
        on_cpu, on_gpu = ([a if isinstance(a, str) else f"refused: {a}" for a in
                           in_batches(partial(translate_requests, t, beam=beam), texts, BATCH)] for t in (cpu, gpu))
        same = sum(a == b and not a.startswith("refused: ") for a, b in zip(on_cpu, on_gpu))
        out[f"{name}_same"] = same
        out[f"{name}_differ"] = [{"source": t, "cpu": a, "gpu": b}
                                 for t, a, b in zip(texts, on_cpu, on_gpu) if a != b][:5]
        log(f"  gpu: {name} translations the same on CPU and GPU: {same}/{n}")

    one_cpu, cpu_s = timed(lambda: [cpu.attention(t) for t in texts], cpu.device)
    one_gpu, gpu_s = timed(lambda: [gpu.attention(t) for t in texts], gpu.device)
    batched, batched_s = timed(lambda: in_batches(lambda b: attention_requests(gpu, [(t, None) for t in b]), texts,
                                                  BATCH), gpu.device)
    out["row_sum_error"] = max(row_sum_error(r) for r in one_gpu + batched)
    out["row_sum_error_cpu"] = max(row_sum_error(r) for r in one_cpu)
    same_tokens = [(a, b) for a, b in zip(one_cpu, one_gpu) if a.target_ids == b.target_ids]
    out["maps_compared"] = len(same_tokens)
    out["max_weight_diff"] = max((float(np.abs(a.maps(k) - b.maps(k)).max()) for a, b in same_tokens for k in KINDS),
                                 default=float("nan"))
    batched_vs_one = [float(np.abs(a.maps(k) - b.maps(k)).max()) for a, b in zip(one_gpu, batched)
                      if a.target_ids == b.target_ids for k in KINDS]
    out["batched_vs_one_max_diff"] = max(batched_vs_one, default=float("nan"))
    out["visualise_rate"] = {"cpu_one_at_a_time": n / cpu_s, "gpu_one_at_a_time": n / gpu_s,
                             "gpu_batched": n / batched_s}
    log(f"  gpu: maps |row sum - 1| ≤ {out['row_sum_error']:.1e} (CPU {out['row_sum_error_cpu']:.1e}); "
        f"|GPU - CPU| ≤ {out['max_weight_diff']:.1e} on {len(same_tokens)} sentences; "
        f"{n / cpu_s:.0f} / {n / gpu_s:.0f} / {n / batched_s:.0f} sentences/s (CPU / GPU / GPU batched)")
    return out


def run(quick: bool, log: Callable[[str], None] = print) -> dict:
    if not torch.cuda.is_available():
        log("  gpu: no CUDA device on this machine: nothing measured")
        return {"available": False}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the CPU side as the app runs it
    try:
        texts, _ = sample(50 if quick else 200)
        cpu, gpu = Translator(device="cpu"), Translator(device="cuda")
        for t in texts[:3]:  # warm-up: CUDA kernels, allocator
            gpu.attention(t)
        return {"available": True, **compare(cpu, gpu, texts, log)}
    finally:
        torch.set_num_threads(threads)


def rows(g: dict) -> list[tuple[str, str, str, str]]:
    """The bench table's rows for this section's results."""
    if not g.get("available"):
        return [("GPU (float16) vs CPU (float32): translations and maps", "no CUDA device on this machine", "", "")]
    n, where = g["sentences"], f"{g['device']}, {g['dtype']}"

    def ok(good: bool) -> str:
        return "yes" if good else "**no**"

    out = []
    for name, what in (("greedy", "greedy (/visualise)"), ("beam4", "beam 4 (/translate)")):
        same = g[f"{name}_same"]
        out.append((f"GPU ({where}): {what} translations of {n} val sentences the same as the CPU's",
                    f"{same}/{n} = {100 * same / n:.1f} %", f"≥ {100 * GOALS['agreement']:.0f} %",
                    ok(same >= GOALS["agreement"] * n)))
    out += [
        (f"GPU ({where}): attention maps, largest \\|row sum − 1\\| (CPU float32: {g['row_sum_error_cpu']:.1e})",
         f"{g['row_sum_error']:.1e}", f"≤ {GOALS['row_sum']:.0e}", ok(g["row_sum_error"] <= GOALS["row_sum"])),
        (f"GPU ({where}): largest \\|weight GPU − CPU\\| ({g['maps_compared']} sentences with the same tokens)",
         f"{g['max_weight_diff']:.1e}", "", ""),
        (f"GPU ({where}): /visualise-style runs of {n} sentences per second, CPU (1 thread) / GPU one at a time / "
         f"GPU batches of {BATCH}",
         " / ".join(f"{v:.0f}" for v in g["visualise_rate"].values()), "", ""),
    ]
    return out
