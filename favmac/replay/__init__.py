"""replay: the whole online FavMac session over a labelled stream, all targets in one pass.

For every stream position n >= burn_in it records the threshold calibrated on the patients
whose labels have arrived before n (:mod:`favmac.arrivals`; without a delay: patients
0..n-1, or the last ``window`` of them), the set chosen for patient n, and that set's
realized cost and value — exactly what a loop of ``FavMac.update/predict`` gives.

The engine runs in steps: candidates -> realized costs -> thresholds per part (each group
of each grouping, or the pooled stream) -> selection (each patient's smallest threshold
over its groupings) -> result.

How it is fast: in a replay every calibration point is known up front, so keys are ranked
once and Fenwick trees over ranks (numba, exact int64 weights at a decimal scale; one per
group, laid end to end) replace the QuantileTree. In expected-cost control the inserted
points do not depend on the target — only the query level c(n+1) - C_max does — so one pass
serves every target.

Threads (:mod:`favmac.parallel`, ``using(n)``): the per-patient passes (counts, keys and their
argsort, weights, slot lookup, the compiled choice of the sets), the merge of the sorted chunks (in
key ranges) and the keyless walk (in slot ranges, :meth:`favmac.replay.engine.Engine._walk_in_ranges`) run on
``inner_threads()`` threads. Each thread writes only its own slices and every sum is an exact
integer, so the results are the same bit for bit on any number of threads.

Modules, one job each: :mod:`~favmac.replay.api` (:func:`replay`: a :class:`~favmac.runspec.RunSpec`, or the keywords
that build one, :func:`replay_spec`), :mod:`~favmac.replay.fold` (the recalibration detour),
:mod:`~favmac.replay.session` (one replay's inputs and steps, :func:`method_name`), :mod:`~favmac.replay.work` (the per-patient
work shared by reorderings, :class:`PatientWork`), :mod:`~favmac.replay.engine` (the thresholds),
:mod:`~favmac.replay.points` (the calibration points), :mod:`~favmac.replay.realized` (realized costs),
:mod:`~favmac.replay.sizes` (chunk sizes), :mod:`~favmac.replay.prediction` (:func:`predict_with_threshold`).

``favmac.replay`` is this package, but ``from favmac import replay`` is the function (bound in
``favmac/__init__.py``); ``from favmac.replay import replay`` is the function too.
"""
from .api import replay, replay_spec
from .prediction import predict_with_threshold
from .session import method_name
from .work import PatientWork

__all__ = ["PatientWork", "replay", "replay_spec", "predict_with_threshold", "method_name"]
