"""The recalibration detour of a replay: fit maps on the first R patients, replay the rest.

:func:`after_fold` checks what a fold allows (``label_delay`` rather than ``label_available_at``; any
number of groupings), binds the value and cost to the rows after the fold and hands the run to
:func:`favmac.recalibration.replay_after_fold`, which fits the maps and calls ``replay`` back on the
mapped probabilities (the function is passed in, so this module does not import the API module).
"""
from __future__ import annotations

from ..protocols import bind_rows
from ..validation import check_stream

__all__ = ["after_fold"]


def after_fold(replay, probs, labels, value, cost, spec, groups, label_available_at, codes, patient_ids, progress,
               method):
    """``replay(...)`` with the recalibration fold of ``spec`` (a :class:`~favmac.runspec.RunSpec`:
    :func:`favmac.recalibration.replay_after_fold`); ``replay`` is :func:`favmac.replay.replay`, passed in by it."""
    from ..recalibration import replay_after_fold

    if label_available_at is not None:
        raise ValueError("label_available_at: not with recalibrate (its positions count the fold's rows); give "
                         "label_delay instead, or leave recalibrate unset")
    probs, labels, targets, delta, burn_in, window, codes, patient_ids = check_stream(
        probs, labels, spec.targets, spec.control_delta, spec.burn_in, spec.window, codes, patient_ids)
    # the replay after the fold resolves a default score itself (for this cost): it is passed on only when chosen
    settings = dict(universe=spec.universe, c_max=spec.largest_cost, score=None if spec.score_is_default else spec.score,
                    adaptive_rate=spec.adaptive_rate, label_delay=spec.label_delay)
    value = bind_rows(value, slice(spec.recalibrate, None))  # the replay after the fold sees the rows after it
    cost = bind_rows(cost, slice(spec.recalibrate, None))
    return replay_after_fold(replay, probs, labels, value, cost, targets, recalibrate=spec.recalibrate,
                             recalibration=spec.recalibration, recalibrate_by=spec.recalibrate_by, burn_in=burn_in,
                             window=window, groups=groups, patient_ids=patient_ids, codes=codes, delta=delta, method=method,
                             progress=progress, **settings)
