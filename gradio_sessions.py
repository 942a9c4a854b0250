"""Gradio's own memory per session, made small and bounded (the app's per-session state is a key already:
``viz/views/runs.py``'s ``SessionResult``).

Gradio 6 gives every session — each page load, and each raw API call that names no session — a
``SessionState`` that copies the configuration of every component (~330 KB and tens of milliseconds for this
app's ~225 blocks), then keeps a copy of each input and output value the session sees (at 100 tokens a side,
~2 MB of plot JSON). Both copies serve only Gradio's /gradio_api/deep_link route, which this app offers no
button for. ``lean_sessions()`` (called by ``app.launch``) makes new sessions keep what the app needs: their
gr.State values and the components an event updated. ``app.SESSION_CAPACITY`` bounds how many sessions Gradio
keeps (the least recently used go first). ``tests/test_memory.py`` fails should a Gradio upgrade change this.
"""

from __future__ import annotations

import datetime
import os
from copy import copy
from typing import Any

import gradio.state_holder as state_holder
from gradio.components import State

_GRADIO_SESSION_STATE = state_holder.SessionState


class LeanSessionState(_GRADIO_SESSION_STATE):
    """``SessionState`` without its copy of the component configuration and values (``config_values``)."""

    def __init__(self, blocks: Any):  # SessionState.__init__, less the config copy
        self.blocks_config = copy(blocks.default_config)
        self.config_values: dict = {}
        self.state_data: dict[int, Any] = {}
        self._state_ttl: dict = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

    def __setitem__(self, key: int, value: Any) -> None:
        block = self.blocks_config.blocks.get(key)
        if isinstance(block, State):
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            self.blocks_config.blocks[key] = value

    def _update_config(self, key: int) -> None:
        pass

    def _update_value_in_config(self, key: int, value: Any) -> None:
        pass


def lean_sessions() -> None:
    """From now on, new Gradio sessions of this process are ``LeanSessionState``s."""
    state_holder.SessionState = LeanSessionState
