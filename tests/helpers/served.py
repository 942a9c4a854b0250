"""The app as served, for the tests that speak to it over HTTP or drive it in Chromium: the one way they start it.

``served_app(translator)`` builds ``app.create_app(translator)`` and serves it in this process as ``app.launch``
does (its queue, api_open=False, show_error=False, the upload limit), its batches run here without a model
process (tests/conftest.py sets ``ATTN_BATCH_PROCESS=0``): a test can look inside (``demo``, ``translator``).
``served_app(folder, process=True)`` runs ``python app.py`` on that model folder instead, exactly as a user starts
it, with its model process (``model.serving.worker``). Either way: a free loopback port, and a Gradio cache folder of
its own (``temp_dir``: exports land there, and nothing is left in the machine's /tmp/gradio).

Tests ask tests/conftest.py's ``serve`` fixture, which picks the model, shares one app per module (one per run for
``process=True``) and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.common import app_process, free_port


@dataclass(frozen=True)
class Served:
    url: str  # "http://127.0.0.1:<port>/"
    pid: int  # the process that serves (this one, in-process)
    temp_dir: Path  # Gradio's cache folder of this app
    demo: Any = None  # the gr.Blocks (in-process only)
    translator: Any = None  # the model.network.inference.Translator it serves (in-process only)


@contextlib.contextmanager
def served_app(model, *, process: bool = False, env: Mapping[str, str] | None = None,
               temp_dir: Path) -> Iterator[Served]:
    """The app on ``model`` (in-process: a loaded Translator; ``process``: a model folder) until the block ends.
    ``env``: variables the app reads (e.g. ``ATTN_CACHE_MB``), set while it is built and while it serves."""
    env = {**(env or {}), "GRADIO_TEMP_DIR": str(temp_dir)}
    if process:
        env = {"ATTN_BATCH_PROCESS": "1", "ATTN_MODEL_DIR": str(Path(model).resolve()), **env}
        with app_process(("app.py",), timeout=300, env=env) as running:  # generous: the machine may be busy
            yield Served(running.url, running.proc.pid, temp_dir)
        return
    import app

    # Gradio reads GRADIO_TEMP_DIR while it serves (each file it hands out), the app ATTN_* when it is built
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        demo = app.create_app(model)
        app.launch(demo, prevent_thread_lock=True, server_name="127.0.0.1", server_port=free_port(), quiet=True)
        try:
            yield Served(demo.local_url, os.getpid(), temp_dir, demo=demo, translator=model)
        finally:
            demo.close()
