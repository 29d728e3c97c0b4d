"""What a number means to a coding auditor: the units and labels every page shares.

An auditor reads false flags per 100 charts, value captured (confirmed codes, or their risk
weights), and a threshold as "flag a code when it brings at least X of value per expected
false flag". The math names (Ĉ, V̂, T, the price score) stay one click away, in ``help=``
tooltips and expanders; this module holds the words, so every page says the same thing.

>>> s = {"cost_kind": "fp", "value_kind": "tp", "control": "expected", "target": 1.1}
>>> cost_unit(s), value_unit(s)
('false flags', 'confirmed codes')
>>> per_100_charts(0.0123)
'1.23'
>>> target_text(s)
'at most 1.1 false flags per chart on average (110 per 100 charts)'
>>> threshold_text(20.0, s, "price")
'flag a code when it brings at least 0.05 confirmed codes per expected false flag'
>>> threshold_text(1.5, s, "cost")
'flag codes while the expected false flags for the chart stay below 1.5'
"""
from __future__ import annotations

import math

from favmac.ui.formats import significant_decimals
from favmac.wording import plain_number

__all__ = ["CHARTS", "cost_unit", "value_unit", "per_100_charts", "cost_per_100_label", "value_per_100_label", "value_charts", "per_charts",
           "target_per_100", "over_target",
           "target_text", "payment_rates", "value_amount", "value_phrase", "cost_step", "in_dollars", "amount_format", "bracketed", "value_shown", "plain_number", "COUNT_COLUMNS", "counts_styled", "cost_short", "value_short", "cost_amount", "value_tile", "threshold_label", "threshold_rule", "threshold_text", "threshold_tile", "threshold_column", "amount_decimals", "universe_math", "UNIVERSE_PLAIN", "UNIVERSE_MATH"]

#: Rates are given per this many charts (patients): "2.5 false flags per 100 charts".
CHARTS = 100

#: The candidate-set orders in words (what the settings form shows) ...
UNIVERSE_PLAIN = {
    "ratio": "Best value per false-flag risk first (FavMac's default)",
    "prob": "Most likely codes first",
    "value": "Highest expected value first",
    "full": "Every combination of codes (small code lists only)",
}
#: ... and in symbols (the help tooltip): p = probability, v = value weight, w = cost weight.
UNIVERSE_MATH = {
    "ratio": "ratio: codes in decreasing p·v / ((1−p)·w)",
    "prob": "prob: codes in decreasing p (the order FPCP uses)",
    "value": "value: codes in decreasing p·v",
    "full": "full: all 2^K subsets",
}


def universe_math() -> str:
    """The universes' orders in symbols, one per line, for a help tooltip."""
    return "  \n".join(UNIVERSE_MATH.values()) + "  \n(p: the code's probability, v: its value weight, w: its cost weight)"


def cost_unit(settings: dict) -> str:
    """Unit of the chosen cost, for axis titles and captions: what one unit of cost is."""
    if settings["cost_kind"] == "cms_unsupported":
        return "dollars of unsupported payment" if settings.get("base_rate") is not None else "RAF of unsupported payment"
    return "false flags" if settings["cost_kind"] == "fp" else "risk weight of false flags"


def value_unit(settings: dict) -> str:
    """Unit of the chosen value: what one unit of value captured is (the CMS payment: dollars with
    a base rate, else RAF, the risk score).

    >>> value_unit({"value_kind": "cms_payment", "base_rate": 11000.0}), value_unit({"value_kind": "cms_payment"})
    ('dollars of payment', 'RAF (risk score)')
    """
    if settings["value_kind"] == "cms_payment":
        return "dollars of payment" if settings.get("base_rate") is not None else "RAF (risk score)"
    return {"tp": "confirmed codes", "weighted_tp": "risk-weighted value", "formula": "formula value"}[settings["value_kind"]]


def _number(x: float) -> str:
    """Three significant digits for a tile, "—" for NaN (``1,030``, not ``1.03e+03``)."""
    return "—" if math.isnan(x) else plain_number(x, digits=3)


