"""``favmac replay`` with several --segment-column, --label-delay and --label-available-column, and the
RunSpec fields behind them."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.cli import main
from favmac.io import load_calibration
from favmac.runspec import RunSpec, SettingsError

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
GROUPINGS = SAMPLE / "groupings_calibration.csv"


@pytest.fixture
def run(capsys):
    def call(*args):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exit_:
            code = exit_.code
        captured = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=captured.out, stderr=captured.err)

    return call


def test_replay_with_two_segment_columns_equals_the_library(run, tmp_path):
    out = tmp_path / "r.csv"
    got = run("replay", "--calibration", GROUPINGS, "--segment-column", "plan", "--segment-column", "age_band",
              "--targets", "1", "--burn-in", "1000", "--score", "cost", "--out", out)
    assert got.returncode == 0, got.stderr
    assert "per segment of plan" in got.stdout and "per segment of age_band" in got.stdout and "binds" in got.stdout
    frame = pd.read_csv(out)
    assert {"segment", "segment_age_band"} <= set(frame.columns)
    data = load_calibration(GROUPINGS, segment_column=["plan", "age_band"])
    # 3,000 labelled patients: the CLI recalibrates on the first 1,000 by default (issue 33; with any number of
    # groupings), so the library is asked to
    res = replay(data.prob_array(), data.label_array(), AdditiveValue(), AdditiveCost(), [1.0], burn_in=1000,
                 groups=data.groupings, score="cost", recalibrate=1000)
    np.testing.assert_allclose(frame["threshold"].to_numpy(), res.thresholds[0], rtol=1e-10)  # CSV: 12 digits
    assert frame["segment_age_band"].tolist() == data.groupings["age_band"][2000:].tolist()


def test_replay_with_a_label_delay_and_with_arrival_positions(run, tmp_path):
    out = tmp_path / "r.csv"
    # no recalibration fold: the arrival column below cannot be used with one (issue 33 made it the default here)
    got = run("replay", "--calibration", SAMPLE / "hcc_calibration.csv", "--targets", "1", "--burn-in", "500",
              "--label-delay", "100", "--recalibrate", "off", "--out", out)
    assert got.returncode == 0, got.stderr
    assert "labels pending: " in got.stdout
    frame = pd.read_csv(out)
    assert frame["labels_pending"].iloc[-1] == 100 and frame["calibration_size"].iloc[0] == 500
    # the same arrivals as a column of positions
    data = load_calibration(SAMPLE / "hcc_calibration.csv")
    wide = pd.read_csv(SAMPLE / "hcc_calibration.csv", dtype={"patient_id": str})
    wide.insert(1, "arrived", np.arange(len(wide)) + 100)
    path = tmp_path / "with_arrivals.csv"
    wide.to_csv(path, index=False)
    again = tmp_path / "again.csv"
    got = run("replay", "--calibration", path, "--targets", "1", "--burn-in", "500",
              "--label-available-column", "arrived", "--out", again)
    assert got.returncode == 0, got.stderr
    assert np.array_equal(pd.read_csv(again)["threshold"], frame["threshold"])
    assert data.n_patients == len(frame) + 500


@pytest.mark.parametrize("args, words", [
    (["--label-delay", "-1"], "--label-delay a delay cannot be negative (got -1)"),
    (["--label-delay", "4000"], "--label-delay 4000 stream positions is longer than the stream of 4000 patients"),
    (["--label-delay", "5", "--method", "inner_set"], "label_delay is not supported by InnerSet"),
    (["--label-available-column", "arrived"], "no column named 'arrived'"),
    (["--label-available-column", "arrived", "--shuffle", "1"], "--shuffle reorders the stream"),
])
def test_bad_delays_fail_cleanly(run, tmp_path, args, words):
    got = run("replay", "--calibration", SAMPLE / "hcc_calibration.csv", "--targets", "1",
              "--out", tmp_path / "r.csv", *args)
    assert got.returncode == 2 and words in got.stderr, got.stderr


def test_several_groupings_refuse_the_adaptive_target(run, tmp_path):
    got = run("replay", "--calibration", GROUPINGS, "--segment-column", "plan", "--segment-column", "age_band",
              "--targets", "1", "--adaptive-rate", "0.1", "--out", tmp_path / "r.csv")
    assert got.returncode == 2 and "--adaptive-rate applies to one segment column at most" in got.stderr


def test_runspec_fields_round_trip_and_are_checked():
    spec = RunSpec(segment=["plan", "age_band"], label_delay=30).validate(n_codes=3, n_patients=100)
    assert spec.segment == ("plan", "age_band") and spec.label_delay == 30
    back = RunSpec.from_json(spec.to_json(["a", "b", "c"]))
    assert back.segment == ("plan", "age_band") and back.label_delay == 30
    arrivals = RunSpec(label_available_column="arrived").validate()
    assert RunSpec.from_json(arrivals.to_json()).label_available_column == "arrived"
    assert RunSpec(segment=["plan"]).validate().segment == "plan"  # one column stays a name
    for bad, field in ((dict(label_delay=-1), "label_delay"), (dict(label_delay=1, label_available_column="a"), "label_delay"),
                       (dict(segment=("a", "a")), "segment"), (dict(segment=("a", "b"), adaptive_rate=0.1), "adaptive_rate")):
        with pytest.raises(SettingsError) as err:
            RunSpec(**bad).validate(n_patients=100)
        assert err.value.field == field
    with pytest.raises(SettingsError, match="label_delay 100 stream positions is longer than the stream of 100 patients.*use a delay below 100"):
        RunSpec(label_delay=100).validate(n_patients=100)
