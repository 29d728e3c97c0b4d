"""``python -m favmac``: predict and replay on sample_data, and clean failures on bad input.

Two tests start the real ``python -m favmac`` process; the rest call ``favmac.cli.main``
in-process (same code path, without paying the interpreter and numba start-up each time).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from favmac.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"


def subprocess_run(*args):
    return subprocess.run(
        [sys.executable, "-m", "favmac", *map(str, args)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )


@pytest.fixture
def run(capsys):
    """Run the CLI in-process; returns returncode, stdout and stderr like subprocess.run."""

    def call(*args):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exit_:  # argparse usage errors
            code = exit_.code
        captured = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=captured.out, stderr=captured.err)

    return call


def read(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"patient_id": str, "codes": str, "selected_codes": str}, keep_default_na=False)


def test_predict_hcc_subprocess(tmp_path):
    out = tmp_path / "sets.csv"
    proc = subprocess_run(
        "predict", "--calibration", SAMPLE / "hcc_calibration.csv", "--new", SAMPLE / "hcc_new_patients.csv",
        "--weights", SAMPLE / "hcc_weights.csv", "--value", "weighted_tp", "--cost", "fp",
        "--target", "1.1", "--score", "cost", "--out", out,
    )
    assert proc.returncode == 0, proc.stderr
    # issue 33: 4,000 labelled patients, so the first 1,000 recalibrate by default and 3,000 calibrate
    assert "calibrated on 3000 patients x 35 codes" in proc.stdout
    assert "Recalibrated (platt_tested) on the first 1000 patients" in proc.stdout
    frame = read(out)
    assert list(frame.columns) == [
        "patient_id", "codes", "n_codes", "expected_value", "cost_proxy",
        "threshold", "method", "target", "delta", "universe", "score",
    ]
    assert len(frame) == 500 and frame["patient_id"].iloc[0] == "NP0001"
    assert (frame["n_codes"] == frame["codes"].map(lambda s: len(s.split(";")) if s else 0)).all()
    assert (frame["cost_proxy"] < frame["threshold"]).all()
    assert frame["method"].iloc[0] == "FavMac (ratio)" and frame["target"].iloc[0] == 1.1
    assert frame["delta"].iloc[0] == ""  # expected-cost control


def test_predict_matches_the_library(tmp_path, run):
    from favmac.functions import AdditiveCost, AdditiveValue
    from favmac.io import load_calibration, load_new_patients
    from favmac.replay import predict_with_threshold, replay

    out = tmp_path / "sets.csv"
    proc = run(
        "predict", "--calibration", SAMPLE / "digits_calibration.csv", "--new", SAMPLE / "digits_new_patients.csv",
        "--target-percent", "20", "--delta", "0.1", "--universe", "prob", "--out", out,
    )
    assert proc.returncode == 0, proc.stderr
    frame = read(out)
    data = load_calibration(SAMPLE / "digits_calibration.csv")
    new = load_new_patients(SAMPLE / "digits_new_patients.csv", data.codes)
    value, cost = AdditiveValue(), AdditiveCost()
    # 3,000 labelled images: the CLI recalibrates on the first 1,000 by default (issue 33), so the library is asked to
    result = replay(data.prob_array(), data.label_array(), value, cost, [2.0], delta=0.1, universe="prob",
                    burn_in=data.n_patients - 1000, recalibrate=1000)  # the default score: "cost" under violation control
    assert result.settings["score"] == "cost"
    selected = predict_with_threshold(new.to_numpy(), value, cost, result.final_thresholds[0], universe="prob",
                                      delta=0.1, target=2.0, recalibration=result.settings["recalibration_maps"])
    codes = np.array(data.codes, dtype=object)
    assert frame["codes"].tolist() == [";".join(codes[row]) for row in selected]
    assert frame["target"].iloc[0] == 2.0 and frame["delta"].iloc[0] == 0.1


def test_predict_two_files_cms_weights_to_stdout(run):
    proc = run(
        "predict", "--calibration", SAMPLE / "hcc_probs.csv", "--labels", SAMPLE / "hcc_labels.csv",
        "--new", SAMPLE / "hcc_new_patients.csv", "--cms-model", "V28", "--cms-segment", "CNA",
        "--value", "weighted_tp", "--cost", "weighted_fp", "--target", "0.5", "--out", "-",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().split("\n")
    assert lines[0].startswith("patient_id,codes,n_codes")
    assert len(lines) == 501
    assert "calibrated on 1000 patients" in proc.stderr  # the summary moves off stdout


def test_predict_formula_value(tmp_path, run):
    # the general-value proxy is costly per patient; small files keep this quick
    def head(name, rows):
        path = tmp_path / name
        path.write_text("\n".join((SAMPLE / name).read_text().split("\n")[: rows + 1]) + "\n")
        return path

    out = tmp_path / "sets.csv"
    proc = run(
        "predict", "--calibration", head("digits_calibration.csv", 60), "--new", head("digits_new_patients.csv", 20),
        "--weights", SAMPLE / "digits_weights.csv", "--value", "prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)",
        "--target", "1.1", "--out", out,
    )
    assert proc.returncode == 0, proc.stderr
    frame = read(out)
    assert len(frame) == 20 and (frame["expected_value"] > 0).all()


def test_replay_writes_steps_and_prints_summary(tmp_path, run):
    out = tmp_path / "replay.csv"
    proc = run(
        "replay", "--calibration", SAMPLE / "digits_calibration.csv", "--weights", SAMPLE / "digits_weights.csv",
        "--value", "weighted_tp", "--cost", "fp", "--targets", "1.1,2.1", "--burn-in", "2500", "--out", out,
    )
    assert proc.returncode == 0, proc.stderr
    frame = read(out)
    assert len(frame) == 2 * 500
    assert sorted(frame["target"].unique()) == [1.1, 2.1]
    assert frame["position"].min() == 2500
    for column in ("target", "mean_cost", "violation_freq"):
        assert column in proc.stdout
    assert "FavMac (price)" in proc.stdout  # the default score on the ratio universe
    assert proc.stderr == ""  # no progress: stderr is not a terminal and --progress was not given


def test_replay_baseline_shuffled_with_progress(tmp_path, run):
    out = tmp_path / "replay.csv"
    proc = run(
        "replay", "--calibration", SAMPLE / "hcc_probs.csv", "--labels", SAMPLE / "hcc_labels.csv",
        "--target-percents", "5", "--delta", "0.1", "--burn-in", "900", "--method", "fpcp",
        "--shuffle", "0", "--progress", "--out", out,
    )
    assert proc.returncode == 0, proc.stderr
    frame = read(out)
    assert len(frame) == 100 and frame["method"].iloc[0].startswith("FPCP")
    assert frame["target"].iloc[0] == 1.75  # 5% of C_max = 35 false positives, exactly
    assert frame["patient_id"].tolist() != sorted(frame["patient_id"])  # --shuffle reordered the stream
    assert "100%" in proc.stderr


def test_error_after_progress_starts_on_a_new_line(tmp_path, monkeypatch, capsys):
    """An error raised mid-run (progress line half written) is printed on a line of its own."""
    from favmac import cli
    from favmac.io import DataError

    def failing_run(*args, progress=None, **kwargs):
        progress(0.0)
        progress(0.4)
        raise DataError("ClassWise failed half-way (test double).")

    monkeypatch.setattr(cli.replay, "run_method", failing_run)  # the replay command's (favmac/cli/replay.py)
    status = cli.main([
        "replay", "--calibration", str(SAMPLE / "digits_calibration.csv"), "--targets", "1.1",
        "--method", "classwise", "--progress", "--out", str(tmp_path / "o.csv"),
    ])
    err = capsys.readouterr().err
    assert status == 2
    assert " 40%" in err and "\nerror: ClassWise failed half-way" in err


def test_unsupported_control_is_refused_before_any_work(tmp_path, run):
    proc = run(
        "replay", "--calibration", SAMPLE / "digits_calibration.csv", "--targets", "1.1", "--delta", "0.1",
        "--method", "classwise", "--progress", "--out", tmp_path / "o.csv",
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "ClassWise" in proc.stderr and "expected cost only" in proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--calibration", "MISSING.csv"], "MISSING.csv: the file does not exist"),
        (["--calibration", SAMPLE / "hcc_probs.csv"], "hcc_probs.csv, row 1: this file has no prob_<code>"),
        (["--calibration", SAMPLE / "digits_calibration.csv", "--value", "weighted_tp"],
         "--value weighted_tp needs per-code weights"),
        (["--calibration", SAMPLE / "hcc_calibration.csv", "--universe", "full"],
         "'full' universe enumerates all 2^K candidate sets and allows at most 14 codes"),
        (["--calibration", SAMPLE / "digits_calibration.csv", "--delta", "1.5"], "--delta expected a violation level between 0 and 1 (exclusive), e.g. 0.1, or None for expected-cost control; got 1.5"),
        (["--calibration", SAMPLE / "digits_calibration.csv", "--value", "__import__('os')"], "value formula"),
        (["--calibration", SAMPLE / "digits_calibration.csv", "--weights", SAMPLE / "hcc_weights.csv"],
         "hcc_weights.csv, column code: 10 codes in the data have no weight"),
    ],
)
def test_predict_bad_input_exits_2_without_traceback(tmp_path, run, args, message):
    proc = run("predict", *args, "--new", SAMPLE / "digits_new_patients.csv", "--target", "1", "--out", tmp_path / "o.csv")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ")
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o.csv").exists()


def test_bad_cell_in_new_patients(tmp_path, run):
    bad = tmp_path / "new.csv"
    bad.write_text("patient_id,0,1,2,3,4,5,6,7,8,9\nX1,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.2\n")
    proc = run(
        "predict", "--calibration", SAMPLE / "digits_calibration.csv", "--new", bad, "--target", "1",
        "--out", tmp_path / "o.csv",
    )
    assert proc.returncode == 2
    assert "error: new.csv, row 2, column 9: probability 1.2 is outside [0, 1]" in proc.stderr


def test_replay_bad_targets_and_burn_in(tmp_path, run):
    base = ["replay", "--calibration", SAMPLE / "digits_calibration.csv", "--out", tmp_path / "o.csv"]
    proc = run(*base, "--targets", "1,two")
    assert proc.returncode == 2 and "error: --targets: 'two' is not a number" in proc.stderr
    proc = run(*base, "--targets", "1", "--burn-in", "3000")
    assert proc.returncode == 2 and "leaves no patient to predict" in proc.stderr


def test_bad_input_subprocess_exit_2(tmp_path):
    bad = tmp_path / "euro.csv"
    bad.write_text("patient_id;prob_A;label_A\n1;0,5;1\n")
    proc = subprocess_run("replay", "--calibration", bad, "--targets", "1", "--out", tmp_path / "o.csv")
    assert proc.returncode == 2
    assert proc.stderr == (
        "error: euro.csv, row 1: the columns are separated by semicolons (;), not commas. "
        "Save it as comma-separated CSV (in Excel: File > Save As > 'CSV UTF-8 (Comma delimited)').\n"
    )


def test_usage_errors_exit_2(run):
    proc = run("predict")
    assert proc.returncode == 2 and "required" in proc.stderr


def test_help_names_the_program_and_explains_each_command(run):
    proc = run("--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: favmac ")
    assert "predict    calibrates FavMac on a labelled file" in proc.stdout
    assert "replay     walks a labelled file as an online stream" in proc.stdout
    assert "calibrate  computes the final thresholds" in proc.stdout
    # each command listed once (argparse's own list of the sub-commands is suppressed)
    lines = [line.strip() for line in proc.stdout.splitlines()]
    for command in ("predict", "replay", "calibrate"):
        assert sum(line.split(" ")[0] == command for line in lines) == 1, command


def test_replay_method_choices_come_from_the_registry(tmp_path, run):
    from favmac.methods import method_keys

    proc = run("replay", "--calibration", SAMPLE / "digits_calibration.csv", "--targets", "1.1", "--method", "magic",
               "--out", tmp_path / "o.csv")
    assert proc.returncode == 2
    assert all(key in proc.stderr for key in method_keys())
    out = tmp_path / "o.csv"
    proc = run("replay", "--calibration", SAMPLE / "digits_calibration.csv", "--targets", "1.1", "--burn-in", "2900",
               "--method", "favmac_value", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert set(read(out)["method"]) == {"FavMac (value)"}


def test_target_outside_zero_to_c_max_names_the_option(tmp_path, run):
    proc = run("replay", "--calibration", SAMPLE / "digits_calibration.csv", "--targets", "1,11", "--out", tmp_path / "o.csv")
    assert proc.returncode == 2
    assert "error: --targets must be > 0 and <= C_max, in (0, C_max = 10] cost units; got 11." in proc.stderr


def test_absurd_target_and_weight_are_clean_errors(tmp_path):
    """1e300 as a target or a weight: one ``error:`` line naming the range, no warning, no traceback."""
    out = tmp_path / "o.csv"
    proc = subprocess_run("replay", "--calibration", SAMPLE / "digits_calibration.csv", "--targets", "1e300", "--out", out)
    assert proc.returncode == 2
    assert proc.stderr == "error: --targets must be > 0 and <= C_max, in (0, C_max = 10] cost units; got 1e+300.\n"
    weights = pd.read_csv(SAMPLE / "digits_weights.csv", dtype={"code": str})
    weights.loc[3, "weight"] = 1e300
    path = tmp_path / "absurd_weights.csv"
    weights.to_csv(path, index=False)
    proc = subprocess_run("replay", "--calibration", SAMPLE / "digits_calibration.csv", "--weights", path, "--cost", "weighted_fp",
                          "--target-percents", "5", "--out", out)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: absurd_weights.csv, row 5") and "1,000,000" in lines[0], proc.stderr
    assert "Warning" not in proc.stderr and not out.exists()