#: The per-segment tables' patient counts (numbers, drawn with thousands separators by :func:`counts_styled`).
COUNT_COLUMNS = ("patients", "predicted", "calibration patients", "new patients")


def counts_styled(frame, columns=COUNT_COLUMNS):
    """``frame`` for ``st.table`` with the counts in ``columns`` (patients) written as
    :func:`plain_number` writes them: ``1,500``, not ``1500``. A pandas Styler: the cells stay
    numbers (what AppTest and a download read), only what is drawn changes. ``columns`` must name
    every number column the table has, or the Styler's default (six decimals) shows for the others.

    >>> import pandas as pd
    >>> print(counts_styled(pd.DataFrame({"segment": ["East"], "patients": [1500], "predicted": [812.5]}),
    ...                     ["patients", "predicted", "absent"]).to_string())
     segment patients predicted
    0 East 1,500 812.5
    <BLANKLINE>
    """
    shown = [c for c in columns if c in frame.columns]
    return frame.style.format(lambda n: "—" if n != n else plain_number(n), subset=shown)


def cost_short(settings: dict) -> str:
    """The cost's unit in a few words, for a tile label (:func:`cost_unit` in full).

    >>> cost_short({"cost_kind": "fp"}), cost_short({"cost_kind": "cms_unsupported", "base_rate": 11000.0})
    ('false flags', 'unsupported $')
    """
    if settings.get("cost_kind") == "cms_unsupported":
        return "unsupported " + ("$" if settings.get("base_rate") is not None else "RAF")
    return cost_unit(settings)


def value_short(settings: dict) -> str:
    """The value's unit in a few words, for a column header (:func:`value_unit` in full).

    >>> value_short({"value_kind": "cms_payment", "base_rate": 11000.0}), value_short({"value_kind": "cms_payment"})
    ('$', 'RAF')
    >>> value_short({"value_kind": "tp"}), value_short({"value_kind": "weighted_tp"})
    ('confirmed codes', 'risk-weighted')
    """
    if settings.get("value_kind") == "cms_payment":
        return "$" if in_dollars(settings) else "RAF"
    return {"weighted_tp": "risk-weighted", "formula": "formula"}.get(settings["value_kind"]) or value_unit(settings)


def cost_amount(x: float, settings: dict, decimals: int = 3) -> str:
    """An amount of cost for a tile: dollars of unsupported payment as whole dollars, otherwise
    ``decimals`` decimals (never in exponent form).

    >>> cost_amount(8799.94, {"cost_kind": "cms_unsupported", "base_rate": 11000.0}), cost_amount(1.2714, {"cost_kind": "fp"})
    ('$8,800', '1.271')
    """
    x = float(x)
    if math.isnan(x):
        return "—"
    if settings.get("cost_kind") == "cms_unsupported" and settings.get("base_rate") is not None:
        return f"${x:,.0f}"
    return f"{x:,.{decimals}f}"


def cost_figure(x: float, settings: dict, beside=None) -> str:
    """A cost for a summary tile: whole dollars (``$5,009``) for unsupported payment in dollars, otherwise
    four significant digits (:func:`plain_number`); with ``beside`` (the costs of the tiles shown next
    to it, ``x`` among them) the decimals they share (:func:`amount_decimals`): 0.341 beside 0.360, not
    0.3413 beside 0.36.

    >>> cost_figure(5009.2, {"cost_kind": "cms_unsupported", "base_rate": 11000.0}), cost_figure(0.48792, {"cost_kind": "fp"})
    ('$5,009', '0.4879')
    >>> cost_figure(0.3413, {"cost_kind": "fp"}, [0.3413, 0.36]), cost_figure(0.36, {"cost_kind": "fp"}, [0.3413, 0.36])
    ('0.341', '0.360')
    """
    if settings.get("cost_kind") == "cms_unsupported" and settings.get("base_rate") is not None:
        return cost_amount(x, settings)
    if math.isnan(float(x)):
        return "—"
    return plain_number(x, 4) if beside is None else f"{float(x):,.{amount_decimals(beside)}f}"


