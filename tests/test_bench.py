"""`python -m bench --quick` runs end to end for the sections that need no app: present with sane numbers. Never
asserts timings. The server, browser and capacity sections each start the app (~4 minutes together on the 2-core
CPU, too long for this suite): `python -m bench --quick` runs them all. A run's table goes into bench/RESULTS.md
(checked with a fake run)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("meta", "payload", "model")
MAY_BE_ZERO = {"errors", "offsite_requests"}  # counts that must be 0, checked on their own


def numbers(tree, path="") -> list[tuple[str, float]]:
    """Every number in a JSON tree (booleans and MAY_BE_ZERO keys left out), with its path."""
    if isinstance(tree, dict):
        return [n for k, v in tree.items() if k not in MAY_BE_ZERO for n in numbers(v, f"{path}.{k}")]
    if isinstance(tree, list):
        return [n for i, v in enumerate(tree) for n in numbers(v, f"{path}[{i}]")]
    if isinstance(tree, bool) or tree is None or isinstance(tree, str):
        return [(path, float("nan"))] if tree is None else []
    return [(path, float(tree))]


def test_quick_bench_without_the_app_writes_sane_json(tmp_path):
    out = tmp_path / "bench.json"
    command = [sys.executable, "-m", "bench", "--quick", "--sections", "payload,model", "--json", str(out)]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "| metric | value | goal | ok? |" in proc.stdout
    results = json.loads(out.read_text(encoding="utf-8"))

    assert results["errors"] == {}
    for section in SECTIONS:
        assert section in results, f"missing section {section}"
    measured = {k: results[k] for k in SECTIONS if k != "meta"}
    bad = [(p, v) for p, v in numbers(measured) if not (math.isfinite(v) and v > 0)]
    assert not bad, f"not positive and finite: {bad}"

    assert {row["src_tokens"] for row in results["model"]["rows"]} >= {20, 60}
    assert results["payload"]["overview_bytes"] <= 100_000


def test_a_run_rewrites_its_block_of_results_md_and_keeps_the_text_around_it(tmp_path):
    """`python -m bench` writes its table into RESULTS.md between the markers (a fake run: no section runs)."""
    from bench.__main__ import BEGIN, DEFAULT_RESULTS, END, write_results

    meta = {"time": "2026-01-02T03:04:05+00:00", "device": "cpu", "dtype": "float32", "cpu": "Test CPU",
            "cpu_count": 2, "torch": "2", "gradio": "6", "plotly": "7", "loadavg_start": [0.5, 0.5, 0.5]}
    run = {"quick": False, "errors": {}, "meta": meta,
           "payload": {"overview_bytes": 90_000, "spec_json_ms": 0.4, "figure_json_ms": 3.2, "speedup": 8.0}}
    path = tmp_path / "RESULTS.md"
    write_results(path, run, "python -m bench")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Benchmark results")
    assert "Last recorded run, 2026-01-02 03:04 UTC: `python -m bench`" in text
    assert "Device: cpu, float32; CPU: Test CPU (2 cores)" in text and "| 90.0 KB | ≤ 100 KB | yes |" in text

    path.write_text(text.replace(BEGIN, "How to read it.\n\n" + BEGIN) + "\n## On a GPU\n", encoding="utf-8")
    run["payload"]["overview_bytes"] = 80_000
    write_results(path, run, "python -m bench --results RESULTS.md")
    again = path.read_text(encoding="utf-8")
    assert "How to read it." in again and again.endswith("## On a GPU\n")
    assert again.count(BEGIN) == 1 and again.count(END) == 1 and "80.0 KB" in again and "90.0 KB" not in again
    assert [p.name for p in tmp_path.iterdir()] == ["RESULTS.md"]  # no temporary file left
    shipped = DEFAULT_RESULTS.read_text(encoding="utf-8")
    assert shipped.count(BEGIN) == 1 and shipped.count(END) == 1, "a full run would append, not replace"


def test_the_lab_section_says_why_it_skips_while_no_sibling_is_shipped(tmp_path, monkeypatch):
    from bench import lab

    monkeypatch.setenv("ATTN_LAB_DIR", str(tmp_path))  # an empty lab: no index.json, no live sibling
    result = lab.run(quick=True, log=lambda _: None)
    assert "no lab sibling" in result["skipped"]
    assert lab.rows(result)[0][1].startswith("skipped: no lab sibling")


def test_the_limits_rows_hold_each_figure_against_its_goal():
    """The limits section's table (``bench.limits.rows``) from a run's results (the shape ``bench.limits.run`` writes;
    the section itself starts the app six times: `python -m bench --sections limits`)."""
    from bench import limits

    ms = {"median_ms": 20.0, "max_ms": 40.0, "n": 10}
    result = {
        "flood": {"alone": {"translate": ms, "visualise": ms, "outcomes": {"complete": 20}, "page_status": 200},
                  "during": {"translate": ms, "visualise": ms, "outcomes": {"complete": 19, "refused 503": 1},
                             "page_status": 200},
                  "flood_statuses": {"200": 2, "429": 300}, "flood_burst_s": 9.0},
        "largest": {"bytes": 10_469_482, "first_ms": 700.0, "cached_ms": 300.0},
        "unread": {"requests": 40, "statuses": {"200": 40}, "rss_before_mb": 690.0, "rss_peak_mb": 1369.0,
                   "peak_at_s": 28.0, "rss_after_mb": 999.0, "after_at_s": 87.0, "log_drop_lines": 5},
        "concurrent": {"requests": 100, "outcomes": {"complete": 100}, "answer_mb": 10.5, "latency": ms,
                       "wall_s": 100.0, "rss_before_mb": 690.0, "rss_peak_mb": 1910.0, "rss_after_mb": 1690.0},
        "bodies": {"answers": {"HTTP/1.1 413 Request Entity Too Large": 8}, "max_s": 0.2, "rss_before_mb": 620.0,
                   "rss_after_mb": 637.0},
        "logs": {"bad_inputs": 100, "outcomes": {"error": 100}, "bytes_per_bad_input": 65.0, "tracebacks": 0,
                 "bytes_per_good_request": 0.0, "example": []},
    }
    rows = limits.rows(result)
    assert len(rows) == 8
    verdicts = [ok for _, _, _, ok in rows if ok]
    # one of the other visitor's requests refused: the flood row fails; 1,000 MB left after the burst: over the bound
    assert verdicts == ["**no**", "yes", "yes", "**no**", "yes"], rows
    values = " | ".join(value for _, value, _, _ in rows)
    assert "10.47 MB" in values and "2 × 200, 300 × 429" in values and "690 / 1369 (28 s) / 999 MB" in values


def test_an_app_runs_in_the_checkout_named_with_its_own_python(tmp_path: Path):
    """bench.common.app_process(checkout=…): another copy of the app (``bench.side_by_side`` sets two side by side)
    runs in its own folder, with its own .venv's python."""
    from bench.common import app_process

    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (tmp_path / "serve.py").write_text(
        "import http.server, os, sys\n"
        "class Say(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        body = f'{os.getcwd()}|{sys.argv[0]}|{sys.executable}'.encode()\n"
        "        self.send_response(200); self.end_headers(); self.wfile.write(body)\n"
        "http.server.HTTPServer(('127.0.0.1', int(os.environ['GRADIO_SERVER_PORT'])), Say).serve_forever()\n",
        encoding="utf-8")
    with app_process(("serve.py",), timeout=30, checkout=tmp_path) as app:
        with urllib.request.urlopen(app.url, timeout=10) as answer:
            cwd, script, python = answer.read().decode().split("|")
    assert Path(cwd) == tmp_path and script == "serve.py"
    assert python == str(tmp_path / ".venv" / "bin" / "python")


