"""The command line against a damaged settings file, failed export writes and out-of-range adaptive rates.

The command line against hostile input (audit): a damaged settings file and failed writes.

Before: ``predict --engine dask --settings FILE`` with a hand-edited calibration block
(``"targets": 5``, ``"segments": [1]``, nested thresholds ...) died with a Python traceback; a
failed provenance write left the new CSV in place without its record (a half-written export)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from test_cli import run  # noqa: F401 - the in-process CLI fixture

CODES = ("A", "B", "C")


def _files(folder: Path):
    rng = np.random.default_rng(3)
    lines = ["patient_id," + ",".join(f"prob_{c},label_{c}" for c in CODES)]
    for i in range(120):
        p = rng.random(3).round(3)
        lines.append(f"p{i}," + ",".join(f"{a},{int(rng.random() < a)}" for a in p))
    (folder / "cal.csv").write_text("\n".join(lines) + "\n")
    (folder / "new.csv").write_text("patient_id,A,B,C\nn1,0.9,0.5,0.1\nn2,0.2,0.3,0.4\n")


SETTINGS = {"format": "favmac-studio-settings", "version": 1, "settings": {
    "value_kind": "tp", "cost_kind": "fp", "control": "expected", "universe": "ratio", "score": "price",
    "targets": [0.5, 1.0], "calibration": {"engine": "favmac.distributed", "codes": list(CODES), "n_patients": 120,
                                           "targets": [0.5, 1.0], "thresholds": ["1.25", "5.5"]}}}


def _damaged(change):
    doc = copy.deepcopy(SETTINGS)
    change(doc["settings"], doc["settings"]["calibration"])
    return doc


DAMAGED = {
    "targets not a list": (lambda s, c: c.update(targets=5), "calibration.targets"),
    "codes a number": (lambda s, c: c.update(codes=7), "calibration.codes"),
    "codes not text": (lambda s, c: c.update(codes=[None, 1, "C"]), "calibration.codes"),
    "thresholds nested": (lambda s, c: c.update(thresholds=[[1], {"a": 1}]), "calibration.thresholds"),
    "thresholds text": (lambda s, c: c.update(thresholds="abc"), "calibration.thresholds"),
    "thresholds short": (lambda s, c: c.update(thresholds=["1.0"]), "calibration.thresholds"),
    "segments a list": (lambda s, c: (s.update(segment="segment"), c.update(segments=[1])), "calibration.segments"),
    "segment entry a number": (lambda s, c: (s.update(segment="segment"), c.update(segments={"x": 5})),
                               "calibration.segments.x"),
    "groupings junk": (lambda s, c: (s.update(segment=["a", "b"]), c.update(groupings={"a": 1})), "calibration.groupings.a"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_calibration_block_is_refused_by_name(tmp_path, run, case):
    _files(tmp_path)
    change, field = DAMAGED[case]
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(_damaged(change)))
    out = tmp_path / "parts"
    proc = run("predict", "--engine", "dask", "--settings", settings, "--target", "0.5", "--new", tmp_path / "new.csv",
               "--out", out, "--scheduler", "threads")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{field} must be" in proc.stderr and "settings.json" in proc.stderr
    assert not out.exists()


def test_a_failed_provenance_write_leaves_the_previous_export(tmp_path, run):
    _files(tmp_path)
    out = tmp_path / "sets.csv"
    out.write_text("previous export\n")
    (tmp_path / "sets.csv.provenance.json").mkdir()  # the record cannot be written
    proc = run("predict", "--calibration", tmp_path / "cal.csv", "--new", tmp_path / "new.csv", "--target", "0.5",
               "--out", out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "sets.csv.provenance.json: Is a directory" in proc.stderr
    assert out.read_text() == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.csv", "new.csv", "sets.csv", "sets.csv.provenance.json"]


def test_an_unwritable_folder_names_the_output_file(tmp_path, run):
    _files(tmp_path)
    missing = tmp_path / "no" / "such" / "sets.csv"
    proc = run("predict", "--calibration", tmp_path / "cal.csv", "--new", tmp_path / "new.csv", "--target", "0.5",
               "--out", missing)
    assert proc.returncode == 2 and f"error: {missing}: No such file or directory" in proc.stderr


def test_export_and_record_are_written_together(tmp_path, run):
    _files(tmp_path)
    out = tmp_path / "sets.csv"
    proc = run("predict", "--calibration", tmp_path / "cal.csv", "--new", tmp_path / "new.csv", "--target", "0.5",
               "--out", out)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "sets.csv.provenance.json").read_text())
    import hashlib

    assert record["outputs"] == {"sets.csv": hashlib.sha256(out.read_bytes()).hexdigest()}
    assert out.read_text().startswith("patient_id,codes,")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("rate", ["1e308", "1000001"])
def test_a_huge_adaptive_rate_is_refused_not_overflowed(tmp_path, run, rate):
    _files(tmp_path)
    proc = run("replay", "--calibration", tmp_path / "cal.csv", "--targets", "0.5", "--adaptive-rate", rate,
               "--out", tmp_path / "steps.csv")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--adaptive-rate must be at most 1,000,000" in proc.stderr
    assert not (tmp_path / "steps.csv").exists()


def test_a_large_but_allowed_adaptive_rate_runs(tmp_path, run):
    _files(tmp_path)
    proc = run("replay", "--calibration", tmp_path / "cal.csv", "--targets", "0.5", "--adaptive-rate", "1000000",
               "--burn-in", "20", "--out", tmp_path / "steps.csv")
    assert proc.returncode == 0, proc.stderr


def test_out_naming_an_input_file_is_refused_and_the_input_kept(tmp_path, run):
    # --out cal.csv overwrote the labelled file the run had just read (exit 0, the data gone)
    _files(tmp_path)
    before = (tmp_path / "cal.csv").read_bytes()
    for command in (("predict", "--new", tmp_path / "new.csv", "--target", "0.5"), ("replay", "--targets", "0.5")):
        proc = run(*command, "--calibration", tmp_path / "cal.csv", "--out", tmp_path / "cal.csv")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert "--out" in proc.stderr and "cal.csv" in proc.stderr and "overwrite" in proc.stderr
        assert (tmp_path / "cal.csv").read_bytes() == before
    proc = run("predict", "--calibration", tmp_path / "cal.csv", "--new", tmp_path / "new.csv", "--target", "0.5",
               "--out", tmp_path / "new.csv")
    assert proc.returncode == 2 and "overwrite" in proc.stderr and (tmp_path / "new.csv").read_text().startswith("patient_id,A")


def test_program_predict_to_an_unwritable_out_records_nothing(tmp_path, run):
    # the batch was recorded, then the sets file failed: the sets were lost and a retry was "sent before"
    _files(tmp_path)
    store = ["--store", f"sqlite:///{tmp_path / 's.sqlite'}"]
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"format": "favmac-studio-settings", "version": 1, "settings": {"targets": [0.5]}}))
    assert run("program", "create", "p", "--calibration", tmp_path / "cal.csv", "--settings", settings, *store).returncode == 0
    missing = tmp_path / "no" / "sets.csv"
    proc = run("program", "predict", "p", "--new", tmp_path / "new.csv", "--out", missing, *store)
    assert proc.returncode == 2 and f"error: {missing}: No such file or directory" in proc.stderr
    status = run("program", "status", "p", *store)
    assert "0 predicted" in status.stdout
    assert "nan" not in status.stdout  # nothing labelled yet: no realized cost to show
    proc = run("program", "predict", "p", "--new", tmp_path / "new.csv", "--out", tmp_path / "new.csv", *store)
    assert proc.returncode == 2 and "overwrite" in proc.stderr
    proc = run("program", "predict", "p", "--new", tmp_path / "new.csv", "--out", tmp_path / "sets.csv", *store)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sets.csv").read_text().startswith("patient_id,codes")
    (tmp_path / "labels.csv").write_text("patient_id,A,B,C\nn1,1,0,0\n")
    labelled = run("program", "label", "p", "--labels", tmp_path / "labels.csv", *store)
    assert labelled.returncode == 0 and "Labelled 1 patient." in labelled.stdout + labelled.stderr  # not "1 patients"
    status = run("program", "status", "p", *store)
    assert "1 labelled" in status.stdout and "nan" not in status.stdout  # one patient: no standard error yet


def test_calibrate_settings_out_naming_its_data_is_refused(tmp_path, run):
    # --settings-out cal.csv replaced the labelled data with the settings JSON
    _files(tmp_path)
    before = (tmp_path / "cal.csv").read_bytes()
    proc = run("calibrate", "--data", tmp_path / "cal.csv", "--targets", "0.5", "--scheduler", "threads",
               "--settings-out", tmp_path / "cal.csv")
    assert proc.returncode == 2 and "--settings-out" in proc.stderr and "overwrite" in proc.stderr
    assert (tmp_path / "cal.csv").read_bytes() == before


def test_an_os_error_without_a_file_name_is_one_line(monkeypatch, run):
    # a network error reading --data (socket.gaierror, no file name) died with AttributeError: no args.out
    import importlib

    cli_main = importlib.import_module("favmac.cli.main")  # the module (favmac.cli.main is also the function)

    class Failing:
        @staticmethod
        def run(args):
            raise OSError(-2, "Name or service not known")

    monkeypatch.setattr(cli_main, "command", lambda name: Failing)
    proc = run("calibrate", "--data", "https://example.invalid/cohort.csv", "--targets", "0.5")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "error: https://example.invalid/cohort.csv: Name or service not known"
