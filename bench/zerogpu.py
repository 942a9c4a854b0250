"""A ZeroGPU Space: what is worth a lent GPU, and that off such a Space nothing changes.

- ``work``: the CPU seconds (shipped model, one torch thread, as the app) of each model run a visitor can ask for,
  through ``model.serving.runs.Runs`` with no cache: the head ablation's sample (both scores, as the first ablation;
  one, once the baseline is known), the sample's head statistics computed (the app reads them from their file), and a
  20-word sentence's runs on each tab. What is over ~1 s and works on a batch is what a lent GPU is for
  (``model.serving.zerogpu``); a sentence's run is not.
- ``gpu``: on a CUDA machine, the decorated function itself (``LentGPU.scores_on_device``, float16) against the CPU:
  seconds and BLEU; without CUDA nothing (said so).
- ``off_space``: a classroom's burst (``bench.capacity.burst``: 30 clients × 10 distinct sentences, batched) against
  ``python app.py`` with the ``spaces`` package installed and ``SPACES_ZERO_GPU`` unset, and against one where
  ``import spaces`` fails (as without the package): the same speed.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from bench import capacity
from bench.common import words

TEXT = words(20)
HEADS = ["cross:6:2", "encoder_self:1:1"]
OFF_SPACE = {"batched, spaces installed, SPACES_ZERO_GPU unset": {},
             "batched, spaces not importable": {"PYTHONPATH": "<blocker>"}}


def _seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def work(quick: bool, log: Callable[[str], None]) -> dict:
    """Seconds per model run, on the CPU (median of 3; quick: 1; the sample's runs once)."""
    from model.network.inference import Translator
    from model.probes.ablation import head_mask, load_sample, parse_heads, sample_scores, score_sample
    from model.probes.analysis import sample_stats
    from model.serving.batching import BatchSettings
    from model.serving.cache import ByteLRU
    from model.serving.runs import Runs

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        translator = Translator(device="cpu")
        runs = Runs(translator, cache=ByteLRU(0), batching=BatchSettings(enabled=False))
        sample, n = load_sample(), 1 if quick else 3
        mask = head_mask(parse_heads(HEADS, translator.cfg.n_layers, translator.cfg.n_heads),
                         translator.cfg.n_layers, translator.cfg.n_heads)
        result = runs.attention(TEXT)
        out = {"sentences": len(sample.sources), "text_words": 20, "seconds": {
            "ablation_sample_both": _seconds(lambda: sample_scores(translator, sample, mask), 1),
            "ablation_sample_one": _seconds(lambda: score_sample(translator, sample, mask), 1),
            "sample_stats_computed": _seconds(lambda: sample_stats(translator, sample.sources), 1),
            "sample_stats_from_file": _seconds(runs.sample_stats, n),
            "attention": _seconds(lambda: runs.attention(TEXT), n),
            "translate_beam4": _seconds(lambda: runs.translate(TEXT, 4), n),
            "decode_steps": _seconds(lambda: runs.steps(TEXT), n),
            "inside_head": _seconds(lambda: runs.inside_head(result, "cross", 1, 1, 0), n),
            "contributions": _seconds(lambda: runs.contributions(result, "cross"), n),
            "domain": _seconds(lambda: runs._domain(result), n),
        }}
        if live := runs.lab.live:
            out["seconds"]["lab_first"] = _seconds(lambda: runs.lab_attention(TEXT, live[0]), 1)
            out["seconds"]["lab_next"] = _seconds(lambda: runs.lab_attention(TEXT, live[0]), n)
    finally:
        torch.set_num_threads(threads)
    for name, s in out["seconds"].items():
        log(f"  zerogpu: {name} {s:.3f} s")
    return out


def gpu(log: Callable[[str], None]) -> dict:
    """The decorated function on CUDA (float16) against the CPU's sample scores."""
    if not torch.cuda.is_available():
        log("  zerogpu: no CUDA device on this machine: the GPU rows are not measured")
        return {"available": False}
    from bench.model_speed import timed
    from model.network.inference import Translator
    from model.probes.ablation import head_mask, parse_heads, sample_scores
    from model.serving.zerogpu import LentGPU

    cpu = Translator(device="cpu")
    lent = LentGPU(cpu, lambda duration: lambda fn: fn)  # the function itself, as off ZeroGPU: no slice to attach
    cfg = cpu.cfg
    mask = head_mask(parse_heads(HEADS, cfg.n_layers, cfg.n_heads), cfg.n_layers, cfg.n_heads)
    lent.device_model.attention(TEXT)  # warm-up: CUDA's kernels
    (on_gpu, gpu_s) = timed(lambda: lent.scores_on_device(mask), lent.device_model.device)
    (on_cpu, cpu_s) = timed(lambda: sample_scores(cpu, lent.sample, mask), cpu.device)
    out = {"available": True, "device": on_gpu[2], "gpu_s": gpu_s, "cpu_s": cpu_s,
           "bleu_gpu": [round(on_gpu[0].bleu, 2), round(on_gpu[1].bleu, 2)],
           "bleu_cpu": [round(on_cpu[0].bleu, 2), round(on_cpu[1].bleu, 2)]}
    log(f"  zerogpu: the sample on {out['device']} {gpu_s:.2f} s, CPU {cpu_s:.2f} s; BLEU {out['bleu_gpu']} vs "
        f"{out['bleu_cpu']}")
    return out


def off_space(quick: bool, log: Callable[[str], None]) -> dict:
    """The batched burst with the package installed (not imported: SPACES_ZERO_GPU unset) and without it."""
    with tempfile.TemporaryDirectory() as blocker:
        Path(blocker, "spaces.py").write_text('raise ImportError("spaces is not installed here (bench.zerogpu)")\n')
        modes = {mode: {k: blocker if v == "<blocker>" else v for k, v in env.items()}
                 for mode, env in OFF_SPACE.items()}
        return capacity.burst(quick, log, modes)


def run(quick: bool, log: Callable[[str], None] = print) -> dict:
    return {"work": work(quick, log), "gpu": gpu(log), "off_space": off_space(quick, log)}


LABELS = {  # work's rows: what a visitor does
    "ablation_sample_both": "Head analysis: an ablation's sample, every head on and heads off (the first ablation)",
    "ablation_sample_one": "Head analysis: an ablation's sample, heads off (every head on known)",
    "sample_stats_computed": "Head analysis: the sample's statistics computed (without their shipped file)",
    "sample_stats_from_file": "Head analysis: the sample's statistics read from their file (as shipped)",
    "attention": "Attention: a sentence's maps (greedy)",
    "translate_beam4": "/translate: beam 4",
    "decode_steps": "Decoding: a sentence's steps",
    "inside_head": "Inside a head: one head and query (layer inputs included)",
    "contributions": "Attention: contributions of one kind",
    "domain": "Attention: the \"far from the captions\" check of a sentence's run",
    "lab_first": "Lab: a sibling's first sentence (its weights loaded)",
    "lab_next": "Lab: a sibling's next sentence",
}


def rows(z: dict) -> list[tuple[str, str, str, str]]:
    out = []
    w = z.get("work", {})
    for name, seconds in w.get("seconds", {}).items():
        batch = f" ({w['sentences']} sentences)" if name.startswith(("ablation", "sample_stats_computed")) else \
            f" ({w['text_words']} words)" if not name.startswith("sample") else ""
        out.append((f"ZeroGPU's choice, CPU 1 thread: {LABELS[name]}{batch}", f"{seconds * 1000:.0f} ms", "", ""))
    g = z.get("gpu", {})
    if g and not g.get("available"):
        out.append(("ZeroGPU's decorated call (the ablation's sample) on a GPU", "no CUDA device on this machine", "",
                    ""))
    elif g:
        same = g["bleu_gpu"] == g["bleu_cpu"]
        out.append((f"ZeroGPU's decorated call on {g['device']}: the ablation's sample, GPU / CPU seconds; BLEU "
                    "(every head, heads off) the CPU's to 0.01", f"{g['gpu_s']:.2f} / {g['cpu_s']:.2f} s; "
                    f"{g['bleu_gpu']} vs {g['bleu_cpu']}", "the same BLEU", "yes" if same else "**no**"))
    for name, runs in z.get("off_space", {}).items():
        for mode, b in runs.items():
            if name == "lone":
                out.append((f"Off a Space, one client alone, {mode} (median)", f"{b['median_ms']:.0f} ms", "", ""))
            elif isinstance(b, dict):
                out.append((f"Off a Space, burst {b['clients']} clients × {b['requests_per_client']} distinct "
                            f"sentences, {mode} (p50 / p95, requests/s)", f"{b['median_ms']:.0f} / {b['p95_ms']:.0f} "
                            f"ms, {b['throughput_rps']:.1f} req/s, {b['errors']} errors", "", ""))
    return out
