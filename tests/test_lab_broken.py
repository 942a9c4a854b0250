"""The lab degrades, never the app: a lab file that cannot be read (a truncated record, time-lapse or weights, a
config that does not fit the weights, an unreadable index or statistics) leaves every other run and tab working;
the Lab tab names the file and why, and the requests that need it get one short message. The tiny lab
(tests/conftest.py) is copied and damaged."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from model.serving.lab import Lab, LabError
from viz.views import lab as lab_view


@pytest.fixture()
def copy(tiny_lab, tmp_path):
    _, out, _, _ = tiny_lab
    folder = tmp_path / "lab"
    shutil.copytree(out, folder)
    return folder


def truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def test_the_tiny_lab_exports_its_statistics_from_its_translations(tiny_lab):
    _, out, _, records = tiny_lab
    stats = Lab(out).statistics
    assert set(stats["runs"]) == {r["name"] for r in records}  # each run's translations ship
    assert {c["key"] for c in stats["claims"]} >= {"footnote4_192", "table3a_base"}
    assert all(c["verdict"] == "not decided yet" for c in stats["claims"])  # one seed a side


def test_a_truncated_record_leaves_the_other_runs_and_names_itself(copy, caplog):
    truncate(copy / "h1.json")
    lab = Lab(copy)
    with caplog.at_level(logging.WARNING):
        assert list(lab.records) == ["h8", "h1-unscaled"]
    assert "h1" in lab.broken and "JSONDecodeError" in lab.broken["h1"]
    assert [r.getMessage() for r in caplog.records if "h1.json" in r.getMessage()]  # one logged line
    assert "h1" not in lab.live and "h1-unscaled" in lab.live
    summary = lab_view.summary(lab)
    assert "The lab's file h1 cannot be read (JSONDecodeError" in summary and "| 8 |" in summary


def test_an_unreadable_index_or_statistics_is_an_empty_lab_that_says_why(copy):
    (copy / "index.json").write_text("{", encoding="utf-8")
    (copy / "statistics.json").write_text("[]", encoding="utf-8")
    lab = Lab(copy)
    assert lab.records == {} and lab.statistics == {}
    assert "The lab's file index.json cannot be read" in lab_view.summary(lab)
    with pytest.raises(LabError, match="no lab run is shipped yet"):
        lab.timelapse("0", "cross")


def test_a_truncated_time_lapse_is_a_message_for_that_run_only(copy):
    record = json.loads((copy / "h8.json").read_text())
    truncate(copy / record["timelapse"]["maps"])
    lab = Lab(copy)
    with pytest.raises(LabError, match=r"the lab's file h8\.timelapse\.npz cannot be read .*the other runs still work"):
        lab.timelapse("0", "cross")
    assert lab.timelapse("0", "cross", run="h1")["run"] == "h1"
    assert "h8.timelapse.npz" in lab.broken


def test_truncated_weights_or_a_config_that_does_not_fit_are_a_message(copy):
    truncate(copy / "h1" / "model.safetensors")
    config = json.loads((copy / "h1-unscaled" / "config.json").read_text())
    (copy / "h1-unscaled" / "config.json").write_text(json.dumps({**config, "d_model": config["d_model"] * 2}))
    lab = Lab(copy, device="cpu")
    for run in ("h1", "h1-unscaled"):
        with pytest.raises(LabError, match=f"the lab's file {run}/ cannot be read"):
            lab.translator(run)
    assert set(lab.broken) == {"h1/", "h1-unscaled/"}
