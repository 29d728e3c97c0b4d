"""The committed sample_data/ files load through favmac.io and have the shapes the script makes."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from favmac.io import cms_hcc_weights, load_calibration, load_new_patients, read_weights

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"


def _script():
    spec = importlib.util.spec_from_file_location("make_sample_data", ROOT / "scripts" / "make_sample_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    return _script()


def test_hcc_calibration(script):
    data = load_calibration(SAMPLE / "hcc_calibration.csv")
    assert (data.n_patients, data.n_codes) == (script.N_HCC_CALIBRATION, 35)
    assert data.codes == script.HCC_CODES
    prevalence = data.label_array().mean(axis=0)
    assert prevalence.min() >= 0.005 and prevalence.max() <= 0.25  # the rarest codes are about 1 %
    probs = data.prob_array()
    assert np.all(np.round(probs, 4) == probs)
    # useful but imperfect: positives score higher on average, yet not perfectly
    labels = data.label_array().astype(bool)
    assert probs[labels].mean() > probs[~labels].mean() + 0.3
    assert 0 < ((probs > 0.5) != labels).mean() < 0.1


def test_hcc_labels_are_confirmed_codes_before_the_hierarchies(script):
    # a less severe code of a ladder is confirmed only beside a more severe one of its family
    # (documented at an earlier visit); CMS's hierarchies are applied by the payment value
    data = load_calibration(SAMPLE / "hcc_calibration.csv")
    labels = data.labels
    both = 0
    for ladder, _ in script.CONDITIONS:
        codes = [code for code, _ in ladder]
        for i, code in enumerate(codes[1:], start=1):
            has_code = labels[code].to_numpy() == 1
            has_higher = labels[codes[:i]].to_numpy().max(axis=1) == 1
            both += int((has_code & has_higher).sum())
    assert both > 100
    hierarchy = script.v28_hierarchy(script.HCC_CODES)
    assert any(((labels[p].to_numpy()[:, None] == 1) & (labels[c].to_numpy() == 1)).any() for p, c in hierarchy.items())


def test_hcc_member_context(script):
    # each member's CMS-HCC cell and the codes already on the record (a subset of the true codes)
    data = load_calibration(SAMPLE / "hcc_calibration.csv")
    cells, known = data.members["cells"], data.members["known"]
    assert set(cells) == set(script.CELL_SHARES)
    assert np.mean(cells == "CNA") > 0.5
    assert not (known & (data.label_array() == 0)).any()
    assert 0.15 < known.any(axis=1).mean() < 0.5
    new = load_new_patients(SAMPLE / "hcc_new_patients.csv", data.codes)
    assert len(new.attrs["members"]["cells"]) == script.N_HCC_NEW


def test_hcc_two_file_layout_matches_the_wide_file(script):
    pair = load_calibration(SAMPLE / "hcc_probs.csv", SAMPLE / "hcc_labels.csv")
    wide = load_calibration(SAMPLE / "hcc_calibration.csv")
    n = script.N_TWO_FILE
    assert pair.n_patients == n and pair.codes == wide.codes
    assert list(pair.patient_ids) == list(wide.patient_ids[:n])
    np.testing.assert_array_equal(pair.prob_array(), wide.prob_array()[:n])
    np.testing.assert_array_equal(pair.label_array(), wide.label_array()[:n])
    # the labels file really is shuffled (rows and columns), so the join is exercised
    header = (SAMPLE / "hcc_labels.csv").read_text().split("\n", 1)[0].split(",")[1:]
    assert header != wide.codes
    first_id = (SAMPLE / "hcc_labels.csv").read_text().split("\n")[1].split(",")[0]
    assert first_id != wide.patient_ids[0]


def test_hcc_new_patients_and_weights(script):
    codes = script.HCC_CODES
    new = load_new_patients(SAMPLE / "hcc_new_patients.csv", codes)
    assert new.shape == (script.N_HCC_NEW, 35)
    calibration_ids = set(load_calibration(SAMPLE / "hcc_calibration.csv").patient_ids)
    assert not calibration_ids & set(new.index)
    weights = read_weights(SAMPLE / "hcc_weights.csv", codes)
    assert list(weights.index) == codes
    assert (weights["weight"] > 0).all()
    assert (weights["description"] != "").all()
    np.testing.assert_allclose(weights["weight"], cms_hcc_weights("V28", "CNA", codes)["weight"])


def test_digits(script):
    data = load_calibration(SAMPLE / "digits_calibration.csv")
    assert (data.n_patients, data.n_codes) == (script.N_DIGIT_CALIBRATION, 10)
    assert data.codes == [str(d) for d in range(10)]
    per_image = data.label_array().sum(axis=1)
    assert per_image.min() == 1 and per_image.max() == 4
    new = load_new_patients(SAMPLE / "digits_new_patients.csv", data.codes)
    assert new.shape == (script.N_DIGIT_NEW, 10)
    weights = read_weights(SAMPLE / "digits_weights.csv", data.codes)
    assert weights["weight"].tolist() == [10.0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert weights.loc["3", "description"] == "digit 3"


def test_sample_data_is_small():
    total = sum(path.stat().st_size for path in SAMPLE.iterdir())
    assert total < 4 * 1024 * 1024
