"""Offline and quiet: nothing leaves loopback. The app, the benchmark and the tests call ``set_offline_env`` before
anything imports gradio (gradio reads these variables as it is imported; ``gradio_client`` also needs
``analytics_enabled=False``, which it takes as an argument). Imports only ``os``: cheap to import first.
"""

from __future__ import annotations

import os

OFFLINE_ENV = {"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def set_offline_env() -> None:
    """Put ``OFFLINE_ENV`` into ``os.environ`` where a variable is not set already; call before importing gradio."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
