"""The batched model in a process of its own: a classroom's burst uses both cores, not one.

Why a process: the server's Python (Gradio's events, the figures) and the model's decoding loop share one
interpreter lock. A decoding step of the small model is hundreds of tiny torch calls, and each one gives the
lock up and must wait to get it back while another thread runs Python (up to ``sys.getswitchinterval()``,
5 ms, each time): in a burst the whole server used one of its two cores (``python -m bench --sections capacity``,
the rows "batched in the server's process", with the CPU cores the server used). Here the decoding loop runs in
a child process with its own interpreter, so it never waits for the server's Python.

``ModelProcess(folder, device)`` starts ``python -m model.worker`` (not ``multiprocessing``' spawn: that would
import the app, i.e. Gradio, again in the child) with two pipes, and loads the same model folder there.
``ready()`` says whether it has loaded the model yet; ``run(group, items)`` sends one batch and returns
``model.batching.run_batch``'s list from the child: results and ValueErrors, pickled. The child leaves when its
pipe closes (the server stopped or died). A child that dies or hangs is a ``WorkerGone``; the next batch starts
a new one (``model.batching.BatchedTranslator`` then runs the failed batch in its own process instead: nothing
is lost).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READY = "ready"


class WorkerGone(RuntimeError):
    """The model process died, hung, or could not load the model."""


class ModelProcess:
    """One child process that runs batches on its own copy of the model (see the module docstring).

    ``start()`` launches it without waiting (the app calls it at launch, so the child loads the model while
    Gradio starts); ``run`` starts it if needed and waits for it to be ready. One caller at a time (the
    micro-batcher's worker thread); ``timeout_s`` bounds one batch, ``load_timeout_s`` the child's start.
    """

    def __init__(self, folder: str | Path, device: str = "cpu", threads: int = 1, timeout_s: float = 300.0,
                 load_timeout_s: float = 120.0):
        self.folder, self.device, self.threads = Path(folder), str(device), threads
        self.timeout_s, self.load_timeout_s = timeout_s, load_timeout_s
        self._proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self._ready = False
        self._lock = threading.Lock()
        self.starts = 0  # how many children were started (a restart after a failure counts)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def start(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            self._close()
            to_child_r, to_child_w = os.pipe()
            from_child_r, from_child_w = os.pipe()
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "model.worker", "--model", str(self.folder), "--device", self.device,
                     "--threads", str(self.threads), "--fds", f"{to_child_r},{from_child_w}"],
                    pass_fds=(to_child_r, from_child_w), env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                    start_new_session=True)  # Ctrl-C in the terminal stops the app; the child then sees EOF
            finally:
                os.close(to_child_r)
                os.close(from_child_w)
            self._send, self._recv = Connection(to_child_w, readable=False), Connection(from_child_r, writable=False)
            self._ready = False
            self.starts += 1

    def ready(self, wait_s: float = 0.0) -> bool:
        """Whether the child has loaded the model (waiting up to ``wait_s`` for it; starts it if needed). A child
        that could not load it, or died, is a WorkerGone."""
        self.start()
        if self._ready:
            return True
        try:
            if not self._recv.poll(wait_s):
                return False
            answer = self._recv.recv()
        except (OSError, EOFError) as exc:
            self.stop()
            raise WorkerGone(f"the model process stopped while loading: {exc!r}") from exc
        if answer != READY:
            self.stop()
            raise WorkerGone(f"the model process could not load {self.folder}: {answer}")
        self._ready = True
        return True

    def run(self, group: tuple, items: list) -> list:
        """One batch in the child: ``model.batching.run_batch(translator, group, items)``'s list (waiting for the
        child to load the model first, if it has not)."""
        if not self.ready(self.load_timeout_s):
            self.stop()
            raise WorkerGone(f"the model process did not load the model within {self.load_timeout_s:.0f} s")
        try:
            self._send.send((group, items))
            return self._answer(self.timeout_s, f"run a batch of {len(items)}")
        except (OSError, EOFError, WorkerGone) as exc:
            self.stop()
            raise exc if isinstance(exc, WorkerGone) else WorkerGone(f"the model process stopped: {exc!r}") from exc

    def _answer(self, timeout_s: float, what: str):
        if not self._recv.poll(timeout_s):
            raise WorkerGone(f"the model process did not {what} within {timeout_s:.0f} s")
        return self._recv.recv()

    def stop(self) -> None:
        """End the child (if any) and close the pipes; the next ``run`` starts a new one."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        for conn in (self._send, self._recv):
            if conn is not None:
                conn.close()
        self._send = self._recv = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait(10)
            self._proc = None
        self._ready = False


def main(argv: list[str] | None = None) -> int:
    """The child: load the model, say READY, then answer batches until the parent closes the pipe."""
    parser = argparse.ArgumentParser(description="The app's batched model process (started by the app).")
    parser.add_argument("--model", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--fds", required=True, help="read,write: the pipes to the parent")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when this process ends
    read_fd, write_fd = (int(fd) for fd in args.fds.split(","))
    recv, send = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    try:
        import torch

        from model.batching import run_batch
        from model.inference import Translator

        if args.device == "cpu" or args.device.startswith("cpu"):
            torch.set_num_threads(args.threads)
        translator = Translator(args.model, device=args.device)
    except Exception as exc:  # noqa: BLE001 - told to the parent, which reports it
        send.send(f"{type(exc).__name__}: {exc}")
        return 1
    send.send(READY)
    while True:
        try:
            group, items = recv.recv()
        except (EOFError, OSError):
            return 0  # the parent closed the pipe: the server stopped
        try:
            results = run_batch(translator, group, items)
        except Exception as exc:  # noqa: BLE001 - a bug in the batch: every caller hears of it, the child lives on
            results = [RuntimeError(f"{type(exc).__name__}: {exc}")] * len(items)
        try:
            send.send(results)
        except (OSError, EOFError):
            return 0
        except Exception as exc:  # noqa: BLE001 - a result that does not pickle: the callers hear why
            send.send([RuntimeError(f"the model process could not send its results: {exc}")] * len(items))


if __name__ == "__main__":
    sys.exit(main())
