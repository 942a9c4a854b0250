"""One error style for every command-line tool in model/ (translate, evaluate, diagnose, train, export).

A fault the user can fix (a missing or corrupt model folder or file, an implausible config, a bad value)
ends the command with one line on stderr, ``error: <file>: <fault>; <what to do>``, and exit code 2; no
traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from model.network.checkpoint import CheckpointError

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
