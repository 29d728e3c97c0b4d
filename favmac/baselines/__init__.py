"""Online baselines for FavMac: ClassWise, InnerSet, FPCP, CRC and RCPS.

Every baseline follows the same online protocol as :func:`favmac.replay.replay` and returns
a :class:`favmac.result.ReplayResult` with the same shapes (and exact ``exceeds`` flags), so
methods can be compared side by side. One signature for all five::

    f(probs, labels, value, cost, targets, *, delta=None, burn_in=0, window=None, c_max=None,
      codes=None, patient_ids=None, progress=None) -> ReplayResult

``cost`` must be an additive cost (``AdditiveCost``); ``value`` may be any value function
(it is only used to score the chosen sets). ``window`` keeps the last ``window``
calibration patients; ``c_max`` overrides the sum of the cost weights where the method uses
C_max; ``progress(fraction)`` is called from 0 to 1. A method asked for a control it does
not support (:data:`BASELINE_CONTROLS`) raises a ValueError naming it.

Modules: :mod:`.common` (inputs, results), :mod:`.classwise`, :mod:`.inner_set`,
:mod:`.fpcp`, :mod:`.grid` (the lambda grid of RCPS), :mod:`.crc` (exact), :mod:`.rcps`
(with the Hoeffding–Bentkus bound). Exact quantile ranks and cost scales come from
:mod:`favmac.thresholds`, the Fenwick trees from :mod:`favmac.fenwick`.
"""
from ..thresholds import quantile_rank
from .classwise import classwise
from .crc import crc
from .fpcp import fpcp
from .grid import lambda_grid
from .inner_set import inner_set, inner_set_scores
from .rcps import hb_p_value, rcps

__all__ = ["classwise", "inner_set", "fpcp", "crc", "rcps", "BASELINE_CONTROLS", "hb_p_value", "lambda_grid",
           "inner_set_scores", "quantile_rank"]

#: Which control(s) each baseline supports: "expected" (delta=None) and/or "violation" (delta given).
BASELINE_CONTROLS = {
    "classwise": ("expected",),
    "inner_set": ("expected", "violation"),
    "fpcp": ("expected", "violation"),
    "crc": ("expected",),
    "rcps": ("violation",),
}
