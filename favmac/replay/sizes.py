"""How many patients each step of a replay takes at once: the chunk sizes, read when a step runs.

Every step reads them from this module when it runs (``sizes.CHUNK``), so a test may shrink them all
at once with ``monkeypatch.setattr(favmac.replay.sizes, "CHUNK", 7)``; no result depends on them
(each chunk writes only its own rows, and every sum is an exact integer).
"""
from __future__ import annotations

__all__ = ["CHUNK", "POINTS_CHUNK", "SELECT_CHUNK", "RANK_BATCH", "FORMULA_CHUNK", "patient_chunks"]

CHUNK = 20_000  # patients per kernel call, for progress reports
POINTS_CHUNK = 5_000  # patients per step of the points' passes: their (rows, K) temporaries sit beside the sorted keys
SELECT_CHUNK = 5_000  # patients per step of choosing the sets: their (rows, K) tables sit beside the result tables
RANK_BATCH = 1 << 16  # sorted queries bisected at once while ranking the points (their temporaries sit beside the keys)
FORMULA_CHUNK = 100  # patients per candidate batch when a formula value makes them slow


def patient_chunks(start: int, stop: int, size: int | None = None) -> list[tuple[int, int]]:
    """``[(start, a), (a, b), ..., (z, stop)]``: the patients ``start:stop`` in steps of ``size``
    (default :data:`CHUNK`); none when ``start == stop``.

    >>> patient_chunks(0, 5, 2), patient_chunks(3, 3, 2)
    ([(0, 2), (2, 4), (4, 5)], [])
    """
    size = CHUNK if size is None else size
    edges = list(range(start, stop, size)) + [stop]
    return list(zip(edges[:-1], edges[1:]))
