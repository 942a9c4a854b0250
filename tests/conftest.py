"""Shared fixtures: a tiny synthetic En->De corpus and a tiny model folder (built in seconds), the app as served
(``serve``), and the browser tests' Chromium and page. Helpers the test modules share live in tests/helpers/.

Browser tests (tests/test_browser*.py, marked ``browser`` here by file name): ``pytest -m browser`` runs only them,
``pytest -m "not browser"`` everything else.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

# The apps the tests build in this process (Runs, create_app) batch here, without a model process each (a child
# that loads torch and the model, ~300 MB): tests/test_batching.py tests that process, and `serve(process=True)`
# (`python app.py`, the browser tests' app) runs with it, as served.
os.environ.setdefault("ATTN_BATCH_PROCESS", "0")

from helpers.served import Served, served_app

from viz.offline import set_offline_env

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
    from model.training.train import main

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
    from model.network.checkpoint import load_config, load_state_into, read_tensors, save_model
    from model.network.transformer import EncoderDecoder

    model = EncoderDecoder(load_config(out))
    load_state_into(model, read_tensors(out / "last" / "model.safetensors"), out / "last")
    save_model(model, folder)
    (folder / "tokenizer.model").write_bytes((out / "tokenizer.model").read_bytes())
    return folder


@pytest.fixture(scope="session")
def tiny_lab(corpus, tmp_path_factory):
    """Three tiny finished runs named like siblings (h8 the reference, h1 and h1-unscaled live), exported."""
    import json
    from dataclasses import asdict

    from model.training.lab import score
    from model.training.lab_export import export_all
    from model.training.siblings import BY_NAME
    from model.training.train import main

    root = tmp_path_factory.mktemp("lab")
    runs, out, card = root / "runs", root / "assets", root / "CARD.md"
    card.write_text("# Card\n\ntext kept\n")
    from model.training.lab_export import README_END, README_START

    (root / "README.md").write_text(f"- **Lab.** kept\n  {README_START}\n  old\n  {README_END}\n- next\n")
    for name in ("h8", "h1", "h1-unscaled"):
        sib = BY_NAME[name]
        run = runs / name
        assert main(["--data", str(corpus), "--out", str(run), "--preset", "tiny", "--max-tokens", "120",
                     "--precision", "fp32", "--epochs", "1", "--record-every", "4", "--snapshots", "--probe",
                     str(corpus / "val"), "--seed", str(sib.seed), *sib.args]) == 0
        steps = json.loads((run / "last" / "trainer.json").read_text())["step"]
        result = {"sibling": asdict(sib), "steps": steps, **score(run, corpus)}
        (run / "result.json").write_text(json.dumps(result))
    records = export_all(runs, out, card, data=corpus, readme=root / "README.md")  # the corpus's test references
    return runs, out, card, records


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
    from model.network.inference import Translator

    return Translator(tiny_model_dir, device="cpu")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    random.seed(0)


# ------------------------------------------------------------------------------------------- the served app
@pytest.fixture(scope="session")
def _app_processes():
    """`python app.py` apps, one per variant for the whole run (every browser module uses the same one)."""
    with contextlib.ExitStack() as stack:
        yield stack, {}


@pytest.fixture(scope="module")
def serve(request, tmp_path_factory, _app_processes) -> Callable[..., Served]:
    """``serve(model="tiny", process=False, env=None)``: the app as served on a free loopback port (``Served``: its
    ``url``; in-process also its ``demo`` and ``translator``), started on first use.

    - ``model``: "tiny" (the ``translator`` fixture's model, trained for three steps: fast) or "shipped"
      (assets/model, loaded for the module; what the browser tests and the measured answer sizes use).
    - in this process (the default): ``app.create_app`` served as ``app.launch`` serves it, its batches here;
      one per variant and module, stopped after the module.
    - ``process=True``: ``python app.py`` as a user starts it, with its model process; one per variant for the whole
      run (the browser modules share it).
    - ``env``: variables the app reads (e.g. ``ATTN_CACHE_MB``), set while it is built and serves.
    """
    started: dict[tuple, Served] = {}
    with contextlib.ExitStack() as module_stack:

        def start(model: str = "tiny", *, process: bool = False, env: dict[str, str] | None = None) -> Served:
            key = (model, process, tuple(sorted((env or {}).items())))
            stack, apps = _app_processes if process else (module_stack, started)
            if key not in apps:
                if model == "tiny":
                    loaded = request.getfixturevalue("tiny_model_dir" if process else "translator")
                elif model == "shipped":
                    from model.network.inference import Translator

                    loaded = SHIPPED if process else Translator(SHIPPED)
                else:
                    raise ValueError(f"model must be 'tiny' or 'shipped', got {model!r}")
                temp_dir = tmp_path_factory.mktemp("gradio_cache")
                apps[key] = stack.enter_context(served_app(loaded, process=process, env=env, temp_dir=temp_dir))
            return apps[key]

        yield start


# ------------------------------------------------------------------------------------------------ browser tests
def pytest_collection_modifyitems(items):
    """Marks the browser tests, and runs their files first: each is long (15–60 s), and tests/run.sh hands the files
    to its two workers in this order (pytest-xdist's ``--no-loadscope-reorder``), so that the short files come last
    and fill the gaps, rather than one long file running alone at the end while the other worker waits."""
    for item in items:
        if item.path.name.startswith("test_browser"):
            item.add_marker(pytest.mark.browser)
    items.sort(key=lambda item: not item.path.name.startswith("test_browser"))  # (stable: file order kept)


@pytest.fixture(scope="module")
def server(serve) -> str:
    """The browser tests' app: `python app.py` on the shipped model, as a user starts it (one for the whole run)."""
    return serve("shipped", process=True).url


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, through playwright (one for the whole run)."""
    from helpers.browser import chromium

    with chromium() as browser:
        yield browser


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="module")
def _kept_pages(browser):
    from helpers.browser import KeptPages

    kept = KeptPages(browser)
    yield kept
    kept.close()


@pytest.fixture
def kept(request, _kept_pages):
    """The module's kept pages (``helpers.browser.KeptPages``): ``kept.open(url)`` gives the app loaded at ``url``,
    on the page the module's last test with that opening left when it passed (no page load), else a fresh one."""
    yield _kept_pages
    _kept_pages.test_ended(request.node.stash.get(_FAILED, False))


@pytest.fixture
def page(browser):
    """A fresh page at 1400×1000 that fails its test on a console or page error, a dialog or a request off loopback."""
    from helpers.browser import watched_page

    yield from watched_page(browser, 1400, 1000)