def in_dollars(settings: dict) -> bool:
    """True when values are dollars (the CMS-HCC payment with a base rate): tables use a dollar format."""
    return settings.get("value_kind") == "cms_payment" and settings.get("base_rate") is not None


def bracketed(unit: str) -> str:
    """A unit in brackets after a label, without brackets inside brackets.

    >>> bracketed("RAF (risk score)"), bracketed("false flags")
    ('(RAF, risk score)', '(false flags)')
    """
    return "(" + unit.replace(" (", ", ").replace("(", "").replace(")", "") + ")"


def amount_format(values, dollars: bool = False) -> str:
    """The printf format of a table column of amounts (``st.column_config.NumberColumn(format=...)``), with
    thousands separators: dollars as whole dollars (cents only when every amount is under $10, as
    :func:`value_amount`), other amounts with two decimals, more (at most six) when the smallest non-zero
    amount needs them for three significant digits (0.00381 RAF, not 0.00).

    >>> amount_format([2284064.0, 41.97], dollars=True), amount_format([4.5, 0.2], dollars=True)
    ('$%,.0f', '$%,.2f')
    >>> amount_format([12.5, 250.0]), amount_format([0.00381, 0.012, 0.0])
    ('%,.2f', '%,.5f')
    """
    return ("$" if dollars else "") + f"%,.{amount_decimals(values, dollars)}f"


def amount_decimals(values, dollars: bool = False) -> int:
    """The decimals of a column of amounts (the one rule :func:`amount_format` and :func:`threshold_column`
    share): dollars whole (cents only when every amount is under $10), others two decimals, more (at most
    six) for three significant digits of the smallest non-zero amount.

    >>> amount_decimals([0.1, 0.103]), amount_decimals([4.5, 0.2], dollars=True), amount_decimals([41.97, 4.5], dollars=True)
    (3, 2, 0)
    """
    if dollars:
        v = [abs(float(x)) for x in values if x is not None and math.isfinite(float(x))]
        return 2 if v and max(v) < 10 else 0
    return min(6, max(2, significant_decimals(values)))


def value_amount(x: float, settings: dict) -> str:
    """An amount of value in the user's units as a tile shows it: dollars with a base rate (whole
    dollars from $10 up), otherwise three significant digits, never in exponent form.

    >>> value_amount(1030.249, {"value_kind": "cms_payment", "base_rate": 11000.0}), value_amount(1030.249, {"value_kind": "tp"})
    ('$1,030', '1,030')
    >>> value_amount(0.0512, {"value_kind": "cms_payment", "base_rate": None}), value_amount(4.5, {"value_kind": "cms_payment", "base_rate": 1.0})
    ('0.0512', '$4.50')
    """
    x = float(x)
    if in_dollars(settings) and not math.isnan(x):
        return f"${x:,.0f}" if abs(x) >= 10 else f"${x:,.2f}"
    return _number(x)


def value_shown(x: float, settings: dict) -> str:
    """An amount of value for a tile, its unit on it where the label cannot say it: :func:`value_amount`,
    with "RAF" after a payment in RAF (as the payment tile's "0.253 RAF"; dollars carry their "$").

    >>> value_shown(0.7251, {"value_kind": "cms_payment", "base_rate": None}), value_shown(0.7251, {"value_kind": "tp"})
    ('0.725 RAF', '0.725')
    """
    shown = value_amount(x, settings)
    raf = settings.get("value_kind") == "cms_payment" and not in_dollars(settings)
    return shown + " RAF" if raf and shown != "—" else shown


def value_phrase(x: float, settings: dict) -> str:
    """An amount of value with its unit, for a sentence.

    >>> value_phrase(1030.2, {"value_kind": "cms_payment", "base_rate": 11000.0}), value_phrase(0.05, {"value_kind": "tp"})
    ('$1,030 of payment', '0.05 confirmed codes')
    """
    if in_dollars(settings):
        return f"{value_amount(x, settings)} of payment"
    return f"{value_amount(x, settings)} {value_unit(settings)}"


