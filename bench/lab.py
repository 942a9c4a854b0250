"""Opening a lab sibling: its first sentence (weights loaded on demand) against a sentence on a sibling already
open and the shipped model's, and the app's memory as every shipped sibling is opened in turn.

Against one ``app.py`` process, over raw HTTP (``/lab_attention``). At most two siblings stay loaded beside
the shipped model (least recently used first out, ``model.serving.lab``), so the memory after opening all of
them must stay within two siblings' growth of the memory after opening two. Skipped (with a reason) while no
sibling's weights are shipped in ``assets/lab``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.common import GradioHTTP, app_process, stats, tree_status_kb, words

GOALS = {"open_vs_shipped": 10.0}  # a sibling's first sentence, weights loaded: at most 10× the shipped model's


def _timed(client: GradioHTTP, text: str, run: str) -> float:
    t0 = time.perf_counter()
    client.call("lab_attention", [text, run])
    return time.perf_counter() - t0


def run(quick: bool, log: Callable[[str], None]) -> dict:
    from model.serving.lab import SHIPPED, Lab

    live = Lab().live
    if not live:
        return {"skipped": "no lab sibling's weights are shipped in assets/lab yet"}
    repeats = 2 if quick else 5
    sentences = [words(12, start=3 * i) for i in range(3 * repeats + len(live) + 2)]
    out: dict = {"live": live}
    with app_process(("app.py",)) as app:
        client = GradioHTTP(app.url)
        try:
            shipped = [_timed(client, sentences.pop(), SHIPPED) for _ in range(repeats)]
            rss_mb = {"start": tree_status_kb(app.proc.pid, "VmRSS") / 1024}
            opened = []
            for name in live:  # cold: each sibling's first sentence loads its weights
                opened.append(_timed(client, sentences.pop(), name))
                rss_mb[f"after {name}"] = tree_status_kb(app.proc.pid, "VmRSS") / 1024
                log(f"[lab] opened {name}: {opened[-1] * 1000:.0f} ms, RSS {rss_mb[f'after {name}']:.0f} MB")
            warm = [_timed(client, sentences.pop(), live[-1]) for _ in range(repeats)]  # already open
        finally:
            client.close()
    out.update({
        "shipped": stats(shipped), "open": stats(opened), "warm": stats(warm), "rss_mb": rss_mb,
        "open_vs_shipped": stats(opened)["median_ms"] / stats(shipped)["median_ms"],
    })
    steps = list(rss_mb.values())
    # growth past the first two siblings (the LRU keeps two): what a third one added, at most one sibling's worth
    if len(steps) > 3:
        out["growth_two_mb"] = steps[2] - steps[0]
        out["growth_rest_mb"] = steps[-1] - steps[2]
    return out


def rows(r: dict) -> list[tuple[str, str, str, str]]:
    """The lab's rows of the bench table."""
    if "skipped" in r:
        return [("Lab: opening a sibling", f"skipped: {r['skipped']}", "", "")]
    ratio, goal = r["open_vs_shipped"], GOALS["open_vs_shipped"]
    out = [
        ("Lab: a sibling's first sentence, weights loaded on demand / the shipped model's sentence / a sentence "
         "on a sibling already open (/lab_attention, 12 words; median)",
         f"{r['open']['median_ms']:.0f} / {r['shipped']['median_ms']:.0f} / {r['warm']['median_ms']:.0f} ms "
         f"= {ratio:.1f}× to open", f"≤ {goal:.0f}×", "yes" if ratio <= goal else "**no**"),
    ]
    if "growth_rest_mb" in r:
        out.append((f"Lab: RSS after opening {len(r['live'])} siblings in turn (two stay loaded): growth for the "
                    "first two / for the rest", f"{r['growth_two_mb']:.0f} / {r['growth_rest_mb']:.0f} MB", "", ""))
    return out
