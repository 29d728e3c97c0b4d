"""What a replay computes from each patient's own row, built once and reordered: :class:`PatientWork`."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..universe import DEFAULT_UNIVERSE, Candidates
from .engine import Engine
from .session import Session, replay_spec

__all__ = ["PatientWork"]


@dataclass(frozen=True)
class PatientWork:
    """What a replay computes for each patient from its own row alone, for patients in one order.

    A patient's candidate sets and proxies (from its probabilities, and its cell and known
    codes with the payment value), their exact realized costs (its labels), its calibration
    points (expected control: keys and weights) or its violation scores (violation control)
    do not depend on where the patient stands in the stream. So one computation serves every
    reordering of the same patients: ``work.take(order)`` equals ``PatientWork.of`` on the
    patients in ``order`` (exactly: every row is computed on its own, and the points' sorted
    keys are the same multiset), and ``replay(p[order], y[order], ..., work=work.take(order))``
    skips rebuilding it. Burn-in, window, groups and label arrivals do not enter it; a
    recalibration fold does (its maps change every p), so ``replay`` refuses ``work`` with
    ``recalibrate``.

    >>> from favmac import AdditiveValue, AdditiveCost, replay
    >>> rng = np.random.RandomState(0)
    >>> p = rng.rand(60, 4).round(3); y = rng.rand(60, 4) < p; order = rng.permutation(60)
    >>> work = PatientWork.of(p, y, AdditiveValue(), AdditiveCost(), [1.0])
    >>> a = replay(p[order], y[order], AdditiveValue(), AdditiveCost(), [1.0], burn_in=20, work=work.take(order))
    >>> b = replay(p[order], y[order], AdditiveValue(), AdditiveCost(), [1.0], burn_in=20)
    >>> bool(np.array_equal(a.thresholds, b.thresholds) and np.array_equal(a.cost, b.cost))
    True
    """

    settings: tuple  # (universe, score, c_max, delta, targets) it was built for
    cands: Candidates
    realized: np.ndarray  # (N, M) exact realized cost of every candidate (a table, never RealizedRows)
    costs: object  # ExactCosts or SetCosts (favmac.costs.exact_costs)
    points: tuple | None  # expected control: (ptr, ranks, weights, sorted_keys); None if int64 overflows
    scores: list | None  # violation control: (N,) violation scores per target
    brackets: tuple | None = None  # points None, weights with many decimals: the bracket engines' points (low, high)

    @classmethod
    def of(cls, probs, labels, value, cost, targets, *, delta=None, universe: str = DEFAULT_UNIVERSE, score: str | None = None,
           c_max=None) -> "PatientWork":
        """The work of every patient of the stream (arguments as :func:`replay`)."""
        spec = replay_spec(targets, delta=delta, universe=universe, score=score, c_max=c_max)
        session = Session.prepare(probs, labels, value, cost, spec, None, None, None, None, None)
        cands, realized, costs = session.rows(lean=False)  # kept for every ordering: one table
        cands.scores(session.score)  # these per-patient tables are computed once here; subsets carry them
        if cands.nested:
            cands.best_prefix(), cands.code_ranks()
        engine = Engine(session, cands, realized, costs)
        points, scores = (engine.points(), None) if delta is None else (None, engine.scores())
        engines = engine.bracket_engines() if delta is None and points is None else None
        brackets = None if engines is None else tuple(e.points() for e in engines)  # Engine._bracketed's
        return cls(session.work_settings(), cands, realized, costs, points, scores, brackets)

    @property
    def n_patients(self) -> int:
        return self.cands.n_patients

    def take(self, order) -> "PatientWork":
        """The work of the patients ``order`` (an index array), in that order. O(N K)."""
        order = np.asarray(order, dtype=np.int64)

        def taken(points):
            if points is None:
                return None
            ptr, ranks, weights, sorted_keys = points  # each patient's run of points moves with it; keys and ranks stay
            counts = np.diff(ptr)[order]
            new_ptr = np.zeros(len(order) + 1, dtype=np.int64)
            np.cumsum(counts, out=new_ptr[1:])
            index = np.repeat(ptr[:-1][order] - new_ptr[:-1], counts) + np.arange(new_ptr[-1], dtype=np.int64)
            return new_ptr, ranks[index], weights[index], sorted_keys

        scores = None if self.scores is None else [scores[order] for scores in self.scores]
        brackets = None if self.brackets is None else tuple(taken(points) for points in self.brackets)
        return PatientWork(self.settings, self.cands.subset(order), self.realized[order], self.costs, taken(self.points),
                           scores, brackets)

    def check(self, session) -> None:
        """Refuse work built for other patients or other settings than the session's."""
        if self.n_patients != session.probs.shape[0]:
            raise ValueError(f"work: built for {self.n_patients} patients, the stream has {session.probs.shape[0]}; "
                             "build it with PatientWork.of on these patients")
        if self.settings != session.work_settings():
            raise ValueError(f"work: built for (universe, score, c_max, delta, targets) = {self.settings}, the replay "
                             f"asks for {session.work_settings()}; build it with the replay's settings")