def cost_step(settings: dict) -> str:
    """One unit of expected cost, for "value per ..." phrases.

    >>> cost_step({"cost_kind": "fp"}), cost_step({"cost_kind": "cms_unsupported", "base_rate": 11000.0})
    ('expected false flag', 'expected dollar of unsupported payment')
    """
    if settings.get("cost_kind") == "cms_unsupported":
        return "expected " + ("dollar" if settings.get("base_rate") is not None else "RAF") + " of unsupported payment"
    return "expected false flag" if settings.get("cost_kind") == "fp" else "unit of expected false-flag risk weight"


def payment_rates(per_patient: float, settings: dict) -> str:
    """A mean payment per patient, in dollars per patient and per 1,000 members (RAF without a base rate).

    >>> payment_rates(123.456, {"value_kind": "cms_payment", "base_rate": 11000.0})
    '$123 per patient = $123,456 per 1,000 members'
    >>> payment_rates(0.0123, {"value_kind": "cms_payment", "base_rate": None})
    '0.0123 RAF per patient = 12.3 RAF per 1,000 members'
    """
    x = float(per_patient)
    if math.isnan(x):
        return "—"
    if settings.get("base_rate") is not None:
        return f"${x:,.0f} per patient = ${1000 * x:,.0f} per 1,000 members"
    return f"{x:.3g} RAF per patient = {1000 * x:.3g} RAF per 1,000 members"


def per_100_charts(per_chart: float) -> str:
    """A per-chart mean as a figure per 100 charts: three significant digits, whole numbers from
    100 on (``—`` for NaN).

    >>> per_100_charts(0.36), per_100_charts(12.345), per_100_charts(float("nan"))
    ('36', '1,234', '—')
    """
    x = CHARTS * float(per_chart)
    if math.isnan(x):
        return "—"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def value_charts(settings: dict) -> int:
    """How many charts a mean value per chart is shown for, the tiles' rule (:func:`value_tile`): :data:`CHARTS`
    (value captured per 100 charts), or 1 for the CMS payment, which tiles show per patient (dollars or RAF).
    Charts multiply a mean value per chart by it; a mean cost is always shown per :data:`CHARTS` charts.

    >>> value_charts({"value_kind": "tp"}), value_charts({"value_kind": "cms_payment", "base_rate": None})
    (100, 1)
    """
    return 1 if settings.get("value_kind") == "cms_payment" else CHARTS


def per_charts(charts: int = CHARTS) -> str:
    """The words of a rate over ``charts`` charts (:func:`value_charts`), for an axis title or a hover.

    >>> per_charts(), per_charts(1)
    ('per 100 charts', 'per patient')
    """
    return "per patient" if charts == 1 else f"per {charts:,} charts"


def target_per_100(target: float) -> str:
    """The target c (a mean per chart) as charts draw it, per 100 charts, with c itself for the math.

    >>> target_per_100(0.36)
    '36 per 100 charts (c = 0.36)'
    """
    return f"{per_100_charts(target)} per {CHARTS} charts (c = {float(target):g})"


def cost_per_100_label(settings: dict) -> str:
    """Column or tile label for the mean cost per 100 charts.

    >>> cost_per_100_label({"cost_kind": "cms_unsupported", "base_rate": None}), cost_per_100_label({"cost_kind": "fp"})
    ('Unsupported RAF per 100 charts', 'False flags per 100 charts')
    """
    if settings["cost_kind"] == "cms_unsupported":  # short enough for a tile; "RAF" keeps its capitals
        short = cost_short(settings)
        return f"{short[0].upper()}{short[1:]} per 100 charts"
    return ("False flags per 100 charts" if settings["cost_kind"] == "fp"
            else "Risk weight of false flags per 100 charts")


