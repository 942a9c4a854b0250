"""Memory and throughput under many users (bounded memory, bursts, batching), each against its own app.py process.

- ``memory``: RSS of the app (with its model process) after the first 50 fresh sessions and after ``sessions``
  (1,000; quick: 80), each one /visualise of a distinct sentence at the 100-token limit on both sides (a given
  target, so both sides are exactly 100 tokens). The maps live in the byte-bounded cache, the sessions keep keys:
  the growth from 50 to 1,000 must stay under 150 MB.
- ``burst``: a classroom's burst, every request a DISTINCT sentence (no cache hits): 30 clients × 10 requests
  and 100 clients × 3, p50/p95 and requests/s, with batching on (the app as served: batches in its model
  process), with batching in the server's own process (``ATTN_BATCH_PROCESS=0``: where the gain comes from)
  and with ``ATTN_BATCH=0`` (two at a time, as before), in the same run; plus a lone client's latency (batching
  must not slow it).
- ``cache``: an example sentence clicked in one session, then in another (the second finds it cached).

Every request is a fresh Gradio session (raw ``/gradio_api/call/…`` without a session hash), over raw HTTP.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from bench.common import (
    _POOL,
    GradioHTTP,
    app_process,
    client_burst,
    cpu_seconds,
    read_status_kb,
    stats,
    tree_status_kb,
    visualise_args,
    words,
)

MEMORY_BASELINE = 50  # sessions before the baseline RSS is read
BURSTS = ((30, 10), (100, 3))  # (clients, requests per client)
QUICK_BURSTS = ((30, 2), (100, 1))
MODES = {"batched": {}, "batched in the server's process": {"ATTN_BATCH_PROCESS": "0"},
         "unbatched": {"ATTN_BATCH": "0"}}  # mode -> the app's environment
GOALS = {"memory_growth_mb": 150.0, "30x10_p95_ms": 1000.0, "100x3_p95_ms": 3000.0, "speedup": 3.0}


def long_text(i: int, shift: int = 0) -> str:
    """A distinct sentence of well over 100 tokens (the app cuts it to 100): a number, then the caption
    pool rotated by ``i``."""
    k = (i + shift) % len(_POOL)
    return f"Picture {i}: " + " ".join(_POOL[k:] + _POOL[:k])


def distinct_text(i: int) -> str:
    """A distinct sentence of about 20 words (~25 tokens), like a student's own."""
    return f"Number {i}: " + words(18, start=(7 * i) % (len(_POOL) - 18))


def memory(quick: bool, log: Callable[[str], None]) -> dict:
    """RSS after ``MEMORY_BASELINE`` fresh 100-token sessions and after all of them (two clients at a time)."""
    total = 80 if quick else 1000
    rss: dict[int, float] = {}
    with app_process(("app.py",)) as app:
        rss[0] = tree_status_kb(app.proc.pid, "VmRSS") / 1024
        done = 0
        for upto in (MEMORY_BASELINE, total):
            n = upto - done
            run = client_burst(app.url, 2, n // 2, lambda c, r, base=done: [
                long_text(base + 2 * r + c), long_text(base + 2 * r + c, shift=40), "encoder_self", 1, 0])
            if run["errors"]:
                raise RuntimeError(f"memory: {run['errors']} failed requests, e.g. {run['error_examples']}")
            done = upto
            rss[upto] = tree_status_kb(app.proc.pid, "VmRSS") / 1024
            log(f"  memory: {upto} sessions, RSS {rss[upto]:.0f} MB ({run['median_ms']:.0f} ms per request)")
        peak = tree_status_kb(app.proc.pid, "VmHWM") / 1024
        model_process = (tree_status_kb(app.proc.pid, "VmRSS") - read_status_kb(app.proc.pid, "VmRSS")) / 1024
    return {"sessions": total, "baseline_sessions": MEMORY_BASELINE, "rss_start_mb": rss[0],
            "rss_baseline_mb": rss[MEMORY_BASELINE], "rss_end_mb": rss[total], "peak_rss_mb": peak,
            "model_process_rss_mb": model_process,
            "growth_mb": rss[total] - rss[MEMORY_BASELINE],
            "growth_per_session_kb": 1024 * (rss[total] - rss[MEMORY_BASELINE]) / (total - MEMORY_BASELINE)}


