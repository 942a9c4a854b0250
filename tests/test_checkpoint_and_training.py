"""Checkpoints (safetensors only, clear one-line errors) and exact resume of training."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from model.network.checkpoint import (
    CheckpointError,
    atomic_save_tensors,
    check_model_folder,
    load_config,
    load_model,
    read_tensors,
    save_model,
)
from model.network.config import TINY
from model.network.params import state_dict_shapes
from model.network.transformer import EncoderDecoder
from model.training.loop import learning_rate, resolve_precision, scheduled_lr
from model.training.train import main


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
    save_model(EncoderDecoder(replace(TINY, d_model=16, n_heads=2, d_ff=32)), mismatch)
    (mismatch / "config.json").write_text(TINY.to_json())
    with pytest.raises(CheckpointError, match="do not match config.json.*shape"):
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
    deadline = time.monotonic() + 300  # generous: a busy machine may take a minute to import torch and start
    while not (out / "epochs").is_dir():  # wait until it is training
        assert proc.poll() is None and time.monotonic() < deadline, "the run did not start training"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "stopped at step" in stdout
    step = json.loads((out / "last" / "trainer.json").read_text())["step"]
    assert step > 0
    # (--epochs as the killed run's: train()'s 2 would end at once if the run had passed epoch 2 before the signal)
    train(corpus, out, "--resume", "--max-steps", str(step + 2), "--epochs", "50")
    assert json.loads((out / "last" / "trainer.json").read_text())["step"] == step + 2


def test_architecture_overrides_lr_scale_and_export(corpus, tmp_path):
    """--d-model/--d-ff/--dropout reach the saved config; --lr-scale multiplies the schedule; export
    averages the last epochs into float16 weights that load, and writes a card from the log."""
    from model.training.export import main as export

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
    from model.network.inference import Translator

    assert Translator(tmp_path / "shipped", device="cpu").translate("a dog runs") is not None


def test_anneal_falls_linearly_to_zero_and_stops_there(corpus, tmp_path):
    def lr(step):
        return scheduled_lr(step, 64, warmup=10, lr_scale=2.0, anneal=(100, 200))

    assert lr(50) == pytest.approx(2 * learning_rate(50, 64, 10))  # before: the schedule
    assert lr(150) == pytest.approx(learning_rate(150, 64, 10))  # halfway: half of it
    assert lr(200) == 0.0 and lr(250) == 0.0

    train(corpus, tmp_path / "run", "--epochs", "5", "--anneal", "3", "7")  # stops mid-epoch at step 7
    assert json.loads((tmp_path / "run" / "last" / "trainer.json").read_text())["step"] == 7


# ----------------------------------------------------------------------------- configs from disk, checked first


def test_state_dict_shapes_are_the_real_models():
    for cfg in (TINY, replace(TINY, n_layers=3, d_ff=48, vocab_size=50)):
        assert state_dict_shapes(cfg) == {k: tuple(v.shape) for k, v in EncoderDecoder(cfg).state_dict().items()}


def test_legacy_attn_scale_null_still_loads(tmp_path):
    """Run folders written before the scale became per-call (runs/v2) hold "attn_scale": null."""
    legacy = json.loads(TINY.to_json()) | {"attn_scale": None}
    (tmp_path / "config.json").write_text(json.dumps(legacy))
    assert load_config(tmp_path) == TINY
    (tmp_path / "config.json").write_text(json.dumps(legacy | {"attn_scale": 0.5}))
    with pytest.raises(CheckpointError, match="attn_scale is no longer a config value"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"vocab_size": 10**12}, r"3\.2e\+13 floats .* more than"),
        ({"n_layers": 10**7}, "more than"),
        ({"max_len": 10**9}, "more than"),
        ({"d_model": -1}, "d_model must be positive"),
        ({"n_heads": 0}, "n_heads must be positive"),
        ({"d_model": 30, "n_heads": 8}, "not divisible"),
        ({"d_model": "32"}, "d_model must be an integer"),
        ({"n_layers": 2.0}, "n_layers must be an integer"),
        ({"n_layers": True}, "n_layers must be an integer"),
        ({"dropout": 1.5}, r"dropout must be a number in \[0, 1\)"),
        ({"dropout": None}, "dropout must be a number"),
        ({"pad_id": 64}, "pad_id=64 is not a token id"),
    ],
)
def test_implausible_config_values_are_refused_before_anything_is_allocated(tmp_path, monkeypatch, change, message):
    import model.network.checkpoint

    save_model(EncoderDecoder(TINY), tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(json.loads(TINY.to_json()) | change))

    def no_model(cfg):
        raise AssertionError("a model was built")

    monkeypatch.setattr(model.network.checkpoint, "EncoderDecoder", no_model)
    for load in (load_model, check_model_folder):
        with pytest.raises(CheckpointError, match=message) as exc:
            load(tmp_path)
        assert str(exc.value).startswith(str(tmp_path / "config.json")) and "\n" not in str(exc.value)
        assert "re-export" in str(exc.value)  # what to do


def test_weights_of_another_shape_are_refused_from_the_header(tmp_path, monkeypatch):
    import model.network.checkpoint

    save_model(EncoderDecoder(TINY), tmp_path)
    (tmp_path / "config.json").write_text(replace(TINY, vocab_size=TINY.vocab_size * 1000).to_json())
    monkeypatch.setattr(model.network.checkpoint, "load_file", lambda path: pytest.fail("tensors were read"))
    with pytest.raises(CheckpointError, match=r"embed\.weight has shape \(64, 32\), expected \(64000, 32\)"):
        load_model(tmp_path)


def test_check_model_folder_checks_every_file_without_loading_weights(tiny_model_dir, tmp_path, monkeypatch):
    import model.network.checkpoint

    monkeypatch.setattr(model.network.checkpoint, "load_file", lambda path: pytest.fail("tensors were read"))
    assert check_model_folder(tiny_model_dir) == load_config(tiny_model_dir)
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "model.safetensors"):
        (broken / name).write_bytes((tiny_model_dir / name).read_bytes())
    with pytest.raises(CheckpointError, match=r"broken/tokenizer\.model: tokenizer file not found; copy"):
        check_model_folder(broken)
    (broken / "tokenizer.model").write_bytes(b"not a sentencepiece model")
    with pytest.raises(CheckpointError, match=r"broken/tokenizer\.model: not a valid SentencePiece model"):
        check_model_folder(broken)


# ----------------------------------------------------------------------------- precision


def test_auto_precision_is_bf16_only_where_it_is_native():
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu, "flags\t\t: fpu sse2 avx2 avx512f\n") == "fp32"  # emulated: ~150x slower
    assert resolve_precision("auto", cpu, "flags\t\t: fpu avx2 amx_bf16 amx_tile\n") == "bf16"
    assert resolve_precision("auto", cpu, "flags\t\t: fpu avx512f avx512_bf16\n") == "bf16"
    assert resolve_precision("auto", cpu, "Features\t: fp asimd bf16\n") == "bf16"
    assert resolve_precision("bf16", cpu, "flags : fpu\n") == "bf16" and resolve_precision("fp32", cpu) == "fp32"
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_precision("fp16", cpu)


def test_the_log_records_the_precision_actually_used(corpus, tmp_path):
    args = ["--data", str(corpus), "--out", str(tmp_path), "--preset", "tiny", "--max-tokens", "200", "--epochs", "1"]
    assert main(args) == 0  # --precision left at auto
    log = json.loads((tmp_path / "log.json").read_text())
    assert log[0]["precision"] == resolve_precision("auto", torch.device("cpu"))
    trainer = json.loads((tmp_path / "last" / "trainer.json").read_text())
    assert trainer["args"]["precision"] == log[0]["precision"]  # resolved, never "auto"


def test_a_file_that_holds_the_same_tensors_is_not_written_again(tmp_path: Path):
    """safetensors writes its metadata in no fixed order: the same tensors saved twice could differ in bytes (a
    shipped file's hash changed with nothing in it changed); a file that holds them already is left as it is."""
    path = tmp_path / "m.safetensors"
    tensors = {"w": torch.arange(6, dtype=torch.int8).reshape(2, 3), "s": torch.ones(2)}
    meta = {"format": "pt", "quantised": "int8 per row"}
    atomic_save_tensors(tensors, path, meta)
    path.touch()  # (a time to compare)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    atomic_save_tensors({k: v.clone() for k, v in tensors.items()}, path, dict(reversed(meta.items())))
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    atomic_save_tensors({**tensors, "s": torch.full((2,), 2.0)}, path, meta)  # a tensor changed: written
    assert path.read_bytes() != before[0]
    atomic_save_tensors(tensors, path, {"format": "pt"})  # the metadata changed: written
    from safetensors import safe_open
    with safe_open(str(path), "pt") as f:
        assert f.metadata() == {"format": "pt"}
