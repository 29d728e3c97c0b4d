"""Held-out evidence for recalibrating (docs/method.md#recalibration-on-a-split): a recommendation to
recalibrate rests on evidence held out from the fitting.

Within the fold, maps fitted on one half must gain on the other half, measured as the value FavMac
captures at the user's target (:func:`recalibration_evidence`), summarized as one verdict per map
(:func:`evidence_summary`). The maps worth measuring for the data (:func:`candidate_methods`: the run's map, and the
family map where the codes have CMS-HCC hierarchy families) are compared on the same held-out halves, and another
map is suggested only when it beat the run's map on every half (:func:`better_method`). The Data page shows it
(``favmac.ui.recalibration_view``).

Its own module because it runs FavMac (:mod:`favmac.controller`), which itself applies the maps of
:mod:`favmac.recalibration`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .controller import FavMac
from .protocols import bind_rows
from .recalibration import DEFAULT_RECALIBRATION, MIN_FOLD, check_recalibration, fit_recalibration
from .universe import DEFAULT_UNIVERSE
from .validation import check_labels, check_probs

__all__ = ["HALVES", "candidate_methods", "evidence_summary", "better_method", "recalibration_evidence"]

#: The two parts of the fold (stream order) that :func:`recalibration_evidence` fits on and measures on.
HALVES = ("first half", "second half")


def recalibration_evidence(probs, labels, value, cost, target, *, fold: int, methods=(DEFAULT_RECALIBRATION,),
                           delta=None, universe: str = DEFAULT_UNIVERSE, score: str | None = None, codes=None) -> pd.DataFrame:
    """Held-out evidence for recalibrating, as value at the user's target (docs/method.md "Recalibration on a split": a
    recommendation rests on evidence held out from the fitting).

    The fold (the first ``fold`` patients, where a run would fit its maps) is cut into two halves in stream
    order. For each map in ``methods`` and each direction, maps fitted on one half are measured on the other:
    FavMac with the run's value, cost, target, control, universe and score is calibrated on the held-out
    half's own labels and applied to it (the hindsight threshold on those patients), once with the raw p and
    once with g(p). Both spend the same budget c on the same patients, so ``gain`` is what the map's
    probabilities change in the value captured there, in the value's own units (RAF, dollars, true codes,
    ...); no patient the maps were fitted on is measured. O(R K log R) per map, one candidate build per map and
    half, and one per half for the raw p (shared by the maps).

    Parameters
    ----------
    probs, labels : (N, K)
        The labelled stream (only its first ``fold`` rows are used).
    value, cost : the run's value and cost (a value with per-patient context, e.g. ``CmsHccValue``,
        is bound to each half's rows).
    target, delta, universe, score : the run's (``score`` None: the run's default score).
    fold : int
        R; each half holds at least :data:`MIN_FOLD` patients.
    methods : sequence of str
        The maps to measure.

    Returns
    -------
    DataFrame
        One row per (map, held-out half): ``method``, ``measured_on`` (the half measured; the maps were fitted
        on the other), ``patients``, ``value_plain`` and ``value_mapped`` (mean value per patient), ``gain``
        (their difference), ``cost_plain``, ``cost_mapped`` (mean realized cost). :func:`evidence_summary`
        turns it into one verdict per map.
    """
    probs = check_probs(probs)
    labels = check_labels(labels, probs.shape)
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not 2 * MIN_FOLD <= fold <= len(probs):
        raise ValueError(f"fold: expected a whole number of fold patients from {2 * MIN_FOLD} (two halves of at least "
                         f"{MIN_FOLD}) to the {len(probs):,} patients in the data; got {fold!r}")
    middle = int(fold) // 2
    halves = (np.arange(0, middle), np.arange(middle, int(fold)))
    methods = [check_recalibration(m) for m in methods]
    rows = {}
    for fitted, held, name in ((halves[0], halves[1], HALVES[1]), (halves[1], halves[0], HALVES[0])):
        bound_value, bound_cost = bind_rows(value, held), bind_rows(cost, held)

        def measured(part):
            model = FavMac(value, cost, target, delta=delta, universe=universe, score=score)
            model.update(part, labels[held], value=bound_value)
            chosen = model.predict(part, value=bound_value)
            return (float(np.mean(bound_value(chosen, labels[held]))), float(np.mean(bound_cost(chosen, labels[held]))))

        plain, plain_cost = measured(probs[held])  # the raw p's run on this half: the same for every map
        for method in methods:
            maps = fit_recalibration(probs[fitted], labels[fitted], method, codes=codes)
            mapped, mapped_cost = measured(maps.apply(probs[held]))
            rows[method, name] = {"method": method, "measured_on": name, "patients": len(held), "value_plain": plain,
                                  "value_mapped": mapped, "gain": mapped - plain, "cost_plain": plain_cost,
                                  "cost_mapped": mapped_cost}
    rows = [rows[method, name] for method in methods for name in (HALVES[1], HALVES[0])]
    return pd.DataFrame(rows)


def evidence_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One verdict per map of :func:`recalibration_evidence`'s table, indexed by ``method``.

    Columns: ``value_plain``, ``value_mapped`` and ``gain`` (means over the held-out halves), ``gain_percent``
    (the gain in % of the plain value), ``halves_gaining`` (how many held-out halves gained) and
    ``recommended``: True only when the maps gained on every held-out half (a map that is the identity
    everywhere gains nothing, so it is not recommended; one that loses on a half is not either).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"method": ["platt"] * 2, "value_plain": [1.0, 1.0], "value_mapped": [1.1, 1.3], "gain": [0.1, 0.3]})
    >>> row = evidence_summary(t).loc["platt"]
    >>> float(row["gain"]), bool(row["recommended"])
    (0.2, True)
    """
    grouped = table.groupby("method", sort=False)
    out = grouped[["value_plain", "value_mapped", "gain"]].mean()
    out["gain_percent"] = 100 * out["gain"] / out["value_plain"].where(out["value_plain"] != 0)
    out["halves_gaining"] = grouped["gain"].apply(lambda g: int((g > 0).sum()))
    out["recommended"] = grouped["gain"].apply(lambda g: bool((g > 0).all()))
    return out


