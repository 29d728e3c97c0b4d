"""The calibration or new-patient data of one run: :class:`Dataset` (probabilities, labels, segments, context)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import DataError

__all__ = ["Dataset", "dataset_name"]


@dataclass
class Dataset:
    """Probabilities and (optionally) labels of the same patients and codes.

    ``probs`` is indexed by ``patient_id`` (text) with one float64 column per code;
    ``labels`` has the same index and columns (int8 0/1) or is None; ``groups`` is the
    segment label of each patient (object array, rows as ``probs``) or None.
    """

    probs: pd.DataFrame
    labels: pd.DataFrame | None = None
    name: str = "data"
    groups: np.ndarray | None = None
    segment_column: str | None = None
    attributes: pd.DataFrame | None = None
    sources: dict | None = None  # file name -> SHA-256 of its bytes (for provenance)
    members: dict | None = None  # CMS member context: {"cells": (N,) or None, "known": (N, K) bool or None}
    groupings: dict | None = None  # segment column -> labels (N,), in the order asked; groups is the first
    label_available_at: np.ndarray | None = None  # (N,) int64 arrival positions (label_available_column)
    label_available_column: str | None = None  # the column label_available_at was read from
    rows: np.ndarray | None = None  # (N,) each patient's row in its file (header = row 1), for messages about patients

    def segment_columns(self) -> list[str]:
        """Columns that can serve as segments: the segment column(s) read, then the kept text columns."""
        out = [] if self.segment_column is None else [self.segment_column]
        out += [c for c in self.groupings or () if c not in out]
        if self.attributes is not None:
            out += [c for c in self.attributes.columns if c not in out]
        return out

    def segments(self, column: str) -> np.ndarray:
        """Segment labels (object array, rows as ``probs``) from ``column``; DataError for a missing label."""
        if column == self.segment_column and self.groups is not None:
            return self.groups
        if self.groupings and column in self.groupings:  # read with several segment columns
            return self.groupings[column]
        if self.attributes is None or column not in self.attributes.columns:
            raise DataError(f"there is no column named {column!r} to read the segments from.", file=self.name,
                            fix="Choose one of: " + (", ".join(self.segment_columns()) or "(none; add a segment column)"))
        values = self.attributes[column]
        missing = values.isna() | (values.astype(str).str.strip() == "")
        if missing.any():
            i = int(np.argmax(missing.to_numpy()))
            raise DataError(f"patient {values.index[i]!r} has no label in this column.", file=self.name, column=column,
                            row=None if self.rows is None else int(self.rows[i]),
                            fix="Give every patient a segment, or choose another column.")
        return np.array([str(v).strip() for v in values], dtype=object)

    @property
    def codes(self) -> list[str]:
        return [str(c) for c in self.probs.columns]

    @property
    def patient_ids(self) -> np.ndarray:
        return self.probs.index.to_numpy(dtype=object)

    @property
    def n_patients(self) -> int:
        return self.probs.shape[0]

    @property
    def n_codes(self) -> int:
        return self.probs.shape[1]

    @property
    def has_labels(self) -> bool:
        return self.labels is not None

    def prob_array(self) -> np.ndarray:
        """Probabilities as an (N, K) float64 array, rows in file order."""
        return self.probs.to_numpy(dtype=np.float64)

    def label_array(self) -> np.ndarray | None:
        """Labels as an (N, K) int8 array aligned with :meth:`prob_array` (None if unlabelled)."""
        return None if self.labels is None else self.labels.to_numpy(dtype=np.int8)

    def __repr__(self):
        labelled = "labelled" if self.has_labels else "unlabelled"
        return f"Dataset({self.name!r}: {self.n_patients} patients x {self.n_codes} codes, {labelled})"


def dataset_name(file: str) -> str:
    return os.path.splitext(file)[0] or file
