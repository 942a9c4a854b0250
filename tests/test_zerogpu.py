"""A ZeroGPU Space (free Hugging Face hosting): only the ablation's sample takes the GPU, the CPU answers when ZeroGPU
refuses, and off such a Space the app is the one without the ``spaces`` package.

With a stand-in for ``spaces`` as it behaves on ZeroGPU (tests/helpers/standin: it records decorated functions, runs
each call in a forked process, stops an app with none at launch, raises ZeroGPU's refusals): the app passes the start-up
check with only the sample's work decorated, reached through an event of the Blocks; no sentence's run asks for the
GPU; CUDA is untouched until ``spaces`` is imported; a decorated ablation gives the CPU's answer, and a refused one
the CPU's with its line. With the real package (tests/requirements.txt) and ``SPACES_ZERO_GPU`` unset: the same
answers and queue as an app where ``spaces`` cannot be imported. On a CUDA machine (skipped without): the sample on
the GPU in float16, the CPU's BLEU to the second decimal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import gradio as gr
import pytest
import torch
from helpers.raw_api import RawClient, api_info, arguments
from helpers.served import served_app
from helpers.zerogpu import HEADS, SAMPLE, SENTENCE, STANDIN, answers

import model.probes.ablation as ablation
import model.serving.zerogpu as zerogpu
from model.probes.ablation import ablate, head_mask, load_sample, parse_heads, sample_scores
from model.serving.runs import Runs
from model.serving.zerogpu import SAMPLE_GPU_S, LentGPU, on_zerogpu, refusal
from viz.text import md_escape
from viz.ui.zerogpu import lent_gpu
from viz.views.head_analysis import ablation_markdown

ROOT = Path(__file__).resolve().parent.parent
CPU_LINE = r"; this ran on the CPU in \d+\.\d s\.$"


@pytest.fixture
def spaces(monkeypatch):
    """The stand-in, imported as ``spaces`` on a ZeroGPU Space (``SPACES_ZERO_GPU=true``); afterwards the modules
    and ``gr.Blocks.launch`` as they were."""
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    ours = [name for name in sys.modules if name.split(".")[0] == "spaces"]
    kept = {name: sys.modules.pop(name) for name in ours}
    launch = gr.Blocks.launch
    monkeypatch.syspath_prepend(str(STANDIN))
    import spaces

    assert Path(spaces.__file__).is_relative_to(STANDIN)
    yield spaces
    gr.Blocks.launch = launch
    for name in [name for name in sys.modules if name.split(".")[0] == "spaces"]:
        del sys.modules[name]
    sys.modules.update(kept)


@pytest.fixture
def small_sample(monkeypatch):
    """The shipped sample's first ``SAMPLE`` pairs, wherever the app loads the sample."""
    small = load_sample().head(SAMPLE)
    monkeypatch.setattr(ablation, "load_sample", lambda *args: small)
    monkeypatch.setattr(zerogpu, "load_sample", lambda *args: small)
    return small


@pytest.mark.parametrize("value, lent", [(None, False), ("", False), ("false", False), ("0", False), ("yes", False),
                                         ("true", True), ("True", True), ("1", True), ("t", True)])
def test_a_zerogpu_space_is_told_by_its_variable_as_spaces_reads_it(value, lent):
    assert on_zerogpu({} if value is None else {"SPACES_ZERO_GPU": value}) is lent


def test_off_zerogpu_spaces_is_not_even_imported():
    had = "spaces" in sys.modules
    assert lent_gpu({}) is None and lent_gpu({"SPACES_ZERO_GPU": "false"}) is None
    assert ("spaces" in sys.modules) is had


def test_zerogpus_refusals_say_why_in_a_few_words(spaces):
    from spaces.zero.decorator import REFUSALS, error

    said = {kind: refusal(error(*REFUSALS[kind])) for kind in REFUSALS}
    assert said == {"quota": "the GPU quota is used up", "queue": "no GPU was free", "no_gpu": "no GPU was free",
                    "duration": "this needs more GPU time than a visitor may ask for"}
    assert refusal(error("ZeroGPU worker error", "GPU task aborted")) == "the GPU run failed"
    assert refusal(RuntimeError("CUDA error: out of memory")) == "the GPU run failed"


