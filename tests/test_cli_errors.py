"""A missing or corrupt model or run folder: every CLI answers with one line naming the file, exit code 2, and
no traceback. The app's loader raises the same one-line ``CheckpointError``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from model import diagnose, evaluate, export, train, translate
from model.network.checkpoint import CheckpointError
from model.network.inference import Translator
from model.network.tokenizer import train_tokenizer

ROOT = Path(__file__).resolve().parent.parent


def edit_config(**change) -> Callable[[Path], str]:
    def corrupt(folder: Path) -> str:
        path = folder / "config.json"
        path.write_text(json.dumps(json.loads(path.read_text()) | change))
        return "config.json"

    return corrupt


def write(name: str, data: bytes) -> Callable[[Path], str]:
    def corrupt(folder: Path) -> str:
        (folder / name).write_bytes(data)
        return name

    return corrupt


def remove(name: str) -> Callable[[Path], str]:
    def corrupt(folder: Path) -> str:
        (folder / name).unlink()
        return name

    return corrupt


def truncate(name: str) -> Callable[[Path], str]:
    def corrupt(folder: Path) -> str:
        path = folder / name
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return name

    return corrupt


def other_tokenizer(folder: Path) -> str:
    """A valid SentencePiece model of another vocabulary."""
    train_tokenizer(["a dog runs in the park.", "ein hund rennt im park."] * 60, folder / "tokenizer.model", 30)
    return "tokenizer.model"


def link(name: str, target: str) -> Callable[[Path], str]:
    def corrupt(folder: Path) -> str:
        (folder / name).unlink()
        (folder / name).symlink_to(target)
        return name

    return corrupt


def missing_folder(folder: Path) -> str:
    shutil.rmtree(folder)
    return folder.name


# What can be wrong with a model folder (config.json, model.safetensors, tokenizer.model); each returns the
# name the one-line message must contain.
MODEL_FAULTS = {
    "missing folder": missing_folder,
    "config missing": remove("config.json"),
    "config not JSON": write("config.json", b"{not json"),
    "config not an object": write("config.json", b"[1, 2]"),
    "config not UTF-8": write("config.json", b"\xff\xfe\x00"),
    "config unknown key": edit_config(bogus=1),
    "vocab_size 10**12": edit_config(vocab_size=10**12),
    "d_model -1": edit_config(d_model=-1),
    "n_heads 0": edit_config(n_heads=0),
    "n_layers a string": edit_config(n_layers="six"),
    "vocab_size other than the weights": edit_config(vocab_size=80),
    "weights missing": remove("model.safetensors"),
    "weights garbage": write("model.safetensors", b"\x00garbage" * 10),
    "weights a pickle": write("model.safetensors", b"\x80\x04\x95" + b"x" * 50),
    "weights truncated": truncate("model.safetensors"),
    "weights a link to a device": link("model.safetensors", "/dev/zero"),
    "weights a link to nothing": link("model.safetensors", "/nonexistent/model.safetensors"),
    "tokenizer missing": remove("tokenizer.model"),
    "tokenizer garbage": write("tokenizer.model", b"not a sentencepiece model"),
    "tokenizer truncated": truncate("tokenizer.model"),
    "tokenizer of another vocabulary": other_tokenizer,
}

MODEL_CLIS: dict[str, Callable[[Path, Path], tuple[Callable, list[str]]]] = {
    "translate": lambda folder, corpus: (translate.main, ["a dog runs.", "--model", str(folder)]),
    "evaluate": lambda folder, corpus: (
        evaluate.main, ["--model", str(folder), "--data", str(corpus), "--limit", "2", "--beam", "1"]),
    "diagnose": lambda folder, corpus: (
        diagnose.main, ["--model", str(folder), "--data", str(corpus), "--sentences", "2"]),
}


def assert_one_line_error(code: int, err: str, name: str) -> None:
    assert code == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and name in lines[0], lines[0]


@pytest.mark.parametrize("fault", MODEL_FAULTS)
@pytest.mark.parametrize("cli", MODEL_CLIS)
def test_model_folder_faults(cli, fault, tiny_model_dir, corpus, tmp_path, capsys):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    name = MODEL_FAULTS[fault](folder)
    main, argv = MODEL_CLIS[cli](folder, corpus)
    capsys.readouterr()
    code = main(argv)
    assert_one_line_error(code, capsys.readouterr().err, name)


@pytest.mark.parametrize("fault", MODEL_FAULTS)
def test_the_apps_loader_raises_one_line(fault, tiny_model_dir, tmp_path):
    """What app.py sees at start: a CheckpointError whose message is one line naming the file."""
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    name = MODEL_FAULTS[fault](folder)
    with pytest.raises(CheckpointError) as exc:
        Translator(folder, "cpu")
    assert name in str(exc.value) and "\n" not in str(exc.value) and "; " in str(exc.value)  # fault; what to do


@pytest.fixture(scope="module")
def run_dir(corpus, tmp_path_factory) -> Path:
    """A tiny training run folder with one finished epoch (config, tokenizer, last/, epochs/, log.json)."""
    out = tmp_path_factory.mktemp("run") / "run"
    args = ["--data", str(corpus), "--out", str(out), "--preset", "tiny", "--max-tokens", "400", "--epochs", "1",
            "--precision", "fp32"]
    assert train.main(args) == 0
    return out


RUN_FAULTS = {
    "missing folder": missing_folder,
    "config not JSON": write("config.json", b"{not json"),
    "legacy attn_scale set": edit_config(attn_scale=0.5),
    "vocab_size 10**12": edit_config(vocab_size=10**12),
    "n_heads 0": edit_config(n_heads=0),
    "tokenizer garbage": write("tokenizer.model", b"garbage"),
    "trainer state missing": remove("last/trainer.json"),
    "trainer state not JSON": write("last/trainer.json", b"{"),
    "trainer state not a state": write("last/trainer.json", b"[]"),
}
RUN_CLIS: dict[str, Callable[[Path, Path, Path], tuple[Callable, list[str]]]] = {
    "export": lambda run, corpus, tmp: (export.main, ["--run", str(run), "--out", str(tmp / "shipped")]),
    "train --resume": lambda run, corpus, tmp: (
        train.main, ["--data", str(corpus), "--out", str(run), "--resume", "--precision", "fp32"]),
}
ONLY = {  # faults that only one of the two commands reads
    "export": {"epoch weights garbage": write("epochs/epoch_001.safetensors", b"\x00" * 64),
               "log not JSON": write("log.json", b"{")},
    "train --resume": {"last weights garbage": write("last/model.safetensors", b"\x00" * 64),
                       "optimizer state truncated": truncate("last/optimizer.safetensors")},
}


@pytest.mark.parametrize(
    ("cli", "fault"), [(c, f) for c in RUN_CLIS for f in RUN_FAULTS] + [(c, f) for c in ONLY for f in ONLY[c]]
)
def test_run_folder_faults(cli, fault, run_dir, corpus, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    name = {**RUN_FAULTS, **ONLY[cli]}[fault](run)
    main, argv = RUN_CLIS[cli](run, corpus, tmp_path)
    capsys.readouterr()
    code = main(argv)
    assert_one_line_error(code, capsys.readouterr().err, name)


@pytest.mark.parametrize("missing", ["train.en.gz", "val.de.gz"])
def test_missing_data_is_one_line_too(missing, corpus, tmp_path, capsys):
    data = tmp_path / "data"
    shutil.copytree(corpus, data)
    (data / missing).unlink()
    code = train.main(["--data", str(data), "--out", str(tmp_path / "run"), "--preset", "tiny"])
    assert_one_line_error(code, capsys.readouterr().err, missing.removesuffix(".gz"))


def test_a_real_process_prints_no_traceback(tiny_model_dir, tmp_path):
    """The same through ``python -m``: the allocator never sees vocab_size 10**12, and nothing but one line."""
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    edit_config(vocab_size=10**12)(folder)
    proc = subprocess.run([sys.executable, "-m", "model.translate", "a dog.", "--model", str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert_one_line_error(proc.returncode, proc.stderr, str(folder / "config.json"))
    assert proc.stdout == ""


def test_not_found_only_when_nothing_is_there(tiny_model_dir, tmp_path):
    """A weights file that is a link to /dev/zero was reported as "not found"."""
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    link("model.safetensors", "/dev/zero")(folder)
    with pytest.raises(CheckpointError, match="weights file is not a regular file"):
        Translator(folder, "cpu")
    link("model.safetensors", "/nonexistent/w")(folder)
    with pytest.raises(CheckpointError, match=r"weights file is a link to nothing \(/nonexistent/w\)"):
        Translator(folder, "cpu")
    remove("model.safetensors")(folder)
    with pytest.raises(CheckpointError, match="weights file not found"):
        Translator(folder, "cpu")


def _bad_device() -> str:
    import torch

    return f"cuda:{torch.cuda.device_count()}" if torch.cuda.is_available() else "cuda"


TRANSLATE_ARGUMENTS = {  # what was wrong -> (arguments, the argument the message names, words it says)
    "a beam of 10**9 (3.84 TB)": (["--beam", "1000000000"], "--beam", "from 1 (greedy) to 8"),
    "a beam of 0": (["--beam", "0"], "--beam", "from 1 (greedy) to 8"),
    "a negative beam": (["--beam", "-3"], "--beam", "'-3'"),
    "a beam that is no number": (["--beam", "abc"], "--beam", "'abc'"),
    "a NaN scale": (["--scale", "nan"], "--scale", "above 0 and at most 100"),
    "an infinite scale": (["--scale", "inf"], "--scale", "'inf'"),
    "a huge scale": (["--scale", "1e308"], "--scale", "'1e308'"),
    "a zero scale": (["--scale", "0"], "--scale", "above 0"),
    "an unknown device": (["--device", "bogus"], "--device", "cpu, cuda or cuda:N"),
    "a GPU this machine lacks": (["--device", _bad_device()], "--device", "CUDA GPU"),
    "an unknown option": (["--bogus"], "--bogus", "unrecognized"),
}


@pytest.mark.parametrize("case", TRANSLATE_ARGUMENTS)
def test_bad_arguments_are_one_line_naming_them(case, tiny_model_dir, capsys):
    argv, name, words = TRANSLATE_ARGUMENTS[case]
    with pytest.raises(SystemExit) as exit_:
        translate.main(["a dog runs.", "--model", str(tiny_model_dir), *argv])
    err = capsys.readouterr().err
    assert_one_line_error(exit_.value.code, err, name)
    assert words in err and "usage:" not in err, err


def test_evaluate_takes_the_same_checks(tiny_model_dir, capsys):
    with pytest.raises(SystemExit) as exit_:
        evaluate.main(["--model", str(tiny_model_dir), "--beam", "0"])
    assert_one_line_error(exit_.value.code, capsys.readouterr().err, "--beam")


SETTINGS = [  # a bad ATTN_* setting of the app, and the words of its one line
    ("ATTN_MAX_BATCH", "abc", "ATTN_MAX_BATCH must be a whole number of requests from 1 to 256, not 'abc'"),
    ("ATTN_MAX_BATCH", "-5", "not '-5'"),
    ("ATTN_CACHE_MB", "-1", "ATTN_CACHE_MB must be from 0"),
    ("ATTN_CACHE_MB", "nan", "got 'nan'"),
    ("ATTN_BATCH_WAIT_MS", "nan", "ATTN_BATCH_WAIT_MS must be milliseconds from 0 to 1000, not 'nan'"),
    ("ATTN_BATCH_WAIT_MS", "inf", "not 'inf'"),
    ("ATTN_BATCH", "maybe", "ATTN_BATCH must be 1 or 0 (on/off, true/false, yes/no), not 'maybe'"),
    ("ATTN_BATCH_PROCESS", "2", "ATTN_BATCH_PROCESS must be 1 or 0"),
]


@pytest.mark.parametrize(("name", "value", "words"), SETTINGS)
def test_a_bad_setting_is_named(name, value, words, monkeypatch):
    import app

    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as exc:
        app.check_settings()
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_good_settings_pass(monkeypatch):
    import app

    for name, value in (("ATTN_BATCH", ""), ("ATTN_BATCH_PROCESS", "off"), ("ATTN_MAX_BATCH", "8"),
                        ("ATTN_BATCH_WAIT_MS", "2.5"), ("ATTN_CACHE_MB", "0")):
        monkeypatch.setenv(name, value)
    app.check_settings()


def test_the_app_with_a_bad_setting_ends_with_one_line(tiny_model_dir):
    env = {**os.environ, "ATTN_MAX_BATCH": "-5", "ATTN_MODEL_DIR": str(tiny_model_dir), "GRADIO_SERVER_PORT": "1"}
    proc = subprocess.run([sys.executable, "app.py"], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert_one_line_error(proc.returncode, proc.stderr, "ATTN_MAX_BATCH")


def test_the_labs_status_of_a_folder_that_is_not_there_is_one_line(tmp_path, capsys):
    from model.training.lab import main as lab_main

    assert lab_main(["status", "--runs", str(tmp_path / "nonexistent")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a folder of lab runs" in err
    assert lab_main(["status", "--runs", str(tmp_path)]) == 0  # an empty folder: every run "not started"
