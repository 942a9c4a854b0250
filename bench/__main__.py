"""`python -m bench [--quick] [--json PATH] [--threads N]`: run every section, print a Markdown table, write JSON.

Progress goes to stderr, the table to stdout. A full run also writes the table, with its date, machine and
command, into bench/RESULTS.md (between its markers, keeping the text around them); a ``--quick`` or
``--sections`` run writes it only where ``--results PATH`` says. The exit status is 1 when a section failed to
run (goals that are missed are reported in the table, not as a failure: timings depend on the machine and its
load).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import sys
import time
import traceback
from importlib.metadata import version
from pathlib import Path

from viz.offline import set_offline_env

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "bench" / "results" / "bench.json"
DEFAULT_RESULTS = ROOT / "bench" / "RESULTS.md"
# the part of RESULTS.md a run rewrites; everything outside these two lines is kept as written
BEGIN, END = "<!-- python -m bench writes from here -->", "<!-- to here -->"
# server also yields load, cold_start and payload_sent; gpu measures nothing without CUDA (bench/gpu.py), nor
# zerogpu's GPU rows (bench/zerogpu.py)
SECTIONS = ("server", "browser", "tabs", "payload", "model", "capacity", "limits", "lab", "gpu", "zerogpu")
GOALS = {"ratio_browser": 3.0, "server_20_words_ms": 60.0, "payload_bytes": 100_000, "model_ratio": 1.15,
         "scaling_ms": 200.0, "model_load_s": 1.0, "inside_head_ms": 150.0, "lecture_move_ms": 500.0}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def meta(threads: int) -> dict:
    import torch

    cuda = torch.cuda.is_available()
    return {
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": f"cuda ({torch.cuda.get_device_name(0)})" if cuda else "cpu",
        "dtype": "float16" if cuda else "float32",  # what Translator picks
        "torch": torch.__version__, "gradio": version("gradio"), "plotly": version("plotly"),
        "python": platform.python_version(), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
        "model_threads": threads, "loadavg_start": list(os.getloadavg()),
    }


def run_all(quick: bool, threads: int, sections: tuple[str, ...] = SECTIONS) -> dict:
    from bench import browser, capacity, gpu, lab, limits, model_speed, payload, server, tabs, zerogpu
    from model.network.checkpoint import TOKENIZER_FILE
    from model.network.inference import ASSETS
    from model.network.tokenizer import Tokenizer

    results: dict = {"quick": quick, "meta": meta(threads), "errors": {}}
    tokenizer = Tokenizer(ASSETS / TOKENIZER_FILE)
    text32 = payload.text_with_tokens(tokenizer, 32)
    jobs = {
        "server": lambda: server.run(quick, text32, log, tokenizer=tokenizer),
        "browser": lambda: {"browser": browser.run(quick, log)},
        "tabs": lambda: {"tabs": tabs.run(quick, log)},
        "payload": lambda: {"payload": payload.run()},
        "model": lambda: {"model": model_speed.run(quick, threads, log)},
        "capacity": lambda: {"capacity": capacity.run(quick, log)},
        "limits": lambda: {"limits": limits.run(quick, log)},
        "lab": lambda: {"lab": lab.run(quick, log)},
        "gpu": lambda: {"gpu": gpu.run(quick, log)},
        "zerogpu": lambda: {"zerogpu": zerogpu.run(quick, log)},
    }
    for name in sections:
        log(f"[bench] {name} ...")
        t0 = time.perf_counter()
        try:
            results.update(jobs[name]())
        except Exception as exc:  # one broken section must not hide the others
            traceback.print_exc()
            results["errors"][name] = f"{type(exc).__name__}: {exc}"[:2000]
        log(f"[bench] {name} done in {time.perf_counter() - t0:.1f} s")
    if "payload" in results and "payload_sent" in results:
        results["payload"]["sent"] = results.pop("payload_sent")
    results["meta"]["loadavg_end"] = list(os.getloadavg())
    return results


def _ok(value: float, goal: float) -> str:
    return "yes" if math.isfinite(value) and value <= goal else "**no**"


def table(r: dict) -> str:
    rows: list[tuple[str, str, str, str]] = []
    if "browser" in r:
        b = r["browser"]
        rows += [
            ("Browser: click (a new sentence) → overview grid drawn (median / p95)",
             f"{b['visualise']['median_ms']:.0f} / {b['visualise']['p95_ms']:.0f} ms", "", ""),
            ("Browser: the same sentences again (result cache) → overview drawn (median / p95)",
             f"{b['cached']['median_ms']:.0f} / {b['cached']['p95_ms']:.0f} ms", "", "") if "cached" in b else None,
            ("Browser: click → echo shown (median / p95)",
             f"{b['echo']['median_ms']:.0f} / {b['echo']['p95_ms']:.0f} ms", "", ""),
            ("Browser: overview ÷ echo", f"{b['ratio']:.1f}×", f"≤ {GOALS['ratio_browser']:.0f}×",
             _ok(b["ratio"], GOALS["ratio_browser"])),
        ]
        if "overview_draws_per_click" in b:  # 1 when the page script draws each figure once (assets/web/draw.js)
            rows.append(("Browser: overview drawn per click (most of any click)", str(b["overview_draws_per_click"]),
                         "1", "yes" if b["overview_draws_per_click"] == 1 else "**no**"))
        if "clones_per_click" in b:  # app.progress_on_components: no event shows its progress on the tabs
            rows.append(("Browser: structuredClone calls per click (Gradio's page copying component data; median)",
                         str(b["clones_per_click"]), "", ""))
        if "lines" in b:  # the alignment view, encoder self-attention, 60 tokens a side, all 8 heads
            lines = b["lines"]
            rows.append(("Browser: alignment view at 60 tokens a side: click a token → its lines shown / click a "
                         "head → new figure drawn (median)", f"{lines['click_token_to_drawn']['median_ms']:.0f} / "
                         f"{lines['click_head_to_drawn']['median_ms']:.0f} ms", "", ""))
        if "lecture" in b:  # assets/web/lecture.js: stops moved in place (bench.lecture_walk)
            lw = b["lecture"]
            rows.append(("Browser: the lecture, a key → the next stop drawn (figure, mark, caption), all stops "
                         "forward and back (median / p95)", f"{lw['median_ms']:.0f} / {lw['p95_ms']:.0f} ms",
                         f"p95 ≤ {GOALS['lecture_move_ms']:.0f} ms", _ok(lw["p95_ms"], GOALS["lecture_move_ms"])))
        if "page_load" in b:  # viz.ui.guards: the page's assets compressed once; the Why tab's sections kept
            rows.append(("Browser: a page load (a fresh visitor, until the first sentence is drawn) → the server's "
                         "CPU time (app + model process; median)", f"{b['page_load']['server_cpu_ms']:.0f} ms", "", ""))
        if "idle_cpu_percent" in b:  # viz.ui.patches.queue_waits_for_events
            rows.append(("The app with no visitor: the server's CPU (app + model process; % of one core over "
                         f"{b.get('idle_seconds', 10)} s)", f"{b['idle_cpu_percent']:.1f} %", "", ""))
        rows = [row for row in rows if row]
        if "until_plotly_react" in b:
            rows.append(("Browser: of which click → Plotly.react (server + network + Gradio's page; the rest is "
                         "drawing)", f"{b['until_plotly_react']['median_ms']:.0f} ms", "", ""))
    if "tabs" in r:  # the tabs after the Attention tab, each interaction against the echo on its page
        from bench.tabs import rows as tabs_rows

        rows += tabs_rows(r["tabs"])
    for n, s in r.get("server", {}).get("words", {}).items():
        goal = f"≤ {GOALS['server_20_words_ms']:.0f} ms" if n == "20" else ""
        ok = _ok(s["median_ms"], GOALS["server_20_words_ms"]) if n == "20" else ""
        rows.append((f"Server: /visualise, {n} words (median / p95)",
                     f"{s['median_ms']:.0f} / {s['p95_ms']:.0f} ms", goal, ok))
    for name, s in r.get("scaling", {}).items():
        rows.append((f"Server: /{name} (Why 1/√d_k tab; median / p95)", f"{s['median_ms']:.0f} / {s['p95_ms']:.0f} ms",
                     f"≤ {GOALS['scaling_ms']:.0f} ms", _ok(s["median_ms"], GOALS["scaling_ms"])))
    for name, s in r.get("inside", {}).items():  # Inside a head tab
        what = "another head and query of the same 20 words" if name == "inside_head" else "a new 20-word sentence"
        goal = GOALS["inside_head_ms"] if name == "inside_head" else None
        rows.append((f"Server: /inside_head ({what}; median / p95)", f"{s['median_ms']:.0f} / {s['p95_ms']:.0f} ms",
                     f"≤ {goal:.0f} ms" if goal else "", _ok(s["median_ms"], goal) if goal else ""))
    for name, s in r.get("heads", {}).items():  # Head analysis tab: after one warm call
        what = ("a new sentence; the sample's statistics from their file" if name == "head_stats" else
                "a new head off; greedy BLEU/chrF of the 200-sentence sample")
        rows.append((f"Server: /{name} (Head analysis tab; {what}; median / p95)",
                     f"{s['median_ms']:.0f} / {s['p95_ms']:.0f} ms", "", ""))
    if "payload" in r:
        p = r["payload"]
        rows.append(("Payload: overview figure, 48 heads × 32 tokens", f"{p['overview_bytes'] / 1000:.1f} KB",
                     "≤ 100 KB", _ok(p["overview_bytes"], GOALS["payload_bytes"])))
        rows.append(("Build + serialise the overview: spec dict (app) / go.Figure + to_json",
                     f"{p['spec_json_ms']:.1f} / {p['figure_json_ms']:.1f} ms = {p['speedup']:.1f}× faster", "", ""))
        if "sent" in p:
            s = p["sent"]
            rows.append((f"Payload: sent by /visualise for {s['source_tokens']} tokens (overview / whole answer)",
                         f"{s['overview_bytes'] / 1000:.1f} / {s['response_bytes'] / 1000:.1f} KB", "≤ 100 KB",
                         _ok(s["overview_bytes"], GOALS["payload_bytes"])))
    if "attention_sent" in r:  # every map as JSON (5 decimals), the same text forced as the translation
        a = r["attention_sent"]
        rows.append(("Payload: sent by /attention for 20 + 20 / 100 + 100 tokens (the maps as JSON)",
                     f"{a['20']['bytes'] / 1000:.0f} KB / {a['100']['bytes'] / 1e6:.1f} MB", "", ""))
    for dev, seconds in r.get("model", {}).get("load_s", {}).items():
        rows.append((f"Model load on {dev}: `Translator()` once torch is imported (median of 3)", f"{seconds:.2f} s",
                     f"< {GOALS['model_load_s']:.0f} s", _ok(seconds, GOALS["model_load_s"])))
    for m in r.get("model", {}).get("rows", []):
        rows.append((f"Model ({m['device']}, {m['dtype']}, {r['model']['threads']} thread(s)): {m['src_tokens']} "
                     f"tokens, {m['steps']} steps, ours with capture / nn.Transformer",
                     f"{m['ours_capture_ms']:.0f} / {m['torch_nn_transformer_ms']:.0f} ms = {m['ratio']:.2f}",
                     f"≤ {GOALS['model_ratio']}", _ok(m["ratio"], GOALS["model_ratio"])))
        rows.append((f"Model ({m['device']}): {m['src_tokens']} tokens, ours without capture",
                     f"{m['ours_no_capture_ms']:.0f} ms (capture costs ×{m['capture_overhead']:.2f})", "", ""))
    if "load" in r:
        ld = r["load"]
        rows += [
            (f"Load: {ld['clients']} clients × {ld['requests_per_client']} requests, each client its own sentence "
             "(cached after its first request; median / p95)",
             f"{ld['median_ms']:.0f} / {ld['p95_ms']:.0f} ms ({ld['throughput_rps']:.1f} req/s)", "", ""),
            ("Load: errors", str(ld["errors"]), "0", "yes" if ld["errors"] == 0 else "**no**"),
            ("Load: peak RSS (VmHWM) of the app + of its model process", f"{ld['peak_rss_mb']:.0f} MB", "", ""),
        ]
    if "cold_start" in r:
        c = r["cold_start"]
        rows += [("Cold start: spawn → HTTP 200", f"{c['to_http_200_s']:.1f} s", "", ""),
                 ("Cold start: spawn → first visualisation", f"{c['to_first_visualisation_s']:.1f} s", "", "")]
    if "capacity" in r:
        from bench.capacity import rows as capacity_rows

        rows += capacity_rows(r["capacity"])
    if "limits" in r:
        from bench.limits import rows as limits_rows

        rows += limits_rows(r["limits"])
    if "lab" in r:
        from bench.lab import rows as lab_rows

        rows += lab_rows(r["lab"])
    if "gpu" in r:
        from bench.gpu import rows as gpu_rows

        rows += gpu_rows(r["gpu"])
    if "zerogpu" in r:
        from bench.zerogpu import rows as zerogpu_rows

        rows += zerogpu_rows(r["zerogpu"])
    m = r["meta"]
    lines = [
        f"Device: {m['device']}, {m['dtype']}; CPU: {m['cpu']} ({m['cpu_count']} cores); torch {m['torch']}, "
        f"gradio {m['gradio']}, plotly {m['plotly']}; load average at start {m['loadavg_start'][0]:.1f}"
        + (" (quick mode)" if r["quick"] else ""),
        "",
        "| metric | value | goal | ok? |",
        "|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
    ]
    lines += [f"\n**{name} failed:** {err.splitlines()[0]}" for name, err in r["errors"].items()]
    return "\n".join(lines)


def results_block(r: dict, command: str) -> str:
    """This run's table for RESULTS.md: when (UTC), the command, then the table (its first line: the machine)."""
    when = r["meta"]["time"][:16].replace("T", " ")
    return f"{BEGIN}\nLast recorded run, {when} UTC: `{command}`\n\n{table(r)}\n{END}"


