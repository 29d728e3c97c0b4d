"""The command line: recalibration maps whose method is not text, and the payment value's INSD cell as the default.

Second hostile-input audit of the command line (tests/test_cli_damaged_settings_and_writes.py holds the first round)."""
from __future__ import annotations

import json

import pytest

from test_cli_damaged_settings_and_writes import _files
from test_cli import run  # noqa: F401 - the in-process CLI fixture


@pytest.fixture
def calibrated(tmp_path, run):
    """A real ``favmac calibrate --recalibrate`` settings file (with recalibration_maps) and the new patients."""
    _files(tmp_path)
    settings = tmp_path / "settings.json"
    proc = run("calibrate", "--data", tmp_path / "cal.csv", "--targets", "0.5", "--recalibrate", "60",
               "--scheduler", "synchronous", "--settings-out", settings)
    assert proc.returncode == 0, proc.stderr
    return tmp_path, settings


@pytest.mark.parametrize("method", [["platt"], {"a": 1}, 7, None])
def test_recalibration_maps_with_a_method_that_is_not_text_are_refused(calibrated, run, method):
    """Before: a list as recalibration_maps.method was a TypeError traceback (unhashable type: 'list')."""
    folder, settings = calibrated
    doc = json.loads(settings.read_text())
    doc["settings"]["recalibration_maps"]["method"] = method
    settings.write_text(json.dumps(doc))
    out = folder / "parts"
    proc = run("predict", "--engine", "dask", "--settings", settings, "--target", "0.5", "--new", folder / "new.csv",
               "--out", out, "--scheduler", "synchronous")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "recalibration_maps.method" in proc.stderr and "platt" in proc.stderr and "settings.json" in proc.stderr
    assert not out.exists()


def test_the_payment_values_insd_cell_can_be_the_default_cell(tmp_path, run):
    """--cms-segment offered NE (then refused by the payment value) but not INSD, a cell the payment value
    prices: members without a cms_cell could not default to institutional-disabled."""
    from test_cli import SAMPLE

    out = tmp_path / "steps.csv"
    proc = run("replay", "--calibration", SAMPLE / "hcc_calibration.csv", "--weights", SAMPLE / "hcc_weights.csv",
               "--value", "cms-payment", "--cms-segment", "insd", "--targets", "1", "--burn-in", "3000", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.with_name("steps.csv.provenance.json").read_text())["settings"]["run"]["cms_segment"] == "INSD"
