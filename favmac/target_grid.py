"""The grid of targets a trade-off comparison covers: which budgets (a library service; no Streamlit).

One rule, :func:`grid_plan`, turns the grid settings into targets; the Trade-offs page, its
caption (:mod:`favmac.ui.tradeoff_grid`), the settings file and the scripts all go through it.
By default the budgets are decided from the data: evenly spaced on a log scale from a tight
budget to the one at which the value curve saturates, both measured on the burn-in patients
(:func:`informative_range`), plus the configured target. C_max, the cost of flagging every code when every flag is false, is a
worst case no auditor budgets for: on the bundled HCC sample 5-50 % of it is 1.75-17.5 false
flags per chart, where almost everything is flagged and the methods barely differ.

The grid settings (``settings["grid"]``, saved in the settings file's ``grid``):

=========  ==================================================================================
low, high  the lowest and highest target in cost units per chart, each None = from the data
unit       the cost the numbers were entered in (:func:`cost_key`); another cost ignores them
n_targets  how many targets (2-50), before the configured target is added
methods    the methods compared (labels of ``favmac.methods``)
low_pct,   percent of C_max: the grid of settings files written before the automatic grid
high_pct   (``percent``: True, evenly spaced as before), and the fallback when the data cannot
percent    decide (no burn-in, no true value in it, ...)
=========  ==================================================================================
"""
from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .protocols import bind_rows, is_additive
from .methods import method_labels
from .runspec import COST_KINDS, SettingsError, as_integer, as_number, target_from_percent
from .wording import plain_number

__all__ = ["DEFAULT_METHODS", "TIGHT_SHARE", "SATURATED_SHARE", "HIGH_CAP", "MAX_SPAN", "SLACK_FACTOR", "MAX_GRID_PATIENTS",
           "GridPlan", "default_grid", "validate_grid", "restore_grid", "tradeoff_targets", "cost_key", "budget_curve",
           "informative_range", "data_range", "log_targets", "grid_plan", "share_text", "burn_in_patients",
           "round_significant"]


#: Both scores of FavMac side by side: "FavMac (price)" (price score, ratio universe) and the
#: cost-score universes, then the baselines.
DEFAULT_METHODS = ("FavMac (price)", "FavMac (ratio)", "FavMac (value)", "FavMac (prob)", "ClassWise", "InnerSet", "CRC",
                   "RCPS")


#: The tight end: the budget at which the value curve reaches this share of the true codes' value.
TIGHT_SHARE = 0.10


#: The loose end: the budget at which it reaches this share (beyond it, budget buys little value).
SATURATED_SHARE = 0.80


#: The automatic grid stops at this share of C_max (a target near C_max allows nearly every set).
HIGH_CAP = 0.5


#: The automatic grid spans at most this ratio, highest / lowest (two decades).
MAX_SPAN = 100.0


#: Under expected-cost control a target below C_max / (N + 1) flags nothing for the first
#: predictions (docs/method.md "Thresholds": M = c (N + 1) - C_max < 0); the tight end stays at least this
#: many times above it.
SLACK_FACTOR = 2.0


#: The value curve reads at most this many burn-in patients (the first ones).
MAX_GRID_PATIENTS = 20_000


_FIELDS = ("low", "high", "unit", "n_targets", "methods", "low_pct", "high_pct", "percent")


def share_text(x: float) -> str:
    """A share as a percent for a caption: ``share_text(0.1)`` is "10 %"."""
    return f"{100 * x:g} %"


def default_grid() -> dict:
    """The trade-off grid a new session starts with: 10 targets decided from the data (low and
    high None), with 5-50 % of C_max as the fallback; the default methods."""
    return {"low": None, "high": None, "unit": None, "n_targets": 10, "methods": list(DEFAULT_METHODS),
            "low_pct": 5.0, "high_pct": 50.0, "percent": False}


def _bound(x, field: str) -> float | None:
    if x is None:
        return None
    out = as_number(x, field)
    if not out > 0:
        raise SettingsError(field, f"(a trade-off target, cost per chart) must be above 0, or empty to decide it from the data; got {out:g}")
    return out


