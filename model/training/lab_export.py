"""Ship the lab: finished sibling runs -> the small files the Lab tab reads, in ``assets/lab/``.

Per run ``NAME.json`` (config, parameters, budget, per-epoch log, the recorded curves as columns, BLEU on val
and test_2016_flickr greedy and beam 4 with sacreBLEU's signature, the time-lapse's steps, per-head statistics
and roles, and the SHA-256 of the run's final float16 weights) and ``NAME.timelapse.npz`` (the time-lapse
sentences' maps, one uint8 array per sentence and kind: (steps, L, H, Q, K), weight = value / 255).
``index.json``: the runs in order, the reference run, the live ones, and the time-lapse sentences with their
references and tokens. For the runs whose weights ship (``model.training.lab_weights``: the live siblings in
float16, the reference in 8 bits), a model folder ``NAME/`` (config.json, model.safetensors, tokenizer.model) that
the app opens on demand.
The model card gets a section listing every file with its SHA-256.
"""

from __future__ import annotations

import io
import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import torch

from model.network.checkpoint import CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE, atomic_write_text, save_model
from model.terms import KINDS
from model.training.lab_series import series
from model.training.lab_stats import (
    DECODINGS,
    SPLIT,
    kept_reading,
    kept_sentence,
    reference_file,
    statistics,
    translation_file,
    write_lines,
)
from model.training.lab_weights import EIGHT_BIT, SHIPS_WEIGHTS, last_frame_gap, sha256, ship_weights, shipped_bleu
from model.training.siblings import BUDGET, BY_NAME, SIBLINGS

TIMELAPSE_STATS = ("entropy", "confidence", "sharpness", "eos", "previous")
BUDGET_BYTES = 64 * 2**20
INDEX = "index.json"  # the runs in order, the reference, the live ones, the time-lapse sentences
STATISTICS = "statistics.json"  # model.training.lab_stats.statistics: per run, setting and claim
ROOT_TOKENIZER = Path(__file__).resolve().parents[2] / "assets" / "model" / TOKENIZER_FILE  # every sibling's
DEVICE_NAMES = {"cpu": "CPU (2 cores)", "cuda": "one GPU"}  # what the epoch log says -> the card's words
CARD_START, CARD_END = "<!-- lab: start -->", "<!-- lab: end -->"
README_START, README_END = "<!-- lab results: start -->", "<!-- lab results: end -->"  # the README's lab sentences


def _columns(records: list[dict]) -> dict[str, list]:
    """[{step: 25, a: x}, {step: 50, a: y}] -> {step: [25, 50], a: [x, y]} (curves are read column-wise)."""
    keys = list(records[0]) if records else []
    return {key: [r.get(key) for r in records] for key in keys}


def snapshot_files(run: Path) -> list[tuple[int, Path]]:
    return sorted((int(p.stem.split("_")[1]), p) for p in (run / "snapshots").glob("step_*.json"))


def timelapse(run: Path) -> tuple[dict, bytes]:
    """The time-lapse record (steps, probe loss, per-head statistics and roles, and what the maps say over
    training: ``model.training.lab_series``) and the npz of its maps."""
    snaps = snapshot_files(run)
    steps, losses, stats, roles = [], [], {}, {}
    maps: dict[str, list[np.ndarray]] = {}
    exact: dict[str, list[np.ndarray]] = {}  # the float16 maps, for the series (the npz keeps uint8)
    for step, path in snaps:
        record = json.loads(path.read_text(encoding="utf-8"))
        steps.append(step)
        losses.append(record["probe_loss"])
        for kind, per_stat in record["stats"].items():
            for stat in TIMELAPSE_STATS:
                stats.setdefault(kind, {}).setdefault(stat, []).append(per_stat[stat])
            roles.setdefault(kind, []).append(record["roles"][kind])
        with np.load(path.with_suffix(".npz")) as z:
            for key in z.files:
                maps.setdefault(key, []).append(np.round(z[key].astype(np.float32) * 255).astype(np.uint8))
                exact.setdefault(key, []).append(z[key].astype(np.float32))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{key: np.stack(arrays) for key, arrays in maps.items()})  # (steps, L, H, Q, K)
    record = {"steps": steps, "probe_loss": losses, "stats": stats, "roles": roles,
              "series": maps_series({key: np.stack(arrays) for key, arrays in exact.items()})}
    return record, buffer.getvalue()


