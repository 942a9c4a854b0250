"""What a presenter returns for an output it leaves alone, or changes other than by its value — without gradio.

``app.listener`` turns an ``Update`` into ``gr.update(**props)``: ``Update(selected="attention")`` for a
``gr.Tabs`` opens that tab, ``Update(choices=..., value=...)`` refills a ``gr.Radio``. ``SKIP``, an update
of nothing, is ``gr.skip()``: the output stays as it is.
"""

from __future__ import annotations


class Update:
    """Properties of one output component to change (the value among them, if any)."""

    __slots__ = ("props",)

    def __init__(self, **props):
        self.props = props

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Update) and other.props == self.props

    __hash__ = None  # mutable props

    def __repr__(self) -> str:
        return f"Update({', '.join(f'{k}={v!r}' for k, v in self.props.items())})"


SKIP = Update()  # the output stays as it is


def open_tab(tab_id: str) -> Update:
    """The update of the app's ``gr.Tabs`` that selects the tab ``tab_id``."""
    return Update(selected=tab_id)


def skipped(n: int) -> tuple[Update, ...]:
    """``n`` outputs left as they are."""
    return (SKIP,) * n