def validate_grid(grid: dict) -> dict:
    """The grid with defaults filled in, checked; SettingsError names the field and the range.

    >>> validate_grid({"low": 0.05, "high": 2, "unit": "fp"})["high"]
    2.0
    >>> validate_grid({"low": 2, "high": 1})
    Traceback (most recent call last):
    ...
    favmac.runspec.SettingsError: grid.low (the lowest trade-off target, 2 per chart) must be below the highest (1); leave either empty to decide it from the data
    """
    if not isinstance(grid, dict):
        raise SettingsError("grid", f"must be an object with {', '.join(_FIELDS)}; got {type(grid).__name__}")
    g = default_grid()
    g.update({k: v for k, v in grid.items() if k in g})
    low, high = _bound(g["low"], "grid.low"), _bound(g["high"], "grid.high")
    if low is not None and high is not None and not low < high:
        raise SettingsError("grid.low", f"(the lowest trade-off target, {low:g} per chart) must be below the highest ({high:g}); "
                                        "leave either empty to decide it from the data")
    unit, units = g["unit"], [cost_key(k) for k in COST_KINDS] + [cost_key("cms_unsupported", 1.0)]
    if unit is not None and unit not in units:
        raise SettingsError("grid.unit", f"(the cost the lowest and highest target are in) must be one of {', '.join(units)} or null; "
                                         f"got {str(unit)[:40]!r}")
    if low is None and high is None:
        unit = None
    low_pct, high_pct = as_number(g["low_pct"], "grid.low_pct"), as_number(g["high_pct"], "grid.high_pct")
    if not 0 < low_pct < high_pct <= 100:
        raise SettingsError("grid", f"targets must satisfy 0 < lowest < highest <= 100 % of C_max; got {low_pct:g} and {high_pct:g}")
    if not isinstance(g["percent"], bool):
        raise SettingsError("grid.percent", f"must be true (targets in % of C_max) or false; got {g['percent']!r}")
    n = as_integer(g["n_targets"], "grid.n_targets")
    if not 2 <= n <= 50:
        raise SettingsError("grid.n_targets", f"(number of trade-off targets) must be between 2 and 50; got {n}")
    if not isinstance(g["methods"], (list, tuple)):
        raise SettingsError("grid.methods", "must be a list of method names")
    known = method_labels(n_codes=1)  # every label; whether one suits the data is decided when it runs
    unknown = [m for m in g["methods"] if m not in known]
    if unknown:
        raise SettingsError("grid.methods", f"has unknown method(s) {', '.join(map(str, unknown[:5]))}; choose from {', '.join(known)}")
    return {"low": low, "high": high, "unit": unit, "n_targets": n, "methods": list(g["methods"]),
            "low_pct": low_pct, "high_pct": high_pct, "percent": g["percent"]}


def restore_grid(current: dict, stored: dict) -> dict:
    """A settings file's ``grid`` over the session's: a grid written before the automatic one
    (``low_pct``/``high_pct`` only) keeps its targets in % of C_max (``percent``: True).

    >>> restore_grid(default_grid(), {"low_pct": 10, "high_pct": 30})["percent"]
    True
    >>> restore_grid(default_grid(), {"low": None, "high": 2.0, "unit": "fp"})["percent"]
    False
    """
    if not isinstance(stored, dict):
        raise SettingsError("grid", f"must be an object with {', '.join(_FIELDS)}; got {type(stored).__name__}")
    legacy = ({"low_pct", "high_pct"} & set(stored)) and not ({"low", "high", "percent"} & set(stored))
    return {**dict(current or {}), **stored, **({"percent": True, "low": None, "high": None} if legacy else {})}


