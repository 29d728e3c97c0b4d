"""A header with far too many columns is refused from the header alone (issue 32): about a second
and a few times the file's size in memory, instead of minutes and gigabytes of parsing cells."""
from __future__ import annotations

import io
import time
import tracemalloc

import pandas as pd
import pytest

from favmac.io import DataError, csv_parsing, layouts, readers
from favmac.runspec import MAX_CODES


def wide_header_file(n_columns: int, quoted: bool = False) -> bytes:
    name = '"prob_C{}"' if quoted else "prob_C{}"
    header = "patient_id," + ",".join(name.format(i) for i in range(n_columns))
    return (header + "\np1," + ",".join("0.5" for _ in range(n_columns)) + "\n").encode()


def test_the_limit_leaves_room_for_the_most_codes_a_run_takes():
    assert csv_parsing.MAX_COLUMNS >= 2 * MAX_CODES + 1  # prob_ and label_ per code, and patient_id


@pytest.mark.parametrize("n_columns, quoted", [(1_000_000, False), (300_000, True)])
def test_a_far_too_wide_header_is_refused_fast_and_small(n_columns, quoted):
    data = wide_header_file(n_columns, quoted)  # 17 MB unquoted, as the probe's file
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(DataError, match=rf"row 1: the header has {n_columns + 1:,} columns; FavMac reads at most 201,000"):
            readers.read_probabilities(io.BytesIO(data), name="wide.csv")
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # before: 300,000 columns alone took 48 s and 870 MB; a million, 97 s and 1.8 GB more
    assert seconds < 5.0, seconds  # about 0.4 s unquoted, 1.2 s quoted (csv's own split) under tracemalloc
    assert peak < 8 * len(data), (peak, len(data))


def test_column_names_refuses_the_same_header():
    with pytest.raises(DataError, match="1,000,001 columns"):
        layouts.column_names(wide_header_file(1_000_000), "w.csv")


def test_a_parquet_schema_over_the_limit_is_refused_before_its_cells_are_read(monkeypatch):
    frame = pd.DataFrame({"patient_id": ["p1", "p2"], **{f"C{i}": [0.1, 0.2] for i in range(6)}})
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    monkeypatch.setattr(csv_parsing, "MAX_COLUMNS", 5)
    with pytest.raises(DataError, match="the header has 7 columns; FavMac reads at most 5"):
        readers.read_probabilities(io.BytesIO(buffer.getvalue()), name="p.parquet")


def test_a_header_at_the_limit_is_read(monkeypatch):
    monkeypatch.setattr(csv_parsing, "MAX_COLUMNS", 4)
    probs = readers.read_probabilities(io.BytesIO(b"patient_id,A,B,C\np1,0.1,0.2,0.3\n"), name="p.csv")
    assert list(probs.columns) == ["A", "B", "C"]