def test_page_loads_counts_a_traces_restyling_and_takes_medians(tmp_path: Path):
    """bench.page_loads: the renderers' style recalculations of a Chromium trace (either of its two JSON forms), and
    the medians of (CPU, wall) samples."""
    from bench.page_loads import medians, restyling

    events = [{"name": "UpdateLayoutTree", "ph": "X", "dur": 1500}, {"name": "UpdateLayoutTree", "ph": "X", "dur": 500},
              {"name": "UpdateLayoutTree", "ph": "B"}, {"name": "Layout", "ph": "X", "dur": 9000}]
    for form in ({"traceEvents": events}, events):
        (tmp_path / "trace.json").write_text(json.dumps(form))
        assert restyling(str(tmp_path / "trace.json")) == (2, 2.0)
    assert medians([(5.0, 3.0), (3.0, 2.0), (4.0, 9.0)]) == {"cpu_s": 4.0, "wall_s": 3.0, "loads": 3}


def test_the_endurance_rows_hold_each_figure_against_its_goal():
    """The limits section's slow-body and ten-round memory rows (``bench.endurance.rows``) from a run's results."""
    from bench import endurance

    slow = {"connections": 2100, "addresses": 9, "visits": 20, "served": 19, "open_at_visits_min": 1900,
            "open_at_visits_max": 2048}
    rounds = {"rounds": 10, "requests": 100, "start_mb": 450.0, "start_tree_mb": 780.0, "tree_mb": [1100.0] * 10,
              "rss_mb": [700.0, 705, 707, 708, 709, 709, 710, 711, 712, 713], "last_five_spread_mb": 4.0,
              "bound_mb": endurance.rest_bound_mb(450.0)}
    rows = endurance.rows({"slow_bodies": slow, "memory_rounds": rounds})
    assert [ok for *_, ok in rows] == ["**no**", "yes"], rows  # one visit not served: the slow-body row fails
    assert "19 of 20" in rows[0][1] and "450 → 700, 705" in rows[1][1]
    assert endurance.rest_bound_mb(450.0) == 450 + 256 + 2000 * 50 / 1024 + endurance.HEAP_SLACK_MB
    climbing = {**rounds, "rss_mb": [700.0 + 20 * i for i in range(10)], "last_five_spread_mb": 80.0}
    assert endurance.rows({"memory_rounds": climbing})[0][3] == "**no**"


