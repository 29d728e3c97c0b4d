"""Shared inputs and helpers of the favmac.io tests (imported by name: tests/io is on sys.path)."""
from __future__ import annotations

import pytest

from favmac.io import DataError

PROBS = b"patient_id,HCC18,HCC19\n007,0.25,0.5\n008,0.75,0\n009,1,0.125\n"
LABELS = b"patient_id,HCC18,HCC19\n007,0,1\n008,1,0\n009,1,1\n"
WIDE = b"patient_id,prob_HCC18,label_HCC18,prob_HCC19,label_HCC19\n007,0.25,0,0.5,1\n008,0.75,1,0,0\n"


def error(func, *args, **kwargs) -> DataError:
    """The DataError ``func(*args, **kwargs)`` raises (the test fails if it raises none)."""
    with pytest.raises(DataError) as info:
        func(*args, **kwargs)
    return info.value


class Upload:
    """Stands in for Streamlit's UploadedFile: a name and getvalue()."""

    def __init__(self, name, data):
        self.name = name
        self._data = data

    def getvalue(self):
        return self._data
