"""Checkpoints (safetensors only, clear one-line errors) and exact resume of training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from model.checkpoint import CheckpointError, load_config, load_model, read_tensors, save_model
from model.config import TINY
from model.train import learning_rate, main
from model.transformer import EncoderDecoder


def test_save_load_gives_identical_outputs(tmp_path):
    model = EncoderDecoder(TINY).eval()
    save_model(model, tmp_path)
    loaded = load_model(tmp_path)
    src = torch.randint(4, TINY.vocab_size, (2, 5))
    tgt = torch.randint(4, TINY.vocab_size, (2, 4))
    torch.testing.assert_close(loaded(src, tgt), model(src, tgt), atol=0, rtol=0)
    assert not list(tmp_path.glob("*.pt")) and not list(tmp_path.glob("*.bin"))


def test_checkpoint_faults_are_one_line_naming_the_file(tmp_path):
    model = EncoderDecoder(TINY)
    save_model(model, tmp_path / "ok")
    with pytest.raises(CheckpointError, match="missing_dir.*not found"):
        load_model(tmp_path / "missing_dir")
    # corrupt weights
    bad = tmp_path / "corrupt"
    save_model(model, bad)
    (bad / "model.safetensors").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(CheckpointError, match=r"corrupt/model\.safetensors: not a readable safetensors") as exc:
        load_model(bad)
    assert "\n" not in str(exc.value)
    # a pickle is never loaded
    (bad / "model.safetensors").write_bytes(b"\x80\x04\x95" + b"x" * 50)
    with pytest.raises(CheckpointError):
        load_model(bad)
    # weights from another config
    mismatch = tmp_path / "mismatch"
    save_model(EncoderDecoder(TINY.with_(d_model=16, n_heads=2, d_ff=32)), mismatch)
    (mismatch / "config.json").write_text(TINY.to_json())
    with pytest.raises(CheckpointError, match="do not match the config.*shape"):
        load_model(mismatch)
    # missing and broken config
    (mismatch / "config.json").unlink()
    with pytest.raises(CheckpointError, match="config.json: config file not found"):
        load_model(mismatch)
    (mismatch / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="config.json: not valid JSON"):
        load_model(mismatch)
    (mismatch / "config.json").write_text(json.dumps({"d_model": 32, "bogus": 1}))
    with pytest.raises(CheckpointError, match="unknown config keys: bogus"):
        load_model(mismatch)


def test_learning_rate_schedule_follows_the_paper():
    d, warmup = 512, 4000
    assert learning_rate(warmup, d, warmup) == pytest.approx(d**-0.5 * warmup**-0.5)
    assert learning_rate(10, d, warmup) < learning_rate(100, d, warmup) < learning_rate(warmup, d, warmup)
    assert learning_rate(4 * warmup, d, warmup) == pytest.approx(learning_rate(warmup, d, warmup) / 2)


def train(corpus, out, *extra):
    args = [
        "--data",
        str(corpus),
        "--out",
        str(out),
        "--preset",
        "tiny",
        "--max-tokens",
        "120",
        "--precision",
        "fp32",
        "--seed",
        "3",
        "--epochs",
        "2",
        *extra,
    ]
    assert main(args) == 0


def test_interrupted_training_resumes_exactly(corpus, tmp_path):
    """Killed mid-epoch (simulated by --max-steps) then --resume == one uninterrupted run."""
    train(corpus, tmp_path / "a", "--max-steps", "30")
    train(corpus, tmp_path / "b", "--max-steps", "11")
    state = json.loads((tmp_path / "b" / "last" / "trainer.json").read_text())
    assert (state["step"], state["epoch"]) == (11, 0) and state["batch"] == 11
    train(corpus, tmp_path / "b", "--max-steps", "30", "--resume")  # crosses an epoch boundary
    a = read_tensors(tmp_path / "a" / "last" / "model.safetensors")
    b = read_tensors(tmp_path / "b" / "last" / "model.safetensors")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=0, rtol=0, msg=name)
    opt_a = read_tensors(tmp_path / "a" / "last" / "optimizer.safetensors")
    opt_b = read_tensors(tmp_path / "b" / "last" / "optimizer.safetensors")
    for name in opt_a:
        torch.testing.assert_close(opt_a[name], opt_b[name], atol=0, rtol=0, msg=name)


def test_training_writes_epoch_log(corpus, tmp_path):
    train(corpus, tmp_path, "--epochs", "1")
    log = json.loads((tmp_path / "log.json").read_text())
    assert [r["epoch"] for r in log] == [1]
    assert {"train_loss", "val_loss", "val_bleu", "elapsed_s"} <= set(log[0])
    assert (tmp_path / "best" / "model.safetensors").is_file()
    assert main(["--data", str(corpus), "--out", str(tmp_path / "nothing"), "--resume"]) == 2


def test_sigterm_writes_a_checkpoint_that_resumes(corpus, tmp_path):
    """A killed run (SIGTERM, as `kill` sends) stops at a step boundary with a checkpoint; --resume goes on."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    args = [sys.executable, "-m", "model.train", "--data", str(corpus), "--out", str(out), "--preset", "tiny",
            "--max-tokens", "60", "--precision", "fp32", "--epochs", "50", "--threads", "1"]
    proc = subprocess.Popen(args, cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while not (out / "epochs").is_dir() and time.monotonic() < deadline:  # wait until it is training
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "stopped at step" in stdout
    step = json.loads((out / "last" / "trainer.json").read_text())["step"]
    assert step > 0
    train(corpus, out, "--resume", "--max-steps", str(step + 2))
    assert json.loads((out / "last" / "trainer.json").read_text())["step"] == step + 2


def test_architecture_overrides_lr_scale_and_export(corpus, tmp_path):
    """--d-model/--d-ff/--dropout reach the saved config; --lr-scale multiplies the schedule; export
    averages the last epochs into float16 weights that load, and writes a card from the log."""
    from model.export import main as export

    run = tmp_path / "run"
    train(corpus, run, "--d-model", "16", "--d-ff", "24", "--dropout", "0.2", "--attn-dropout", "0.1",
          "--relu-dropout", "0.15", "--lr-scale", "3", "--branch-init-gain", "0.5")
    cfg = load_config(run)
    assert (cfg.d_model, cfg.d_ff, cfg.dropout, cfg.n_layers) == (16, 24, 0.2, TINY.n_layers)
    assert (cfg.attn_dropout, cfg.relu_dropout) == (0.1, 0.15)
    log = json.loads((run / "log.json").read_text())
    assert [r["lr_scale"] for r in log] == [3.0, 3.0]
    assert log[-1]["lr"] == pytest.approx(3 * learning_rate(log[-1]["step"], 16, 2000))

    epochs = [read_tensors(run / "epochs" / f"epoch_00{i}.safetensors") for i in (1, 2)]
    assert export(["--run", str(run), "--out", str(tmp_path / "shipped"), "--average", "2"]) == 0
    shipped = read_tensors(tmp_path / "shipped" / "model.safetensors")
    for name, value in shipped.items():
        assert value.dtype == torch.float16, name
        mean = (epochs[0][name].double() + epochs[1][name].double()) / 2
        torch.testing.assert_close(value.double(), mean, atol=2e-3, rtol=1e-3, msg=name)
    card = (tmp_path / "shipped" / "MODEL_CARD.md").read_text()
    assert "| 2 | 16 | 4 | 4 | 24 |" in card  # N, d_model, h, d_k, d_ff of the trained config
    assert "epoch_001.safetensors, epoch_002.safetensors" in card
    assert "| 2 | 0.2 | 3 |" in card  # epoch 2: its dropout and lr scale
    assert "W_2 scaled by 0.5" in card
    from model.inference import Translator

    assert Translator(tmp_path / "shipped", device="cpu").translate("a dog runs") is not None


def test_anneal_falls_linearly_to_zero_and_stops_there(corpus, tmp_path):
    from argparse import Namespace

    from model.train import scheduled_lr

    args = Namespace(lr_scale=2.0, warmup=10, anneal=[100, 200])
    assert scheduled_lr(50, 64, args) == pytest.approx(2 * learning_rate(50, 64, 10))  # before: the schedule
    assert scheduled_lr(150, 64, args) == pytest.approx(learning_rate(150, 64, 10))  # halfway: half of it
    assert scheduled_lr(200, 64, args) == 0.0 and scheduled_lr(250, 64, args) == 0.0

    train(corpus, tmp_path / "run", "--epochs", "5", "--anneal", "3", "7")  # stops mid-epoch at step 7
    assert json.loads((tmp_path / "run" / "last" / "trainer.json").read_text())["step"] == 7
