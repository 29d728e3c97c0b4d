"""The payment greedy compiles once per process, whatever the members' cells, known codes, order or
laziness: the Python boundary casts every input to one dtype and layout, and no literal-typed value
(a loop's first value, a constant 0) reaches a compiled call, which would have numba compile the
callee once more for that literal (the greedy takes most of a minute to compile cold)."""
from __future__ import annotations

import numpy as np

from favmac import CmsHccValue
from favmac import payment_kernels as pk
from favmac.payment_tables import CELL_NAMES


def _value(n, cells_dtype, known_dtype):
    rng = np.random.RandomState(3)
    codes = ["HCC36", "HCC37", "HCC38", "HCC226", "HCC327", "HCC328"]
    known = (rng.rand(n, len(codes)) < 0.2).astype(known_dtype)
    value = CmsHccValue(codes, cells=rng.choice(list(CELL_NAMES), n), known=known)
    probs = rng.rand(n, len(codes))
    cells, known = value._context(n)
    return value, probs, cells.astype(cells_dtype), known


def test_greedy_and_its_kernels_have_one_signature_each():
    for cells_dtype, known_dtype in [(np.int64, bool), (np.int8, np.int32), (np.int32, np.uint8)]:
        value, probs, cells, known = _value(30, cells_dtype, known_dtype)
        known.flags.writeable = False  # as the app's data frames hand them out
        steps = (1.0 - probs)[:, ::-1].T.copy().T  # not C-contiguous
        order = np.argsort(-probs, axis=1).astype(np.int32)
        for lazy in (True, False):
            pk.payment_sequences(value._tables, probs, known, cells, steps, 1e-12, lazy=lazy)
        pk.payment_sequences(value._tables, probs.astype(np.float32), known, cells, steps, 1e-12, order=order)
        pk.proxy_sets(value._tables, probs > 0.5, probs, known, cells)
    for kernel in (pk._sequences, pk._proxy_many):  # called from Python: compiled or loaded from the cache once
        assert len(kernel.signatures) == 1, (kernel.py_func.__name__, kernel.signatures)
    # the kernels they call: compiled once on a cold cache (none when the callers came from numba's cache)
    for kernel in (pk._greedy, pk._workspace, pk._extents, pk._count_bounds, pk._family_at):
        assert len(kernel.signatures) <= 1, (kernel.py_func.__name__, kernel.signatures)
        # no argument typed as a literal (a compile that only the literal's value selects)
        assert not any("Literal" in str(arg) for sig in kernel.signatures for arg in sig), kernel.signatures
