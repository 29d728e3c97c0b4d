"""The Trade-offs page's comparison table, over the library's comparison (:mod:`favmac.tradeoffs`).

:func:`run_tradeoffs` runs :func:`favmac.tradeoffs.run_comparison` and adds "table": the summary
per method in the auditor's units (:func:`comparison_display`: value and false flags per 100 charts,
the payment per patient and per 1,000 members); the rest of this module words its columns
(:func:`comparison_columns`, :func:`comparison_formats`, :func:`header`, :func:`points_display`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from favmac.runspec import RunSpec
from favmac.tradeoffs import run_comparison
from favmac.ui.units import CHARTS, amount_format, cost_per_100_label, value_per_100_label

__all__ = ["run_tradeoffs", "with_table", "DROPPED_COLUMN", "settings_caption", "comparison_columns", "comparison_display", "comparison_formats", "SHORT_HEADERS",
           "header", "points_display"]


def run_tradeoffs(probs, labels, codes, patient_ids, spec: RunSpec, targets, methods, progress=None,
                  recalibrate: int | None = None, members=None, mode: str | None = None, groups=None,
                  label_available_at=None) -> dict:
    """:func:`favmac.tradeoffs.run_comparison` (same arguments: the session's segments ``groups`` and label
    arrivals ``label_available_at`` too) with the page's "table": ``favmac.metrics.compare_methods`` per 100
    charts, as :func:`comparison_display` shows it, with a column naming the settings a row drops.

    Returns {"points", "table", "skipped", "targets", "dropped", "settings"}. When a method fails, the error
    raised carries the comparison of the methods that finished (its ``tradeoffs`` attribute) in this same form.
    """
    units = {"cost_kind": spec.cost_kind, "value_kind": spec.value_kind, "base_rate": spec.base_rate}
    try:
        out = run_comparison(probs, labels, codes, patient_ids, spec, targets, methods, progress=progress,
                             recalibrate=recalibrate, members=members, mode=mode, groups=groups,
                             label_available_at=label_available_at)
    except BaseException as error:
        if isinstance(getattr(error, "tradeoffs", None), dict) and "summaries" in error.tradeoffs:
            error.tradeoffs = with_table(error.tradeoffs, units)
        raise
    return with_table(out, units)


def with_table(out: dict, units: dict) -> dict:
    """A :func:`favmac.tradeoffs.run_comparison` result as the page keeps it: its points, skipped methods
    and targets, and the comparison table of its summaries (:func:`comparison_display`)."""
    from favmac.metrics import compare_methods

    runs = list(out["summaries"].values())
    table = compare_methods(runs, value_scale=CHARTS, cost_scale=CHARTS) if runs else None
    shown = comparison_display(table, out["oracle_value"] * CHARTS, out["value_scale"] / CHARTS, units)
    dropped = out.get("dropped") or {}
    if dropped and not shown.empty:  # the row says which session setting it does not honour
        shown[DROPPED_COLUMN] = [", ".join(dropped.get(method, [])) or "none" for method in shown["Method"]]
    return {"points": out["points"], "table": shown, "skipped": out["skipped"], "targets": out["targets"],
            "dropped": dropped, "settings": out.get("settings", [])}


#: The summary table's column naming, per row, the session settings that method does not honour.
DROPPED_COLUMN = "Session settings it drops"


def settings_caption(settings: list[str]) -> str:
    """What every row runs under, for the page (``run_comparison``'s "settings").

    >>> print(settings_caption(["segment plan", "labels 30 positions late"]))
    Every method runs under the session's settings: segment plan; labels 30 positions late.
    """
    if not settings:
        return "Every method runs under the session's settings: every earlier patient, pooled."
    return "Every method runs under the session's settings: " + "; ".join(settings) + "."


def comparison_columns(units: dict) -> dict:
    """The summary table's columns (name in ``compare_methods`` -> label), led by what an
    auditor weighs: value captured and false flags per 100 charts. ``units``: the settings'
    ``cost_kind`` and ``value_kind``."""
    if units.get("value_kind") == "cms_payment":  # the payment per patient and per 1,000 members (units.payment_rates)
        unit = "$" if units.get("base_rate") is not None else "RAF"
        rest = {k: v for k, v in comparison_columns({**units, "value_kind": "tp"}).items() if k not in ("method", "mean_value")}
        return {"method": "Method", "mean_value": f"Payment captured per patient ({unit})", "mean_cost": rest.pop("mean_cost"),
                "per_1000": f"Payment captured per 1,000 members ({unit})", **rest}  # the cost in view beside the payment
    return {
        "method": "Method",
        "mean_value": value_per_100_label(units),
        "captured": "Value captured (% of the true codes' value)",
        "mean_cost": cost_per_100_label(units),
        "excess_cost": "Over the target (per 100 charts)",
        "violation_freq": "Charts over the target (%)",
        "paper_value": "Value (% of the largest possible, the paper's scale)",
    }


def comparison_display(table: pd.DataFrame | None, oracle_value: float = float("nan"), paper_scale: float = float("nan"),
                       units: dict | None = None) -> pd.DataFrame:
    """``compare_methods`` output (value and cost per 100 charts) as the page shows it: one run
    per method, so no std columns.

    ``oracle_value`` is the value per 100 charts of choosing exactly the true codes; the captured
    share is value / oracle value. ``paper_scale`` turns value per 100 charts into the paper's
    0–100 scale (% of the largest possible value). Violation frequency becomes a percentage.
    """
    columns = comparison_columns(units or {"cost_kind": "fp", "value_kind": "tp"})
    if table is None or table.empty:
        return pd.DataFrame(columns=list(columns.values()))
    out = table.copy()
    out["captured"] = 100.0 * out["mean_value"] / oracle_value if oracle_value > 0 else np.nan
    out["paper_value"] = out["mean_value"] * paper_scale
    if "per_1000" in columns:  # the payment: per patient and per 1,000 members instead of per 100 charts
        out["mean_value"] = out["mean_value"] / CHARTS
        out["per_1000"] = 1000.0 * out["mean_value"]
    out = out[list(columns)]
    out["violation_freq"] = 100.0 * out["violation_freq"]
    return out.rename(columns=columns).reset_index(drop=True)


def comparison_formats(table: pd.DataFrame) -> dict[str, str]:
    """The printf format of each number column of :func:`comparison_display`'s table (label -> format):
    dollars (a label ending "($)", the unsupported $ cost) as whole dollars with thousands separators,
    every other column by :func:`favmac.ui.units.amount_format` (RAF per patient keeps three significant digits).

    >>> comparison_formats(pd.DataFrame({"Method": ["FavMac"], "Payment captured per 1,000 members ($)": [2284064.0],
    ...                                  "False flags per 100 charts": [109.5], "Payment captured per patient (RAF)": [0.0038]}))
    {'Payment captured per 1,000 members ($)': '$%,.0f', 'False flags per 100 charts': '%,.2f', 'Payment captured per patient (RAF)': '%,.5f'}
    """
    return {column: amount_format(table[column], dollars=column.endswith("($)") or column.startswith("Unsupported $"))
            for column in table.columns if column not in ("Method", DROPPED_COLUMN)}


#: Long summary labels drawn shorter (the full label in the header's help), so the table fits the page.
SHORT_HEADERS = {
    "Value captured (% of the true codes' value)": ("Value captured (%)", "Share of the value of exactly the true codes."),
    "Value (% of the largest possible, the paper's scale)": ("Paper's scale (%)",
                                                              "Value as % of the largest possible value: the paper's 0-100 scale."),
}


def header(column: str) -> dict:
    """``label`` and ``help`` of a summary column's header (:data:`SHORT_HEADERS`; {} keeps the column's name).

    >>> header("Value captured (% of the true codes' value)")["label"], header("False flags per 100 charts")
    ('Value captured (%)', {})
    """
    short = SHORT_HEADERS.get(column)
    return {} if short is None else {"label": short[0], "help": f"{column}: {short[1]}"}


def points_display(points: pd.DataFrame, units: dict) -> pd.DataFrame:
    """The "every method x target" table in the page's units (:func:`tradeoff_points` holds means per chart):
    the target, cost and excess per 100 charts (under violation control the target c is a cost per chart),
    the value as the summary table shows it (per 100 charts, the payment per patient), shares in %.

    >>> row = pd.DataFrame({"method": ["FavMac"], "target": [0.36], "target_pct": [5.0], "n": [900], "mean_value": [0.5],
    ...                     "mean_cost": [0.3], "excess_cost": [-0.06], "violation_freq": [0.2], "ttest_p": [0.9],
    ...                     "binom_p": [0.1], "value_pct": [1.0]})
    >>> [str(v) for v in points_display(row, {"cost_kind": "fp", "value_kind": "tp", "control": "expected"}).iloc[0]]
    ['FavMac', '36.0', '5.0', '50.0', '30.0', '-6.0', '20.0', '900', '0.9', '0.1']
    """
    labels = comparison_columns(units)
    violation = units.get("control") == "violation"
    charts = 1 if "per_1000" in labels else CHARTS  # the payment per patient, as the summary table
    columns = {
        "method": ("Method", 1),
        "target": ("Target c (cost per chart)" if violation else "Target (per 100 charts)", 1 if violation else CHARTS),
        "target_pct": ("Target (% of C_max)", 1),
        "mean_value": (labels["mean_value"], charts),
        "mean_cost": (labels["mean_cost"], CHARTS),
        "excess_cost": (labels["excess_cost"], CHARTS),
        "violation_freq": (labels["violation_freq"], 100),
        "n": ("Patients predicted", 1),
        "ttest_p": ("t-test p (cost > c)", 1),
        "binom_p": ("binomial p (rate > δ)", 1),
    }
    out = pd.DataFrame({label: points[key] * scale if scale != 1 else points[key]
                        for key, (label, scale) in columns.items() if key in points.columns})
    return out.reset_index(drop=True)
