"""The Trade-offs page's grid inputs and caption, over the library's target grid (:mod:`favmac.target_grid`).

The targets themselves are decided in :mod:`favmac.target_grid` (:func:`~favmac.target_grid.grid_plan`);
this module words them for the page: the caption under the charts (:func:`grid_caption`), what the
lowest and highest inputs show (:func:`form_values`, per 100 charts) and the grid the form
describes (:func:`grid_from_form`).
"""
from __future__ import annotations

import math

from favmac.target_grid import (
    HIGH_CAP,
    SATURATED_SHARE,
    SLACK_FACTOR,
    TIGHT_SHARE,
    GridPlan,
    burn_in_patients,
    round_significant,
    share_text,
)
from favmac.ui.units import CHARTS, plain_number

__all__ = ["FORM_HELP", "grid_caption", "form_values", "grid_from_form"]


#: The help of the page's lowest and highest target inputs.
FORM_HELP = ("Empty: decided from the data, from a tight budget to the one at which the value captured stops growing, "
             "measured on the burn-in patients (the caption under the charts says how). Type a number to choose your own. "
             "The targets are evenly spaced on a log scale, and your target c is always added.")


_LOW_WHY = {
    "data": f"the budget where the value curve brings {share_text(TIGHT_SHARE)} of the true codes' value",
    "slack": "the tightest budget the first predictions can use ({factor:g} × C_max / (N + 1), N = {burn_in:,} burn-in patients)",
    "span": "a hundredth of the highest",
    "tenth": "a tenth of the highest",
    "yours": "your lowest",
    "percent": "{low_pct:g} % of C_max",
}


_HIGH_WHY = {
    "data": f"the budget where it brings {share_text(SATURATED_SHARE)} and flattens",
    "data alone": f"the budget where the value curve brings {share_text(SATURATED_SHARE)} of the true codes' value and flattens",
    "cap": f"{share_text(HIGH_CAP)} of C_max (the value curve flattens only above it)",
    "clipped": "C_max",
    "span": "ten times the lowest",
    "yours": "your highest",
    "percent": "{high_pct:g} % of C_max",
}


def grid_caption(plan: GridPlan, cost_unit: str) -> str:
    """One paragraph under the charts: how many targets, their range in the user's unit per 100
    charts, and why (plain text: it holds no user text).

    >>> import numpy as np
    >>> plan = GridPlan(np.array([0.07, 0.5, 1.05, 3.9]), "data", 0.07, 3.9, "slack", "data", include=1.05, c_max=35.0,
    ...                 burn_in=1000, patients=1000)
    >>> print(grid_caption(plan, "false flags"))  # doctest: +NORMALIZE_WHITESPACE
    4 targets from 7 to 390 false flags per 100 charts, evenly spaced on a log scale, from the tightest budget the first
    predictions can use (2 × C_max / (N + 1), N = 1,000 burn-in patients) to the budget where the value curve brings 80 % of
    the true codes' value and flattens (the value curve: the 1,000 burn-in patients' codes flagged best value per false-flag risk first, as the price score
    does); plus your target c = 1.05 (105 per 100 charts).
    """
    targets, per = plan.targets, CHARTS
    span = (f"{len(targets)} targets from {plain_number(targets[0] * per)} to {plain_number(targets[-1] * per)} {cost_unit} "
            f"per {per} charts")
    fmt = {"factor": SLACK_FACTOR, "burn_in": plan.burn_in, "low_pct": plan.low_pct or 0.0, "high_pct": plan.high_pct or 0.0}
    if plan.how == "percent":
        text = (f"{span}: {plan.low_pct:g}–{plan.high_pct:g} % of C_max = {plain_number(plan.c_max)} per chart, evenly spaced, the grid "
                "of a settings file made before the budgets were decided from the data (empty the lowest and highest target "
                "to let the data decide)")
    elif plan.how == "fallback":
        text = (f"{span}: {plan.low_pct:g}–{plan.high_pct:g} % of C_max = {plain_number(plan.c_max)} per chart, evenly spaced, because "
                f"the budgets cannot be decided from the data: {plan.reason}")
    else:
        high = "data alone" if plan.high_from == "data" and plan.low_from != "data" else plan.high_from
        text = f"{span}, evenly spaced on a log scale, from {_LOW_WHY[plan.low_from].format(**fmt)} to {_HIGH_WHY[high].format(**fmt)}"
        if "data" in (plan.low_from, plan.high_from) or "cap" == plan.high_from:
            whose = burn_in_patients(plan.patients) + ("'s" if plan.patients == 1 else "'")
            text += (f" (the value curve: the {whose} codes flagged best value per false-flag risk first, "
                     "as the price score does)")
    if plan.integer_cost:
        text += "; whole numbers moved 0.1 up as the paper does for integer costs"
    if plan.include is not None:
        text += f"; plus your target c = {plain_number(plan.include)} ({plain_number(plan.include * per)} per {per} charts)"
    text += "."
    if plan.notes:
        text += " " + "; ".join(n[0].upper() + n[1:] for n in plan.notes) + "."
    return text


def form_values(grid: dict, plan: GridPlan) -> dict:
    """What the page's lowest/highest inputs show, per 100 charts: {"low", "high"} (None: empty,
    decided from the data; a percent grid shows its range) and {"low_hint", "high_hint"}: what
    an empty input means."""
    per = CHARTS
    if grid.get("percent"):
        low, high = plan.low * per, plan.high * per
    elif plan.ignored:
        low = high = None
    else:
        low, high = (None if grid.get(k) is None else grid[k] * per for k in ("low", "high"))
    hint = {"low": plan.low, "high": plan.high} if plan.how == "fallback" else {"low": plan.auto_low, "high": plan.auto_high}
    low, high = (None if x is None else min(round_significant(x, 6), plan.c_max * per) for x in (low, high))  # the input's maximum
    return {"low": low, "high": high,
            **{f"{k}_hint": "from the data" if hint[k] is None else f"from the data: {plain_number(round_significant(hint[k] * per, 2))}"
               for k in hint}}


def _same(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-9))


def grid_from_form(grid: dict, shown: dict, low, high, n_targets, methods, unit: str) -> dict:
    """The grid the form's inputs describe. ``shown``: :func:`form_values` as drawn; ``low``,
    ``high``: the inputs per 100 charts (None: empty, from the data). A percent grid left as shown
    stays in % of C_max; other numbers are stored in cost units per chart, with ``unit``
    (:func:`cost_key` of the current cost).

    >>> from favmac.target_grid import default_grid
    >>> g = default_grid()
    >>> shown = {"low": None, "high": None}
    >>> new = grid_from_form(g, shown, 5, None, 4, ["CRC"], "fp")
    >>> new["low"], new["high"], new["unit"], new["n_targets"], new["percent"]
    (0.05, None, 'fp', 4, False)
    """
    out = {**grid, "n_targets": n_targets, "methods": list(methods)}
    if grid.get("percent") and _same(low, shown.get("low")) and _same(high, shown.get("high")):
        return out
    to_chart = [None if x is None else round_significant(float(x) / CHARTS, 12) for x in (low, high)]
    return {**out, "low": to_chart[0], "high": to_chart[1], "unit": unit if any(x is not None for x in to_chart) else None,
            "percent": False}
