"""Labels that arrive later: when each patient's labels join the calibration data.

In practice a patient's confirmed codes arrive weeks after the prediction (chart review), so
an online session calibrates only on the labels that have arrived (docs/method.md,
"Labels that arrive later"). One integer per patient says when:

* ``arrival[i]`` is the stream position after whose prediction patient i's labels arrive:
  patient i is a calibration patient of patient n exactly when ``arrival[i] < n``. Without a
  delay ``arrival[i] = i`` (the labels come right after the patient's own prediction, the
  paper's protocol); ``label_delay=d`` gives ``arrival[i] = i + d``, so patient n is
  predicted from stream positions ``< n - d``.
* Burn-in patients (``i < burn_in``) are labelled from the start: they count as arrived
  before the first prediction, whatever their given arrival.
* A label may never arrive within the stream (``arrival[i] >= N``): it is pending at every
  later step. The final thresholds (``final_thresholds``, the ones for new patients) use
  every patient of the file: by then the file holds all the labels.
* Several labels arriving at one position join in stream order. With a rolling window the
  window holds the W most recently *arrived* patients (ties in stream order).

:class:`ArrivalSchedule` is this rule as arrays, used by the replay engine, its slow loop and
the validity of the inputs (:func:`check_label_delay`, :func:`check_arrivals`).

>>> schedule = ArrivalSchedule.of(5, burn_in=1, label_delay=2)
>>> schedule.arrival.tolist(), schedule.order.tolist()
([0, 3, 4, 4, 4], [0, 1, 2, 3, 4])
>>> schedule.pending(1).tolist(), schedule.arrived_count(1).tolist()
([0, 1, 2, 2], [1, 1, 1, 2])
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .segments import patient_row

__all__ = ["ArrivalSchedule", "check_arrivals", "check_label_delay"]


def check_label_delay(label_delay, n_patients: int) -> int:
    """``label_delay`` as an int in [0, N - 1] (None is 0); refuses a negative delay or one longer than the stream.

    >>> check_label_delay(None, 10), check_label_delay(3, 10)
    (0, 3)
    """
    if label_delay is None:
        return 0
    if isinstance(label_delay, bool) or not isinstance(label_delay, (int, np.integer, float, np.floating)) \
            or float(label_delay) != int(label_delay):
        raise ValueError(f"label_delay: expected a whole number of stream positions >= 0, got {label_delay!r}")
    delay = int(label_delay)
    if delay < 0:
        raise ValueError(f"label_delay: a delay cannot be negative (got {delay}); 0 means each patient's labels "
                         "arrive right after its own prediction")
    if n_patients and delay >= n_patients:
        raise ValueError(f"label_delay: {delay} stream positions is longer than the stream of {n_patients} patients, "
                         f"so no label would ever arrive; use a delay below {n_patients}")
    return delay


def check_arrivals(label_available_at, n_patients: int, *, name: str = "label_available_at", rows=None) -> np.ndarray:
    """One arrival position per patient as int64; refuses a non-integer or an arrival before the patient's own position,
    naming the patient's file row (:func:`favmac.segments.patient_row`; ``rows``: the patients' file rows, if known).

    >>> check_arrivals([0, 3, 2], 3).tolist()
    [0, 3, 2]
    """
    arr = np.asarray(label_available_at)
    if arr.shape != (n_patients,):
        raise ValueError(f"{name}: expected one arrival position per patient, shape ({n_patients},), got {arr.shape}")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name}: expected integer stream positions, got values of type {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (arr != np.floor(arr))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{name}: the patient at {patient_row(i, rows)} has arrival {arr[i].item()!r}; expected a whole "
                             "stream position")
    out = arr.astype(np.int64)
    early = out < np.arange(n_patients)
    if early.any():
        i = int(np.argmax(early))
        raise ValueError(f"{name}: the patient at {patient_row(i, rows)} gets its labels at position {int(out[i])}, before "
                         f"its own position {i} (positions count from 0); a label arrives after the patient's "
                         "prediction (arrival >= position)")
    return out


@dataclass(frozen=True)
class ArrivalSchedule:
    """When each label joins the calibration data, as arrays (see the module docstring).

    Attributes
    ----------
    arrival : ndarray (N,) int64
        Effective arrival position: burn-in patients at ``burn_in - 1``, every other patient
        at its arrival clipped to ``N - 1`` (so all have arrived for the final thresholds).
    order : ndarray (N,) int64
        Patients in the order their labels join: by arrival, then stream position.
    ptr : ndarray (N + 1,) int64
        ``order[ptr[n]:ptr[n + 1]]`` join right after the prediction at position n.
    given : ndarray (N,) int64
        The arrivals as given (unclipped; burn-in patients at ``burn_in - 1``), for the
        pending counts.
    delayed : bool
        False when every label arrives right after its own prediction (the paper's stream).
    """

    arrival: np.ndarray
    order: np.ndarray
    ptr: np.ndarray
    given: np.ndarray
    delayed: bool

    @classmethod
    def of(cls, n_patients: int, burn_in: int = 0, label_delay=None, label_available_at=None) -> "ArrivalSchedule":
        """The schedule of a stream: no delay, ``label_delay=d`` or per-patient ``label_available_at``."""
        if label_delay is not None and label_available_at is not None:
            raise ValueError("label_delay and label_available_at: give one of them (a fixed delay or per-patient "
                             "arrival positions), not both")
        positions = np.arange(n_patients, dtype=np.int64)
        if label_available_at is not None:
            given = check_arrivals(label_available_at, n_patients)
        else:
            given = positions + check_label_delay(label_delay, n_patients)
        given = given.copy()
        given[:burn_in] = burn_in - 1
        arrival = np.minimum(given, max(n_patients - 1, 0))
        order = np.lexsort((positions, arrival)).astype(np.int64)
        ptr = np.zeros(n_patients + 1, dtype=np.int64)
        ptr[1:] = np.cumsum(np.bincount(arrival, minlength=n_patients)[:n_patients]) if n_patients else ptr[1:]
        delayed = bool(np.any(given[burn_in:] != positions[burn_in:]))
        return cls(arrival, order, ptr, given, delayed)

    @property
    def n_patients(self) -> int:
        return int(self.arrival.shape[0])

    def arrived_count(self, burn_in: int) -> np.ndarray:
        """(N - burn_in,) labelled patients available at each predicted position n: #{i : arrival_i < n}."""
        steps = np.arange(burn_in, self.n_patients)
        return np.searchsorted(np.sort(self.given), steps, side="left").astype(np.int64)

    def pending(self, burn_in: int) -> np.ndarray:
        """(N - burn_in,) labels still pending at each predicted position n: patients predicted
        before n (positions burn_in..n-1) whose labels have not arrived (arrival >= n)."""
        steps = np.arange(burn_in, self.n_patients)
        return (steps - burn_in) - (self.arrived_count(burn_in) - min(burn_in, self.n_patients))

    def calibration_sizes(self, burn_in: int, window=None) -> np.ndarray:
        """(N - burn_in,) pooled calibration patients at each predicted position (the last ``window`` arrived)."""
        arrived = self.arrived_count(burn_in)
        return arrived if not window else np.minimum(arrived, int(window))

    def evictions(self, group: np.ndarray, window: int) -> np.ndarray:
        """(N,) int64 aligned with :attr:`order`: the patient that leaves its group's window when
        ``order[e]`` joins (the one that joined ``window`` arrivals earlier in the same group), or -1.

        >>> s = ArrivalSchedule.of(4)
        >>> s.evictions(np.array([0, 1, 0, 0]), 1).tolist()
        [-1, -1, 0, 2]
        """
        out = np.full(self.n_patients, -1, dtype=np.int64)
        if not window:
            return out
        in_order = np.asarray(group)[self.order]
        by_group = np.argsort(in_order, kind="stable")  # arrival indices, grouped, arrival order kept
        counts = np.bincount(in_order) if len(in_order) else np.zeros(0, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(counts) else counts
        position = np.empty(self.n_patients, dtype=np.int64)  # place of each arrival in the grouped sequence
        position[by_group] = np.arange(self.n_patients)
        rank = position - np.repeat(starts, counts)[position]  # place within its group
        late = rank >= window
        out[late] = self.order[by_group[position[late] - window]]
        return out
