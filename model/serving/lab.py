"""The lab's shipped runs, served: their records, the time-lapse maps, and siblings opened on demand.

``assets/lab/`` (``ATTN_LAB_DIR`` names another folder) holds what ``python -m model.lab export`` wrote
(``model.training.lab_export``): a JSON record per run, a time-lapse npz per run, ``index.json``, and a model
folder for each sibling a visitor can run. At most ``capacity`` siblings (default 2) are loaded beside the
shipped model at once; the least recently used goes first. Everything here is read-only and shared by every
visitor.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import OrderedDict
from functools import cached_property
from pathlib import Path
from typing import NoReturn

import numpy as np

from model.terms import KINDS

LAB = Path(__file__).resolve().parents[2] / "assets" / "lab"
REFERENCE = "h8"  # the run whose time-lapse the API serves: the shipped architecture under the lab's budget
SHIPPED = "shipped"  # /lab_attention's name for the shipped model (h = 8, the full training budget)
MAP_DECIMALS = 3
INDEX_LISTS = ("runs", "live", "sentences")
RECORD_KEYS = ("name", "label", "seed", "config", "curves", "bleu", "epochs", "timelapse")
log = logging.getLogger(__name__)


class LabError(ValueError):
    """A request the lab cannot serve; the message names the allowed values."""


def _allowed(what: str, value, allowed) -> LabError:
    return LabError(f"unknown {what} {value!r}; choose one of: {', '.join(map(str, allowed))}")


class Lab:
    def __init__(self, folder: str | Path | None = None, device=None, capacity: int = 2):
        self.folder = Path(folder or os.environ.get("ATTN_LAB_DIR") or LAB)
        self.device, self.capacity = device, capacity
        self._open: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()

    @cached_property
    def index(self) -> dict:
        """``index.json``: runs (in the lab's order), reference, live, budget, sentences; empty if nothing shipped
        or if it cannot be read (``broken`` says why: the lab degrades, never the app)."""
        empty = {"runs": [], "reference": REFERENCE, "live": [], "budget": [], "sentences": []}
        path = self.folder / "index.json"
        if not path.is_file():
            return empty
        index = self._read_json(path, "index.json")
        if not isinstance(index, dict) or not all(isinstance(index.get(k), list) for k in INDEX_LISTS):
            self.broken.setdefault("index.json", "not the lab's index (runs, live, sentences)")
            return empty
        return {**empty, **index}

    @cached_property
    def broken(self) -> dict[str, str]:
        """A file of the lab that cannot be read -> why, in a few words (logged once, shown on the Lab tab)."""
        return {}

    def _read_json(self, path: Path, name: str):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            reason = f"{type(e).__name__}: {str(e)[:120]}"
            self.broken[name] = reason
            log.warning("lab: %s unreadable (%s); the Lab tab leaves it out", path, reason)
            return None

    @cached_property
    def records(self) -> dict[str, dict]:
        """name -> the run's record, in the lab's order; a record that cannot be read is left out (``broken``)."""
        out = {}
        for name in self.index["runs"]:
            record = self._read_json(self.folder / f"{name}.json", name)
            if isinstance(record, dict) and all(k in record for k in RECORD_KEYS):
                out[name] = record
            elif record is not None:
                self.broken[name] = f"its record lacks {', '.join(k for k in RECORD_KEYS if k not in record)}" \
                    if isinstance(record, dict) else "its record is not an object"
                log.warning("lab: %s.json: %s; the Lab tab leaves it out", name, self.broken[name])
        return out

    @cached_property
    def statistics(self) -> dict:
        """``statistics.json`` (``model.training.lab_stats``): BLEU per run, mean ± sd per setting, each claim's
        difference, 95 % interval and verdict; empty if not shipped or unreadable."""
        path = self.folder / "statistics.json"
        stats = self._read_json(path, "statistics.json") if path.is_file() else None
        return stats if isinstance(stats, dict) and isinstance(stats.get("claims"), list) else {}

    @property
    def sentences(self) -> list[dict]:
        return self.index["sentences"]

    @property
    def live(self) -> list[str]:
        """The runs whose weights are shipped (a visitor can run them on a sentence) and whose record reads."""
        return [name for name in self.index["live"] if name in self.records]

    def runs_payload(self) -> dict:
        """/lab_runs: one entry per sibling (its seeds together): name, config, seeds, curves, series (the
        softmax's entropy ÷ log n and own gradient over the time-lapse steps), bleu per seed."""
        families: dict[str, dict] = {}
        for record in self.records.values():
            family = record["name"].removesuffix(f"-seed{record['seed']}")
            entry = families.setdefault(family, {
                "name": family, "label": record["label"].split(", seed")[0], "tests": record["tests"],
                "config": record["config"], "parameters": record["parameters"], "seeds": [], "runs": [],
                "curves": [], "series": [], "bleu": [], "epochs": []})
            entry["seeds"].append(record["seed"])
            entry["runs"].append(record["name"])
            entry["curves"].append(record["curves"])
            series = record["timelapse"].get("series")  # per kind and layer over the time-lapse's steps
            entry["series"].append({"step": record["timelapse"]["steps"], **series} if series else None)
            entry["bleu"].append(record["bleu"])
            entry["epochs"].append(record["epochs"])
        return {"runs": list(families.values())}

    def check_live(self, run: str) -> None:
        if run not in self.live:
            raise _allowed("run", run, [SHIPPED, *self.live])

    def translator(self, run: str):
        """The sibling's Translator, loaded on first use; at most ``capacity`` stay loaded (LRU)."""
        if run not in self.live:
            raise _allowed("run", run, self.live)
        with self._lock:
            if run in self._open:
                self._open.move_to_end(run)
                return self._open[run]
            from model.network.inference import Translator

            folder = self.records[run]["weights"]["folder"]
            try:
                translator = Translator(self.folder / folder, self.device)
            except Exception as e:  # truncated weights, a config that does not fit them: this sibling only
                self._unreadable(f"{folder}/", e)
            self._open[run] = translator
            while len(self._open) > self.capacity:
                self._open.popitem(last=False)
            return translator

    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._open)

    def example_index(self, example) -> int:
        """A time-lapse sentence by its index (0-based, int or digits) or its exact English text."""
        texts = [s["source"] for s in self.sentences]
        if isinstance(example, str) and example.strip() in texts:
            return texts.index(example.strip())
        try:
            i = int(str(example).strip())
        except ValueError:
            i = -1
        if 0 <= i < len(texts) and str(i) == str(example).strip():
            return i
        raise _allowed("example", example, [f"{i}: {t}" for i, t in enumerate(texts)])

    def timelapse_maps(self, example, kind: str, run: str | None = None) -> tuple[str, np.ndarray, list, list]:
        """(run, maps (steps, L, H, Q, K) float64, query tokens, key tokens) of one time-lapse sentence."""
        if not self.records:
            raise LabError("no lab run is shipped yet (`python -m model.lab export` ships the finished ones)")
        run = run or self.index["reference"]
        if kind not in KINDS:
            raise _allowed("kind", kind, KINDS)
        if run not in self.records:
            raise _allowed("run", run, list(self.records))
        i = self.example_index(example)
        maps_file = self.records[run]["timelapse"].get("maps")
        if not maps_file:
            raise LabError(f"run {run!r} ships no time-lapse maps (only each setting's first seed does); choose one "
                           f"of: {', '.join(self.timelapse_runs())}")
        try:
            with np.load(self.folder / maps_file) as z:
                maps = z[f"{i}.{kind}"].astype(np.float64) / 255.0  # uint8 -> weights
        except Exception as e:  # a truncated or foreign file: this run's time-lapse is unreadable, nothing else
            self._unreadable(maps_file, e)
        sentence = self.sentences[i]
        if maps.ndim != 5 or maps.shape[-2:] != (len(self._queries(sentence, kind)), len(self._keys(sentence, kind))):
            self._unreadable(maps_file, ValueError(f"maps of shape {maps.shape} do not fit sentence {i}"))
        return run, maps, self._queries(sentence, kind), self._keys(sentence, kind)

    @staticmethod
    def _queries(sentence: dict, kind: str) -> list:
        return sentence["source_tokens"] if kind == "encoder_self" else sentence["target_tokens"]

    @staticmethod
    def _keys(sentence: dict, kind: str) -> list:
        return sentence["target_tokens"] if kind == "decoder_self" else sentence["source_tokens"]

    def timelapse_runs(self) -> list[str]:
        """The runs whose time-lapse maps ship (each setting's first seed)."""
        return [name for name, r in self.records.items() if r["timelapse"].get("maps")]

    def _unreadable(self, name: str, error: Exception) -> NoReturn:
        reason = f"{type(error).__name__}: {str(error)[:120]}"
        if name not in self.broken:
            self.broken[name] = reason
            log.warning("lab: %s unreadable (%s)", name, reason)
        raise LabError(f"the lab's file {name} cannot be read ({reason}); the other runs still work")

    def timelapse(self, example, kind: str, run: str | None = None) -> dict:
        """/timelapse: the maps of one time-lapse sentence over the training steps: (steps, L, H, Q, K)."""
        run, maps, queries, keys = self.timelapse_maps(example, kind, run)
        return {"run": run, "example": self.sentences[self.example_index(example)]["source"], "kind": kind,
                "steps": self.records[run]["timelapse"]["steps"], "query_tokens": queries, "key_tokens": keys,
                "maps": np.round(maps, MAP_DECIMALS).tolist()}