def test_on_zerogpu_the_app_passes_the_startup_check_with_only_the_sample_decorated(spaces, small_sample, translator,
                                                                                   tmp_path):
    """Launched with the stand-in: one decorated function (the sample's), asking for its measured duration; every
    public endpoint answered on a sentence with no GPU call; /ablate (an event of the Blocks) runs it once, in a
    forked process, with the CPU's answer; with the quota used up, the CPU's answer and its line, no error."""
    from spaces.zero import decorator, startup

    decorator.calls.clear()
    with served_app(translator, temp_dir=tmp_path) as served:
        assert startup["decorated"] == ["scores_on_device"]  # passed the check ZeroGPU makes at launch
        client = RawClient(served.url, timeout=300)
        try:
            for name, params in api_info(served.url).items():
                if name != "ablate":
                    answer = client.call(name, arguments(params, SENTENCE))
                    assert answer.event == "complete" or answer.message, (name, answer.data)
            assert decorator.calls == []  # a sentence's work never asks for the GPU
            got = client.call("ablate", [SENTENCE, HEADS]).data[0]
            assert [(c["name"], c["duration"]) for c in decorator.calls] == [("scores_on_device", SAMPLE_GPU_S)]
            assert decorator.calls[0]["pid"] != os.getpid()
            expected = ablate(translator, SENTENCE, HEADS, small_sample).to_json_dict()
            assert re.fullmatch(r"No GPU is here; this ran on the CPU \(float32\) in \d+\.\d s\.",
                                got["sample"].pop("note"))
            assert got == expected  # the decorated call's scores are the CPU path's, to the last digit

            decorator.refuse = "quota"
            try:
                refused = client.call("ablate", [SENTENCE, ["cross:2:4"]])
            finally:
                decorator.refuse = None
            assert refused.event == "complete", refused.data  # no error popup
            got = refused.data[0]
            assert re.fullmatch("The GPU quota is used up" + CPU_LINE, got["sample"].pop("note"))
            assert got == ablate(translator, SENTENCE, ["cross:2:4"], small_sample).to_json_dict()
            assert len(decorator.calls) == 1  # refused: nothing ran on a lent GPU
        finally:
            client.close()


@pytest.mark.parametrize("refuse, reason", [("quota", "The GPU quota is used up"),
                                            ("duration", "This needs more GPU time than a visitor may ask for"),
                                            ("no_gpu", "No GPU was free"), ("queue", "No GPU was free")])
def test_a_refused_call_is_answered_on_the_cpu_with_one_line(spaces, small_sample, translator, refuse, reason):
    from spaces.zero import decorator

    lent = LentGPU(translator, spaces.GPU, small_sample)
    mask = head_mask(parse_heads(HEADS, 2, 4), 2, 4)
    progress: list[float] = []
    decorator.refuse = refuse
    try:
        before, after, line = lent.scores(mask, lambda fraction, message: progress.append(fraction))
    finally:
        decorator.refuse = None
    assert (before, after, "") == sample_scores(translator, small_sample, mask)
    assert re.fullmatch(reason + CPU_LINE, line)
    assert progress[0] == 0.0 and progress[-1] == 1.0  # the CPU's run shows its progress too


def test_a_failed_call_is_answered_on_the_cpu_too(spaces, small_sample, translator):
    from spaces.zero import decorator

    lent = LentGPU(translator, spaces.GPU, small_sample, device_model=object())  # fails in the forked process
    decorator.calls.clear()
    before, after, line = lent.scores(None)
    assert len(decorator.calls) == 1 and re.fullmatch("The GPU run failed" + CPU_LINE, line)
    assert (before, after, "") == sample_scores(translator, small_sample, None)


def test_runs_on_zerogpu_batch_as_anywhere_and_lend_only_the_sample(spaces, small_sample, translator):
    runs = Runs(translator, gpu=spaces.GPU)
    try:
        assert runs.batched is not None and runs.toy_device == translator.device  # batching stays on
        assert set(spaces.zero.decorator.decorated_cache) == {runs.lent.scores_on_device, runs.lent.on_device}
        result = runs.ablate(SENTENCE, HEADS)
        assert result.note.startswith("No GPU is here; this ran on the CPU")
        assert ablation_markdown(result).endswith("\n\n" + md_escape(result.note))  # the tab's last line
        cpu = ablate(translator, SENTENCE, HEADS, small_sample)
        assert (result.before, result.after, result.translation_before) == (cpu.before, cpu.after,
                                                                            cpu.translation_before)
        assert runs.ablate(SENTENCE, HEADS) is result  # cached as before: no second GPU call
    finally:
        runs.batched.close()


STARTUP = """
import json, sys, torch
touched, seen = [], {}
for name in ("is_available", "device_count", "current_device", "init", "_lazy_init", "get_device_name"):
    def trip(*args, _name=name, _original=getattr(torch.cuda, name), **kwargs):
        touched.append(_name)
        return _original(*args, **kwargs)
    setattr(torch.cuda, name, trip)
import builtins
_import = builtins.__import__
def watch(name, *args, **kwargs):
    before = list(touched)
    module = _import(name, *args, **kwargs)
    if name == "spaces" and "spaces" not in seen:
        seen["spaces"] = before
    return module
builtins.__import__ = watch
import app
translator = app.load_translator(sys.argv[1])
import spaces
print(json.dumps({"touched_before_spaces": seen.get("spaces"), "spaces": spaces.__file__,
                  "initialized": torch.cuda.is_initialized(), "device": str(translator.device)}))
"""