def candidate_methods(codes, current: str | None = None) -> tuple[str, ...]:
    """The maps the held-out check measures for data with these codes: the run's map ``current`` (the default map
    when None) first, then "platt_family" when the codes have hierarchy families
    (:func:`favmac.payment_tables.hierarchy_families`: CMS-HCC codes with two or more levels of a ladder), where it
    is a different map; elsewhere "platt_family" equals "platt_tested", so it is not measured twice.

    >>> candidate_methods(["HCC37", "HCC38", "HCC48"]), candidate_methods(["E11.9", "I50.9"], "platt")
    (('platt_tested', 'platt_family'), ('platt',))
    """
    from .payment_tables import hierarchy_families

    first = check_recalibration(current or DEFAULT_RECALIBRATION)
    out = [first]
    if codes is not None and hierarchy_families(list(codes)) and "platt_family" not in out:
        out.append("platt_family")
    return tuple(out)


def better_method(table: pd.DataFrame, current: str) -> str | None:
    """Another map of :func:`recalibration_evidence`'s table that captured more value than ``current`` on every
    held-out half (the halves are the same patients for every map, so the comparison is paired) and gains over no
    recalibration on every half too; the one with the largest mean value when several do; None when none does.

    >>> t = pd.DataFrame({"method": ["a", "a", "b", "b"], "measured_on": ["first half", "second half"] * 2,
    ...                   "value_plain": [1.0, 1.0, 1.0, 1.0], "value_mapped": [1.1, 1.2, 1.3, 1.25], "gain": [.1, .2, .3, .25]})
    >>> better_method(t, "a"), better_method(t, "b")
    ('b', None)
    """
    mapped = table.pivot(index="measured_on", columns="method", values="value_mapped")
    gains = table.pivot(index="measured_on", columns="method", values="gain")
    if current not in mapped.columns:
        raise ValueError(f"current: {current!r} is not among the measured maps ({', '.join(map(str, mapped.columns))})")
    better = [m for m in mapped.columns if m != current and bool((mapped[m] > mapped[current]).all())
              and bool((gains[m] > 0).all())]
    return max(better, key=lambda m: float(mapped[m].mean())) if better else None