def tradeoff_targets(cmax: float, low_pct: float, high_pct: float, n_targets: int, integer_cost: bool,
                     include: float | None = None) -> np.ndarray:
    """``n_targets`` targets from ``low_pct`` to ``high_pct`` % of C_max, evenly spaced, in cost
    units, plus ``include`` (the configured target, so the comparison shows the run the other
    pages show): the grid in % of C_max (settings files from before the automatic grid, and its fallback).

    Each grid target is :func:`favmac.runspec.target_from_percent` to 6 decimals: for integer
    costs one that lands on an integer below C_max is moved up by 0.1, as the paper does, to stay
    clear of exact ties (``include`` is kept as it is).

    >>> tradeoff_targets(10, 10, 50, 5, False, include=2.5).tolist()
    [1.0, 2.0, 2.5, 3.0, 4.0, 5.0]
    """
    percents = np.linspace(low_pct, high_pct, int(n_targets)).tolist()
    targets = [target_from_percent(p, cmax, decimals=6, integer_cost=integer_cost) for p in percents]
    if include is not None:
        targets.append(float(include))
    return np.unique(targets)


def cost_key(cost_kind: str, base_rate=None) -> str:
    """The cost a grid's numbers are in: the cost kind, and whether the unsupported payment is in dollars.

    >>> cost_key("fp"), cost_key("cms_unsupported", 11000.0), cost_key("cms_unsupported")
    ('fp', 'cms_unsupported $', 'cms_unsupported')
    """
    return f"{cost_kind} $" if cost_kind == "cms_unsupported" and base_rate is not None else str(cost_kind)


def _alone(function, n: int, k: int, hit: bool) -> np.ndarray:
    """(n, k): each code's value (``hit``: the code true) or cost (the code false) alone, per patient."""
    if is_additive(function):
        return np.broadcast_to(np.asarray(function.weights_for(k), dtype=float), (n, k))
    out = np.empty((n, k))
    selected = np.zeros((n, k), dtype=bool)
    none = np.zeros((n, k), dtype=bool)
    for code in range(k):
        selected[:, code] = True
        out[:, code] = np.asarray(function(selected, selected if hit else none), dtype=float).reshape(n)
        selected[:, code] = False
    return out


def budget_curve(probs, labels, value, cost) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fractional-knapsack curve of the labelled ``probs``/``labels`` (n, K), pooled over patients:
    every (patient, code) flag in decreasing p·v / ((1 − p)·w) (v, w: the code's value when true and
    cost when false, alone on the patient's record; a zero denominator with a positive numerator first,
    0/0 last, ties by position), which is what the price score's one threshold does.

    Returns (gain, spend, patient), in that order: each flag's realized value y·v and cost (1 − y)·w
    and its patient's row. ``value`` and ``cost`` are bound to these rows already.
    Time O(nK log(nK)) plus K batch evaluations of a non-additive value or cost.

    >>> from favmac.functions import AdditiveCost, AdditiveValue
    >>> gain, spend, who = budget_curve([[0.9, 0.2]], [[1, 0]], AdditiveValue([1.0, 5.0]), AdditiveCost())
    >>> gain.tolist(), spend.tolist(), who.tolist()
    ([1.0, 0.0], [0.0, 1.0], [0, 0])
    """
    p = np.asarray(probs, dtype=float)
    y = np.asarray(labels).astype(bool)
    n, k = p.shape
    v = np.clip(np.nan_to_num(_alone(value, n, k, True), nan=0.0, posinf=0.0), 0.0, None)
    w = np.clip(np.nan_to_num(_alone(cost, n, k, False), nan=0.0, posinf=0.0), 0.0, None)
    num, den = p * v, (1.0 - p) * w
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.where(den > 0, num / den, np.where(num > 0, np.inf, -np.inf))
    order = np.argsort(-key.ravel(), kind="stable")
    gain = np.where(y, v, 0.0).ravel()[order]
    spend = np.where(y, 0.0, w).ravel()[order]
    return gain, spend, order // k


def _budget_at(share: float, gain, spend, patient, n: int, delta: float | None) -> float:
    """The budget at which the curve first captures ``share`` of its value: the mean cost per
    patient (expected control) or the (1 − δ) quantile of the patients' costs (violation control)."""
    captured = np.cumsum(gain)
    stop = int(np.searchsorted(captured, share * captured[-1] * (1 - 1e-12))) + 1
    if delta is None:
        return float(math.fsum(spend[:stop]) / n)
    per_patient = np.bincount(patient[:stop], weights=spend[:stop], minlength=n)
    return float(np.sort(per_patient)[max(0, math.ceil((1 - delta) * n) - 1)])


