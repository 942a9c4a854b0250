"""Every event of the app, public and page-only, sent wrong values over raw HTTP: the bad-value corpus.

The events and their inputs come from the served app's own description (``/config``'s dependencies and components,
``/gradio_api/info`` for the script endpoints' parameters), so an event added later is probed too. Each event is
called through ``/gradio_api/queue/join`` by its ``fn_index``, as the page calls it: once with too few values and
once with too many, then with one input at a time replaced by each value of its corpus (by the component's kind:
a checkbox, a choice, a number, text) while the others stay as the page starts.

A corpus value is *refused* (no page sends it: the answer must be an error with a message, or the page's notice
saying what to change) or *odd* (an empty or hostile sentence: any answer with a message, or a normal one). Never
acceptable: an error without a message (Gradio's ``{"error": null}``), Python's words or a traceback, a message
that is HTML (a "<" in it: Gradio shows messages as HTML), a refused value answered as if it were good.

``python tests/helpers/bad_values.py URL`` probes a served app and prints the totals.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parents[2]), str(Path(__file__).resolve().parents[1])]

from helpers.raw_api import Answer, RawClient, valid
from viz.ui.wiring import STALE

NAN, INF = math.nan, math.inf
SENTENCE = "a big dog runs in the park."
HOSTILE = '<a href="https://evil.example/">EVIL</a><img src=x onerror=alert(1)>\x00\u202e$$x$$ [EVIL](https://evil.example)'
UNICODE = "Ünïcödé 🙂 中文 ½"
# What a message must not be: traceback text, or a Python exception's own words (they say nothing to a user).
PYTHON_WORDS = ("Traceback", 'File "', "invalid literal", "NoneType", "not supported between", "unhashable",
                "object has no attribute", "could not convert", "cannot convert", "<class ", "argument must be",
                "(type: ")
# Inputs whose null is a value, by name or label, as documented: a head of null is the mean over heads
# (viz.views.inputs.check_head), the close-up's focus null the whole sentence (viz.views.attention.focus).
NULL_MEANS = {"head", "first", "last", "from token", "to token"}


@dataclass(frozen=True)
class Input:
    name: str
    kind: str  # the component's type ("checkbox", "radio", …, "api" for a script endpoint's parameter)
    props: dict
    param: dict | None = None  # a script endpoint's parameter, as /gradio_api/info describes it


@dataclass(frozen=True)
class Event:
    fn_index: int
    name: str  # its api_name
    public: bool
    inputs: tuple[Input, ...]
    same_as: int | None = None  # an earlier event of the same function, inputs and outputs (another trigger)

    def good(self) -> list:
        """The values the page starts with (null for what the session holds)."""
        return [good_value(i) for i in self.inputs]


@dataclass
class Totals:
    events: int = 0
    values: int = 0  # bad values sent (refused and odd), the wrong counts included
    messages: int = 0  # answered with a message (an error's, or the page's notice)
    normal: int = 0  # odd values answered normally
    failures: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"{self.values:,} bad values over {self.events} events: {self.messages:,} answered with a message, "
                f"{self.normal:,} odd ones answered normally, {len(self.failures)} unacceptable")


def events(url: str) -> list[Event]:
    """Every event the server runs (a backend function), in the app's order."""
    client = RawClient(url)
    try:
        config = json.loads(client.request("GET", "/config")[1])
        info = json.loads(client.request("GET", "/gradio_api/info")[1])["named_endpoints"]
    finally:
        client.close()
    components = {c["id"]: c for c in config["components"]}
    found, seen = [], {}
    for dep in config["dependencies"]:
        if not dep.get("backend_fn"):
            continue
        # Gradio names a function's second event "<name>_1": with the same inputs and outputs it is the same listener
        # on another trigger (Inside a head draws on five), probed once with the corpus
        key = (re.sub(r"_\d+$", "", dep["api_name"]), tuple(dep["inputs"]), tuple(dep["outputs"]))
        params = iter(info.get(f"/{dep['api_name']}", {}).get("parameters", []))
        inputs = []
        for k, cid in enumerate(dep["inputs"]):
            comp = components[cid]
            param = next(params, None) if comp["type"] != "state" else None
            name = (param or {}).get("parameter_name") or comp["props"].get("label") or f"value {k + 1}"
            inputs.append(Input(name.rstrip("_"), comp["type"], comp["props"], param))
        found.append(Event(dep["id"], dep["api_name"], dep.get("api_visibility") != "private", tuple(inputs),
                           seen.get(key)))
        seen.setdefault(key, dep["id"])
    return found


def good_value(inp: Input):
    if inp.kind == "state":
        return None
    if inp.kind == "api":
        return valid(inp.param, SENTENCE)
    return inp.props.get("value")


