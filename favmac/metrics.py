"""Evaluation of online runs: value, excess cost, violation frequency and the paper's tests.

* :func:`summarize` — one row per target of one :class:`~favmac.result.ReplayResult`.
* :func:`compare_methods` — one row per method, figures averaged over targets (and, when a
  method has several runs such as seeds, mean and standard deviation over runs); it takes the
  results or their :func:`summarize` tables, so a large comparison can keep only the tables.
* :func:`protocol_table` — the paper's table: ``mean ± std`` over seeds of the per-seed
  target-averaged figures.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from .result import ReplayResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["summarize", "compare_methods", "protocol_table"]

_FIGURES = ["mean_value", "mean_cost", "excess_cost", "violation_freq"]


def summarize(result: ReplayResult) -> pd.DataFrame:
    """Per-target figures of one run.

    Returns a DataFrame with one row per target and columns ``method``, ``target``, ``n``
    (predicted patients), ``mean_value``, ``mean_cost``, ``excess_cost`` (mean cost −
    target), ``violation_freq`` (share of patients with cost > target), ``ttest_p``
    (one-sided one-sample t-test, H1: mean cost > target; NaN when n < 2 or the costs do
    not vary) and ``binom_p`` (binomial test, H1: violation rate > delta; NaN under
    expected-cost control, i.e. ``result.delta`` None, or when n = 0).

    Examples
    --------
    >>> import numpy as np
    >>> r = ReplayResult("demo", np.array([1.0]), 0.1, 0, np.zeros((1, 4)),
    ...                  np.zeros((1, 4, 2), bool), np.array([[0.0, 2.0, 1.0, 1.0]]),
    ...                  np.array([[1.0, 1.0, 2.0, 0.0]]))
    >>> row = summarize(r).iloc[0]
    >>> float(row.mean_cost), float(row.excess_cost), float(row.violation_freq)
    (1.0, 0.0, 0.25)
    """
    from scipy import stats  # imported on use: scipy.stats is slow to import

    cost = np.asarray(result.cost, dtype=float)
    value = np.asarray(result.value, dtype=float)
    exceeded = result.violations  # exact flags when the method recorded them
    rows = []
    for t, target in enumerate(np.asarray(result.targets, dtype=float)):
        costs = cost[t]
        n = costs.size
        violations = int(np.sum(exceeded[t]))
        mean_cost = float(costs.mean()) if n else math.nan
        ttest_p = math.nan
        if n >= 2 and np.ptp(costs) > 0:
            ttest_p = float(stats.ttest_1samp(costs, target, alternative="greater").pvalue)
        binom_p = math.nan
        if result.delta is not None and n > 0:
            binom_p = float(stats.binomtest(violations, n, float(result.delta), alternative="greater").pvalue)
        rows.append(
            {
                "method": result.method,
                "target": float(target),
                "n": n,
                "mean_value": float(value[t].mean()) if n else math.nan,
                "mean_cost": mean_cost,
                "excess_cost": mean_cost - float(target),
                "violation_freq": violations / n if n else math.nan,
                "ttest_p": ttest_p,
                "binom_p": binom_p,
            }
        )
    import pandas as pd  # imported on use: pandas is slow to import
    return pd.DataFrame(rows, columns=["method", "target", "n", *_FIGURES, "ttest_p", "binom_p"])


def _run_figures(run, value_scale, cost_scale) -> dict:
    """Target-averaged figures of one run (a ReplayResult or its :func:`summarize` table), rescaled."""
    table = summarize(run) if isinstance(run, ReplayResult) else run
    figures = {name: float(table[name].mean()) for name in _FIGURES}
    if value_scale is not None:
        figures["mean_value"] *= value_scale
    if cost_scale is not None:
        figures["mean_cost"] *= cost_scale
        figures["excess_cost"] *= cost_scale
    return figures


def _run_method(run) -> str:
    return run.method if isinstance(run, ReplayResult) else str(run["method"].iloc[0])


def _run_targets(run) -> int:
    return len(run.targets) if isinstance(run, ReplayResult) else len(run)


def compare_methods(results, value_scale=None, cost_scale=None, ddof: int = 1) -> pd.DataFrame:
    """One row per method: figures averaged over targets, then over runs of the same method.

    Parameters
    ----------
    results : list of ReplayResult or of summarize() tables
        Runs to compare; runs with the same ``method`` name (e.g. one per seed) are pooled. A
        run's :func:`summarize` table gives the same row as the run itself (it is what is
        computed from the run), so a caller may summarize each run as it ends and free it.
    value_scale, cost_scale : float, optional
        Multipliers applied to the target-averaged figures, e.g. ``value_scale=100 / 55``
        for the paper's MNIST value (V/55 × 100) and ``cost_scale=100 / C_max`` for cost as a
        percentage of C_max. ``violation_freq`` is a share and is never rescaled.
    ddof : int
        Delta degrees of freedom of the standard deviation over runs (1: sample std; NaN
        for a single run).

    Returns
    -------
    DataFrame with columns ``method``, ``n_runs``, ``n_targets``, and for each of
    ``mean_value``, ``mean_cost``, ``excess_cost``, ``violation_freq`` the mean over runs and
    its ``<name>_std``, in the order the methods first appear.
    """
    groups: dict[str, list[dict]] = {}
    n_targets: dict[str, set] = {}
    for run in results:
        method = _run_method(run)
        groups.setdefault(method, []).append(_run_figures(run, value_scale, cost_scale))
        n_targets.setdefault(method, set()).add(_run_targets(run))
    rows = []
    for method, runs in groups.items():
        row = {"method": method, "n_runs": len(runs), "n_targets": max(n_targets[method])}
        for name in _FIGURES:
            values = np.array([run[name] for run in runs])
            row[name] = float(values.mean())
            row[f"{name}_std"] = float(values.std(ddof=ddof)) if len(values) > ddof else math.nan
        rows.append(row)
    columns = ["method", "n_runs", "n_targets"] + [c for name in _FIGURES for c in (name, f"{name}_std")]
    import pandas as pd  # imported on use: pandas is slow to import
    return pd.DataFrame(rows, columns=columns)


def protocol_table(runs: dict, value_scale=None, cost_scale=None, decimals: int = 2, ddof: int = 1) -> pd.DataFrame:
    """The paper's table: ``mean ± std`` over seeds of the per-seed target-averaged figures.

    Parameters
    ----------
    runs : dict
        ``{method label: [ReplayResult, one per seed]}``; the dict key labels the row.
    value_scale, cost_scale : float, optional
        As in :func:`compare_methods` (e.g. ``100 / 55`` and ``100 / C_max``).
    decimals : int
        Decimals shown.

    Returns
    -------
    DataFrame indexed by method with text columns ``value``, ``excess cost`` and
    ``violation (%)`` (violation frequency in percent), each ``"mean ± std"``, and
    ``seeds`` (number of runs).
    """
    rows = {}
    for label, results in runs.items():
        relabelled = [_relabel(r, str(label)) for r in results]
        if not relabelled:
            continue
        table = compare_methods(relabelled, value_scale=value_scale, cost_scale=cost_scale, ddof=ddof).iloc[0]

        def cell(name, factor=1.0):
            mean, std = table[name] * factor, table[f"{name}_std"] * factor
            return f"{mean:.{decimals}f} ± {std:.{decimals}f}" if not math.isnan(std) else f"{mean:.{decimals}f}"

        rows[str(label)] = {
            "value": cell("mean_value"),
            "excess cost": cell("excess_cost"),
            "violation (%)": cell("violation_freq", 100.0),
            "seeds": int(table["n_runs"]),
        }
    import pandas as pd  # imported on use: pandas is slow to import
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["value", "excess cost", "violation (%)", "seeds"])
    frame.index.name = "method"
    return frame


def _relabel(result: ReplayResult, label: str) -> ReplayResult:
    return result if result.method == label else dataclasses.replace(result, method=label)
