"""Reading files into the library's objects, cached on the file *bytes* (``st.cache_data``).

The cache is shared by all sessions, keyed on immutable inputs (bytes, names, code tuples);
``st.cache_data`` hands every caller its own copy, so a cached object is never shared or
mutated. Errors are :class:`favmac.io.DataError` (file, row or column, and the fix).
"""
from __future__ import annotations

import streamlit as st

from favmac import io as fio
from favmac.ui.samples import NamedBytes

#: The calibration file's column of label arrivals the app reads (positions or dates; favmac.io).
ARRIVAL_COLUMN = "label_available_at"

__all__ = ["ARRIVAL_COLUMN", "CACHE_TTL_SECONDS", "cms_weights", "parse_calibration", "parse_new_patients", "parse_weights"]

# Parsed uploads are cached across sessions (same bytes, same result) but bounded: a few entries,
# a size cap, and dropped CACHE_TTL_SECONDS after they were stored, so memory comes back when sessions end.
CACHE_TTL_SECONDS = 900


@st.cache_data(show_spinner="Reading the calibration data…", max_entries=2, max_size="1GB", ttl=CACHE_TTL_SECONDS)
def parse_calibration(probs: bytes, probs_name: str, labels: bytes | None = None, labels_name: str | None = None) -> fio.Dataset:
    """Dataset from uploaded bytes (one wide file, or probabilities + labels)."""
    labels_source = None if labels is None else NamedBytes(labels, labels_name or "labels.csv")
    name = probs_name if labels is None else f"{probs_name} + {labels_name}"
    # a label_available_at column in the (wide or probabilities) file: the label arrivals (docs/method.md "Labels that arrive later")
    arrivals = ARRIVAL_COLUMN if ARRIVAL_COLUMN in fio.column_names(NamedBytes(probs, probs_name)) else None
    return fio.load_calibration(NamedBytes(probs, probs_name), labels_source, name=name, keep_columns=True,
                                label_available_column=arrivals)


@st.cache_data(show_spinner="Reading the new patients…", max_entries=2, max_size="512MB", ttl=CACHE_TTL_SECONDS)
def parse_new_patients(data: bytes, name: str, codes: tuple[str, ...], segment_columns: tuple[str, ...] = ()):
    """New patients; the calibration data's ``segment_columns`` the file has are read as their groups
    (``frame.attrs["groupings"]``: column -> labels, every such column, whatever the settings use)."""
    source = NamedBytes(data, name)
    present = [c for c in segment_columns if c in fio.column_names(source)]
    if not present:
        return fio.load_new_patients(source, list(codes), name=name)
    frame, groups = fio.load_new_patients_segmented(source, list(codes), name=name,
                                                    segment_column=present if len(present) > 1 else present[0])
    if len(present) == 1:
        frame.attrs["groupings"] = {present[0]: groups.tolist()}
    return frame


@st.cache_data(show_spinner="Reading the weights…", max_entries=8, max_size="16MB", ttl=CACHE_TTL_SECONDS)
def parse_weights(data: bytes, name: str, codes: tuple[str, ...]):
    return fio.read_weights(NamedBytes(data, name), list(codes), name=name)


@st.cache_data(show_spinner="Looking up CMS-HCC weights…", max_entries=32, max_size="16MB", ttl=CACHE_TTL_SECONDS)
def cms_weights(model: str, segment: str, codes: tuple[str, ...]):
    return fio.cms_hcc_weights(model, segment, list(codes))