def maps_series(arrays: dict[str, np.ndarray]) -> dict:
    """``{"B.kind": (steps, L, H, Q, K)}`` -> per kind and layer over the steps: entropy ÷ log n, softmax gradient."""
    n = len({key.split(".")[0] for key in arrays})
    return series([{kind: arrays[f"{b}.{kind}"] for kind in KINDS} for b in range(n)], KINDS)


def final_weights(run: Path) -> Path:
    """The run's final weights as a float16 model folder ``run/final16`` (what is hashed and, if live, shipped)."""
    from model.network.checkpoint import load_config, load_state_into, read_tensors
    from model.network.transformer import EncoderDecoder

    folder = run / "final16"
    if not (folder / WEIGHTS_FILE).is_file():
        model = EncoderDecoder(load_config(run))
        load_state_into(model, read_tensors(run / "last" / WEIGHTS_FILE), run / "last")
        save_model(model, folder, dtype=torch.float16)
        shutil.copyfile(run / TOKENIZER_FILE, folder / TOKENIZER_FILE)
    return folder


def factor_said(config: dict) -> dict:
    """Additive attention is never multiplied by 1/√d_k (``TransformerConfig.scale``): its config says
    ``scaled: false`` (runs trained before their command said so wrote ``true``, which the model ignored)."""
    return {**config, "scaled": False} if config.get("attention") == "additive" else config


