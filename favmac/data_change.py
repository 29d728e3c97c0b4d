"""The one rule for a run when its data change: burn-in, recalibration fold, window and label delay, together.

A run description made for one stream (say 4,000 patients: burn-in 1,000 after a fold of 1,000) may not
fit the next one (a 600-row upload). :func:`adapt_stream` moves the stream fields of a
:class:`~favmac.runspec.RunSpec` to the new length *together*, so the result always validates against it:

* burn-in: re-derived (:func:`default_burn_in`) when the stream's length changed or it leaves no patient
  to predict;
* fold: while it is at the old data's default it follows the data
  (:func:`favmac.recalibration.default_recalibrate`, given the *new* burn-in and window); a fold the user
  chose is kept while it fits (R + burn-in <= N - 1, a window holds R) and re-derived the same way when it
  does not; a fold the user turned off stays off;
* window: kept (a window as long as the stream keeps every patient, which a note says);
* label delay: a delay of N or more positions has no label arriving within the stream: turned off.

The app's data actions (:func:`favmac.ui.actions.set_dataset`) call it; so can any caller holding a spec.
"""
from __future__ import annotations

from .recalibration import DEFAULT_FOLD_MIN_PATIENTS, DEFAULT_RECALIBRATE_BY, DEFAULT_RECALIBRATION, default_recalibrate

__all__ = ["DEFAULT_BURN_IN_MAX", "default_burn_in", "adapt_stream"]

#: The longest default burn-in: the paper's 1,000 patients.
DEFAULT_BURN_IN_MAX = 1000


def default_burn_in(n_patients: int) -> int:
    """The burn-in a stream of ``n_patients`` starts with: a third of it, at most :data:`DEFAULT_BURN_IN_MAX`.

    >>> default_burn_in(600), default_burn_in(30_000)
    (200, 1000)
    """
    return int(min(DEFAULT_BURN_IN_MAX, max(1, n_patients // 3)))


def adapt_stream(spec, n_patients: int, *, old_n_patients: int | None = None):
    """``(spec, notes)``: ``spec`` (a :class:`~favmac.runspec.RunSpec`) with its burn-in, fold and label delay
    fitted to a stream of ``n_patients`` (the rule in the module docstring) and a note per change for the user.
    ``old_n_patients``: the length of the stream ``spec`` was made for (None: not known; the fold is then kept
    unless it no longer fits). The result validates against ``n_patients`` (``spec.validate(n_patients=...)``)
    as far as these fields go.

    >>> from favmac.runspec import RunSpec
    >>> spec, notes = adapt_stream(RunSpec(burn_in=1000, recalibrate=1000, recalibration="platt"), 600, old_n_patients=4000)
    >>> spec.burn_in, spec.recalibrate
    (200, None)
    """
    notes = []
    n_patients = int(n_patients)
    burn_in, window, fold = spec.burn_in, spec.window, spec.recalibrate
    arrivals = spec.label_available_column is not None
    stream_changed = old_n_patients is not None and int(old_n_patients) != n_patients
    new_burn_in = burn_in
    if (stream_changed or not 0 <= burn_in < n_patients) and burn_in != default_burn_in(n_patients):
        new_burn_in = default_burn_in(n_patients)
        notes.append(f"Burn-in set to {new_burn_in:,} patients (was {burn_in:,}): a third of the new {n_patients:,}-patient "
                     f"stream, at most {DEFAULT_BURN_IN_MAX:,}, so {n_patients - new_burn_in:,} patients are predicted.")
    if window is not None and window >= n_patients:
        notes.append(f"The rolling window ({window:,} patients) is as long as the new stream, so it keeps every patient.")
    changes = {"burn_in": new_burn_in}
    if isinstance(fold, int) and not isinstance(fold, bool) or fold is None:
        new_fold = default_recalibrate(n_patients, burn_in=new_burn_in, window=window, arrival_times=arrivals)
        at_default = old_n_patients is not None and fold == default_recalibrate(
            int(old_n_patients), burn_in=burn_in, window=window, arrival_times=arrivals)
        fits = fold is None or (fold + new_burn_in <= n_patients - 1 and (window is None or window >= fold))
        if fold != new_fold and (at_default or not fits):
            changes["recalibrate"] = new_fold
            if new_fold is None:
                notes.append(f"Recalibration turned off: the default fold needs at least {DEFAULT_FOLD_MIN_PATIENTS:,} "
                             f"labelled patients and room for the burn-in; the new stream has {n_patients:,}.")
            else:
                changes["recalibration"] = spec.recalibration or DEFAULT_RECALIBRATION
                changes["recalibrate_by"] = spec.recalibrate_by or DEFAULT_RECALIBRATE_BY
                notes.append(f"Recalibration on the first {new_fold:,} patients (the default from "
                             f"{DEFAULT_FOLD_MIN_PATIENTS:,} labelled patients on; one click on Value & cost turns it off).")
    if changes.get("recalibrate", fold) is None and spec.recalibrate_by != DEFAULT_RECALIBRATE_BY:
        changes["recalibrate_by"] = DEFAULT_RECALIBRATE_BY  # per-segment maps need a fold
    if spec.label_delay is not None and spec.label_delay >= n_patients:
        changes["label_delay"] = None
        notes.append(f"Label delay turned off: a delay of {spec.label_delay:,} positions has no label arriving within "
                     f"the new {n_patients:,}-patient stream.")
    return spec.replace(**changes), notes