def write_results(path: Path, r: dict, command: str) -> None:
    """Put this run's block into ``path`` in place of the last one (or at the end), atomically."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    head, found, rest = old.partition(BEGIN)
    if found and END in rest:
        text = head + results_block(r, command) + rest.partition(END)[2]
    else:
        text = (old.rstrip() + "\n\n" if old.strip() else "# Benchmark results\n\n") + results_block(r, command) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a reader sees the old file or the new one, never half of one


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (CI): well under 2 minutes")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"where to write results ({DEFAULT_JSON})")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for the model section (default 1: what the app uses on a CPU)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run (default all: {','.join(SECTIONS)})")
    parser.add_argument("--results", type=Path, default=None,
                        help=f"also write the table there (default: {DEFAULT_RESULTS.relative_to(ROOT)} after a full "
                             "run; a --quick or --sections run writes none unless this says where)")
    args = parser.parse_args(argv)
    command = shlex.join(["python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)])
    sections = tuple(s.strip() for s in args.sections.split(",") if s.strip())
    if unknown := sorted(set(sections) - set(SECTIONS)):
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    set_offline_env()
    t0 = time.perf_counter()
    results = run_all(args.quick, args.threads, sections)
    results["total_s"] = time.perf_counter() - t0
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1, allow_nan=True) + "\n", encoding="utf-8")
    print(table(results))
    full = not args.quick and set(sections) == set(SECTIONS)
    if results_path := args.results or (DEFAULT_RESULTS if full else None):
        write_results(results_path, results, command)
        log(f"[bench] table in {results_path}")
    log(f"[bench] {results['total_s']:.0f} s in all; JSON in {args.json}")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