def test_spaces_is_imported_before_anything_touches_cuda(tiny_model_dir):
    """``python app.py``'s way in a fresh interpreter, with the stand-in on a ZeroGPU Space: torch.cuda's functions are
    watched from torch's import on; none is called before ``import spaces``, and the served model is the CPU's."""
    env = {**os.environ, "SPACES_ZERO_GPU": "true", "ATTN_BATCH": "0",
           "PYTHONPATH": os.pathsep.join([str(STANDIN), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(STARTUP), str(tiny_model_dir)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert Path(got["spaces"]).is_relative_to(STANDIN)
    assert got["touched_before_spaces"] == [] and got["initialized"] is False
    assert got["device"] == "cpu"


def test_with_the_real_package_and_no_zerogpu_the_app_is_the_one_without_it(serve, small_sample, tiny_model_dir,
                                                                            tmp_path):
    """The package from PyPI, imported here (SPACES_ZERO_GPU unset): its decorator changes nothing, and the app's
    answers and queue are those of an app in a process where ``import spaces`` fails."""
    import spaces  # the real one: tests/requirements.txt

    assert "site-packages" in spaces.__file__ and not on_zerogpu()

    def f():
        return 1

    assert spaces.GPU(f) is f and spaces.GPU(duration=SAMPLE_GPU_S)(f) is f
    served = serve("tiny")
    here = answers(served.url)
    assert all("error" not in answer for answer in here.values()), here
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])}
    out = subprocess.run([sys.executable, "-m", "helpers.zerogpu", str(tiny_model_dir), str(tmp_path)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    without = json.loads(out.stdout.split("answers: ", 1)[1].splitlines()[0])
    assert without["concurrency"] == served.demo._queue.default_concurrency_limit  # batching's width, both
    assert_same(json.loads(json.dumps(here)), without["answers"])


def assert_same(got, want, path: str = "", atol: float = 2e-4) -> None:
    """``got`` equals ``want`` leaf by leaf: texts, tokens and shapes exactly, weights within ``atol`` (the answers
    round them to 4 or 5 decimals; two processes' matrix products may differ in the last bit, which rounding can carry
    into the last decimal kept: seen on an AMD EPYC machine, never on an Intel Xeon one)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), path
        for key in want:
            assert_same(got[key], want[key], f"{path}.{key}", atol)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_same(a, b, f"{path}[{i}]", atol)
    elif isinstance(want, float) and not isinstance(got, bool):
        assert got == pytest.approx(want, abs=atol), path
    else:
        assert got == want, path


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here (CI has none)")


@needs_cuda
def test_the_sample_on_the_gpu_scores_as_on_the_cpu(spaces):
    """The shipped model: the decorated call's model is on cuda in float16, its sample's BLEU the CPU's to the second
    decimal; both times printed (pytest -s)."""
    from model.network.inference import Translator

    cpu = Translator(device="cpu")
    lent = LentGPU(cpu, spaces.GPU)
    assert lent.device_model.device.type == "cuda" and lent.device_model.dtype == torch.float16
    mask = head_mask(parse_heads(["cross:6:2", "encoder_self:1:1"], 6, 8), 6, 8)
    start = time.perf_counter()
    before, after, line = lent.scores(mask)
    gpu_s = time.perf_counter() - start
    start = time.perf_counter()
    cpu_before, cpu_after, _ = sample_scores(cpu, lent.sample, mask)
    cpu_s = time.perf_counter() - start
    print(f"\nthe ablation's sample: GPU {gpu_s:.1f} s ({line}), CPU {cpu_s:.1f} s")
    assert line.startswith("The sample ran on a lent GPU")
    assert round(before.bleu, 2) == round(cpu_before.bleu, 2) and round(after.bleu, 2) == round(cpu_after.bleu, 2)


def test_what_a_space_reads_first_holds():
    """``python -m bench.space``'s static checks (the whole smoke test needs root and minutes): the front matter's
    Python and Gradio are the requirements', and every tracked file over 10 MB goes to Git LFS."""
    from bench import space

    meta = space.front_matter()
    assert meta["python_version"] == "3.11" and meta["app_file"] == "app.py"
    assert meta["sdk_version"] == space.pins(ROOT / "requirements.txt")["gradio"]
    assert space.pins(ROOT / "tests" / "requirements.txt")["spaces"] == spaces_version()
    repo = space.repository()
    assert repo["big"] and all(how == "lfs" for _, how in repo["big"].values()), repo["big"]
    assert 0 < repo["lfs_bytes"] < repo["bytes"]


def spaces_version() -> str:
    from importlib.metadata import version

    return version("spaces")


def test_the_bench_rows_say_what_was_measured_and_what_was_not():
    from bench.zerogpu import rows

    table = rows({"work": {"sentences": 200, "text_words": 20, "seconds": {"ablation_sample_both": 6.7,
                                                                           "attention": 0.11}},
                  "gpu": {"available": False}})
    assert table[0][0].endswith("every head on and heads off (the first ablation) (200 sentences)")
    assert table[0][1] == "6700 ms" and table[1][1] == "110 ms" and table[1][0].endswith("(20 words)")
    assert table[2][1] == "no CUDA device on this machine"
