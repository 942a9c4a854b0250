"""The batched model in a process of its own: a classroom's burst uses both cores, not one.

Why a process: the server's Python (Gradio's events, the figures) and the model's decoding loop share one
interpreter lock. A decoding step of the small model is hundreds of tiny torch calls, and each one gives the
lock up and must wait to get it back while another thread runs Python (up to ``sys.getswitchinterval()``,
5 ms, each time): in a burst the whole server used one of its two cores (``python -m bench --sections capacity``,
the rows "batched in the server's process", with the CPU cores the server used). Here the decoding loop runs in
a child process with its own interpreter, so it never waits for the server's Python.

``ModelProcess(folder, device)`` starts ``python -m model.serving.worker`` (not ``multiprocessing``' spawn: that would
import the app, i.e. Gradio, again in the child) with two pipes, and loads the same model folder there.
``ready()`` says whether it has loaded the model yet; ``run(group, items)`` sends one batch and returns
``model.serving.batches.run_batch``'s list from the child (results and ValueErrors, pickled one by one). The child
leaves when its pipe closes: the server stopped or died. Every failure is a ``WorkerGone`` with its reason (a
child that could not load the model, died, or took longer than ``timeout_s`` for a batch: it is killed), and
``model.serving.batching.BatchedTranslator`` then runs that batch in the server's own process: nothing is lost.
The next batch starts a new child; after ``MAX_LOAD_FAILURES`` children in a row that could not load the model, no more
are started (every batch runs in the server).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY = "ready"


class WorkerGone(RuntimeError):
    """The model process could not load the model, died, or did not answer in time (the message says which)."""


class ModelProcess:
    """One child process that runs batches on its own copy of the model (see the module docstring).

    ``start()`` launches it without waiting (the app calls it at launch, so that the child loads the model while
    Gradio starts); ``ready()`` and ``run()`` start it if needed. Thread-safe: one lock around everything (the
    micro-batcher's worker thread is the one caller in the app). ``close()`` ends the child for good.
    """

    MAX_LOAD_FAILURES = 3

    def __init__(self, folder: str | Path, device: str = "cpu", threads: int = 1, timeout_s: float = 120.0,
                 load_timeout_s: float = 120.0, nice: int = 0):
        self.folder = Path(folder).resolve()  # the child runs in the repository's folder
        self.device, self.threads, self.nice = str(device), threads, nice  # nice: the child's added niceness
        self.timeout_s, self.load_timeout_s = timeout_s, load_timeout_s
        self._proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self._ready = False
        self._started_at = 0.0
        self._lock = threading.RLock()
        self.starts = 0  # how many children were started (a restart after a failure counts)
        self.load_failures = 0  # children in a row that could not load the model
        self.closed = False  # no more children: close(), or MAX_LOAD_FAILURES reached

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs, else None."""
        with self._lock:
            return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def start(self) -> None:
        """Start a child unless one runs. A child that ended before it had loaded the model is a WorkerGone (why
        it could not load it, as it said)."""
        with self._lock:
            if self.closed:
                raise WorkerGone("the model process is closed")
            if self._proc is not None and self._proc.poll() is None:
                return
            if self._proc is not None and not self._ready:  # it ended while loading: its last word says why
                why = self._last_word() or f"it exited with code {self._proc.returncode}"
                self._close()
                self._load_failed(why)
            self._close()
            fds = [*os.pipe(), *os.pipe()]  # to the child (read, write), from the child (read, write)
            to_child_r, to_child_w, from_child_r, from_child_w = fds
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "model.serving.worker", "--model", str(self.folder), "--device", self.device,
                     "--threads", str(self.threads), "--nice", str(self.nice), "--fds", f"{to_child_r},{from_child_w}"],
                    pass_fds=(to_child_r, from_child_w), env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
                    start_new_session=True)  # Ctrl-C in the terminal stops the app; the child then sees EOF
            except OSError as exc:
                for fd in (to_child_w, from_child_r):
                    os.close(fd)
                raise WorkerGone(f"the model process could not be started: {exc}") from exc
            finally:
                os.close(to_child_r)
                os.close(from_child_w)
            self._send, self._recv = Connection(to_child_w, readable=False), Connection(from_child_r, writable=False)
            self._ready, self._started_at = False, time.monotonic()
            self.starts += 1

    def ready(self, wait_s: float = 0.0) -> bool:
        """Whether the child has loaded the model (waiting up to ``wait_s`` for it; starts it if needed). A child
        that could not load it, died, or has been loading for more than ``load_timeout_s`` is a WorkerGone."""
        with self._lock:
            self.start()
            if self._ready:
                return True
            try:
                answer = self._recv.recv() if self._recv.poll(wait_s) else None
            except (OSError, EOFError):
                answer = self._last_word() or f"it stopped while loading (exit code {self._proc.wait(10)})"
            if answer is None:
                if time.monotonic() - self._started_at <= self.load_timeout_s:
                    return False
                answer = f"it did not load the model within {self.load_timeout_s:.0f} s"
            if answer != READY:
                self._close()
                self._load_failed(answer)
            self._ready, self.load_failures = True, 0
            return True

    def run(self, group: tuple, items: list) -> list:
        """One batch in the child: ``model.serving.batches.run_batch(translator, group, items)``'s list (waiting for
        the child to load the model first, if it has not). A batch that takes longer than ``timeout_s`` kills it."""
        with self._lock:
            deadline = time.monotonic() + self.load_timeout_s
            while not self.ready(min(1.0, max(0.0, deadline - time.monotonic()))):
                pass  # ready() itself gives up after load_timeout_s
            proc, stopped = self._proc, threading.Event()

            def stop() -> None:  # a stuck child: its pipe closes, recv ends
                stopped.set()  # before the kill: whatever wakes first, the EOF below is known as the watchdog's
                proc.kill()

            watchdog = threading.Timer(self.timeout_s, stop)
            watchdog.start()
            try:
                self._send.send((group, items))
                results = [self._recv.recv() for _ in range(self._recv.recv())]  # the count, then one by one
            except Exception as exc:  # noqa: BLE001 - EOF, a broken pipe, a result that does not unpickle
                late = stopped.is_set()
                self._close()
                why = f"it took longer than {self.timeout_s:.0f} s and was stopped" if late else f"it failed: {exc!r}"
                raise WorkerGone(f"the model process did not answer a batch of {len(items)}: {why}") from exc
            finally:
                watchdog.cancel()
            return results

    def stop(self) -> None:
        """End the child (if any); the next batch starts a new one."""
        with self._lock:
            self._close()

    def close(self) -> None:
        """End the child for good: no more are started."""
        with self._lock:
            self.closed = True
            self._close()

    def _load_failed(self, why: str) -> None:
        self.load_failures += 1
        if self.load_failures >= self.MAX_LOAD_FAILURES:
            self.closed = True
            why += f" ({self.load_failures} tries; no more: batches run in the server's process)"
        raise WorkerGone(f"the model process could not load {self.folder}: {why}")

    def _last_word(self) -> str | None:
        """What an ended child sent last (why it could not load the model), if anything."""
        try:
            return str(self._recv.recv()) if self._recv is not None and self._recv.poll(0) else None
        except (OSError, EOFError):
            return None

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
    parser.add_argument("--nice", type=int, default=0, help="added to this process's niceness (lower CPU priority)")
    parser.add_argument("--fds", required=True, help="read,write: the pipes to the parent")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when this process ends
    if args.nice > 0:
        os.nice(args.nice)
    read_fd, write_fd = (int(fd) for fd in args.fds.split(","))
    recv, send = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    try:
        try:
            import torch

            from model.network.inference import Translator
            from model.serving.batches import run_batch
            from model.serving.cache import fixed_mmap_threshold, trim_freed_memory

            fixed_mmap_threshold()  # a batch's maps go back to the system once sent, as in the server
            trim_freed_memory()  # and so do the pages of its freed objects
            if args.device.startswith("cpu"):
                torch.set_num_threads(args.threads)
            translator = Translator(args.model, device=args.device)
        except Exception as exc:  # noqa: BLE001 - told to the parent, which reports it
            send.send(f"{type(exc).__name__}: {' '.join(str(exc).split())}")
            return 1
        send.send(READY)
        while True:
            group, items = recv.recv()
            try:
                results = run_batch(translator, group, items)
            except Exception as exc:  # noqa: BLE001 - the parent runs this batch again itself
                results = [RuntimeError(f"{type(exc).__name__}: {exc}")] * len(items)
            send.send(len(results))
            for result in results:
                try:
                    send.send(result)
                except (OSError, EOFError):
                    raise
                except Exception as exc:  # noqa: BLE001 - a result that does not pickle: the parent runs it again
                    send.send(RuntimeError(f"the model process could not send its result: {exc}"))
    except (EOFError, OSError):
        return 0  # the parent closed its pipe (the server stopped or died)


if __name__ == "__main__":
    sys.exit(main())