def burst(quick: bool, log: Callable[[str], None], modes: dict[str, dict] = MODES) -> dict:
    """Each burst in each of ``modes`` (name -> the app's environment), each mode in its own app process."""
    out: dict = {}
    offset = 0  # every request of the whole section is a sentence never sent before
    for mode, env in modes.items():
        with app_process(("app.py",), env=env) as app:
            client_burst(app.url, 2, 2, lambda c, r, o=offset: visualise_args(distinct_text(o + 2 * c + r)))  # warm
            lone = client_burst(app.url, 1, 5 if quick else 20,
                                lambda c, r, o=offset + 4: visualise_args(distinct_text(o + r)))
            offset += 100
            out.setdefault("lone", {})[mode] = lone
            for clients, per_client in (QUICK_BURSTS if quick else BURSTS):
                cpu_before = cpu_seconds(app.proc.pid)
                run = client_burst(app.url, clients, per_client, lambda c, r, o=offset, n=per_client: visualise_args(
                    distinct_text(o + c * n + r)))
                run["server_cores"] = (cpu_seconds(app.proc.pid) - cpu_before) / run["wall_s"]  # app + model process
                offset += clients * per_client
                out.setdefault(f"{clients}x{per_client}", {})[mode] = run
                log(f"  burst {clients}×{per_client} {mode}: p50 {run['median_ms']:.0f} ms, "
                    f"p95 {run['p95_ms']:.0f} ms, {run['throughput_rps']:.1f} req/s, errors {run['errors']}, "
                    f"server {run['server_cores']:.2f} cores")
    for name, runs in out.items():
        if name != "lone" and {"batched", "unbatched"} <= set(runs):
            runs["speedup"] = runs["batched"]["throughput_rps"] / max(runs["unbatched"]["throughput_rps"], 1e-9)
    return out


def cache(quick: bool, log: Callable[[str], None]) -> dict:
    """The Attention tab's sample sentences: first click (the model runs) and a second click from another session."""
    from viz.views.attention.maps import SAMPLE_SENTENCES

    examples = list(SAMPLE_SENTENCES)[: 3 if quick else None]
    first, second = [], []
    with app_process(("app.py",)) as app:
        client = GradioHTTP(app.url)
        try:
            client.call("visualise", visualise_args(words(5)))  # warm-up
            for text in examples:
                for samples in (first, second):
                    t0 = time.perf_counter()
                    client.call("visualise", visualise_args(text))
                    samples.append(time.perf_counter() - t0)
        finally:
            client.close()
    out = {"examples": len(examples), "first": stats(first), "second": stats(second)}
    out["speedup"] = out["first"]["median_ms"] / out["second"]["median_ms"]
    log(f"  cache: first click {out['first']['median_ms']:.0f} ms, second {out['second']['median_ms']:.0f} ms")
    return out


def run(quick: bool, log: Callable[[str], None] = print) -> dict:
    return {"memory": memory(quick, log), "burst": burst(quick, log), "cache": cache(quick, log),
            "cpu_count": os.cpu_count()}


def _ok(value: float, goal: float, above: bool = False) -> str:
    met = value >= goal if above else value <= goal
    return "yes" if met and value == value else "**no**"


def rows(c: dict) -> list[tuple[str, str, str, str]]:
    """The section's rows of the bench table: (metric, value, goal, ok?)."""
    out = []
    if "memory" in c:
        m = c["memory"]
        out.append((f"Memory: app + model process RSS after {m['baseline_sessions']} → {m['sessions']} fresh sessions "
                    "at 100 tokens a side",
                    f"{m['rss_baseline_mb']:.0f} → {m['rss_end_mb']:.0f} MB (+{m['growth_mb']:.0f} MB, "
                    f"{m['growth_per_session_kb']:.0f} KB per session; of it the model process "
                    f"{m.get('model_process_rss_mb', 0):.0f} MB)", f"≤ +{GOALS['memory_growth_mb']:.0f} MB",
                    _ok(m["growth_mb"], GOALS["memory_growth_mb"])))
    for name, runs in c.get("burst", {}).items():
        if name == "lone":
            modes = [m for m in MODES if m in runs]
            out.append((f"Burst: one client alone, distinct sentences, {' / '.join(modes)} (median)",
                        " / ".join(f"{runs[m]['median_ms']:.0f}" for m in modes) + " ms", "no worse", ""))
            continue
        goal = GOALS.get(f"{name}_p95_ms")  # the goals are for the full bursts, not the quick ones
        for mode in (m for m in MODES if m in runs):
            b = runs[mode]
            out.append((f"Burst {b['clients']} clients × {b['requests_per_client']} distinct sentences, {mode} "
                        "(p50 / p95, requests/s, CPU cores the server used)", f"{b['median_ms']:.0f} / "
                        f"{b['p95_ms']:.0f} ms, {b['throughput_rps']:.1f} req/s, {b.get('server_cores', 0):.2f} cores, "
                        f"{b['errors']} errors",
                        f"p95 ≤ {goal:.0f} ms" if goal and mode == "batched" else "",
                        _ok(b["p95_ms"], goal) if goal and mode == "batched" else ""))
        out.append((f"Burst {name.replace('x', ' × ')}: throughput batched ÷ unbatched", f"{runs['speedup']:.1f}×",
                    f"≥ {GOALS['speedup']:.0f}×", _ok(runs["speedup"], GOALS["speedup"], above=True)))
    if "cache" in c:
        k = c["cache"]
        out.append((f"Cache: an example sentence, first click / second click ({k['examples']} examples, median)",
                    f"{k['first']['median_ms']:.0f} / {k['second']['median_ms']:.0f} ms ({k['speedup']:.1f}× "
                    "faster)", "", ""))
    return out
