"""summarize / compare_methods / protocol_table on hand-made results."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from favmac import ReplayResult
from favmac.metrics import compare_methods, protocol_table, summarize


def make_result(cost, value, targets, delta=None, method="M"):
    cost = np.asarray(cost, dtype=float)
    value = np.asarray(value, dtype=float)
    n_targets, n_steps = cost.shape
    return ReplayResult(
        method=method,
        targets=np.asarray(targets, dtype=float),
        delta=delta,
        burn_in=0,
        thresholds=np.zeros((n_targets, n_steps)),
        selected=np.zeros((n_targets, n_steps, 2), dtype=bool),
        cost=cost,
        value=value,
    )


def test_summarize_by_hand():
    cost = [[0.0, 2.0, 1.0, 3.0], [1.0, 1.0, 1.0, 1.0]]
    value = [[1.0, 3.0, 2.0, 2.0], [4.0, 0.0, 0.0, 0.0]]
    res = make_result(cost, value, targets=[1.0, 2.0], delta=0.1)
    table = summarize(res)
    assert list(table.columns) == ["method", "target", "n", "mean_value", "mean_cost", "excess_cost",
                                   "violation_freq", "ttest_p", "binom_p"]
    first, second = table.iloc[0], table.iloc[1]
    assert first.n == 4 and first.target == 1.0
    assert first.mean_value == 2.0 and first.mean_cost == 1.5 and first.excess_cost == 0.5
    assert first.violation_freq == 0.5  # costs 2 and 3 exceed 1
    assert first.ttest_p == pytest.approx(stats.ttest_1samp(cost[0], 1.0, alternative="greater").pvalue)
    # one-sided: the mean 1.5 with sd 1.29 over 4 samples; t = 0.775, p ~ 0.247
    assert 0.2 < first.ttest_p < 0.3
    assert first.binom_p == pytest.approx(stats.binomtest(2, 4, 0.1, alternative="greater").pvalue)
    assert first.binom_p == pytest.approx(1 - 0.9**4 - 4 * 0.1 * 0.9**3)
    # constant costs: no t-test; no violations at all
    assert second.mean_cost == 1.0 and second.excess_cost == -1.0 and second.violation_freq == 0.0
    assert math.isnan(second.ttest_p)
    assert second.binom_p == pytest.approx(1.0)


def test_summarize_expected_control_has_no_binomial_test():
    res = make_result([[0.0, 1.0, 2.0]], [[0.0, 0.0, 0.0]], targets=[1.0], delta=None)
    row = summarize(res).iloc[0]
    assert math.isnan(row.binom_p) and not math.isnan(row.ttest_p)


def test_summarize_empty_run():
    res = make_result(np.zeros((1, 0)), np.zeros((1, 0)), targets=[1.0], delta=0.1)
    row = summarize(res).iloc[0]
    assert row.n == 0 and math.isnan(row.mean_cost) and math.isnan(row.ttest_p) and math.isnan(row.binom_p)


def test_compare_methods_pools_runs_of_a_method():
    a1 = make_result([[1.0, 1.0], [2.0, 4.0]], [[10.0, 20.0], [30.0, 40.0]], targets=[1.0, 2.0], method="A")
    a2 = make_result([[0.0, 0.0], [2.0, 2.0]], [[0.0, 0.0], [10.0, 30.0]], targets=[1.0, 2.0], method="A")
    b = make_result([[3.0]], [[5.0]], targets=[1.0], method="B")
    table = compare_methods([a1, b, a2])
    assert list(table.method) == ["A", "B"]
    a = table.set_index("method").loc["A"]
    # per-run target averages: a1 value (15 + 35)/2 = 25, a2 (0 + 20)/2 = 10
    assert a.n_runs == 2 and a.mean_value == 17.5
    assert a.mean_value_std == pytest.approx(np.std([25.0, 10.0], ddof=1))
    # a1 excess ((1-1) + (3-2))/2 = 0.5; a2 ((0-1) + (2-2))/2 = -0.5
    assert a.excess_cost == pytest.approx(0.0)
    # a1 violations (0 + 0.5)/2 = 0.25; a2 0
    assert a.violation_freq == pytest.approx(0.125)
    assert math.isnan(table.set_index("method").loc["B"].mean_value_std)  # one run: no std
    scaled = compare_methods([b], value_scale=100 / 55, cost_scale=10).iloc[0]
    assert scaled.mean_value == pytest.approx(5 * 100 / 55)
    assert scaled.mean_cost == pytest.approx(30.0) and scaled.excess_cost == pytest.approx(20.0)
    assert scaled.violation_freq == 1.0  # a share, never rescaled


def test_protocol_table_format():
    runs = {
        "FavMac (ratio)": [make_result([[0.0, 2.0]], [[55.0, 0.0]], [1.0], delta=0.1),
                           make_result([[0.0, 0.0]], [[55.0, 55.0]], [1.0], delta=0.1)],
        "single": [make_result([[1.0]], [[11.0]], [1.0])],
    }
    table = protocol_table(runs, value_scale=100 / 55, decimals=1)
    assert isinstance(table, pd.DataFrame) and list(table.columns) == ["value", "excess cost", "violation (%)", "seeds"]
    row = table.loc["FavMac (ratio)"]
    # per-seed values 50 and 100 (scaled); excess 0 and -1; violation 50% and 0%
    assert row["value"] == f"75.0 ± {np.std([50.0, 100.0], ddof=1):.1f}"
    assert row["excess cost"] == f"-0.5 ± {np.std([0.0, -1.0], ddof=1):.1f}"
    assert row["violation (%)"] == f"25.0 ± {np.std([50.0, 0.0], ddof=1):.1f}"
    assert row["seeds"] == 2
    assert table.loc["single", "value"] == "20.0"  # one seed: no ± part
