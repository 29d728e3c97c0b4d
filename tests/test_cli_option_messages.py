"""The command line's messages for targets, segment columns, universes and scores, and its provenance record.

Third hostile-input audit of the command line (tests/test_cli_damaged_settings_and_writes.py, tests/test_cli_recalibration_maps_and_payment_cell.py
hold the earlier rounds): target messages that agree with each other, and no numpy warnings."""
from __future__ import annotations

import numpy as np
import pytest

from test_cli import run, subprocess_run  # noqa: F401 - the in-process CLI fixture

ALLOWED = "--targets must be > 0 and <= C_max, in (0, C_max = 2] cost units; got {}."


def _cal(folder, subnormal=False):
    rng = np.random.RandomState(1)
    lines = ["patient_id,prob_A,label_A,prob_B,label_B"]
    for i in range(200):
        p = [float(x) for x in rng.rand(2)]
        if subnormal and i % 3 == 0:
            p[0] = 1e-320
        if subnormal and i % 5 == 0:
            p[1] = 1 - 1e-16
        lines.append(f"{i:04d},{p[0]!r},{int(rng.rand() < p[0])},{p[1]!r},{int(rng.rand() < p[1])}")
    (folder / "cal.csv").write_text("\n".join(lines) + "\n")
    return folder / "cal.csv"


@pytest.mark.parametrize("flag, value, words", [
    ("--targets", "-1", ALLOWED.format("-1")),
    ("--targets", "inf", ALLOWED.format("inf")),
    ("--targets", "0", ALLOWED.format("0")),  # unchanged: RunSpec's message
    ("--targets", "3", ALLOWED.format("3")),  # unchanged
    ("--target-percents", "-5", "--target-percents: percent of C_max must be above 0 and at most 100; got -5"),
    ("--target-percents", "0", "--target-percents: percent of C_max must be above 0 and at most 100; got 0"),
])
def test_a_target_out_of_range_gets_one_message(tmp_path, run, flag, value, words):
    """Before: -1 got 'must be a finite number >= 0' while 0 got 'must be > 0 ...': two rules, one
    contradicting the other (and a negative percent the cost rule)."""
    proc = run("replay", "--calibration", _cal(tmp_path), flag, value, "--out", tmp_path / "steps.csv")
    assert proc.returncode == 2 and proc.stderr.startswith("error: " + words), proc.stderr
    assert not (tmp_path / "steps.csv").exists()


def test_subnormal_probabilities_print_no_warning(tmp_path):
    """Before: 'favmac/universe.py:143: RuntimeWarning: overflow encountered in divide' on stderr."""
    proc = subprocess_run("replay", "--calibration", _cal(tmp_path, subnormal=True), "--targets", "0.2,1",
                          "--burn-in", "50", "--out", tmp_path / "steps.csv")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "0.2 " in proc.stdout


def test_a_code_column_named_as_the_segment_column_is_refused_by_the_cli(tmp_path, run):
    proc = run("replay", "--calibration", _cal(tmp_path), "--targets", "1", "--segment-column", "prob_A",
               "--out", tmp_path / "steps.csv")
    assert proc.returncode == 2
    assert "error: cal.csv, row 1, column prob_A: the segment column 'prob_A' is the probability column of code 'A'" \
        in proc.stderr


def test_the_librarys_note_is_one_line_without_the_source_path(tmp_path):
    """Before: a weight of 1e-320 (exact costs beyond int64) printed '.../favmac/replay.py:856: UserWarning: ...'
    and the line of source code under it."""
    (tmp_path / "w.csv").write_text("code,weight\nA,1\nB,1e-320\n")
    proc = subprocess_run("replay", "--calibration", _cal(tmp_path), "--weights", tmp_path / "w.csv", "--value", "weighted_tp",
                          "--cost", "weighted_fp", "--targets", "0.3,1", "--burn-in", "50", "--out", tmp_path / "steps.csv")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("note: costs too large for exact int64 arithmetic"), proc.stderr
    assert "replay.py" not in proc.stderr and "UserWarning" not in proc.stderr and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("rate, noted", [("0.05", True), ("0.001", False)])
