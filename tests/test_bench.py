"""`python -m bench --quick` runs end to end for the sections that need no app: present with sane numbers. Never
asserts timings. The server, browser and capacity sections each start the app (~4 minutes together on the 2-core
CPU, too long for this suite): `python -m bench --quick` runs them all."""

from __future__ import annotations

import json
import math
import subprocess
import sys
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
