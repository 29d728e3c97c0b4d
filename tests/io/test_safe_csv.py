"""favmac.io.safe_csv: formula cells neutralized, numbers kept numeric, no float noise."""
from __future__ import annotations

import io

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
