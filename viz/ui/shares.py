"""Fair shares: how the app's queue shares its places and its turns among visitors, with no fixed cap per visitor.
Plain Python (no Gradio): ``viz.ui.limits.FairQueue`` applies it to Gradio's queue. The design note:
model/serving/README.md, "Fair shares".

A visitor is an address (as the server sees it: a lecture hall behind a school's NAT, or behind a proxy that forwards
it, is one) and, within it, a page's session. A session is only a string the client picks: it orders an address's own
requests, it never earns an address more.

- **Turns** (``next_up``): when a queue may start a request, the address whose turn it is goes first — the one with
  the fewest requests running, then the one this queue served longest ago — and within it the session whose turn it
  is, by the same rule; that session's oldest request starts. One address uses every worker nobody else wants; while
  others wait, each gets a turn in every round.
- **Places** (``yielder``): the queue has ``PLACES`` places for waiting requests, shared by everyone. While one is
  free a request takes it, whoever sends it. When all are taken, the address holding the most places yields its
  newest request (within it, the session holding the most): if that is the newcomer, it is refused; otherwise that
  request leaves the queue with a message and the newcomer takes its place. A hall of a hundred is never refused for
  being many; a flood fills only places nobody else wants, and gives them up one by one as others come.
- **Heavy work** (``HEAVY``): a head ablation or a lab sibling's run takes seconds of CPU: at most ``per_session``
  of a kind waiting or running per page; ablations also have ``places`` of their own, shared by the same rule (a lab
  run has not: a lecture stop opens the Lab tab for a whole hall at once).
- **Lanes** (``crowd``, ``quick_pick``): an address holding more than ``CROWD`` requests (waiting and running) is a
  crowd — a lecture hall, a flood. Its model work runs in a lane of its own, the crowd's, at a lower CPU priority
  (``model.serving.batching``), and everyone else's in the other: a lone visitor's sentence does not wait for a
  hall's batch of 32. A queue whose workers are all taken still starts the oldest request of an address that is not
  a crowd, up to ``QUICK_WORKERS`` more: a lone visitor does not wait for a worker either. And while anyone else is
  served, crowds run at most ``CROWD_RUNNING`` requests at once besides those waiting for the model (``capped``):
  the rest wait their turn, so that the server's one interpreter is not 32 of a hall's answers to one visitor's.
- **Unread answers**: an answer counts against its visitor until it is read: at most ``UNREAD_PLACES`` for everyone
  (memory: each may be an 11 MB /attention answer), shared by the same rule, its oldest first, among those ready
  ``UNREAD_GRACE_S`` ago or more (younger ones are still on their way to a reader); none is kept longer than
  ``UNREAD_S``.
Every refusal says why and when to try again (``Busy``).
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

PLACES = 256  # waiting requests, everyone together (app.launch makes it the queue's max_size)
UNREAD_PLACES = 64  # answers ready and not yet read, everyone together
UNREAD_S = 30.0  # an answer not read this long after it was ready is dropped
UNREAD_GRACE_S = 5.0  # younger answers are on their way to their readers (a busy server sends a page's in seconds)
CROWD = 12  # an address holding more requests than this is a crowd (a page load sends ~9; a hall, hundreds)
QUICK_WORKERS = 4  # a queue's workers beyond its limit, for requests of addresses that are not a crowd
CROWD_RUNNING = 2  # crowds' requests in the server's interpreter at once, while others are served (``capped``)
CROWD_RUNNING_ALL = 8  # crowds' requests running at once in all (in the model too), while others are served
OTHERS_RECENT_S = 2.0  # others are served: an address that is no crowd held a request this recently
TURNS_KEPT = 4096  # addresses and sessions whose last turn is remembered (the least recent are forgotten first)


@dataclass(frozen=True)
class Heavy:
    """A kind of slow work: its bounds besides the shared places."""

    noun: str  # what one request is, in the messages
    per_session: int  # waiting or running at once, per page
    places: int | None = None  # waiting at most, everyone together (the longest wait: places × its time)


# By queue (Gradio's concurrency id): a head ablation decodes the shipped sample (5-9 CPU-seconds, one at a time:
# viz.ui.wiring.ABLATIONS); a lab comparison runs two sibling models (/lab_attention one), loading those not loaded.
HEAVY = {
    "ablate": Heavy("head ablation", per_session=1, places=16),
    "lab_compare": Heavy("comparison of lab runs", per_session=1),
    "lab_attention": Heavy("lab run's attention", per_session=1),
}


@dataclass(frozen=True)
class Claim:
    """A request holding a place (waiting in a queue) or an answer holding one (ready, not yet read)."""

    id: str
    address: str
    session: str
    at: float  # when it came (a request) or was ready (an answer): later is newer


class Busy(Exception):
    """A request refused, or made to give up its place: ``reason`` and ``retry_s``, when to try again."""

    def __init__(self, reason: str, retry_s: float):
        self.reason, self.retry_s = reason, max(1, math.ceil(retry_s))
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return f"{self.reason} Try again in {self.retry_s} s."


def yielder(claims: Sequence[Claim], newcomer: Claim, places: int) -> Claim | None:
    """The claim that gives up its place so that ``newcomer`` can have one among ``claims`` (``places`` in all): None
    while one is free; else ``newest(claims + newcomer)`` — the newcomer itself when it should be refused."""
    if len(claims) < places:
        return None
    return newest([*claims, newcomer])


def newest(claims: Sequence[Claim]) -> Claim:
    """The newest claim of the session holding the most of the address holding the most (ties: the newer claim)."""
    return _of_largest(claims, lambda group: max(c.at for c in group), max)


def oldest(claims: Sequence[Claim]) -> Claim:
    """The oldest claim of the session holding the most of the address holding the most (ties: the older claim)."""
    return _of_largest(claims, lambda group: -min(c.at for c in group), min)


def _of_largest(claims: Sequence[Claim], tie, pick) -> Claim:
    if not claims:
        raise ValueError("no claims")
    address = _largest(claims, lambda c: c.address, tie)
    mine = [c for c in claims if c.address == address]
    session = _largest(mine, lambda c: c.session, tie)
    return pick((c for c in mine if c.session == session), key=lambda c: c.at)


def _largest(claims: Sequence[Claim], key, tie):
    groups: dict[str, list[Claim]] = {}
    for c in claims:
        groups.setdefault(key(c), []).append(c)
    return max(groups, key=lambda k: (len(groups[k]), tie(groups[k])))


class Turns:
    """When each address and each session was last served, per queue, for the ``TURNS_KEPT`` served most recently:
    one forgotten counts as never served (it was served longer ago than any remembered)."""

    def __init__(self, kept: int = TURNS_KEPT):
        self.kept = kept
        self._last: OrderedDict[tuple[str, str, str], float] = OrderedDict()

    def served(self, queue: str, claim: Claim, now: float) -> None:
        for key in ((queue, "address", claim.address), (queue, "session", claim.session)):
            self._last[key] = now
            self._last.move_to_end(key)
        while len(self._last) > self.kept:
            self._last.popitem(last=False)

    def last(self, queue: str, kind: str, name: str) -> float:
        return self._last.get((queue, kind, name), -math.inf)

    def __len__(self) -> int:
        return len(self._last)


def next_up(queue: str, waiting: Sequence[Claim], running: Counter, turns: Turns) -> int:
    """The index in ``waiting`` (a queue's requests, oldest first) of the one to start next: the oldest of the session
    whose turn it is within the address whose turn it is (the module docstring). ``running``: requests running now,
    counted by ("address", name) and by ("session", name)."""
    if not waiting:
        raise ValueError("nothing waits")

    def turn(kind: str, name: str) -> tuple[int, float]:
        return running[kind, name], turns.last(queue, kind, name)

    first: dict[str, int] = {}  # address -> its oldest waiting request's index
    for i, c in enumerate(waiting):
        first.setdefault(c.address, i)
    address = min(first, key=lambda a: (*turn("address", a), first[a]))
    sessions: dict[str, int] = {}
    for i, c in enumerate(waiting):
        if c.address == address:
            sessions.setdefault(c.session, i)
    return min(sessions.values(), key=lambda i: (*turn("session", waiting[i].session), i))


def crowd(holding: int) -> bool:
    """Whether an address holding ``holding`` requests (waiting and running, every queue) is a crowd."""
    return holding > CROWD


def capped(holding: Counter, running: Counter, others: bool, in_model: int = 0) -> set[str]:
    """The crowds that may start no more requests now (``holding``: requests waiting and running by address;
    ``running``: by ("address", name); ``in_model``: the crowds' running requests that wait for the model): while
    ``others`` are served, the crowds together run at most ``CROWD_RUNNING`` requests in the server's own interpreter.
    Every request goes through that one interpreter (its answer, its figures): 32 of a crowd's at once there leave a
    visitor's request one turn in 33; a request waiting for the model (its own process) takes no turn there, so a
    hall of new sentences still fills the model's batches — up to ``CROWD_RUNNING_ALL`` running in all: a batch's
    answers come back together, and each then takes its turns in the interpreter."""
    crowds = {a for a, n in holding.items() if crowd(n)}
    together = sum(running["address", a] for a in crowds)
    full = together - in_model >= CROWD_RUNNING or together >= CROWD_RUNNING_ALL
    return crowds if others and full else set()


def quick_pick(waiting: Sequence[Claim], holding: Counter) -> int | None:
    """The index in ``waiting`` (oldest first) of the oldest request of an address that is not a crowd (``holding``:
    requests waiting and running by address), or None: what a queue with its workers all taken may start still."""
    return next((i for i, c in enumerate(waiting) if not crowd(holding[c.address])), None)


# ----------------------------------------------------------------------------------------------- messages
def queue_full(holding: int, places: int, retry_s: float, yielded: bool) -> Busy:
    """The queue is full and the address that asked holds the most of it."""
    what = ("This request gave its place in the queue to another visitor's" if yielded else
            "The app is busy: every place in its queue is taken")
    return Busy(f"{what}: your address holds the most of its {places} places ({holding}).", retry_s)


def heavy_per_session(heavy: Heavy, retry_s: float) -> Busy:
    return Busy(f"Your {heavy.noun} is still waiting or running: {heavy.per_session} at a time per page, and it goes "
                "first.", retry_s)


def heavy_full(heavy: Heavy, holding: int, retry_s: float, yielded: bool) -> Busy:
    what = (f"This {heavy.noun} gave its place to another visitor's" if yielded else
            f"{heavy.places} {heavy.noun}s are waiting already (at most {heavy.places} for everyone)")
    return Busy(f"{what}, and your address holds the most of them ({holding}).", retry_s)


def unread_dropped(unread_s: float) -> str:
    return (f"This answer was ready but not read within {unread_s:.0f} s, so it was dropped: ask again, and read the "
            "answer at once.")


def unread_crowded(holding: int) -> str:
    return (f"This answer was dropped unread: the app keeps {UNREAD_PLACES} unread answers for everyone, and your "
            f"address held the most ({holding}). Ask again, and read the answer at once.")
