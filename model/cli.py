"""One error style for every command-line tool in model/ (translate, evaluate, diagnose, train, export) and for the
app's settings.

A fault the user can fix (a missing or corrupt model folder or file, an implausible config, a bad value of an
argument or an ``ATTN_*`` setting) ends the command with one line on stderr, ``error: <what>: <fault>; <what to
do>``, and exit code 2; no traceback. Anything else is a bug and keeps its traceback. ``ArgumentParser`` reports its
own errors (an unknown option, ``--beam abc``) the same way, and the argument types below (``beam_size``,
``attention_scale``, ``device_name``) check a value where it is read, naming the argument.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections.abc import Callable

from model.network.checkpoint import CheckpointError
from model.terms import MAX_BEAM, MAX_SCALE

# OSError: a file that is missing or unreadable; ValueError: a value the user gave (or a file holds) is wrong.
USER_ERRORS = (CheckpointError, OSError, ValueError)
EXIT_USER_ERROR = 2


def fail(message: object) -> int:
    """Print ``error: message`` as one line on stderr; return the exit code for it."""
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return EXIT_USER_ERROR


def command(main: Callable[[list[str] | None], int]) -> Callable[[list[str] | None], int]:
    """Wrap a CLI's ``main(argv) -> exit code`` so that ``USER_ERRORS`` become ``fail(...)``."""

    @functools.wraps(main)
    def run(argv: list[str] | None = None) -> int:
        try:
            return main(argv)
        except USER_ERRORS as exc:
            return fail(exc)

    return run


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line (``error: <prog>: <message>``; ``--help`` for the usage), exit 2,
    where argparse prints its usage first."""

    def error(self, message: str):
        sys.exit(fail(f"{self.prog}: {message} (--help lists the arguments)"))


def beam_size(text: str) -> int:
    """``--beam``: a whole number from 1 (greedy) to ``MAX_BEAM``."""
    try:
        beam = int(text)
    except ValueError:
        beam = None
    if beam is None or not 1 <= beam <= MAX_BEAM:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 (greedy) to {MAX_BEAM}, not {text[:40]!r}")
    return beam


def attention_scale(text: str) -> float:
    """``--scale``: a positive finite number up to ``MAX_SCALE`` (the model's own is 1/sqrt(d_k))."""
    try:
        scale = float(text)
    except ValueError:
        scale = math.nan
    if not 0 < scale <= MAX_SCALE:  # (NaN fails too)
        raise argparse.ArgumentTypeError(f"must be a number above 0 and at most {MAX_SCALE:g} (leave it out for the "
                                         f"model's own 1/sqrt(d_k)), not {text[:40]!r}")
    return scale


def device_name(text: str) -> str:
    """``--device``: cpu, or cuda / cuda:N where this machine has that GPU."""
    import torch

    kind, _, index = text.partition(":")
    if kind == "cpu" and not index:
        return text
    if kind != "cuda" or (index and not index.isdigit()):
        raise argparse.ArgumentTypeError(f"must be cpu, cuda or cuda:N, not {text[:40]!r}")
    if not torch.cuda.is_available():
        raise argparse.ArgumentTypeError(f"{text!r}: this machine has no CUDA GPU (torch sees none); use cpu")
    if index and int(index) >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(f"{text!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s), "
                                         f"numbered from 0")
    return text
