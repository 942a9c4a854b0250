"""``viz.views.memo.ViewMemo``: a view's answer is kept for the very same run and choices, and only for them."""

from __future__ import annotations

import gc

from viz.views.memo import ViewMemo


class Run:  # stands for a cached AttentionResult (weakly referable, compared by identity)
    pass


def test_the_same_run_and_choices_get_the_answer_drawn_once():
    memo, drawn = ViewMemo(size=2), []

    def draw(answer):
        return lambda: drawn.append(answer) or answer

    run = Run()
    assert memo(run, ("cross", 1), draw("a")) == "a"
    assert memo(run, ("cross", 1), draw("b")) == "a" and memo.hits == 1  # kept
    assert memo(run, ("cross", 2), draw("c")) == "c"  # other choices: drawn
    assert memo(Run(), ("cross", 1), draw("d")) == "d"  # another run: drawn
    assert len(memo) == 2 and drawn == ["a", "c", "d"]  # the oldest went (size 2)
    assert memo(run, ("cross", 1), draw("e")) == "e"
    del run
    gc.collect()
    memo(Run(), "other", draw("f"))
    assert len(memo) == 1  # the answers of a run that is gone went with it


def test_an_answer_is_never_given_for_another_run_with_the_same_id():
    memo = ViewMemo()
    run = Run()
    memo(run, "k", lambda: "first run's")
    old_id = id(run)
    del run
    gc.collect()
    later = [Run() for _ in range(1000)]  # one of them may take the freed id
    for other in later:
        if id(other) == old_id:
            assert memo(other, "k", lambda: "its own") == "its own"
