"""Threads inside one computation: how many a replay or a baseline may use for its own chunks.

A computation that can split its work into independent chunks (per-chunk keys and sorts, per-chunk
choices of sets) asks :func:`inner_threads` how many threads it may use and runs the chunks with
:func:`map_chunks`. The caller decides, with :func:`using`: Trade-offs on an idle core runs its
methods one after another, each on two threads, so only one method's memory is alive at a time.
The default is one thread (the chunks in order, in the caller's thread). Results never depend on
the number of threads: each chunk writes only its own slice, and :func:`map_chunks` returns the
chunks' results in their order.

>>> inner_threads()
1
>>> with using(2):
...     (inner_threads(), map_chunks(lambda x: x * x, [1, 2, 3]))
(2, [1, 4, 9])
>>> inner_threads()
1

When the chunks' results must be used in order by the caller (e.g. "the last write wins"), and
all of them together would be too large to keep, :func:`ordered_chunks` yields them one by one
while at most ``threads`` more are being computed:

>>> with using(2):
...     [x for x in ordered_chunks(lambda x: -x, range(5))]
[0, -1, -2, -3, -4]
"""

from __future__ import annotations

import contextvars
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

__all__ = ["inner_threads", "using", "map_chunks", "ordered_chunks", "chunk_ranges", "work_chunks", "CHUNKS_PER_THREAD"]

_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("favmac_inner_threads", default=1)


def inner_threads() -> int:
    """Threads the current computation may use for its own chunks (1 unless inside :func:`using`)."""
    return _THREADS.get()


@contextmanager
def using(threads: int):
    """Within the block, :func:`inner_threads` is ``threads`` (at least 1) in this thread."""
    token = _THREADS.set(max(1, int(threads)))
    try:
        yield
    finally:
        _THREADS.reset(token)


def map_chunks(fn, items, threads: int | None = None) -> list:
    """``[fn(item) for item in items]``, on ``threads`` threads (default :func:`inner_threads`).

    With one thread (or one item) the items run in order in this thread. With more, a pool of that
    many threads runs them (the pool is the caller's own, so a chunk may itself call
    :func:`map_chunks` without waiting on its own pool); the first exception is raised after every
    chunk ended. ``fn`` must write only what belongs to its item. Inside the chunks
    :func:`inner_threads` is 1, so nested work does not multiply the threads."""
    items = list(items)
    threads = inner_threads() if threads is None else max(1, int(threads))
    if threads == 1 or len(items) <= 1:
        return [fn(item) for item in items]

    with ThreadPoolExecutor(max_workers=min(threads, len(items)), thread_name_prefix="favmac chunk") as pool:
        futures = [pool.submit(_one_thread, fn, item) for item in items]
        errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error
    return [f.result() for f in futures]


def _one_thread(fn, item):
    with using(1):
        return fn(item)


def ordered_chunks(fn, items, threads: int | None = None):
    """Yield ``fn(item)`` for each item in order, computing the next ``threads`` items (default
    :func:`inner_threads`) on threads while the caller uses the current one: at most ``threads`` + 1
    results are alive at once, whatever the number of items. With one thread: ``fn(item)`` lazily,
    in this thread. An item's exception is raised when its turn comes (the pool then waits for the
    chunks already started and starts no other). Inside the chunks :func:`inner_threads` is 1."""
    threads = inner_threads() if threads is None else max(1, int(threads))
    if threads == 1:
        for item in items:
            yield fn(item)
        return
    items = iter(items)
    pending = deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="favmac chunk") as pool:
        try:
            for item in items:
                pending.append(pool.submit(_one_thread, fn, item))
                if len(pending) > threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:  # the caller stopped early or a chunk failed: start nothing more
                future.cancel()


#: Chunks per inner thread (:func:`inner_threads`) in :func:`work_chunks`: a few per
#: thread, so a thread that another process slows leaves its last chunks to the other.
CHUNKS_PER_THREAD = 4


def chunk_ranges(n: int, parts: int) -> list[range]:
    """``range(n)`` cut into at most ``parts`` consecutive, non-empty ranges of near-equal length
    (none when ``n`` is 0): what each thread of a chunk-parallel part owns.

    >>> chunk_ranges(10, 3)
    [range(0, 3), range(3, 6), range(6, 10)]
    >>> chunk_ranges(2, 4), chunk_ranges(0, 2)
    ([range(0, 1), range(1, 2)], [])
    """
    parts = max(1, min(int(parts), int(n)))
    edges = [n * j // parts for j in range(parts + 1)]
    return [range(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def work_chunks(n: int) -> list[range]:
    """The chunks of ``n`` independent rows (steps, patients) for :func:`map_chunks`:
    the whole range on one inner thread (the one-thread run is unchanged), else
    :data:`CHUNKS_PER_THREAD` per thread. Results never depend on the cut (each row is its own)."""
    threads = inner_threads()
    return chunk_ranges(n, 1 if threads == 1 else threads * CHUNKS_PER_THREAD)