def run_record(run: Path, out: Path, data: Path | None = None) -> dict:
    sib = BY_NAME[run.name]
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    config = json.loads((run / CONFIG_FILE).read_text(encoding="utf-8"))
    from model.network.config import TransformerConfig
    from model.network.params import parameter_breakdown

    log = json.loads((run / "log.json").read_text(encoding="utf-8"))
    curves = json.loads((run / "curves.json").read_text(encoding="utf-8"))
    record, npz = timelapse(run)
    ships = sib.name in SHIPS_WEIGHTS
    weights = final_weights(run) if ships or "weights_sha256" not in result else None
    # The time-lapse maps of the first seed only (the tab shows one run's history; the budget, BUDGET_BYTES):
    # every seed keeps the series computed from its maps.
    ship_maps = sib.seed == 1
    if ship_maps:
        (out / f"{sib.name}.timelapse.npz").write_bytes(npz)
    else:  # maps shipped for this seed before (a run retrained since) would only weigh on the budget
        (out / f"{sib.name}.timelapse.npz").unlink(missing_ok=True)
    for decoding in DECODINGS:
        text = (run / "translations" / f"{SPLIT}.{decoding}.de").read_text(encoding="utf-8")
        write_lines(translation_file(out, sib.name, decoding), text.splitlines())
    shipped = {}
    if ships:  # model.training.lab_weights: float16, or 8 bits with what checks them
        shipped = ship_weights(weights, out / sib.name, eight_bit=sib.name in EIGHT_BIT)
        if ship_maps:
            shipped["last_frame_gap"] = round(last_frame_gap(out / sib.name, out / f"{sib.name}.timelapse.npz"), 4)
        if sib.name in EIGHT_BIT and data is not None:
            shipped["bleu"] = shipped_bleu(out / sib.name, data)
    return {
        "name": sib.name,
        "label": sib.label,
        "tests": sib.tests,
        "seed": sib.seed,
        "config": factor_said(config),
        "parameters": parameter_breakdown(TransformerConfig.from_dict(config))["total"],
        "budget": BUDGET + ["--anneal", str(result["steps"] // 2), str(result["steps"])],
        "steps": result["steps"],
        "epochs": [{k: e[k] for k in ("epoch", "step", "train_loss", "val_loss", "val_ppl", "val_bleu", "elapsed_s")}
                   for e in log],
        "curves": _columns(curves),
        "bleu": result["bleu"],
        "signature": result["signature"],
        "search": result.get("search"),
        "timelapse": {**record, "maps": f"{sib.name}.timelapse.npz" if ship_maps else None},
        # runs logged before the epoch log named its device all trained on the CPU
        "trained_on": sorted({e.get("device", "cpu") for e in log}),
        "weights": {"sha256": result.get("weights_sha256") or sha256(weights / WEIGHTS_FILE),
                    "folder": sib.name if ships else None, **shipped},
    }


def card_section(records: list[dict]) -> str:
    lines = [CARD_START, "## The lab's siblings", "",
             "Trained by `python -m model.lab train`, shipped by `python -m model.lab export` into `assets/lab/` "
             "(the Lab tab). Same data, vocabulary and recipe as the shipped model, one thing changed each, under "
             "one shorter budget: " + " ".join(records[0]["budget"]) + ".", "",
             "| run | what changes | parameters | trained on | val BLEU greedy / beam 4 | test_2016 greedy / beam 4 "
             "| weights |", "|---|---|---|---|---|---|---|"]
    for r in records:
        b = r["bleu"]
        w = r["weights"]
        where = (f"`assets/lab/{w['folder']}/`" + (" in 8 bits" if w.get("format", "float16") != "float16" else "")
                 if w["folder"] else "not shipped")
        device = ", ".join(DEVICE_NAMES.get(d, d.replace("cuda: ", "one GPU, ")) for d in r["trained_on"])
        lines.append(f"| {r['name']} | {r['label']} | {r['parameters']:,} | {device} | {b['val.greedy']:.2f} / "
                     f"{b['val.beam4']:.2f} | {b['test_2016_flickr.greedy']:.2f} / {b['test_2016_flickr.beam4']:.2f}"
                     f" | {where}, SHA-256 `{r['weights']['sha256'][:16]}…` |")
    return "\n".join(lines + ["", CARD_END])


def update_card(card: Path, section: str, start: str = CARD_START, end: str = CARD_END) -> None:
    """``section`` (from ``start`` to ``end``, markers included) in place of the file's, or appended."""
    text = card.read_text(encoding="utf-8")
    if start in text:
        text = text[: text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    atomic_write_text(card, text)


def _seeds(n: int) -> str:
    return {1: "one seed", 2: "both seeds"}.get(n, f"all {n} seeds")


def _claim_sentence(c: dict) -> str:
    """A claim's verdict, with its difference and interval once decided (else why not yet)."""
    if c["verdict"] == "not decided yet":
        return f"{c['title']}: {c['verdict']} — {c['why']}."
    return (f"{c['title']}: {c['verdict']} ({c['a']} − {c['b']}: {c['difference']:+.2f} BLEU, 95 % interval "
            f"[{c['low']:+.2f}, {c['high']:+.2f}]; {len(c['seeds_a'])} and {len(c['seeds_b'])} seeds).")


def readme_section(stats: dict, shipped: int, indent: str = "  ") -> str:
    """The README's lab sentences (in its Lab item, ``indent``-ed): each claim's verdict (and why not yet), and the
    collapse without 1/√d_k at d_k = 192, all from ``stats`` (``statistics``); ``shipped``: how many runs ship."""
    words = [f"Today, with {shipped} of {len(SIBLINGS)} runs shipped and {len(stats['runs'])} with translations:"]
    words += [_claim_sentence(c) for c in stats["claims"]]
    collapse = [c for c in stats.get("collapse", {}).values() if c["setting"] == "h1-unscaled"]
    if collapse:
        steps = " / ".join(str(step) for step in sorted({c["step"] for c in collapse}))
        scored = [c["distinct"]["beam4"] for c in collapse if c["distinct"]]
        writes = (f" and it writes {'one sentence' if max(scored) == 1 else f'at most {max(scored):,} sentences'} for "
                  f"all {stats['sentences']:,} test inputs" if scored else "")
        lead = ("What is already plain" if any(c["verdict"] == "not decided yet" for c in stats["claims"])
                else "What happened")
        words.append(f"{lead}: without 1/√d_k at d_k = 192 the model stops reading the source — from "
                     f"step {steps} its cross-attention is uniform in every layer ({_seeds(len(collapse))}){writes}.")
    kept = kept_reading(stats)
    if kept:
        words.append(f"Without 1/√d_k at d_k = 24 (h = 8) it keeps reading the source: {kept_sentence(kept)}.")
    body = textwrap.fill(" ".join(words), width=118, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False)
    return f"{README_START}\n{body}\n{indent}{README_END}"


def shipped_record(out: Path, name: str) -> dict | None:
    """A run shipped earlier whose training folder is gone (a new machine): its record as shipped, with the series
    of its time-lapse maps, the factor its config says and what checks its shipped weights brought up to date."""
    path = out / f"{name}.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    record["config"] = factor_said(record["config"])
    maps = record["timelapse"].get("maps")
    if maps and "series" not in record["timelapse"]:
        with np.load(out / maps) as z:
            record["timelapse"]["series"] = maps_series({key: z[key].astype(np.float32) / 255 for key in z.files})
    folder = record["weights"].get("folder")
    if folder and "file_sha256" not in record["weights"]:  # float16 weights shipped before their checks were kept
        record["weights"].update(format="float16", file_sha256=sha256(out / folder / WEIGHTS_FILE))
        if maps:
            record["weights"]["last_frame_gap"] = round(last_frame_gap(out / folder, out / maps), 4)
    return record


def export_all(runs: Path, out: Path, card: Path | None = None, data: Path | None = None,
               readme: Path | None = None) -> list[dict]:
    """Every finished run (``result.json`` written) of ``SIBLINGS``, in their order, beside the runs shipped before
    whose folders are not here (kept as shipped); then the statistics (``model.training.lab_stats``) from every
    run's shipped translations, with the test set's references copied from ``data`` when it is given."""
    from model.network.tokenizer import Tokenizer
    from model.training.recorder import timelapse_tokens

    out.mkdir(parents=True, exist_ok=True)
    records = []
    for sib in SIBLINGS:
        run = runs / sib.name
        if (run / "result.json").is_file():
            record = run_record(run, out, data)
            print(f"{sib.name}: exported", flush=True)
        elif (record := shipped_record(out, sib.name)) is None:
            continue
        atomic_write_text(out / f"{sib.name}.json", json.dumps(record, separators=(",", ":")) + "\n")
        records.append(record)
    if not records:
        raise ValueError(f"{runs}: no finished run (none has result.json); train with `python -m model.lab train`")
    trained = [runs / r["name"] / TOKENIZER_FILE for r in records if (runs / r["name"] / TOKENIZER_FILE).is_file()]
    tok = Tokenizer(trained[0] if trained else ROOT_TOKENIZER)  # the siblings' vocabulary (the shipped one)
    index = {"runs": [r["name"] for r in records], "reference": SIBLINGS[0].name,
             "live": [r["name"] for r in records if r["weights"]["folder"]], "budget": records[0]["budget"],
             "sentences": timelapse_tokens(tok)}
    atomic_write_text(out / INDEX, json.dumps(index, ensure_ascii=False, indent=1) + "\n")
    if data is not None and (data / f"{SPLIT}.de.gz").is_file():
        reference_file(out).parent.mkdir(exist_ok=True)
        for lang in ("en", "de"):
            shutil.copyfile(data / f"{SPLIT}.{lang}.gz", reference_file(out, lang))
    stats = statistics(out, {r["name"]: r for r in records})
    atomic_write_text(out / STATISTICS, json.dumps(stats, ensure_ascii=False, indent=1) + "\n")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {size / 2**20:.1f} MB in {sum(1 for p in out.rglob('*') if p.is_file())} files", flush=True)
    if size > BUDGET_BYTES:
        raise ValueError(f"{out}: {size / 2**20:.1f} MB, over the lab's {BUDGET_BYTES // 2**20} MB")
    if card is not None:
        update_card(card, card_section(records))
    if readme is not None:  # the README's lab sentences, between their markers
        update_card(readme, readme_section(stats, len(records)), README_START, README_END)
    return records