def informative_range(probs, labels, value, cost, c_max: float, burn_in: int, delta: float | None = None) -> dict:
    """The budgets where the choice of method matters, measured on the burn-in patients.

    ``probs``, ``labels``: the burn-in patients (at most :data:`MAX_GRID_PATIENTS` are read);
    ``value``, ``cost``: bound to those rows; ``delta``: violation control's level (None: expected
    cost). High: the budget at which :func:`budget_curve` captures :data:`SATURATED_SHARE` of the
    true codes' value, at most :data:`HIGH_CAP` × C_max. Low: the one at which it captures
    :data:`TIGHT_SHARE`, at least high / :data:`MAX_SPAN` and, under expected-cost control,
    :data:`SLACK_FACTOR` × C_max / (burn_in + 1).

    Returns {"low", "high", "low_from", "high_from", "saturation", "patients", "reason"}: ``low_from``
    "data", "slack" or "span"; ``high_from`` "data" or "cap"; ``reason`` None, or why the data
    cannot decide (then ``low`` and ``high`` are None).
    """
    out = {"low": None, "high": None, "low_from": None, "high_from": None, "saturation": None, "patients": 0, "reason": None}
    p = np.asarray(probs, dtype=float)[:MAX_GRID_PATIENTS]
    y = None if labels is None else np.asarray(labels)[:MAX_GRID_PATIENTS]
    n = len(p)
    out["patients"] = n
    if not (math.isfinite(c_max) and c_max > 0):
        return {**out, "reason": f"C_max is {c_max:g}"}
    if n == 0 or y is None:
        return {**out, "reason": "there are no burn-in patients with labels to measure the budgets on"}
    gain, spend, patient = budget_curve(p, y, bind_rows(value, slice(0, n)), bind_rows(cost, slice(0, n)))
    if not gain.sum() > 0:
        return {**out, "reason": f"the {burn_in_patients(n)} {'has' if n == 1 else 'have'} no true code of any value"}
    saturation = _budget_at(SATURATED_SHARE, gain, spend, patient, n, delta)
    out["saturation"] = saturation
    if not saturation > 0:
        return {**out, "reason": f"the burn-in patients' most likely codes bring {share_text(SATURATED_SHARE)} of their value without a false flag"}
    high, high_from = (saturation, "data") if saturation <= HIGH_CAP * c_max else (HIGH_CAP * c_max, "cap")
    candidates = [(_budget_at(TIGHT_SHARE, gain, spend, patient, n, delta), "data"), (high / MAX_SPAN, "span")]
    if delta is None:
        candidates.append((SLACK_FACTOR * c_max / (int(burn_in) + 1), "slack"))
    low, low_from = max(candidates, key=lambda c: c[0])
    if not low < high:
        return {**out, "reason": (f"with {burn_in_patients(int(burn_in))} a target below {plain_number(low)} per chart flags nothing at first, "
                                  f"and the value curve flattens at {plain_number(saturation)} per chart")}
    return {**out, "low": low, "high": high, "low_from": low_from, "high_from": high_from}


def burn_in_patients(n: int) -> str:
    """"1 burn-in patient", "1,000 burn-in patients"."""
    return f"{n:,} burn-in patient" + ("" if n == 1 else "s")


def round_significant(x: float, digits: int) -> float:
    """``x`` rounded to ``digits`` significant digits."""
    return float(f"{x:.{digits}g}")


