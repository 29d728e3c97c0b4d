"""Every chart says its unit: the violation charts' titles name what a violation is in the cost's unit
(as the threshold chart's title says "false flags allowed"), the Validity histogram's title its statistic."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from favmac import AdditiveCost, AdditiveValue, replay
from favmac.ui import figures, playback, validity
from favmac.ui.guarantees import segment_cost_figure
from favmac.ui.units import over_target, target_text

FP = {"control": "violation", "target": 1.1, "delta": 0.1, "cost_kind": "fp", "value_kind": "tp"}
DOLLARS = {**FP, "cost_kind": "cms_unsupported", "base_rate": 11000.0, "target": 800.0}


def test_the_validity_histogram_title_says_its_unit():
    rates = SimpleNamespace(control="violation", statistic=np.array([0.05, 0.08]), promised=0.1, predicted_spread=0.01,
                            observed=None, target=1.1)
    title = validity.histogram_figure(rates, "false flags").layout.title.text
    assert title == "Share of charts with more than 1.1 false flags, over random orderings of your patients"
    means = SimpleNamespace(control="expected", statistic=np.array([0.3, 0.4]), promised=0.36, predicted_spread=0.02,
                            observed=None, target=0.36)
    title = validity.histogram_figure(means, "dollars of unsupported payment").layout.title.text
    assert title == "Mean dollars of unsupported payment per 100 charts, over random orderings of your patients"


def test_the_online_violation_charts_name_the_target_in_its_unit():
    rng = np.random.RandomState(3)
    probs = rng.beta(1.2, 2.0, size=(300, 4))
    result = replay(probs, rng.rand(300, 4) < probs, AdditiveValue(None), AdditiveCost(None), [1.1], burn_in=100,
                    delta=0.1, groups=np.where(np.arange(300) % 2, "a", "b"))
    series = playback.running_series(result)
    pooled = figures.cost_figure(series, "violation", 1.1, 0.1, "false flags").layout.title.text
    assert pooled == "Charts over 1.1 false flags"  # a third of the page: short
    per_segment = segment_cost_figure(result, 300, FP).layout.title.text
    assert per_segment == "Running share of charts with more than 1.1 false flags, per segment"
    assert over_target(800, "dollars of unsupported payment") in segment_cost_figure(result, 300, DOLLARS).layout.title.text
    assert "with more than 1.1 false flags" in target_text(FP)  # the promise and the titles say it in the same words


def test_every_chart_title_or_axis_of_an_amount_names_a_unit():
    """The figures an auditor reads amounts from: each says its unit in its title or on the axis of the amount."""
    rng = np.random.RandomState(4)
    probs = rng.beta(1.2, 2.0, size=(300, 4))
    labels = rng.rand(300, 4) < probs
    series = playback.running_series(replay(probs, labels, AdditiveValue(None), AdditiveCost(None), [1.1], burn_in=100))
    shown = [figures.cost_figure(series, "expected", 1.1, 0.1, "false flags"),
             figures.cost_figure(series, "violation", 1.1, 0.1, "false flags"),
             figures.value_figure(series, "confirmed codes"),
             figures.threshold_figure(series, "false flags", "price", "confirmed codes"),
             figures.threshold_figure(series, "false flags", "cost", "confirmed codes")]
    for fig in shown:
        words = " ".join(str(t) for t in (fig.layout.title.text, fig.layout.yaxis.title.text))
        assert "false flags" in words or "confirmed codes" in words or "%" in words, words
        assert "patients" in fig.layout.xaxis.title.text  # stream positions count patients
    assert isinstance(series, pd.DataFrame)
