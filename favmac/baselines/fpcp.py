"""FPCP: FavMac with the ``prob`` universe (codes added in order of decreasing p)."""
from __future__ import annotations

__all__ = ["fpcp"]


def fpcp(probs, labels, value, cost, targets, *, delta=None, burn_in=0, window=None, c_max=None,
         codes=None, patient_ids=None, progress=None):
    """FPCP: FavMac with the ``prob`` universe.

    The paper's FPCP also trains a DeepSets cost proxy; the additive proxy stands in for it.
    Both controls apply. Thresholds are FavMac thresholds on the cost proxy Chat. Parameters
    as :func:`favmac.replay.replay` (``window``, ``c_max``, ``progress`` are passed on).
    """
    from ..replay import replay  # lazy: the replay engine is a separate module

    return replay(probs, labels, value, cost, targets, delta=delta, universe="prob", burn_in=burn_in,
                  window=window, c_max=c_max, codes=codes, patient_ids=patient_ids, method="FPCP",
                  progress=progress, score="cost")