def log_targets(low: float, high: float, n_targets: int, integer_cost: bool, c_max: float, per_chart: bool = False) -> list[float]:
    """``n_targets`` targets from ``low`` to ``high`` evenly spaced on a log scale, each rounded to
    the fewest significant digits (2 to 6) that keep them apart. Integer costs: a whole-number
    target below C_max moves up 0.1 (the paper's c = k + 0.1); with ``per_chart`` (violation
    control, where a chart's integer cost is below c exactly when it is at most floor(c)) the
    targets are k + 0.1: every k from floor(low) to floor(high) when they are at most
    ``n_targets``, else the floors of the log-spaced ones (fewer targets).

    >>> log_targets(0.1, 10, 3, False, 35)
    [0.1, 1.0, 10.0]
    >>> log_targets(0.1, 10, 3, True, 35)
    [0.1, 1.1, 10.1]
    >>> log_targets(0.2, 3, 4, True, 35, per_chart=True)
    [0.1, 1.1, 2.1, 3.1]
    """
    raw = np.geomspace(low, high, int(n_targets))
    for digits in range(2, 7):
        targets = [round_significant(t, digits) for t in raw]
        if len(set(targets)) == len(targets):
            break
    if integer_cost and per_chart:
        whole = range(math.floor(low), math.floor(high) + 1)
        targets = [float(k) for k in whole] if len(whole) <= n_targets else [float(math.floor(t)) for t in targets]
    if integer_cost:
        targets = [round(t + 0.1, 12) if float(t).is_integer() and t < c_max else t for t in targets]
    return sorted(set(targets))


@dataclass(frozen=True)
class GridPlan:
    """The targets of one Trade-offs run and how they were chosen (for the caption).

    ``how``: "data" (decided from the data, or partly yours), "percent" (a settings file's % of
    C_max), "fallback" (% of C_max: the data could not decide, ``reason`` says why). ``low``,
    ``high``: the range before rounding; ``low_from``/``high_from``: "yours", "data", "slack",
    "span", "cap" or "clipped" (yours, above C_max); ``notes``: sentences for the caption.
    """

    targets: np.ndarray
    how: str
    low: float
    high: float
    low_from: str | None = None
    high_from: str | None = None
    include: float | None = None
    integer_cost: bool = False
    c_max: float = float("nan")
    burn_in: int = 0
    patients: int = 0
    low_pct: float | None = None
    high_pct: float | None = None
    reason: str | None = None
    notes: tuple = ()
    ignored: bool = False
    auto_low: float | None = None
    auto_high: float | None = None


_RANGES: OrderedDict = OrderedDict()  # data_range's answers, the most recent last


_RANGES_LOCK = threading.Lock()


#: How many :func:`data_range` answers are kept (a few bytes each; sessions share them).
MAX_CACHED_RANGES = 64


def data_range(spec, dataset, c_max: float) -> dict:
    """:func:`informative_range` of ``dataset``'s burn-in patients under ``spec`` (its value, cost,
    control and burn-in), remembered by the content of those rows and the spec, so a page rerun
    (every widget change) does not measure it again."""
    rows = slice(0, min(int(spec.burn_in), MAX_GRID_PATIENTS))
    probs = dataset.probs.iloc[rows].to_numpy(dtype=float)
    labels = None if dataset.labels is None else dataset.labels.iloc[rows].to_numpy(dtype=np.int8)
    members = getattr(dataset, "members", None)
    if members:
        members = {k: (None if v is None else np.asarray(v)[rows]) for k, v in members.items()}
    digest = hashlib.blake2b(probs.tobytes(), digest_size=16)
    digest.update(b"-" if labels is None else labels.tobytes())
    for name, part in sorted((members or {}).items()):
        digest.update(name.encode() + b"=" + (b"-" if part is None else "\x00".join(map(str, part.ravel())).encode()))
    key = (spec.replace(targets=(1.0,)), float(c_max), probs.shape, digest.hexdigest())
    with _RANGES_LOCK:
        if key in _RANGES:
            _RANGES.move_to_end(key)
            return dict(_RANGES[key])
    value, cost = spec.build(list(dataset.codes), members)
    out = informative_range(probs, labels, value, cost, c_max, spec.burn_in, spec.control_delta)
    with _RANGES_LOCK:
        _RANGES[key] = dict(out)
        while len(_RANGES) > MAX_CACHED_RANGES:
            _RANGES.popitem(last=False)
    return out


