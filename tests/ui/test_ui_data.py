"""favmac.ui.samples, weights_view and data_views without Streamlit."""
from __future__ import annotations

import numpy as np
import pytest
from ui_fixtures import CODES, weights_frame

from favmac.runspec import SettingsError
from favmac.ui import data_views, samples, weights_view


def test_weight_helpers():
    w = weights_frame()
    assert weights_view.weight_array(w, ["C", "A"]).tolist() == [3.0, 1.0]
    with pytest.raises(SettingsError, match="no risk weight"):
        weights_view.weight_array(w, ["A", "Z"])
    with pytest.raises(SettingsError, match=">= 0"):
        weights_view.weight_array(weights_frame((1.0, -1.0, 2.0)), CODES)
    assert weights_view.descriptions(w, ["B", "Z"]) == ["beta", ""]
    kept, note = weights_view.weights_for_codes(w, ["B", "A"])
    assert kept.index.tolist() == ["B", "A"] and note is None
    ones, note = weights_view.weights_for_codes(w, ["X"])
    assert ones["weight"].tolist() == [1.0] and "weighs 1" in note


def test_named_bytes_and_content_key():
    nb = samples.NamedBytes(b"abc", "f.csv")
    assert nb.name == "f.csv" and nb.getvalue() == b"abc" and nb.read() == b"abc"
    assert samples.content_key(b"ab", b"c") != samples.content_key(b"a", b"bc")
    assert samples.content_key(b"x", None) == samples.content_key(b"x", b"")


# --------------------------------------------------------------------------- data views


def test_reliability_bins_pool_codes():
    probs = np.array([[0.05, 0.95], [0.15, 0.85], [0.05, 0.95]])
    labels = np.array([[0, 1], [1, 1], [0, 0]])
    bins = data_views.reliability_bins(probs, labels, n_bins=10)
    assert bins["count"].sum() == 6
    first = bins.iloc[0]
    assert (first["bin_low"], first["count"], first["observed"]) == (0.0, 2, 0.0)
    last = bins.iloc[-1]
    assert last["count"] == 2 and last["observed"] == 0.5 and last["mean_prob"] == pytest.approx(0.95)
    assert data_views.reliability_bins(np.array([[1.0]]), np.array([[1]]))["bin_high"].iloc[0] == 1.0


def test_prevalence_table_sorted():
    probs = np.array([[0.1, 0.9, 0.5], [0.3, 0.7, 0.5]])
    labels = np.array([[0, 1, 1], [0, 1, 0]])
    table = data_views.prevalence_table(probs, labels, CODES)
    assert table["code"].tolist() == ["B", "C", "A"]
    assert table["mean_prob"].tolist() == pytest.approx([0.8, 0.5, 0.2])


# --------------------------------------------------------------------------- online session
