"""The runner: one function over every piece on the chosen Dask scheduler, and the exact
duplicate-id check across the whole source.

Work runs on any Dask scheduler: the local default, a scheduler name ("threads",
"processes", "synchronous"), a ``distributed.Client`` or a scheduler address
("tcp://host:8786"; a client is opened for the call and closed after).
"""
from __future__ import annotations

import math
import operator
import sys
import warnings

import numpy as np
import pandas as pd

from ..io.csv_parsing import ID_COLUMN, patient_ids
from ..io.errors import LIST_LIMIT, DataError, plural
from .sources import checked_source, is_dask_frame, rows_of

__all__ = ["ID_CHECK_BATCH", "Runner", "id_hashes", "hash_series", "rows_with_ids"]

ID_CHECK_BATCH = 10_000  # repeated id hashes whose rows one id-only pass fetches
_LOCAL_SCHEDULERS = ("threads", "threading", "processes", "multiprocessing", "synchronous", "single-threaded", "sync")


def id_hashes(ids) -> np.ndarray:
    """64-bit hashes of stripped patient ids (pandas' fixed-key SipHash: the same in every process)."""
    return pd.util.hash_array(np.asarray(ids, dtype=object))


def hash_series(parts) -> pd.Series:
    """One uint64 series of the id hashes ``parts`` (a list of arrays), as a task returns them."""
    return pd.Series(np.concatenate(parts) if parts else np.zeros(0, np.uint64), dtype=np.uint64, name="id_hash")


def rows_with_ids(item, name: str, wanted: list[str], text_columns, candidates: np.ndarray):
    """[(id, file, row)] of the rows whose id hash is among ``candidates`` (sorted uint64)."""
    found = []
    for file, rows, frame in rows_of(item, name, wanted, text_columns):
        ids = patient_ids(frame, rows, file)
        hit = np.isin(id_hashes(ids), candidates)
        found.extend((pid, file, int(row)) for pid, row in zip(ids[hit], rows[hit]))
    return found