def grid_plan(grid: dict, spec, dataset, c_max: float, integer_cost: bool, include: float | None = None) -> GridPlan:
    """The Trade-offs targets for ``grid`` (validated settings), ``spec`` (the session's run) and
    ``dataset``: the one rule the page, its caption and its form use.

    Percent grid (``grid["percent"]``): :func:`tradeoff_targets`. Otherwise each of low and high
    is the grid's own (in cost units per chart, when given in the current cost, below C_max) or
    :func:`informative_range`'s, spaced by :func:`log_targets`; when the data cannot decide, the
    grid's % of C_max. ``include`` (the configured target) is added.
    """
    n_targets = int(grid["n_targets"])
    percent = (grid["low_pct"] * c_max / 100, grid["high_pct"] * c_max / 100)
    common = {"include": include, "integer_cost": bool(integer_cost), "c_max": float(c_max), "burn_in": int(spec.burn_in),
              "low_pct": grid["low_pct"], "high_pct": grid["high_pct"]}
    if grid.get("percent"):
        targets = tradeoff_targets(c_max, grid["low_pct"], grid["high_pct"], n_targets, integer_cost, include=include)
        return GridPlan(targets, "percent", *percent, **common)
    notes = []
    low, high = grid.get("low"), grid.get("high")
    ignored = (low is not None or high is not None) and grid.get("unit") not in (None, cost_key(spec.cost_kind, spec.base_rate))
    if ignored:
        notes.append(f"your lowest and highest targets were set for another cost ({grid.get('unit')}), so the budgets are decided "
                     "from the data")
        low = high = None
    if low is not None and low >= c_max:
        notes.append(f"your lowest target ({plain_number(low)}) is not below C_max = {plain_number(c_max)}, the cost of flagging "
                     "every code when all are false, so the lowest is decided from the data")
        low = None
    auto = {"low": None, "high": None, "low_from": None, "high_from": None, "patients": 0, "reason": None}
    if low is None or high is None:
        auto = data_range(spec, dataset, c_max)
    plan = {"patients": auto["patients"], "reason": auto["reason"], "notes": tuple(notes), "ignored": bool(ignored),
            "auto_low": auto["low"], "auto_high": auto["high"], **common}
    if auto["reason"] is not None and low is None and high is None:
        targets = tradeoff_targets(c_max, grid["low_pct"], grid["high_pct"], n_targets, integer_cost, include=include)
        return GridPlan(targets, "fallback", *percent, **plan)
    lo, lo_from = (low, "yours") if low is not None else (auto["low"], auto["low_from"])
    hi, hi_from = (high, "yours") if high is not None else (auto["high"], auto["high_from"])
    if hi is not None and hi > c_max:
        notes.append(f"your highest target ({plain_number(hi)}) is above C_max = {plain_number(c_max)}, the cost of flagging "
                     "every code when all are false, so the grid stops at C_max")
        hi, hi_from = float(c_max), "clipped"
    if lo is None:  # the highest is yours and the data cannot decide the lowest
        lo, lo_from = min(percent[0], hi / 10), "percent" if percent[0] <= hi / 10 else "tenth"
    if hi is None:  # the lowest is yours and the data cannot decide the highest
        hi, hi_from = min(c_max, max(percent[1], lo * 10)), "percent" if percent[1] >= lo * 10 else "span"
    if not lo < hi:  # one bound is yours and the other the data's, on the wrong side of it
        if lo_from == "yours":
            hi, hi_from = min(c_max, lo * 10), "span"
        else:
            lo, lo_from = hi / 10, "tenth"
    targets = log_targets(lo, hi, n_targets, integer_cost, c_max, per_chart=spec.control == "violation")
    if include is not None:
        targets.append(float(include))
    return GridPlan(np.unique(targets), "data", float(lo), float(hi), lo_from, hi_from, **{**plan, "notes": tuple(notes)})
