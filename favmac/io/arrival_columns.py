"""The label-arrival column of a calibration file: when each patient's labels arrived (:mod:`favmac.arrivals`).

``label_available_column`` names a column of stream positions (integers: the labels arrive right
after the prediction at that position, >= the patient's own row position, counted from 0 in file
order) or of dates. Dates need a ``predicted_at`` column of dates (the day each patient was
predicted; the file in that order): a label dated D joins the calibration data of the first
patient predicted at or after D, i.e. its position is that patient's position minus one (a label
dated on its own patient's day, or later but before any other prediction, arrives right after its
own prediction); a date before the patient's own ``predicted_at`` is refused. Dates written with the day and
month as numbers (03/02/2024) are read in one order for the whole file: day-first when some date's first
number is above 12 (13/02/2024), month-first when some date's second is; a file whose dates give neither (or
both) is refused rather than guessed, cell by cell.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .errors import DataError

__all__ = ["PREDICTED_AT_COLUMN", "take_arrivals", "arrivals_not_segments"]


#: The column of prediction dates that date-valued label arrivals are placed against.
PREDICTED_AT_COLUMN = "predicted_at"


def arrivals_not_segments(column, groupings, file) -> None:
    """The label-arrival column cannot also be a segment column (it was taken as one first, and would then
    be reported missing)."""
    if column is not None and column in (groupings or {}):
        raise DataError(f"the column {column!r} is the segment column; it cannot also say when labels arrived.",
                        file=file, row=1, column=column,
                        fix="Name the column of label-arrival positions or dates, or leave the label-arrival column unset.")


def take_arrivals(frame, rows, file, column):
    """Remove the label-arrival column (and a ``predicted_at`` column) from ``frame``; return
    ``(frame, positions (N,) int64 or None)`` as this module's docstring says."""
    if column is None:
        return frame, None
    if column not in frame.columns:
        raise DataError(f"there is no column named {column!r} to read the label arrivals from.", file=file, row=1,
                        fix="Add a column with the stream position (or the date) at which each patient's labels "
                        "arrived, or leave the label-arrival column unset.")
    values = frame[column].astype(object).where(frame[column].notna(), None)
    text = ["" if v is None else str(v).strip() for v in values.tolist()]
    for i, cell in enumerate(text):
        if not cell:
            raise DataError("this patient has no label-arrival position or date.", file=file, row=int(rows[i]),
                            column=column, fix="Write the stream position (or date) at which its labels arrived; a "
                            "label still pending at the end of the stream can be any position >= the number of patients.")
    frame = frame.drop(columns=column)
    numbers = pd.to_numeric(pd.Series(text), errors="coerce")
    if numbers.notna().all():
        whole = numbers == np.floor(numbers)
        if not whole.all():
            i = int(np.argmax(~whole.to_numpy()))
            raise DataError(f"{text[i]!r} is not a whole stream position.", file=file, row=int(rows[i]), column=column,
                            fix="Write label arrivals as whole positions (0 = the first patient) or as dates.")
        # any position >= the number of patients means "after the stream ends"; huge ones (1e300) are
        # held at 2**62 so they fit int64 (and a huge negative one at -1: before every patient's own)
        positions = numbers.clip(lower=-1, upper=2.0**62).to_numpy(dtype=np.int64)
    elif numbers.notna().any():  # positions in some rows, something else in others: name the odd one out
        if numbers.notna().sum() <= numbers.isna().sum():
            i = int(np.argmax(numbers.notna().to_numpy()))
            problem = f"{text[i]!r} is a stream position, while most rows of the column give dates or other text."
        else:
            i = int(np.argmax(numbers.isna().to_numpy()))
            problem = f"{text[i]!r} is not a whole stream position, while other rows of the column give positions."
        raise DataError(problem, file=file, row=int(rows[i]), column=column,
                        fix="Write every label arrival as a whole position (0 = the first patient), or every one as a date.")
    else:
        positions, frame = _arrival_dates(frame, rows, file, column, text)
    early = positions < np.arange(len(positions))
    if early.any():
        i = int(np.argmax(early))
        raise DataError(f"the labels arrive at position {text[i]}, before the patient's own position {i}.",
                        file=file, row=int(rows[i]), column=column,
                        fix="A label arrives after its patient's prediction: use a position >= the patient's row "
                        "position (0 = the first patient), or the date the labels came back.")
    return frame, positions


# A date written with its day and month as numbers, the year last: 03/02/2024, 3.2.24, 03-02-2024 10:00
_NUMERIC_DAY_MONTH = re.compile(r"^\s*(\d{1,2})[/.-](\d{1,2})[/.-]\d{2,4}\b")
_ISO_FIX = "Write the dates as YYYY-MM-DD (e.g. 2024-03-31), which can only be read one way."


