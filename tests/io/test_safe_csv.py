"""favmac.io.safe_csv: formula cells neutralized, numbers kept numeric, no float noise."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd

from favmac.io import read_probabilities, to_safe_csv
from io_helpers import PROBS


def test_to_safe_csv_neutralizes_formulas_but_not_numbers():
    frame = pd.DataFrame(
        {
            "patient_id": ["=cmd|' /C calc'!A0", "+1", "-2", "@SUM(A1)", "\tx", "\ry", "ok"],
            "value": [-0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        }
    )
    text = to_safe_csv(frame).decode()
    back = pd.read_csv(io.StringIO(text), dtype={"patient_id": str}, keep_default_na=False)
    assert back["patient_id"].tolist() == ["'=cmd|' /C calc'!A0", "'+1", "'-2", "'@SUM(A1)", "'\tx", "'\ny", "ok"]
    assert back["value"].tolist()[0] == -0.5
    assert ",-0.5\n" in text


def test_to_safe_csv_writes_named_index():
    frame = read_probabilities(PROBS)
    text = to_safe_csv(frame).decode()
    assert text.startswith("patient_id,HCC18,HCC19\n007,")


def test_to_safe_csv_writes_floats_without_noise():
    frame = pd.DataFrame(
        {
            "patient_id": ["a", "b", "c"],
            "threshold": [0.5306092000000001, 0.1 + 0.2, -1.5],
            "n_codes": [3, 0, 12],
            "cost": [2.0, 1e-20, 123456789012345.0],
            "mixed": [0.30000000000000004, "=1+1", None],
        }
    ).set_index("patient_id")
    text = to_safe_csv(frame).decode()
    assert text.splitlines() == [
        "patient_id,threshold,n_codes,cost,mixed",
        "a,0.5306092,3,2,0.3",
        "b,0.3,0,1e-20,'=1+1",
        "c,-1.5,12,1.23456789012e+14,",
    ]
    back = pd.read_csv(io.StringIO(text), index_col="patient_id")
    assert back["threshold"].tolist() == [0.5306092, 0.3, -1.5]
    assert back["n_codes"].dtype == np.int64


def test_to_safe_csv_keeps_twelve_significant_digits():
    values = np.random.default_rng(7).uniform(-10, 10, size=200)
    back = pd.read_csv(io.StringIO(to_safe_csv(pd.DataFrame({"x": values})).decode()))["x"].to_numpy()
    np.testing.assert_allclose(back, values, rtol=1e-11, atol=0)
