"""Shared fixtures: a tiny synthetic En->De corpus and a tiny model folder, built in seconds."""

from __future__ import annotations

import gzip
import os
import random
from pathlib import Path

import pytest
import torch

# The apps the tests build in this process (Runs, create_app) batch here, without a model process each (a child
# that loads torch and the model, ~300 MB): tests/test_batching.py tests that process, and the browser tests'
# `python app.py` (browser_util.running_app) runs with it, as served.
os.environ.setdefault("ATTN_BATCH_PROCESS", "0")

from viz.vocab import set_offline_env

set_offline_env()  # nothing leaves loopback, before any test imports gradio

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "assets" / "model"

WORDS = {
    "a": "ein",
    "dog": "hund",
    "man": "mann",
    "runs": "rennt",
    "sits": "sitzt",
    "in": "in",
    "the": "dem",
    "park": "park",
    "house": "haus",
    "red": "roter",
    "big": "großer",
    "small": "kleiner",
    "woman": "frau",
    "child": "kind",
    "plays": "spielt",
    "near": "nahe",
    "water": "wasser",
    "street": "straße",
}


def make_corpus(folder: Path, n_train: int = 300, n_val: int = 20, seed: int = 0) -> Path:
    rng = random.Random(seed)
    en_words = list(WORDS)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("val", n_val), ("test_2016_flickr", n_val)):
        en, de = [], []
        for _ in range(n):
            sent = [rng.choice(en_words) for _ in range(rng.randint(3, 7))]
            en.append(" ".join(sent) + ".")
            de.append(" ".join(WORDS[w] for w in sent) + ".")
        for lang, lines in (("en", en), ("de", de)):
            with gzip.open(folder / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, corpus) -> Path:
    """A tiny model folder (config, random weights, tokenizer) trained for a few steps."""
    from model.train import main

    out = tmp_path_factory.mktemp("tiny_run")
    assert (
        main(
            [
                "--data",
                str(corpus),
                "--out",
                str(out),
                "--preset",
                "tiny",
                "--max-steps",
                "3",
                "--max-tokens",
                "200",
                "--precision",
                "fp32",
                "--seed",
                "0",
            ]
        )
        == 0
    )
    folder = out / "model"
    from model.checkpoint import load_config, load_state_into, read_tensors, save_model
    from model.transformer import EncoderDecoder

    model = EncoderDecoder(load_config(out))
    load_state_into(model, read_tensors(out / "last" / "model.safetensors"), out / "last")
    save_model(model, folder)
    (folder / "tokenizer.model").write_bytes((out / "tokenizer.model").read_bytes())
    return folder


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    """One intra-op thread, as the app runs the model on a CPU (``app.load_translator``): on two shared cores,
    two threads waiting for each other make every small op up to ~10× slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def translator(tiny_model_dir):
    """The tiny model, loaded once (a module that needs the shipped model defines its own ``translator``)."""
    from model.inference import Translator

    return Translator(tiny_model_dir, device="cpu")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    random.seed(0)


# ------------------------------------------------------------------------------------------ browser tests
# One app and one Chromium for the whole run (each browser module used to start its own: ~15 s apiece).
@pytest.fixture(scope="session")
def server():
    """`python app.py` on the shipped model, on a free loopback port: its URL."""
    from browser_util import running_app

    with running_app() as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, through playwright."""
    from browser_util import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
