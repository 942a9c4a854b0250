"""``spaces.GPU`` on ZeroGPU, imitated (``spaces/zero/decorator.py`` and ``wrappers.py`` of 0.51.3).

A call: refused first if ``refuse`` names a refusal (as ``spaces.zero.client.schedule`` refuses: a gradio.Error with
ZeroGPU's title and message); else run in a process forked for it (the package forks a worker per lent GPU), the
arguments pickled to it and the answer pickled back; an exception in it comes back as the package sends it (a
gradio.Error as it is, any other as "ZeroGPU worker error" naming its class). ``calls`` records each call that ran.
"""

import multiprocessing
import os
import pickle
from functools import partial, wraps

import gradio as gr

from ..config import ZERO_GPU

decorated_cache: dict = {}
calls: list[dict] = []  # each call that ran: the function's name, the duration it asked for, the pid it ran in
refuse: str | None = None  # a key of REFUSALS: every call is refused so until it is set back to None

REFUSALS = {
    "quota": ("ZeroGPU quota exceeded", "You have exceeded your free ZeroGPU quota (20s requested vs. 7s left). "
                                        "Try again in 21:04:11."),
    "duration": ("ZeroGPU illegal duration", "The requested GPU duration (20s) is larger than the maximum allowed"),
    "no_gpu": ("ZeroGPU client error", "No GPU was available"),
    "queue": ("ZeroGPU quota exceeded", "No GPU was available after 60s. Try re-running outside of examples if it "
                                        "happened after clicking one"),
}
_fork = multiprocessing.get_context("fork")
forked = False


def error(title: str, message: str) -> gr.Error:
    return gr.Error(message, title=title, print_exception=False)


def GPU(task=None, *, duration=None, size=None, **kwargs):
    if not callable(task):
        return partial(_GPU, duration=duration, size=size)
    return _GPU(task, duration, size)


def _GPU(task, duration, size):
    if not ZERO_GPU:
        return task
    if task in decorated_cache:
        return decorated_cache[task]

    @wraps(task)
    def gradio_handler(*args, **kwargs):
        if forked:
            return task(*args, **kwargs)
        if refuse is not None:
            raise error(*REFUSALS[refuse])
        return _run_forked(task, duration, args, kwargs)

    gradio_handler.zerogpu = None
    decorated_cache.update({task: gradio_handler, gradio_handler: gradio_handler})
    return gradio_handler


def _run_forked(task, duration, args, kwargs):
    ours, theirs = _fork.Pipe()
    process = _fork.Process(target=_child, args=(task, pickle.dumps((args, kwargs)), theirs), daemon=True)
    process.start()
    theirs.close()
    try:
        pid, ok, value = ours.recv()
    except EOFError:
        raise error("ZeroGPU worker error", "GPU task aborted") from None
    finally:
        ours.close()
        process.join()
    calls.append({"name": task.__name__, "duration": duration, "pid": pid})
    if ok:
        return value
    if isinstance(value, gr.Error):
        raise value
    raise error("ZeroGPU worker error", value)


def _child(task, payload, conn):
    global forked
    forked = True
    args, kwargs = pickle.loads(payload)
    try:
        answer = (os.getpid(), True, task(*args, **kwargs))
    except Exception as exc:
        answer = (os.getpid(), False, exc if isinstance(exc, gr.Error) else type(exc).__name__)
    conn.send(answer)
    conn.close()