def corpus(inp: Input) -> tuple[list, list]:
    """(refused, odd) values for one input, by its component's kind."""
    props, kind = inp.props, inp.kind
    null_ok = inp.name.lower() in NULL_MEANS
    if kind == "api":
        kind, null_ok = _api_kind(inp.param), inp.param.get("parameter_default", 0) is None or null_ok
    if kind == "checkbox":
        return [None, "yes", "true", [], NAN, 1, 0, {"a": 1}], []
    if kind in ("checkboxgroup", "list") or (kind == "dropdown" and props.get("multiselect")):
        return ["nope", ["nope"], [NAN], [1], [None], 3, NAN, True, {"a": 1}], [None, []]
    if kind in ("radio", "dropdown"):
        choices = [c[1] if isinstance(c, list) else c for c in props.get("choices") or []]
        null_ok = null_ok or props.get("value") is None
        candidates = ["", "nope", 3, -7, 2.5, NAN, INF, True, [1], {"a": 1}]
        if not choices:  # its choices come with the session's sentence: only what is never a choice is refused
            return [NAN, INF, True, [1], {"a": 1}], ["", "nope", 3, -7, 2.5] + [None] * null_ok
        return [v for v in candidates if not _is_choice(v, choices)] + [None] * (not null_ok), [None] * null_ok
    if kind in ("slider", "number", "numeric"):
        refused = [NAN, INF, -INF, "abc", "", "2.5", True, [1], {"a": 1}, 1e300] + [None] * (not null_ok)
        lo, hi, step = props.get("minimum"), props.get("maximum"), props.get("step")
        # an event may raise a maximum (the decoding's steps): far beyond it is refused all the same
        refused += [bound for bound in (lo - 1 if lo is not None else None, hi + 10**6 if hi is not None else None)
                    if bound is not None]
        if step is not None and float(step).is_integer() and props.get("value") is not None:
            refused.append(props["value"] + 0.5)  # a whole number is wanted: never rounded
        return refused, ["3"] + [-1, 2.5, 10**9] * (kind == "numeric") + [None] * null_ok
    limit = props.get("max_length") or (2000 if kind == "text" else None)  # a script's sentence: MAX_CHARS
    refused = [12, 2.5, NAN, True, [1], {"a": 1}] + (["x" * (limit + 1)] if limit else [])
    return refused, [None, "", " \t\n", HOSTILE, UNICODE] + ["x" * 3000] * (not limit)


def _api_kind(param: dict) -> str:
    kind = param.get("type") or {}
    types = {kind.get("type")} | {t.get("type") for t in kind.get("oneOf", [])}
    if types & {"number", "integer"}:
        return "numeric"
    if "boolean" in types:
        return "checkbox"
    return "list" if "array" in types else "text"


def _is_choice(value, choices: list) -> bool:
    return any((type(value) is type(c) or {type(value), type(c)} <= {int, float}) and value == c for c in choices)


def problem(answer: Answer, refused: bool) -> str | None:
    """Why an answer is unacceptable (None: acceptable); ``refused``: the value must not be answered as good."""
    if answer.event == "complete":
        if refused and STALE not in json.dumps(answer.data, ensure_ascii=False):
            return "answered as if it were good"
        return None
    message = answer.message
    if not isinstance(message, str) or not message.strip():
        return f"error without a message: {answer.data!r}"[:300]
    bad = [w for w in PYTHON_WORDS if w in message]
    if bad:
        return f"message with {bad}: {message!r}"[:300]
    return f"message with HTML in it: {message!r}"[:300] if "<" in message else None


def is_message(answer: Answer) -> bool:
    return answer.event == "error" or STALE in json.dumps(answer.data, ensure_ascii=False)


def probe(client: RawClient, event: Event, totals: Totals) -> None:
    """Too few and too many values, then each input's corpus, for one event; into ``totals``."""
    good = event.good()
    totals.events += 1
    for wrong in (good[:-1] if good else None, [*good, "extra"], [*good, None, None]):
        if wrong is None:
            continue
        answer = client.join(event.fn_index, wrong)
        totals.values += 1
        why = problem(answer, refused=True) or (None if "takes" in (answer.message or "") else "no count named")
        _count(totals, answer, why, f"{event.name} ({event.fn_index}) with {len(wrong)} values")
    if event.same_as is not None:
        return  # its values: as the event it repeats
    for i, inp in enumerate(event.inputs):
        if inp.kind == "state":
            continue
        refused, odd = corpus(inp)
        for values, is_refused in ((refused, True), (odd, False)):
            for bad in values:
                answer = client.join(event.fn_index, good[:i] + [bad] + good[i + 1:])
                totals.values += 1
                why = problem(answer, is_refused)
                _count(totals, answer, why, f"{event.name} ({event.fn_index}) {inp.name}={_short(bad)}")


def _count(totals: Totals, answer: Answer, why: str | None, what: str) -> None:
    if why:
        totals.failures.append(f"{what}: {why}")
    elif is_message(answer):
        totals.messages += 1
    else:
        totals.normal += 1


def _short(value) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 30 else text[:29] + "…"


def probe_all(url: str, prepare=None, clients: int = 4) -> Totals:
    """Every event of the app at ``url``, shared by ``clients`` sessions at once, each prepared by ``prepare(client)``
    first (e.g. a sentence visualised)."""
    totals, todo = Totals(), list(reversed(events(url)))
    lock = threading.Lock()

    def work() -> None:
        client, mine = RawClient(url), Totals()
        try:
            if prepare:
                prepare(client)
            while True:
                with lock:
                    if not todo:
                        break
                    event = todo.pop()
                probe(client, event, mine)
        finally:
            client.close()
            with lock:
                totals.events, totals.values = totals.events + mine.events, totals.values + mine.values
                totals.messages, totals.normal = totals.messages + mine.messages, totals.normal + mine.normal
                totals.failures += mine.failures

    threads = [threading.Thread(target=work) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return totals


def by_event(totals: Totals) -> Counter:
    return Counter(re.sub(r" \(.*", "", f) for f in totals.failures)


if __name__ == "__main__":
    result = probe_all(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:7860/")
    print("\n".join(result.failures))
    print(result.line())