def value_per_100_label(settings: dict) -> str:
    """Column or tile label for the mean value captured per 100 charts."""
    if settings["value_kind"] == "cms_payment":
        return "Payment captured per 100 charts (" + ("$)" if settings.get("base_rate") is not None else "RAF)")
    return {"tp": "Confirmed codes per 100 charts", "weighted_tp": "Risk-weighted value captured per 100 charts",
            "formula": "Formula value per 100 charts"}[settings["value_kind"]]


def value_tile(mean_value: float, settings: dict) -> tuple[str, str, str]:
    """(label, value, help) of the tile of the running mean value per chart: per 100 charts, or for
    the CMS payment per patient (dollars with a base rate, else RAF) with the 1,000-member figure.

    >>> value_tile(41.97, {"value_kind": "cms_payment", "base_rate": 11000.0})[:2]
    ('Payment captured per patient', '$42')
    >>> value_tile(0.5, {"value_kind": "tp"})[:2]
    ('Value captured per 100 charts', '50')
    """
    if value_charts(settings) == 1:  # the CMS payment
        x = float(mean_value)
        shown = "—" if math.isnan(x) else (f"${x:,.0f}" if settings.get("base_rate") is not None else f"{x:.3g} RAF")
        return ("Payment captured per patient", shown,
                f"The running mean payment of the confirmed flags per patient, in {value_unit(settings)}: {payment_rates(x, settings)}.")
    return ("Value captured per 100 charts", per_100_charts(mean_value),
            f"{value_per_100_label(settings)}: the running mean value per chart × 100, in {value_unit(settings)}.")


def over_target(target: float, unit: str) -> str:
    """What makes a chart a violation, in the cost's unit (violation control's promise, its charts' titles).

    >>> over_target(1.1, "false flags")
    'more than 1.1 false flags'
    """
    return f"more than {float(target):g} {unit}"


def target_text(settings: dict) -> str:
    """The promise in the user's units (expected cost: mean per chart; violation: share of charts)."""
    target, unit = float(settings["target"]), cost_unit(settings)
    if settings["control"] == "violation":
        return f"at most {100 * float(settings['delta']):g} % of charts with {over_target(target, unit)}"
    if settings.get("adaptive_rate"):  # docs/method.md "Adaptive target under drift": a bound for any order, not E[C] <= c
        return (f"a long-run mean steered to {target:g} {unit} per chart ({per_100_charts(target)} per 100 charts) by the "
                f"adaptive target; in any order, the mean over S predicted charts stays within c + (c + γ C_max) / (γ S)")
    return f"at most {target:g} {unit} per chart on average ({per_100_charts(target)} per 100 charts)"


def threshold_text(threshold: float, settings: dict, score: str) -> str:
    """The threshold T as the rule it applies, in the user's units.

    Price score (Ĉ step / V̂ step < T): a code is flagged when its expected value per expected
    false flag is above 1/T. Cost score (Ĉ < T): codes are flagged, best first, while the chart's
    expected false flags stay below T.
    """
    t = float(threshold)
    unit, per = cost_unit(settings), cost_step(settings)
    if math.isnan(t):
        return "no threshold yet"
    if t == -math.inf:
        return "flag nothing (too few calibration patients for this target)"
    if score == "price":
        if t == math.inf:
            return "flag every code that brings any value"
        if t <= 0:
            return "flag only codes that cannot be false flags"
        return f"flag a code when it brings at least {value_phrase(1 / t, settings)} per {per}"
    if t == math.inf:
        return "flag every code (no limit on expected false flags)"
    return f"flag codes while the expected {unit} for the chart stay below {plain_number(t, 3)}"


def threshold_label(settings: dict, score: str) -> str:
    """The name of a threshold in the user's units (a tile's or a column's label).

    >>> threshold_label({"cost_kind": "cms_unsupported", "base_rate": None}, "cost"), threshold_label({"cost_kind": "fp"}, "cost")
    ('Expected unsupported RAF allowed', 'Expected false flags allowed')
    """
    if score == "price":
        if settings.get("cost_kind") == "cms_unsupported":
            return "Value per unsupported " + ("$" if settings.get("base_rate") is not None else "RAF")
        return "Value per false flag"
    if settings.get("cost_kind") == "cms_unsupported":  # the unsupported payment, not a weight of false flags
        return f"Expected {cost_short(settings)} allowed"
    return "Expected false flags allowed" if settings["cost_kind"] == "fp" else "Expected false-flag weight allowed"