class Runner:
    """Runs one function over every piece on the chosen Dask scheduler.

    Parameters
    ----------
    source : files or dask DataFrame (see :func:`favmac.distributed.calibrate`)
    scheduler : None, str or distributed.Client
    progress : bool
        Show dask's progress bar for every pass.
    labelled, codes, segment :
        The header checks (:func:`favmac.distributed.sources.checked_source`), done on creation.
    """

    def __init__(self, source, scheduler, progress: bool, labelled: bool, codes=None, segment=None):
        self.scheduler = scheduler
        self.progress = progress
        self._client = None
        self._own_client = False
        self.frame = source if is_dask_frame(source) else None
        self.pieces, self.codes = checked_source(source, labelled, codes, segment)

    def __enter__(self):
        scheduler = self.scheduler
        if scheduler is not None and not isinstance(scheduler, str):
            self._client = scheduler  # a distributed.Client (or anything with .compute/.gather)
        elif isinstance(scheduler, str) and scheduler not in _LOCAL_SCHEDULERS:
            from distributed import Client

            self._client = Client(scheduler)
            self._own_client = True
        return self

    def __exit__(self, *exc):
        if self._own_client:
            self._client.close()

    def items(self):
        """(item, name) per task: a Piece and its file, or a dask partition and "partition <i>"."""
        if self.frame is not None:
            return [(part, f"partition {i}") for i, part in enumerate(self.frame.to_delayed())]
        return [(piece, piece.file) for piece in self.pieces]

    def columns(self) -> dict:
        """File -> its column names, in reading order ("the dask DataFrame" -> the frame's)."""
        if self.frame is not None:
            return {"the dask DataFrame": [str(c) for c in self.frame.columns]}
        return {piece.file: list(piece.columns) for piece in self.pieces}

    def tasks(self, function, *args):
        """One delayed ``function(item, name, *args)`` per item (see ``items``); ``args`` are
        :meth:`shared` by all tasks."""
        import dask

        shared = [self.shared(arg) for arg in args]
        # pure=False: files may change between calls, so results are never reused by key
        return [dask.delayed(function, pure=False)(item, name, *shared) for item, name in self.items()]

    @staticmethod
    def shared(argument):
        """``argument`` as one key of the graph that every task refers to: it is serialized and
        sent to each worker once, not once per task (the payment value's tables are ~160 KB)."""
        import uuid

        import dask

        return dask.delayed(argument, name=f"favmac-argument-{uuid.uuid4().hex}", traverse=False)

    def run(self, tasks, extra=None):
        """The results of ``tasks`` (a list of delayed), and with ``extra`` (one dask collection)
        also its result, computed in the same graph: ``(results, extra result)``."""
        import dask

        wanted = list(tasks) + ([] if extra is None else [extra])
        with warnings.catch_warnings():
            # delayed tasks and a dask-expr collection in one graph: dask warns that it materializes the expression
            warnings.filterwarnings("ignore", message="Computing mixed collections", category=UserWarning)
            if self._client is not None:
                futures = self._client.compute(wanted)
                if self.progress:
                    from distributed import progress

                    progress(futures)
                out = list(self._client.gather(futures))
            elif self.progress:
                from dask.diagnostics import ProgressBar

                with ProgressBar(out=sys.stderr):  # stdout may carry results (the CLI prints thresholds there)
                    out = list(dask.compute(*wanted, scheduler=self.scheduler))
            else:
                out = list(dask.compute(*wanted, scheduler=self.scheduler))
        return out if extra is None else (out[:-1], out[-1])

    def run_checking_ids(self, tasks, text_columns):
        """Run tasks whose results end with a pandas Series of id hashes; return the results
        without it, after checking that no patient id occurs twice in the whole source.

        The check is exact and never gathers the ids: the hashes stay on the workers and a
        dask ``value_counts`` with ``split_out`` (a hash shuffle; dask's p2p shuffle on a
        cluster) finds the hashes seen more than once, in the same graph as ``tasks`` (the
        data is read once). Only when such hashes exist does a second, id-only pass fetch the
        rows holding them, and the real ids are compared on the coordinator, so a 64-bit hash
        collision between different ids is never reported.
        """
        import dask
        import dask.dataframe as dd

        heads = [dask.delayed(operator.getitem, pure=False)(task, slice(None, -1)) for task in tasks]
        hashes = [dask.delayed(operator.getitem, pure=False)(task, -1) for task in tasks]
        counts = dd.from_delayed(hashes, meta=pd.Series([], dtype=np.uint64, name="id_hash"), verify_meta=False)
        counts = counts.value_counts(split_out=max(1, math.ceil(len(tasks) / 16)))
        results, repeated = self.run(heads, counts[counts > 1])
        repeated = np.sort(repeated.index.to_numpy(dtype=np.uint64))
        for start in range(0, len(repeated), ID_CHECK_BATCH):
            candidates = repeated[start : start + ID_CHECK_BATCH]
            found = self.run(self.tasks(rows_with_ids, [ID_COLUMN], text_columns, candidates))
            _raise_duplicate_ids([hit for part in found for hit in part])
        return [tuple(result) for result in results]


def _raise_duplicate_ids(hits) -> None:
    """Raise a DataError for the ids among ``hits`` [(id, file, row)] (in reading order) seen twice or more."""
    where: dict = {}
    second: dict = {}  # id -> position in reading order of its second occurrence
    for position, (pid, file, row) in enumerate(hits):
        where.setdefault(pid, []).append((file, row))
        if len(where[pid]) == 2:
            second[pid] = position
    repeated = [(pid, where[pid]) for pid in sorted(second, key=second.get)]
    if not repeated:
        return
    shown = "; ".join(f"{pid!r} ({', '.join(f'{file} row {row}' for file, row in places[:LIST_LIMIT])})"
                      for pid, places in repeated[:LIST_LIMIT])
    more = f"; and {len(repeated) - LIST_LIMIT} more" if len(repeated) > LIST_LIMIT else ""
    file, row = repeated[0][1][1]
    raise DataError(f"{plural(len(repeated), 'patient id')} {'appears' if len(repeated) == 1 else 'appear'} more than "
                    f"once: {shown}{more}.", file=file, row=row, column=ID_COLUMN,
                    fix="Each patient must have exactly one row across all the files.")