def test_the_hall_rows_hold_each_figure_against_its_goal():
    """The hall's rows (``bench.hall.rows``) from a run's results (the shape ``bench.hall.run`` writes; the run itself
    serves a hundred clients: `python -m bench.hall`)."""
    from bench import hall

    def latency(median: float, p95: float) -> dict:
        return {"n": 10, "median_ms": median, "p95_ms": p95, "max_ms": p95 + 10}

    def visitor(median: float, outcomes: dict | None = None) -> dict:
        return {"outcomes": outcomes or {"complete": 10}, **latency(median, median * 2)}

    result = {
        "link": "?lecture=1&stop=3", "events_per_page": 9, "visitor_alone": visitor(100.0),
        "class": {"clients": 100, "requests": 300, "outcomes": {"complete": 300}, **latency(700.0, 3100.0),
                  "visitor": visitor(120.0), "server_cpu_s": 30.0},
        "hall": {"clients": 100, "requests": 300, "outcomes": {"complete": 300}, **latency(900.0, 2500.0),
                 "visitor": visitor(180.0), "server_cpu_s": 60.0},
        "pages": {"pages": 100, "complete": 99, "first_figure": latency(400.0, 900.0), "page": latency(1e3, 2e3),
                  "visitor": visitor(150.0)},
        "flood": {"clients": 100, "requests": 300, "outcomes": {"complete": 300}, **latency(1e3, 5000.0),
                  "flood": {"statuses": {"200": 17, "429": 283}}, "visitor": visitor(250.0, {"complete": 9,
                                                                                              "error": 1})},
    }
    rows = hall.rows(result)
    # the class's p95 over 3 s; one page of a hundred incomplete; the visitor 2.5 × alone during the flood, and one
    # of its requests failed (the hall of new sentences is held to none refused: its p95 is the CPU's)
    assert [ok for *_, ok in rows] == ["**no**", "yes", "**no**", "yes", "**no**"], rows
    values = " | ".join(value for _, value, _, _ in rows)
    assert "300 complete; 700 / 3100 ms; 97 ms" in values and "300 complete; 900 / 2500 ms; 194 ms (30 s)" in values
    assert "99 of 100" in values and "(× 2.00)" in values and "17 × 200, 283 × 429" in values
    assert "100 / 120 (× 1.20) / 180 (× 1.80) / 150 (× 1.50) / 250 ms (× 2.50); 1" in values


def test_the_first_open_rows_hold_each_tab_to_a_second():
    """``bench.first_open.rows``: a row per tab, its median and slowest opening, judged by the slowest (≤ 1 s)."""
    from bench import first_open
    from bench.common import stats

    result = {"decoding": stats([0.2, 0.3, 0.25]), "lab": stats([0.8, 1.2, 0.9])}
    rows = first_open.rows(result)
    assert [ok for *_, ok in rows] == ["yes", "**no**"], rows
    assert rows[0][0].startswith("Browser, a tab opened first: Decoding") and rows[1][1] == "900 / 1200 ms"
