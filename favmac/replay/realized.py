"""The exact realized costs C(S; y) of every candidate set of every patient, as a table or read chunk by chunk.

:func:`realized_costs` builds the (N, M) table (int32 when the weights' sum fits; two int64 limbs per
cost when sums pass int64, :class:`favmac.near_ties.CostLimbs`); :class:`RealizedRows` gives the same
rows computed when read, so a lean replay (expected control, per-code weights) never holds the table.
"""
from __future__ import annotations

import numpy as np

from ..protocols import bind_rows
from ..thresholds import ExactCosts
from .sizes import patient_chunks

__all__ = ["realized_costs", "RealizedRows", "rows_of"]


def realized_costs(cands, labels, costs, cost=None):
    """``costs.realized`` (exact realized cost of every candidate), in chunks of patients
    (its temporaries are several (N, K) arrays), as int32 when the weights' sum fits."""
    n_patients = cands.n_patients
    limbs = costs.limbs() if isinstance(costs, ExactCosts) else None
    if limbs is not None:  # sums beyond int64: two int64 limbs per cost, not Python integers (near_ties.CostLimbs)
        from ..near_ties import CostLimbs

        return CostLimbs.stack([CostLimbs.realized(costs, cands.subset(slice(start, stop)), labels[start:stop], limbs)
                                for start, stop in patient_chunks(0, n_patients) or [(0, 0)]])
    out = None
    for start, stop in patient_chunks(0, n_patients) or [(0, 0)]:
        part = costs.realized(cands.subset(slice(start, stop)), labels[start:stop], bind_rows(cost, slice(start, stop)))
        if out is None:
            dtype = costs.realized_dtype or part.dtype  # int32 when realized <= sum of weights fits
            out = np.empty((n_patients, part.shape[1]), dtype=dtype)
        out[start:stop] = part
    return out


def rows_of(realized, rows):
    """The realized costs of the patients ``rows`` (an index array) of a table or :class:`RealizedRows`."""
    return realized.take(rows) if isinstance(realized, RealizedRows) else realized[rows]


class RealizedRows:
    """The exact realized costs (N, M) of every candidate, computed chunk by chunk when read:
    ``rows[start:stop]`` is ``costs.realized`` of those patients (the values and dtype
    :func:`~favmac.replay.realized.realized_costs` stores), so the whole table never exists. Only slices of rows can be read."""

    def __init__(self, cands, labels, costs, cost):
        self.cands, self.labels, self.costs, self.cost = cands, labels, costs, cost
        self.dtype = np.dtype(object if costs.weights.dtype == object else costs.realized_dtype or np.int64)
        self.shape = (cands.n_patients, cands.n_candidates)
        self.limbs = costs.limbs()  # sums beyond int64: rows read as near_ties.CostLimbs

    @staticmethod
    def fits(costs) -> bool:
        """Per-code integer weights (ExactCosts): realized costs int32, int64 or (sums beyond int64) Python integers."""
        return isinstance(costs, ExactCosts)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows):
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("RealizedRows: read contiguous rows (realized[start:stop]), or take(rows) for an index array")
        return self.take(rows)

    def take(self, rows):
        """The realized costs of the patients ``rows`` (a slice or an index array), computed now."""
        if self.limbs is not None:  # sums beyond int64: two int64 limbs per cost
            from ..near_ties import CostLimbs

            return CostLimbs.realized(self.costs, self.cands.subset(rows), self.labels[rows], self.limbs)
        part = self.costs.realized(self.cands.subset(rows), self.labels[rows], bind_rows(self.cost, rows))
        return part.astype(self.dtype, copy=False)
