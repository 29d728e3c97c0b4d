"""favmac.export: one chosen-sets table for the calibration stream and new patients."""
from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
import toy_results

from favmac.export import EXPORT_COLUMNS, chosen_sets, description_lists, new_patient_sets, proxies, round_noise, stream_sets
from favmac.functions import AdditiveCost, AdditiveValue, FormulaValue

CODES = toy_results.CODES


def toy_result():
    return toy_results.toy_result(delta=0.1, settings={"universe": "ratio"})


def test_round_noise_keeps_twelve_digits():
    assert round_noise([0.5306092000000001, 0.1 + 0.2, -2.0000000000004, 0.0]).tolist() == [0.5306092, 0.3, -2.0, 0.0]
    out = round_noise([np.inf, -np.inf, np.nan])
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])
    assert round_noise(np.ones((2, 2))).shape == (2, 2)


def test_proxies_additive_and_formula_agree():
    probs = np.array([[0.2, 0.5, 0.9], [0.1, 0.1, 0.1]])
    selected = np.array([[True, False, True], [False, False, False]])
    v, c = AdditiveValue([1.0, 2.0, 3.0]), AdditiveCost(None)
    vhat, chat = proxies(v, c, selected, probs)
    assert vhat.tolist() == pytest.approx([0.2 + 2.7, 0.0]) and chat.tolist() == pytest.approx([0.8 + 0.1, 0.0])
    vhat_f, _ = proxies(FormulaValue("sum_hits(v)", weights=np.array([1.0, 2.0, 3.0])), c, selected, probs)
    assert vhat_f.tolist() == pytest.approx(vhat.tolist())


def test_chosen_sets_columns_and_values():
    probs = np.array([[0.2, 0.5, 0.9], [0.1, 0.1, 0.1]])
    selected = np.array([[True, False, True], [False, False, False]])
    labels = np.array([[1, 0, 0], [0, 0, 0]])
    frame = chosen_sets(["x", "y"], probs, selected, [0.7, np.inf], codes=CODES, value=AdditiveValue(None),
                        cost=AdditiveCost(None), method="FavMac (ratio)", target=1.1, delta=None, universe="ratio",
                        descriptions=["alpha", "beta", "=gamma"], labels=labels)
    assert list(frame.columns) == [*EXPORT_COLUMNS, "descriptions", "realized_value", "realized_cost"]
    assert frame["codes"].tolist() == ["A;C", ""] and frame["n_codes"].tolist() == [2, 0]
    assert frame["descriptions"].tolist() == ['["alpha", "=gamma"]', "[]"]
    assert frame["expected_value"].tolist() == [1.1, 0.0]  # 0.2 + 0.9 without the float noise
    assert frame["cost_proxy"].tolist() == [0.9, 0.0]
    assert frame["realized_value"].tolist() == [1.0, 0.0] and frame["realized_cost"].tolist() == [1.0, 0.0]
    assert np.isinf(frame["threshold"].iloc[1])
    assert frame["delta"].isna().all() and set(frame["method"]) == {"FavMac (ratio)"} and set(frame["target"]) == {1.1}
    plain = chosen_sets(["x"], probs[:1], selected[:1], 0.7, codes=CODES, value=AdditiveValue(None), cost=AdditiveCost(None),
                        method="CRC", target=2.0, delta=0.1, universe="ratio")
    assert list(plain.columns) == list(EXPORT_COLUMNS) and plain["delta"].tolist() == [0.1]


def test_stream_sets_use_the_patients_after_the_burn_in():
    r = toy_result()
    probs = np.full((6, 3), 0.5)
    labels = np.zeros((6, 3), dtype=int)
    frame = stream_sets(r, probs, labels, AdditiveValue(None), AdditiveCost(None), target_index=1)
    assert frame["patient_id"].tolist() == ["p2", "p3", "p4", "p5"]
    assert frame["codes"].tolist() == ["", "A;B", "A;B", "A;B"]
    assert frame["threshold"].tolist() == [-np.inf, 2.0, 2.0, 1.5]
    assert set(frame["target"]) == {1.5} and set(frame["delta"]) == {0.1} and set(frame["universe"]) == {"ratio"}
    assert frame["realized_cost"].tolist() == [0.0, 2.0, 2.0, 2.0]


def test_new_patient_sets_use_the_final_threshold():
    r = toy_result()
    new = pd.DataFrame([[0.9, 0.1, 0.1], [0.1, 0.1, 0.1]], index=["n1", "n2"], columns=CODES)
    frame = new_patient_sets(new, r, AdditiveValue(None), AdditiveCost(None), universe="prob")
    assert list(frame.columns) == list(EXPORT_COLUMNS)
    # threshold 0.4 on the cost proxy sum(1 - p): only code A of n1 (0.1 < 0.4) fits
    assert frame["codes"].tolist() == ["A", ""] and set(frame["threshold"]) == {0.4} and set(frame["universe"]) == {"prob"}


HOSTILE_DESCRIPTIONS = ["Diabetes with Chronic Complications; Diabetes with Acute Complications", 'say "hi", then \'bye\'',
                        "line one\nline two\r\nthree", "=HYPERLINK(\"http://x\")", "+1; -2; @SUM(A1)", "[not, a, list]", ""]


def test_descriptions_are_one_json_list_per_row_that_reads_back_exactly_through_the_safe_csv():
    """CMS descriptions contain "; ": a joined cell could not be split back (issue 21)."""
    from favmac.io import to_safe_csv
    rng = np.random.RandomState(3)
    k = len(HOSTILE_DESCRIPTIONS)
    selected = rng.rand(40, k) < 0.5
    selected[0] = False
    selected[1] = True
    frame = chosen_sets([f"P{i}" for i in range(40)], rng.rand(40, k), selected, 0.5, codes=[f"C{i}" for i in range(k)],
                        value=AdditiveValue(None), cost=AdditiveCost(None), method="FavMac (price)", target=1.0,
                        delta=None, universe="ratio", score="price", descriptions=HOSTILE_DESCRIPTIONS)
    back = pd.read_csv(io.BytesIO(to_safe_csv(frame, index=False)), dtype=str, keep_default_na=False)
    assert len(back) == 40  # newlines inside descriptions never split a row
    for row, cell in zip(selected, back["descriptions"]):
        assert cell.startswith("[") and "\n" not in cell  # never a formula, always one line
        assert json.loads(cell) == [d for d, chosen in zip(HOSTILE_DESCRIPTIONS, row) if chosen]
    assert back["descriptions"].iloc[0] == "[]" and len(json.loads(back["descriptions"].iloc[1])) == k
    assert [c.split(";") if c else [] for c in back["codes"]] == [[f"C{i}" for i in np.flatnonzero(r)] for r in selected]


def test_description_lists_match_a_per_row_json_dump():
    rng = np.random.RandomState(0)
    selected = rng.rand(200, 5) < 0.3
    descs = ["a", "b; c", "", "d\"e", "ü"]
    expected = [json.dumps([d for d, s in zip(descs, row) if s], ensure_ascii=False) for row in selected]
    assert description_lists(selected, descs).tolist() == expected