def threshold_rule(settings: dict, score: str) -> str:
    """What the number :func:`threshold_tile` shows means, for any threshold (a column's help).

    >>> threshold_rule({"cost_kind": "fp", "value_kind": "tp"}, "price")
    'A code is flagged when it brings at least this value, counted in confirmed codes per expected false flag (1/T).'
    """
    if score == "price":  # "at least this many risk-weighted value" read wrong
        return f"A code is flagged when it brings at least this value, counted in {value_unit(settings)} per {cost_step(settings)} (1/T)."
    return f"Codes are flagged, best first, while the chart's expected {cost_unit(settings)} stay below this (T)."


def threshold_tile(threshold: float, settings: dict, score: str) -> tuple[str, str, str]:
    """(label, value, help) of a metric tile showing a threshold in the user's units; the help
    keeps the math (T and what it is compared with)."""
    t = float(threshold)
    math_note = (f"T = {t:.4g} on the price score (running max of Ĉ step / V̂ step; a code is flagged while it stays below T)"
                 if score == "price" else f"T = {t:.4g} on the cost proxy Ĉ (codes are flagged while Ĉ stays below T)")
    rule = threshold_text(t, settings, score)
    if t == -math.inf:
        return threshold_label(settings, score), "nothing flagged", f"{rule[0].upper()}{rule[1:]}. {math_note}."
    label = threshold_label(settings, score)
    if score == "price":
        shown = "—" if math.isnan(t) else ("none" if t == math.inf else ("no risk" if t <= 0 else value_amount(1 / t, settings)))
        if shown[0].isdigit():
            shown = value_shown(1 / t, settings)
    else:
        dollars = settings.get("cost_kind") == "cms_unsupported" and settings.get("base_rate") is not None
        shown = "—" if math.isnan(t) else ("any" if t == math.inf else "< " + (cost_amount(t, settings) if dollars else plain_number(t, 3)))
    return label, shown, f"{rule[0].upper()}{rule[1:]}. {math_note}."


def threshold_column(thresholds, settings: dict, score: str) -> list[str]:
    """Thresholds as a table column shows them: :func:`threshold_tile`'s words for the edge cases, and
    every number with the column's one number of decimals (:func:`amount_decimals`), so a column
    reads "0.100 RAF" above "0.103 RAF", never "0.1 RAF".

    >>> threshold_column([10.0, 1 / 0.103, float("-inf")], {"value_kind": "cms_payment", "cost_kind": "fp"}, "price")
    ['0.100 RAF', '0.103 RAF', 'nothing flagged']
    >>> threshold_column([1.5, 1.27], {"value_kind": "tp", "cost_kind": "fp"}, "cost")
    ['< 1.50', '< 1.27']
    """
    ts = [float(t) for t in thresholds]
    if score == "price":
        amounts = {i: 1 / t for i, t in enumerate(ts) if math.isfinite(t) and t > 0}
        dollars, unit = in_dollars(settings), (" RAF" if settings.get("value_kind") == "cms_payment" and not in_dollars(settings) else "")
    else:
        amounts = {i: t for i, t in enumerate(ts) if math.isfinite(t)}
        dollars, unit = settings.get("cost_kind") == "cms_unsupported" and settings.get("base_rate") is not None, ""
    decimals = amount_decimals(amounts.values(), dollars)
    cells = []
    for i, t in enumerate(ts):
        if i not in amounts:
            cells.append(threshold_tile(t, settings, score)[1])
            continue
        number = ("$" if dollars else "") + f"{amounts[i]:,.{decimals}f}" + unit
        cells.append(number if score == "price" else f"< {number}")
    return cells
