"""The Attention tab's figures with the close-up's focus, for either measure (weights or contributions).

The same as ``viz.views.attention.contributions``' ``views`` / ``detail_plot`` / ``toggled``, with three more choices
at the end: ``first`` and ``last`` (the token range the close-up shows) and ``hide_special`` (drop <s> and
</s>, rows renormalised) — see ``viz.views.attention.focus``. The overview always shows every token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz.views.attention import contributions as measures
from viz.views.attention import maps as attention
from viz.views.attention import projector
from viz.views.attention.focus import check_focus
from viz.views.outputs import SKIP, Figure, Update

if TYPE_CHECKING:
    from model.network.config import TransformerConfig
    from model.network.inference import AttentionResult


def views(cfg: TransformerConfig, contributions: measures.Contributions, result: AttentionResult | None, kind,
          layer, head, present=False, colour="fixed", measure=None, first=1, last=None,
          hide_special=False) -> tuple[Figure, Figure]:
    """(overview, close-up) of the weights or of the contributions, the close-up focused; a ValueError before the
    session has run a sentence (``no_run``)."""
    no_run(cfg, result, kind, layer, head, measure, first, last, hide_special)
    return _views(cfg, contributions, result, kind, layer, head, present, colour, measure, first, last, hide_special)


def no_run(cfg: TransformerConfig, result: AttentionResult | None, kind, layer, head, measure, first, last,
           hide_special) -> None:
    """Before the session has run a sentence: its choices checked (a bad one: its message), then the message that
    there is nothing to draw yet (as /export says there is nothing to export)."""
    check_focus(first, last, hide_special)
    if result is None:
        measures.check_measure(measure)
        attention.check_view(cfg, kind, layer, head)
        raise ValueError(attention.nothing_yet("draw"))


def _views(cfg: TransformerConfig, contributions: measures.Contributions, result: AttentionResult | None, kind,
           layer, head, present=False, colour="fixed", measure=None, first=1, last=None,
           hide_special=False) -> tuple[Figure | None, Figure | None]:
    check_focus(first, last, hide_special)  # before any model run
    if result is None:
        return None, None
    measure = measures.check_measure(measure)
    kind, layer, head = attention.check_view(cfg, kind, layer, head)
    shown = measures.measured(contributions, result, kind, measure)
    overview, detail = attention.views(cfg, shown, kind, layer, head, present, colour, first, last, hide_special)
    return measures.relabel(overview, measure), measures.relabel(detail, measure)


def detail_plot(cfg: TransformerConfig, contributions: measures.Contributions, result: AttentionResult | None,
                kind, layer, head, present=False, colour="fixed", measure=None, first=1, last=None,
                hide_special=False) -> Figure:
    """The close-up of the weights or of the contributions, focused (``no_run`` before the session has a run)."""
    no_run(cfg, result, kind, layer, head, measure, first, last, hide_special)
    measure = measures.check_measure(measure)
    kind, layer, head = attention.check_view(cfg, kind, layer, head)
    shown = measures.measured(contributions, result, kind, measure)
    figure = attention.detail_plot(cfg, shown, kind, layer, head, present, colour, first, last, hide_special)
    return measures.relabel(figure, measure)


def toggled(cfg: TransformerConfig, contributions: measures.Contributions, result: AttentionResult | None, kind,
            layer, head, present=False, colour="fixed", measure=None, first=1, last=None,
            hide_special=False) -> tuple[Figure | None, Figure | None, str]:
    """The weights/contributions toggle: both figures redrawn (none before a run), and the choice for the session to
    keep."""
    measure = measures.check_measure(measure, null=None)  # the toggle's own value
    figures = _views(cfg, contributions, result, kind, layer, head, present, colour, measure, first, last,
                     hide_special)
    return (*figures, measure)


def after_run(cfg: TransformerConfig, contributions: measures.Contributions, result: AttentionResult | None, kind,
              layer, head, present=False, colour="fixed", measure=None, first=1, last=None,
              hide_special=False) -> tuple[Figure | None, Figure | None] | tuple[Update, Update]:
    """After a run (/visualise draws the weights): the contributions' figures if they are chosen, else no change
    (none after a first run that failed)."""
    if measures.check_measure(measure) == measures.WEIGHTS:
        return SKIP, SKIP
    return _views(cfg, contributions, result, kind, layer, head, present, colour, measure, first, last, hide_special)



def drawn_keys(cfg: TransformerConfig, result: AttentionResult | None, kind, layer, head, present=False,
               colour="fixed", measure=None, first=1, last=None, hide_special=False) -> dict[str, str] | None:
    """What the overview and the close-up show when ``views`` (or ``toggled``) draws them from these choices, by
    plot: the sentence and every choice that plot is drawn from (a lecture's move leaves a plot that shows it already
    as it is: viz.ui.lecture). None before a run, or for values they refuse."""
    if result is None:
        return None
    try:
        kind, layer, head = attention.check_view(cfg, kind, layer, head)
        focus = repr(check_focus(first, last, hide_special))
        shown = (result.source_text, tuple(result.target_tokens), result.teacher_forced,
                 measures.check_measure(measure), present is True, kind)
        return {"overview": repr(shown), "detail": repr((shown, layer, head, projector.check_colour(colour), focus))}
    except ValueError:
        return None
