"""``SPACES_ZERO_GPU``, read once at import, as ``spaces.config`` reads it."""

import os


def boolean(value):
    return value is not None and value.lower() in ("1", "t", "true")


ZERO_GPU = boolean(os.getenv("SPACES_ZERO_GPU"))