def test_an_adaptive_rate_too_fast_for_the_label_delay_is_noted(tmp_path, run, rate, noted):
    """Before: the app warned (favmac.adaptive.delay_advice) and the command line, with the same settings
    (the README's gamma x d > 1 example), said nothing."""
    proc = run("replay", "--calibration", _cal(tmp_path), "--targets", "0.5", "--burn-in", "50", "--adaptive-rate", rate,
               "--label-delay", "40", "--out", tmp_path / "steps.csv")
    assert proc.returncode == 0, proc.stderr
    said = "note: Labels arrive up to 40 patients after the prediction" in proc.stdout
    assert said is noted and ("Use γ at most 0.025." in proc.stdout) is noted


@pytest.mark.parametrize("args, words", [
    (("--method", "favmac_value", "--score", "price"), "--method favmac_value runs the cost score; --score price would be ignored."),
    (("--method", "favmac_price", "--universe", "prob"), "--method favmac_price runs the ratio universe; --universe prob would be "
                                                         "ignored."),
    (("--method", "crc", "--score", "cost"), "--method crc runs no score of FavMac's (a baseline); --score cost would be ignored."),
])
def test_a_universe_or_score_the_method_would_ignore_is_refused(tmp_path, run, args, words):
    """Before: --method favmac_value --score price ran the cost score, printed as 'FavMac (value)', without a word."""
    proc = run("replay", "--calibration", _cal(tmp_path), "--targets", "0.5", *args, "--out", tmp_path / "steps.csv")
    assert proc.returncode == 2 and proc.stderr.startswith("error: " + words), proc.stderr
    assert "use --method favmac, which takes --universe and --score" in proc.stderr


@pytest.mark.parametrize("args, label", [
    (("--method", "favmac_value", "--universe", "value", "--score", "cost"), "FavMac (value)"),  # what it runs anyway
    (("--method", "favmac", "--universe", "prob", "--score", "price"), "FavMac (prob, price)"),
    (("--method", "crc"), "CRC"),
])
def test_a_universe_or_score_the_method_uses_still_runs(tmp_path, run, args, label):
    proc = run("replay", "--calibration", _cal(tmp_path), "--targets", "0.5", *args, "--out", tmp_path / "steps.csv")
    assert proc.returncode == 0 and proc.stdout.startswith(label + ":"), proc.stderr


@pytest.mark.parametrize("args, words", [
    (("--segment-column=",), "--segment-column needs a column name; got an empty one."),  # was: "Add a  column"
    (("--shuffle", "-1"), "--shuffle must be a seed from 0 to 2**32 - 1; got -1."),  # was numpy's "Seed must be ..."
])
def test_an_empty_segment_column_or_a_negative_seed_names_the_option(tmp_path, run, args, words):
    proc = run("replay", "--calibration", _cal(tmp_path), "--targets", "0.5", *args, "--out", tmp_path / "steps.csv")
    assert proc.returncode == 2 and proc.stderr.startswith("error: " + words), proc.stderr


@pytest.mark.parametrize("method, universe, score", [("favmac_value", "value", "cost"), ("favmac_price", "ratio", "price"),
                                                      ("favmac_full", "full", "cost")])
def test_the_provenance_record_states_the_universe_and_score_the_method_ran(tmp_path, run, method, universe, score):
    """Before: --method favmac_value ran the value universe with the cost score and its provenance record
    said universe 'ratio', score 'price' (the defaults of the options it does not take)."""
    import json

    proc = run("replay", "--calibration", _cal(tmp_path), "--targets", "0.5", "--method", method, "--out", tmp_path / "s.csv")
    assert proc.returncode == 0, proc.stderr
    stated = json.loads((tmp_path / "s.csv.provenance.json").read_text())["settings"]["run"]
    assert (stated["universe"], stated["score"]) == (universe, score)