def _day_first(columns, file, rows):
    """The one day/month order of the numeric dates of ``columns`` ({name: texts}): True (day first), False
    (month first), None (no such date); a DataError when the dates give neither order (all of 01/02/2024's
    kind) or both."""
    first = second = ambiguous = None
    for column, texts in columns.items():
        for i, text in enumerate(texts):
            found = _NUMERIC_DAY_MONTH.match(str(text))
            if not found:
                continue
            a, b = int(found.group(1)), int(found.group(2))
            if a > 12 and first is None:
                first = (column, i, text)
            elif b > 12 and second is None:
                second = (column, i, text)
            elif ambiguous is None:
                ambiguous = (column, i, text)
    if first and second:
        column, i, text = second
        raise DataError(f"{text!r} is month-first, but {first[2]!r} (column {first[0]}, row {int(rows[first[1]])}) is "
                        "day-first: the file mixes day-first and month-first dates.", file=file, row=int(rows[i]),
                        column=column, fix=_ISO_FIX)
    if first or second:
        return bool(first)
    if ambiguous:
        column, i, text = ambiguous
        raise DataError(f"the date {text!r} could be day/month or month/day, and no date of the file says which "
                        "(none has a day above 12).", file=file, row=int(rows[i]), column=column, fix=_ISO_FIX)
    return None


def _dates(values, file, rows, column, day_first=None):
    # utc=True: cells with different UTC offsets (or some with one, some without) compare on one clock
    # (dates without an offset are read as UTC) instead of failing in pandas; numeric day/month dates in the
    # file's one order (_day_first), not guessed cell by cell
    parsed = pd.to_datetime(pd.Series(values), errors="coerce", format="mixed", utc=True, dayfirst=bool(day_first))
    if parsed.isna().any():
        i = int(np.argmax(parsed.isna().to_numpy()))
        raise DataError("the cell is empty." if not str(values[i]).strip() else
                        f"{values[i]!r} is neither a stream position nor a date.", file=file, row=int(rows[i]),
                        column=column, fix="Write whole positions (0 = the first patient) or dates such as 2024-03-31.")
    # nanosecond timestamps span 1677-09-21 .. 2262-04-11; a date outside would wrap around silently
    outside = ((parsed < pd.Timestamp.min.tz_localize("UTC")) | (parsed > pd.Timestamp.max.tz_localize("UTC"))).to_numpy()
    if outside.any():
        i = int(np.argmax(outside))
        raise DataError(f"the date {values[i]!r} is outside the years 1678 to 2261 that dates can cover here.",
                        file=file, row=int(rows[i]), column=column, fix="Check the year (e.g. 2024-03-31, not 1024-03-31).")
    return parsed.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]")


def _arrival_dates(frame, rows, file, column, text):
    """Positions of date-valued label arrivals, against the ``predicted_at`` column (see the module docstring)."""
    predicted_text = None
    if PREDICTED_AT_COLUMN in frame.columns:
        raw = frame[PREDICTED_AT_COLUMN].astype(object).where(frame[PREDICTED_AT_COLUMN].notna(), None)
        predicted_text = ["" if v is None else str(v).strip() for v in raw.tolist()]
    day_first = _day_first({column: text, **({PREDICTED_AT_COLUMN: predicted_text} if predicted_text else {})},
                           file, rows)
    arrived = _dates(text, file, rows, column, day_first)  # a cell that is no date is named before predicted_at is asked for
    if PREDICTED_AT_COLUMN not in frame.columns:
        raise DataError(f"the label arrivals in {column!r} are dates, so each patient's prediction date is needed.",
                        file=file, row=1, column=column,
                        fix=f"Add a {PREDICTED_AT_COLUMN} column (the date each patient was predicted, rows in that "
                        "order), or give the arrivals as stream positions.")
    predicted = _dates(predicted_text, file, rows, PREDICTED_AT_COLUMN, day_first)
    backwards = predicted[1:] < predicted[:-1]
    if backwards.any():
        i = int(np.argmax(backwards)) + 1
        raise DataError("the prediction dates go backwards here; the rows are the stream, in prediction order.",
                        file=file, row=int(rows[i]), column=PREDICTED_AT_COLUMN,
                        fix=f"Sort the file by {PREDICTED_AT_COLUMN}.")
    before = arrived < predicted
    if before.any():
        i = int(np.argmax(before))
        raise DataError(f"the labels arrive on {text[i]}, before the patient was predicted.", file=file,
                        row=int(rows[i]), column=column, fix="A label arrives on or after its patient's prediction date.")
    first_at_or_after = np.searchsorted(predicted, arrived, side="left")
    positions = np.maximum(first_at_or_after - 1, np.arange(len(arrived))).astype(np.int64)
    return positions, frame.drop(columns=PREDICTED_AT_COLUMN)
