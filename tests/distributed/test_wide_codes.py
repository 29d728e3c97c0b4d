"""Files with thousands of code columns (a hostile-input audit: 25,000 codes did not finish in 900 s).

The header checks compared every code against a set rebuilt per code (O(K^2)) and every batch
looked up each column's dtype through the frame; now both are linear. These tests hold the
results and the messages at a width where the old checks were already slow; the timings are in
scripts/bench_distributed_wide.py (no timed assertions here)."""
from __future__ import annotations

import numpy as np
import pytest
from dist_helpers import tied_data, tree_thresholds, wide_frame

from favmac import AdditiveCost, AdditiveValue
from favmac.distributed import calibrate, source_codes
from favmac.io import DataError

K = 1500


def test_many_codes_give_favmacs_thresholds(tmp_path):
    probs, labels = tied_data(7, 40, K, 2)
    value, cost = AdditiveValue(), AdditiveCost()
    targets = [0.02 * K, 0.1 * K]
    frame = wide_frame(probs, labels)
    frame.iloc[:25].to_csv(tmp_path / "a.csv", index=False)
    later = frame.iloc[25:]
    later[["patient_id"] + list(later.columns[1:][::-1])].to_csv(tmp_path / "b.csv", index=False)  # codes by name
    got = calibrate(str(tmp_path / "*.csv"), value, cost, targets, scheduler="synchronous")
    assert np.array_equal(got, tree_thresholds(probs, labels, value, cost, targets))


def test_many_codes_header_and_cell_messages(tmp_path):
    probs, labels = tied_data(8, 6, K, 2)
    frame = wide_frame(probs, labels)
    frame.drop(columns=[f"label_C{K - 2}"]).to_csv(tmp_path / "no_label.csv", index=False)
    with pytest.raises(DataError, match=rf"no_label.csv, row 1, column prob_C{K - 2}: there is no matching label_C{K - 2} column"):
        source_codes(str(tmp_path / "no_label.csv"))
    frame.to_csv(tmp_path / "a.csv", index=False)
    frame.drop(columns=[f"prob_C{K - 1}", f"label_C{K - 1}"]).to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(DataError, match=rf"b.csv.*1 code in .*a.csv is missing from .*b.csv: C{K - 1}"):
        source_codes([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")])
    text = frame.astype({f"prob_C{K - 1}": object})
    text.loc[4, f"prob_C{K - 1}"] = "high"
    text.to_csv(tmp_path / "text.csv", index=False)
    with pytest.raises(DataError, match=rf"text.csv, row 6, column prob_C{K - 1}: 'high' is not a number"):
        calibrate(str(tmp_path / "text.csv"), AdditiveValue(), AdditiveCost(), [1.0], scheduler="synchronous")
