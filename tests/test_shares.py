"""The fair-shares policy on its own (``viz.ui.shares``: no Gradio, no server): who yields a place when the queue is
full, whose turn it is, and what a refusal says. tests/test_fair_queue.py holds it in the served app."""

from __future__ import annotations

from collections import Counter

import pytest

from viz.ui import shares
from viz.ui.shares import Claim, Turns, newest, next_up, oldest, yielder

_at = iter(range(1, 1_000_000))


def claims(address: str, n: int, session: str | None = None) -> list[Claim]:
    """``n`` requests from ``address``, each its own session unless ``session`` names one, newer than any before."""
    return [Claim(f"{address}-{i}", address, session or f"{address}-s{i}", next(_at)) for i in range(n)]


# ------------------------------------------------------------------------------------------------- places
def test_while_a_place_is_free_anyone_takes_it_however_many_it_holds():
    hall = claims("hall", 255)
    assert yielder(hall, claims("hall", 1)[0], places=256) is None


def test_a_full_queue_refuses_the_newcomer_of_the_address_holding_the_most():
    queue = claims("hall", 200) + claims("flood", 56)
    newcomer = claims("hall", 1)[0]
    assert yielder(queue, newcomer, places=256) is newcomer


def test_a_full_queue_takes_the_newest_place_of_the_largest_holder_for_anyone_else():
    flood = claims("flood", 250)
    queue = claims("hall", 3) + flood[:100] + claims("visitor", 3) + flood[100:]
    newcomer = claims("visitor", 1)[0]
    assert yielder(queue, newcomer, places=256) == flood[-1]


def test_a_tie_is_lost_by_the_newer_request():
    queue = claims("a", 128) + claims("b", 127)
    queue.append(claims("b", 1)[0])  # b ties a with 128, and holds the newest
    assert yielder(queue, claims("c", 1)[0], places=256) == queue[-1]
    newcomer = claims("b", 1)[0]
    assert yielder(queue[:-1], newcomer, places=255) is newcomer  # b with it ties a, and it is the newest


def test_within_an_address_the_session_holding_the_most_yields_its_newest():
    mine = claims("hall", 5, session="greedy") + claims("hall", 1, session="student")
    assert newest(mine).session == "greedy" and newest(mine) == mine[4]
    assert oldest(mine) == mine[0]


def test_unread_answers_go_oldest_first_from_the_largest_holder():
    script, page = claims("script", 4), claims("page", 2)
    assert oldest(page + script) == script[0]


def test_no_claims_is_an_error():
    with pytest.raises(ValueError):
        newest([])


def test_a_flood_gives_its_places_back_one_by_one_and_the_hall_is_never_refused():
    """A flood fills the queue; a hall of 100 students then comes, one request each: every one is let in, each
    taking one of the flood's places, and the flood is refused from then on; past half the places, the hall's next
    would be refused (its share while the flood waits too)."""
    places = 256
    queue = claims("flood", places)
    refused: Counter = Counter()
    for request in [c for s in range(100) for c in claims("hall", 1, session=f"student{s}")] + claims("flood", 50):
        out = yielder(queue, request, places)
        if out is request:
            refused[request.address] += 1
            continue
        if out is not None:
            queue.remove(out)
        queue.append(request)
    assert refused == {"flood": 50}
    assert Counter(c.address for c in queue) == {"hall": 100, "flood": 156}
    queue = claims("flood", 128) + claims("hall", 128)
    newcomer = claims("hall", 1)[0]
    assert yielder(queue, newcomer, places) is newcomer


# --------------------------------------------------------------------------------------------------- turns
def test_an_address_with_fewer_running_goes_first():
    waiting = claims("flood", 5) + claims("visitor", 1)
    running = Counter({("address", "flood"): 1})
    assert next_up("q", waiting, running, Turns()) == 5
    assert next_up("q", waiting, Counter(), Turns()) == 0  # nobody running nor served: the oldest


def test_the_address_served_longest_ago_goes_first():
    waiting = claims("flood", 5) + claims("visitor", 1)
    turns = Turns()
    turns.served("q", Claim("gone", "flood", "flood-gone", 0), now=5.0)  # one of the flood's, started
    assert next_up("q", waiting, Counter(), turns) == 5
    turns.served("q", waiting[5], now=9.0)
    assert next_up("q", waiting, Counter(), turns) == 0
    assert next_up("other queue", waiting, Counter(), turns) == 0  # turns are per queue


