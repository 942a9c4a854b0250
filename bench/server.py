"""Against one ``python app.py`` process: cold start, per-request latency, bytes sent, and a classroom load.

Everything goes through the app's named ``/visualise`` endpoint with Gradio's queue protocol over raw HTTP
(``bench.common.GradioHTTP``), never gradio_client (it polls every 50 ms).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

from bench.common import (
    _POOL,
    SENTENCES,
    GradioHTTP,
    app_process,
    client_burst,
    stats,
    tree_status_kb,
    visualise_args,
    words,
)

WORD_COUNTS = (5, 20, 60)
OVERVIEW_OUTPUT = 2  # /visualise outputs: translation, status, overview, detail, (state)


def first_visualisation(app_url: str, spawned_at: float) -> float:
    """Seconds from process start to the first finished /visualise."""
    client = GradioHTTP(app_url)
    try:
        client.call("visualise", visualise_args(words(20)))
    finally:
        client.close()
    return time.perf_counter() - spawned_at


def latency(app_url: str, repeats: int, deadline: float) -> dict:
    """Sequential calls, the word counts interleaved so that background load drifts hit them alike. Each call
    is a sentence the app has not seen (n words from a new place in the pool): the model runs every time
    instead of the result cache answering (the cache has its own row, ``bench.capacity.cache``)."""
    client = GradioHTTP(app_url)
    samples: dict[int, list[float]] = {n: [] for n in WORD_COUNTS}
    try:
        for n in WORD_COUNTS:  # warm-up: first calls of each length pay for allocations
            client.call("visualise", visualise_args(words(n)))
        for r in range(repeats):
            for n in WORD_COUNTS:
                t0 = time.perf_counter()
                client.call("visualise", visualise_args(words(n, start=1 + r % (len(_POOL) - n))))
                samples[n].append(time.perf_counter() - t0)
            if time.perf_counter() > deadline:
                break
    finally:
        client.close()
    return {str(n): stats(s) for n, s in samples.items()}


def scaling_latency(app_url: str, repeats: int) -> dict:
    """The "Why 1/sqrt(d_k)" tab: each interaction is one of these calls (d_k and the factor vary)."""
    client = GradioHTTP(app_url)
    calls = {
        "scaling_variance": lambda i: [i % 11, 0],  # log2 d_k, seed
        "scaling_saturation": lambda i: [i % 11, 16, (i % 5) / 4, 0],  # log2 d_k, keys, factor, seed
        "scaling_live": lambda i: [words(20), (i % 5) / 4, "encoder_self", 1 + i % 6],  # text, factor, kind, layer
    }
    samples: dict[str, list[float]] = {name: [] for name in calls}
    try:
        for name, args in calls.items():
            client.call(name, args(0))  # warm-up (fills the seed's cached curves)
        for i in range(repeats):
            for name, args in calls.items():
                t0 = time.perf_counter()
                client.call(name, args(i + 1))
                samples[name].append(time.perf_counter() - t0)
    finally:
        client.close()
    return {name: stats(s) for name, s in samples.items()}


def heads_latency(app_url: str, repeats: int) -> dict:
    """The Head analysis tab's endpoints, each after one warm call. /head_stats: a new sentence each
    time (the model runs; the sample's statistics come from their file). /ablate: a new single head each time on
    one sentence, so every call decodes the 200-sentence sample once with that head off (the warm call pays for
    the baseline with every head, which is then cached)."""
    client = GradioHTTP(app_url, timeout=600)
    heads = [f"{kind}:{1 + i % 6}:{1 + (i // 6) % 8}" for i in range(48) for kind in ("cross", "encoder_self")]
    samples: dict[str, list[float]] = {"head_stats": [], "ablate": []}
    try:
        client.call("head_stats", [SENTENCES[0]])
        client.call("ablate", [SENTENCES[0], [heads[0]]])
        for i in range(repeats):
            t0 = time.perf_counter()
            client.call("head_stats", [SENTENCES[1 + i % (len(SENTENCES) - 1)]])
            samples["head_stats"].append(time.perf_counter() - t0)
        for i in range(repeats):
            t0 = time.perf_counter()
            client.call("ablate", [SENTENCES[0], [heads[1 + i]]])
            samples["ablate"].append(time.perf_counter() - t0)
    finally:
        client.close()
    return {name: stats(s) for name, s in samples.items()}


def inside_head_latency(app_url: str, repeats: int) -> dict:
    """/inside_head (Inside a head) at 20 words: another head and query of the sentence on screen (its layers' inputs
    cached, as after a first look), and a new sentence each call (its translation and its layers run first)."""
    client = GradioHTTP(app_url)
    kinds = ("encoder_self", "decoder_self", "cross")

    def args(text: str, i: int) -> list:  # text, target, kind, layer, head, query, factor
        return [text, "", kinds[i % 3], 1 + i % 6, 1 + i % 8, 2, None]

    samples: dict[str, list[float]] = {"inside_head": [], "inside_head_new_sentence": []}
    try:
        for i in range(len(kinds)):  # warm-up: each kind's layer inputs for words(20)
            client.call("inside_head", args(words(20), i))
        for i in range(repeats):
            for name, text in (("inside_head", words(20)), ("inside_head_new_sentence", words(20, start=1 + i))):
                t0 = time.perf_counter()
                client.call("inside_head", args(text, i))
                samples[name].append(time.perf_counter() - t0)
    finally:
        client.close()
    return {name: stats(s) for name, s in samples.items()}


def sent_bytes(app_url: str, text: str) -> dict:
    """What /visualise sends for ``text``: the overview output as JSON, and the whole SSE answer."""
    client = GradioHTTP(app_url)
    try:
        outputs, total = client.call("visualise", visualise_args(text))
    finally:
        client.close()
    overview = outputs[OVERVIEW_OUTPUT]
    json.loads(overview["plot"])  # a whole plotly figure
    found = re.search(r"(\d+) source tokens", outputs[1])  # the status line
    return {"overview_bytes": len(json.dumps(overview).encode()), "response_bytes": total,
            "source_tokens": int(found.group(1)) if found else None}


def attention_sent(app_url: str, tokenizer) -> dict:
    """What /attention sends (the SSE event's bytes: every map as JSON, 5 decimals) for 20 and for 100 tokens a side,
    the same text forced as the translation; 100 is the app's limit (the pool's captions, ~140 words, cut to it).
    -> {"20": {"source_tokens", "target_tokens", "bytes"}, "100": {...}}"""
    from bench.payload import text_with_tokens

    client = GradioHTTP(app_url, timeout=600)
    out = {}
    try:
        for n, text in ((20, text_with_tokens(tokenizer, 20)), (100, " ".join(SENTENCES))):
            outputs, total = client.call("attention", [text, text, None])
            data = outputs[0]
            out[str(n)] = {"source_tokens": len(data["source_tokens"]), "target_tokens": len(data["target_tokens"]),
                           "bytes": total}
    finally:
        client.close()
    return out


def load(app_url: str, pid: int, n_clients: int, per_client: int, deadline: float) -> dict:
    """``n_clients`` threads, each with its own connection and its own 20-word window, sending ``per_client``
    requests back to back; the app's RSS before and its peak."""
    rss_before = tree_status_kb(pid, "VmRSS")
    text = lambda c, _r: visualise_args(" ".join(words(60).split()[c % 30:][:20]))  # noqa: E731
    out = client_burst(app_url, n_clients, per_client, text, timeout=max(5.0, deadline - time.perf_counter()),
                       deadline=deadline)
    return {**out, "rss_before_mb": rss_before / 1024, "peak_rss_mb": tree_status_kb(pid, "VmHWM") / 1024}


def run(quick: bool, text_32_tokens: str | None, log: Callable[[str], None] = print, tokenizer=None) -> dict:
    """Start app.py once; cold start first (it is only cold once), then latency, bytes and the load test.
    ``tokenizer`` (the shipped model's): also the bytes of /attention's answer at 20 and 100 tokens a side."""
    repeats, per_client = (5, 2) if quick else (20, 10)
    out: dict = {}
    with app_process(("app.py",)) as app:
        out["cold_start"] = {"to_http_200_s": app.http_200_s,
                             "to_first_visualisation_s": first_visualisation(app.url, app.spawned_at)}
        log(f"  cold start: {out['cold_start']}")
        out["server"] = {"words": latency(app.url, repeats, deadline=time.perf_counter() + 240)}
        log("  latency: " + ", ".join(f"{n} words {v['median_ms']:.0f} ms" for n, v in out["server"]["words"].items()))
        out["scaling"] = scaling_latency(app.url, repeats)
        log("  scaling tab: " + ", ".join(f"{n} {v['median_ms']:.0f} ms" for n, v in out["scaling"].items()))
        out["inside"] = inside_head_latency(app.url, repeats)
        log("  inside a head: " + ", ".join(f"{n} {v['median_ms']:.0f} ms" for n, v in out["inside"].items()))
        out["heads"] = heads_latency(app.url, 2 if quick else 3)
        log("  head analysis: " + ", ".join(f"/{n} {v['median_ms']:.0f} ms" for n, v in out["heads"].items()))
        if text_32_tokens:
            out["payload_sent"] = {"sentence": text_32_tokens, **sent_bytes(app.url, text_32_tokens)}
        if tokenizer is not None:
            out["attention_sent"] = attention_sent(app.url, tokenizer)
            log("  /attention answer: " + ", ".join(f"{n} tokens a side {v['bytes'] / 1e6:.2f} MB"
                                                    for n, v in out["attention_sent"].items()))
        out["load"] = load(app.url, app.proc.pid, n_clients=30, per_client=per_client,
                           deadline=time.perf_counter() + (90 if quick else 300))
        log(f"  load: median {out['load']['median_ms']:.0f} ms, errors {out['load']['errors']}")
    return out
