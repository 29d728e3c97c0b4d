"""The clip before the logit follows the data's resolution (docs/method.md "Recalibration on a split": e = s/2 on a
grid of step s, else 1e-7), and it is part of the fitted map."""
import io
import json

import numpy as np
import pandas as pd
import pytest

from favmac.recalibration import CLIP, GRID_SHARE, Recalibration, fit_recalibration, grid_step, resolution_clip


def _as_text_and_back(p: np.ndarray, decimals: int) -> np.ndarray:
    """``p`` written with ``decimals`` decimals to CSV text and read back as floats (a rounded export)."""
    frame = pd.DataFrame(p, columns=[f"c{k}" for k in range(p.shape[1])])
    text = frame.to_csv(index=False, float_format=f"%.{decimals}f")
    return pd.read_csv(io.StringIO(text)).to_numpy(dtype=float)


def _calibrated(seed, n=2000, k=5, low=-5.0, high=-1.0, spread=1.8):
    rng = np.random.RandomState(seed)
    logit_q = rng.uniform(low, high, k) + spread * rng.randn(n, k)
    q = 1 / (1 + np.exp(-logit_q))
    return q, rng.rand(n, k) < q


@pytest.mark.parametrize("decimals", [1, 2, 3, 4, 6])
def test_a_rounded_export_read_from_text_lies_on_its_grid(decimals):
    q, _ = _calibrated(0)
    p = _as_text_and_back(q, decimals)
    assert grid_step(p) == pytest.approx(10.0 ** -decimals, rel=1e-12)
    assert resolution_clip(p) == pytest.approx(10.0 ** -decimals / 2, rel=1e-12)


def test_continuous_and_float32_probabilities_lie_on_no_grid():
    q, _ = _calibrated(1)
    assert grid_step(q) is None and resolution_clip(q) == CLIP
    assert grid_step(q.astype(np.float32)) is None  # a float32 classifier's outputs, widened
    assert grid_step(np.zeros((10, 3))) is None and resolution_clip(np.ones((4, 2))) == CLIP  # only 0 and 1: no evidence


def test_a_handful_of_values_does_not_fool_the_rule():
    q, _ = _calibrated(2, n=4000, k=5)  # 20,000 values
    rounded = _as_text_and_back(q, 2)
    rng = np.random.RandomState(0)
    # a rounded export with a handful of values of full precision (hand-edited rows): still the 0.01 grid
    stray = rounded.copy()
    rows = rng.choice(len(stray), 40, replace=False)
    stray[rows, 0] = q[rows, 0]
    assert grid_step(stray) == pytest.approx(0.01)
    # a continuous classifier with a handful of round values (0.5, 0.25, ...): no grid
    few = q.copy()
    few[rows, 1] = np.round(q[rows, 1], 1)
    assert grid_step(few) is None
    # exact zeros and ones do not count either way: 26 % of a 2-decimal export at 0.00 is still on 0.01
    zeros = rounded.copy()
    zeros[: len(zeros) // 4] = 0.0
    assert grid_step(zeros) == pytest.approx(0.01)
    # the share is a share of the values strictly inside (0, 1)
    inside = rounded[(rounded > 0) & (rounded < 1)]
    off = int(np.floor((1 - GRID_SHARE) * inside.size)) + 1  # one more than allowed
    mixed = rounded.copy()
    flat = mixed.ravel()
    where = np.flatnonzero((flat > 0) & (flat < 1))[:off]
    flat[where] += 1e-4 * 0.37  # off the 0.01 grid (and off 0.001), on no coarser one
    assert grid_step(mixed) in (None, pytest.approx(1e-6)) and grid_step(mixed) != pytest.approx(0.01)


def test_the_clip_at_the_resolution_keeps_a_calibrated_code_calibrated():
    # the case: a calibrated classifier exported with 2 decimals, a quarter of it exactly 0.00
    q, y = _calibrated(3, n=4000, k=4, low=-6.0, high=-3.0, spread=2.0)
    p = _as_text_and_back(q, 2)
    assert (p == 0).mean() > 0.25
    maps = fit_recalibration(p, y, "platt")
    assert maps.clip == pytest.approx(0.005)
    # at 1e-7 a rounded 0.00 becomes logit -16 and drags the slope below 1; at 0.005 it stays near 1
    old = fit_recalibration(p, y, "platt", clip=CLIP)
    assert np.all(np.abs(maps.slope - 1) < 0.2) and old.slope.mean() < maps.slope.mean() - 0.1
    # tested Platt keeps every calibrated code's own p at the resolution clip
    tested = fit_recalibration(p, y, "platt_tested")
    assert np.all(tested.slope == 1.0) and np.all(tested.intercept == 0.0)


def test_the_clip_is_part_of_the_fitted_map():
    q, y = _calibrated(4, n=1500, k=3)
    maps = fit_recalibration(_as_text_and_back(q, 2), y, "platt")
    # new patients with a finer resolution use the fold's clip: 0.001 and 0.004 are below e = 0.005
    out = maps.apply([[0.001] * 3, [0.004] * 3, [0.0] * 3, [0.006] * 3])
    assert np.all(out[0] == out[2]) and np.all(out[1] == out[2]) and np.all(out[3] > out[2])
    doc = json.loads(json.dumps(maps.to_dict()))
    assert doc["clip"] == pytest.approx(0.005)
    again = Recalibration.from_dict(doc)
    assert again == maps and again.clip == maps.clip
    assert np.array_equal(again.apply(q[:50]), maps.apply(q[:50]))
    # maps stored before the clip was recorded read as the old clip, 1e-7
    del doc["clip"]
    assert Recalibration.from_dict(doc).clip == CLIP
    for bad in (0.0, 0.5, -1e-3, float("nan"), "0.005", True):
        with pytest.raises(ValueError, match=r"recalibration_maps\.clip"):
            Recalibration.from_dict({**doc, "clip": bad})


def test_maps_per_segment_share_the_folds_clip():
    q, y = _calibrated(5, n=2000, k=2)
    p = _as_text_and_back(q, 3)
    groups = np.where(np.arange(2000) % 2, "a", "b")
    maps = fit_recalibration(p, y, "platt", by="segment", groups=groups)
    assert maps.clip == pytest.approx(0.0005)
    assert all(m.clip == maps.clip for m in maps.segments.values())


def test_a_kept_identity_returns_p_itself_not_the_clip():
    # docs/method.md: platt_tested keeps "the identity g(p) = p"; the clip is applied before a logit only.
    # A rounded 0.00 of a kept code stays 0.00 (price +inf: never flagged, as without recalibration) and a
    # rounded 1.00 stays 1.00, so a code the fold does not reject behaves exactly as in a plain run.
    q, y = _calibrated(3, n=4000, k=4, low=-6.0, high=-3.0, spread=2.0)
    p = _as_text_and_back(q, 2)
    p[:5, 0] = 1.0
    tested = fit_recalibration(p, y, "platt_tested")
    kept = (tested.slope == 1.0) & (tested.intercept == 0.0) & ~np.asarray(tested.fallback)
    assert kept.any() and (p[:, kept] == 0).any()
    out = tested.apply(p)
    assert np.array_equal(out[:, kept], p[:, kept])
    assert Recalibration.from_dict(json.loads(json.dumps(tested.to_dict()))).apply(p[:50]).tolist() == out[:50].tolist()
