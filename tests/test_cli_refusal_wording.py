"""The command line's refusals worded in what was typed: id column as segment, negative burn-in, formula forms.

``favmac`` refusals a newcomer met in the first hour (issue 21), each worded in what was typed:
the id column as a segment column, a negative burn-in, a formula starting with "-", and
and/or/not in a value formula (numpy's "truth value of an array is ambiguous" before)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_cli import run  # noqa: F401  the in-process CLI fixture (tests/ is on sys.path)

from favmac.functions import FormulaError, FormulaValue

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
DRIFT = ["--calibration", SAMPLE / "drift_calibration.csv", "--weights", SAMPLE / "drift_weights.csv"]


def test_the_id_column_is_refused_as_a_segment_column_by_name(run, tmp_path):
    for command in (["replay", "--targets", "1"], ["predict", "--target", "1", "--new", SAMPLE / "drift_new_patients.csv"]):
        proc = run(*command, *DRIFT, "--segment-column", "patient_id", "--out", tmp_path / "o.csv")
        assert proc.returncode == 2
        assert "--segment-column patient_id: the patient id column cannot be a segment column" in proc.stderr
        assert "there is no 'patient_id' column" not in proc.stderr  # the file has one
        assert "--segment-column segment" in proc.stderr
        assert not (tmp_path / "o.csv").exists()


def test_a_negative_burn_in_says_it_must_be_zero_or_more(run, tmp_path):
    proc = run("replay", *DRIFT, "--targets", "1", "--burn-in", "-1", "--out", tmp_path / "o.csv")
    assert proc.returncode == 2
    assert "--burn-in expected an integer >= 0, got -1" in proc.stderr  # the library's wording (validation.check_burn_in)
    assert "leaves no patient" not in proc.stderr


def test_a_formula_starting_with_minus_is_told_to_use_equals_and_that_form_runs(run, tmp_path):
    proc = run("replay", *DRIFT, "--targets", "1", "--value", "-sum_hits(v)", "--out", tmp_path / "o.csv")
    assert proc.returncode == 2
    assert "argument --value: expected one argument" in proc.stderr
    assert "--value=-sum_hits(v)" in proc.stderr
    proc = run("replay", *DRIFT, "--targets", "1", "--value=-sum_hits(v)", "--out", tmp_path / "o.csv")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("formula, named", [("n_hits and 1", "'and'"), ("sum_hits(v) or n_hits", "'or'"),
                                            ("not n_hits", "'not'"), ("1 if n_hits else 2", "'if ... else'"),
                                            ("1 < n_hits < 3", "chained comparison")])
def test_yes_no_words_are_refused_in_formula_terms(run, tmp_path, formula, named):
    with pytest.raises(FormulaError) as err:
        FormulaValue(formula)
    text = str(err.value)
    assert named in text and "ambiguous" not in text and "a.any()" not in text
    assert "(n_hits > 0) * (n_selected < 3)" in text and "maximum(a, b)" in text
    proc = run("replay", *DRIFT, "--targets", "1", "--value", formula, "--out", tmp_path / "o.csv")
    assert proc.returncode == 2 and named in proc.stderr and "ambiguous" not in proc.stderr


def test_the_suggested_forms_exist_in_the_formula_language_and_mean_what_they_say():
    selected = np.array([[True, True, False], [True, False, False], [False, False, False]])
    labels = np.array([[1, 1, 0], [0, 1, 0], [1, 1, 1]])
    n_hits = (selected & labels.astype(bool)).sum(axis=1)
    n_selected = selected.sum(axis=1)
    both = FormulaValue("(n_hits > 0) * (n_selected < 3)")(selected, labels)
    either = FormulaValue("maximum(n_hits > 0, n_selected > 1)")(selected, labels)
    negated = FormulaValue("1 - (n_hits > 0)")(selected, labels)
    chosen = FormulaValue("(n_hits > 1) * 5 + (1 - (n_hits > 1)) * 2")(selected, labels)
    assert both.tolist() == ((n_hits > 0) & (n_selected < 3)).astype(float).tolist()
    assert either.tolist() == ((n_hits > 0) | (n_selected > 1)).astype(float).tolist()
    assert negated.tolist() == (n_hits == 0).astype(float).tolist()
    assert chosen.tolist() == np.where(n_hits > 1, 5.0, 2.0).tolist()