def test_sessions_of_an_address_take_turns_and_each_starts_its_oldest():
    greedy = claims("hall", 4, session="greedy")
    waiting = greedy + claims("hall", 1, session="quiet")
    turns = Turns()
    turns.served("q", greedy[0], now=1.0)
    assert next_up("q", waiting, Counter(), turns) == 4  # quiet's turn: greedy was served
    running = Counter({("address", "hall"): 1, ("session", "quiet"): 1})
    assert next_up("q", waiting, running, Turns()) == 0  # quiet runs one: greedy's oldest


def test_a_served_queue_goes_round_the_addresses_and_sessions():
    """Serve one at a time from a flood of 30, a hall of 3 students × 3 and a visitor's 2: the order goes round."""
    waiting = claims("flood", 30) + [c for s in range(3) for c in claims("hall", 3, session=f"s{s}")]
    waiting += claims("visitor", 2)
    turns, order = Turns(), []
    for now in range(12):
        i = next_up("q", waiting, Counter(), turns)
        turns.served("q", waiting[i], now)
        order.append((waiting[i].address, waiting[i].session if waiting[i].address == "hall" else ""))
        del waiting[i]
    assert order[:6] == [("flood", ""), ("hall", "s0"), ("visitor", ""), ("flood", ""), ("hall", "s1"),
                         ("visitor", "")]
    assert order[6:9] == [("flood", ""), ("hall", "s2"), ("flood", "")]  # the visitor is done
    assert order[9] == ("hall", "s0")


def test_turns_forget_the_least_recent_first():
    turns = Turns(kept=3)
    for now, c in enumerate(claims("a", 3)):
        turns.served("q", c, now)  # two keys each: a's address and the session
    assert len(turns) == 3
    assert turns.last("q", "address", "a") == 2 and turns.last("q", "session", "a-s0") == float("-inf")


def test_nothing_waiting_is_an_error():
    with pytest.raises(ValueError):
        next_up("q", [], Counter(), Turns())


# ------------------------------------------------------------------------------------------------ messages
# -------------------------------------------------------------------------------------------------- lanes
def test_an_address_holding_more_than_a_page_loads_worth_is_a_crowd():
    assert not shares.crowd(shares.CROWD) and shares.crowd(shares.CROWD + 1)
    assert shares.CROWD >= 9  # a page load sends ~9 requests at once: a lone visitor's is no crowd


def test_a_full_queue_may_start_the_oldest_request_of_an_address_that_is_no_crowd():
    waiting = claims("hall", 20) + claims("visitor", 2) + claims("other", 1)
    holding = Counter({"hall": 52, "visitor": 2, "other": 1})
    assert shares.quick_pick(waiting, holding) == 20  # the visitor's oldest, though the hall's came first
    assert shares.quick_pick(claims("hall", 5), Counter({"hall": 52})) is None  # only a crowd waits: it waits


def test_crowds_run_a_few_at_once_besides_their_model_waits_only_while_others_are_served(monkeypatch):
    monkeypatch.setattr(shares, "CROWD_RUNNING", 4)
    monkeypatch.setattr(shares, "CROWD_RUNNING_ALL", 8)
    holding = Counter({"hall": 52, "flood": 20, "visitor": 2})
    running = Counter({("address", "hall"): 3, ("address", "visitor"): 5})
    assert shares.capped(holding, running, others=True) == set()  # 3 of the crowds' run
    running["address", "flood"] = 1
    assert shares.capped(holding, running, others=True) == {"hall", "flood"}  # 4: together
    assert shares.capped(holding, running, others=True, in_model=1) == set()  # one waits for the model
    running["address", "hall"] = 7
    assert shares.capped(holding, running, others=True, in_model=5) == {"hall", "flood"}  # 8 in all
    assert shares.capped(holding, running, others=False) == set()  # nobody else: crowds take every worker


def test_a_refusal_says_why_and_when_to_try_again():
    busy = shares.queue_full(holding=200, places=256, retry_s=2.2, yielded=False)
    assert busy.retry_s == 3
    assert busy.message == ("The app is busy: every place in its queue is taken: your address holds the most of its "
                            "256 places (200). Try again in 3 s.")
    assert "gave its place" in shares.queue_full(3, 256, 0.1, yielded=True).message
    assert shares.queue_full(3, 256, 0.1, yielded=True).retry_s == 1
    heavy = shares.HEAVY["ablate"]
    assert "one at a time" not in shares.heavy_per_session(heavy, 9).message  # says its own bound
    assert "1 at a time per page" in shares.heavy_per_session(heavy, 9).message
    assert "16 head ablations are waiting already" in shares.heavy_full(heavy, 16, 40, yielded=False).message
    assert "Try again in 40 s." in shares.heavy_full(heavy, 16, 40, yielded=True).message
