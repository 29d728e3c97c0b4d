"""The CMS-HCC payment value (docs/method.md "CMS-HCC payment value"): what CMS actually pays for a set.

For a member with coefficient cell D, codes already on the record B and a chosen set S:

    V(S; y) = RAF(D, B ∪ (S ∩ y)) - RAF(D, B)

with RAF as hccinfhir computes it (hierarchies, V28's HCC223 rule, disease interactions,
payment-HCC counts D1 ... D10P, the cell's coefficients), times the payment adjustments
(1 - coding_intensity) / normalization, times an annual base rate for dollars. The demographic
terms of the RAF do not depend on the codes, so they cancel in V; :meth:`CmsHccValue.raf`
is the disease part.

* :class:`CmsHccValue` — the value: ``value(selected, labels)``, the exact proxy
  ``value.proxy(selected, probs)`` (an expectation under independent Bernoulli(p), computed
  from per-family outcome distributions; no Monte Carlo), a compiled greedy universe
  (``sequences``), and a per-code breakdown for one patient (``breakdown``).
* :class:`CmsHccCost` — the optional "unsupported payment" C(S; y) = RAF(D, B ∪ (S \\ y)) -
  RAF(D, B) with its exact proxy (RADV exposure), in exact integers for the threshold engine
  (:mod:`favmac.costs`).

Per-patient context. Patients may differ in cell and known codes. A value built for N
patients (``cells`` (N,), ``known`` (N, K)) evaluates row r of a batch with patient r's
context; ``value.take(rows)`` is the same value bound to those patients, and
:func:`favmac.functions.bind_rows` does that for any value (non-contextual values are
returned unchanged), which is how replay, the universes, FavMac and the export slice it.
One cell and no known codes for everybody (the default) is context-free.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .payment_tables import (CELL_NAMES, CMS_PAYMENT_MODELS, CMS_PAYMENT_YEARS, DEFAULT_CMS_CELL, DEFAULT_CMS_MODEL,
                             DEFAULT_CMS_YEAR, hcc_number, model_tables, restrict)
from .scores import GAIN_TOLERANCE

__all__ = ["CmsHccValue", "CmsHccCost", "CMS_PAYMENT_MODELS", "CMS_PAYMENT_YEARS", "CELL_NAMES",
           "DEFAULT_PAYMENT_YEAR"]

#: The table year used when none is given (:data:`favmac.payment_tables.DEFAULT_CMS_YEAR`).
DEFAULT_PAYMENT_YEAR = DEFAULT_CMS_YEAR


def _number(value, name: str, *, positive: bool = False, below_one: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ValueError(f"{name}: expected a number, got {value!r}")
    try:
        out = float(value)
    except ValueError:
        raise ValueError(f"{name}: expected a number, got {value!r}") from None
    if not math.isfinite(out) or out < 0 or (positive and out == 0) or (below_one and out >= 1):
        rule = "a number > 0" if positive else ("a number in [0, 1)" if below_one else "a number >= 0")
        raise ValueError(f"{name}: expected {rule}, got {value!r}")
    return out


class CmsHccValue:
    """V(S; y) = RAF(D, B ∪ (S ∩ y)) - RAF(D, B): the payment the confirmed flags add.

    Parameters
    ----------
    codes : sequence of str
        The data's codes in column order, HCC names as in the data ("HCC37" or "37"). Codes
        that are not payment HCCs of the model are refused with a message listing them.
    model : {"V22", "V24", "V28"}
    segment : str
        The coefficient cell of every patient (default "CNA"): CNA, CND, CFA, CFD, CPA, CPD
        (community: non-/full-/partial-benefit dual, aged/disabled), INS (institutional,
        aged), INSD (institutional, disabled under 65). See
        :func:`favmac.payment_tables.cell_from_demographics` for raw fields.
    year : int
        hccinfhir table year (2025 or 2026).
    cells : sequence of str, optional
        One cell name per patient (N,), instead of one ``segment`` for everybody.
    known : array (N, K) or (K,) of bool, optional
        Codes already on each member's record (B); present with probability 1.
    normalization : float
        CMS normalization factor (> 0; default 1: none).
    coding_intensity : float
        MA coding-intensity adjustment in [0, 1) (default 0: none).
    base_rate : float, optional
        Annual base rate in dollars (>= 0): values are then dollars; None keeps RAF units.

    Examples
    --------
    >>> v = CmsHccValue(["HCC36", "HCC37", "HCC38", "HCC226"], model="V28", segment="CNA")
    >>> round(float(v([True, False, True, False], [1, 1, 1, 1])), 3)  # 36 removes 38
    0.166
    >>> round(float(v([True, False, False, True], [1, 1, 1, 1])), 3)  # 36 + 226 + DIABETES_HF_V28
    0.638
    >>> round(float(v.proxy([True, False, True, False], [0.5, 0.5, 0.5, 0.5])), 4)
    0.1245
    """

    is_additive = False
    kind = "value"

    def __init__(self, codes, *, model: str = DEFAULT_CMS_MODEL, segment: str = DEFAULT_CMS_CELL, year: int = DEFAULT_PAYMENT_YEAR,
                 cells=None, known=None, normalization: float = 1.0, coding_intensity: float = 0.0,
                 base_rate=None):
        tables = model_tables(model, year)
        self.model, self.year = tables.model, tables.year
        self.codes = [str(c) for c in codes]
        if not self.codes:
            raise ValueError("codes: expected at least one HCC code")
        numbers_ = [hcc_number(c) for c in self.codes]
        bad = [c for c, n in zip(self.codes, numbers_) if n is None or n not in tables.hccs]
        if bad:
            shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
            raise ValueError(f"codes: {len(bad)} code(s) are not payment HCCs of CMS-HCC {self.model} ({self.year} tables): "
                             f"{shown}. Use the model's HCC names (e.g. HCC37 or 37), or another model version.")
        if len(set(numbers_)) != len(numbers_):
            j = next(j for j, n in enumerate(numbers_) if n in numbers_[:j])
            twice = (self.codes[numbers_.index(numbers_[j])], self.codes[j])
            raise ValueError(f"codes: the same HCC appears twice: {twice[0]!r} and {twice[1]!r} (HCC "
                             f"{hcc_number(twice[0])}); keep one column per HCC")
        self.numbers = numbers_
        self.normalization = _number(normalization, "normalization", positive=True)
        self.coding_intensity = _number(coding_intensity, "coding_intensity", below_one=True)
        self.base_rate = None if base_rate is None else _number(base_rate, "base_rate")
        if cells is None:
            names = [self._cell_name(segment, "segment")]
            cell_index = None
        else:
            names, cell_index = self._cell_indices(cells)
        self.cell_names = names
        self._cell_index = cell_index
        self._tables = restrict(tables, numbers_, [CELL_NAMES[n] for n in names])
        self._known = None if known is None else self._check_known(known)
        if cell_index is not None and self._known is not None and self._known.ndim == 2 and len(cell_index) != len(self._known):
            raise ValueError(f"cells has {len(cell_index)} patients but known has {len(self._known)}")

    # ------------------------------------------------------------------ context
    def _cell_name(self, name, where: str) -> str:
        key = str(name).strip().upper()
        if key not in CELL_NAMES:
            raise ValueError(f"{where}: {name!r} is not a CMS-HCC coefficient cell; choose one of "
                             f"{', '.join(CELL_NAMES)} (new enrollees have no HCC coefficients)")
        return key

    def _cell_indices(self, cells) -> tuple[list, np.ndarray]:
        """(cell names in order of first appearance, each row's index into them) of ``cells`` (N,).

        Each distinct spelling is checked once (100,000 members name a handful of cells); the first
        row with an unknown cell is the one the error names."""
        raw = np.asarray(cells, dtype=object).reshape(-1)
        _, first, inverse = np.unique(raw.astype(str), return_index=True, return_inverse=True)
        names: list = []
        position = np.empty(len(first), dtype=np.int64)
        for j in np.argsort(first, kind="stable"):  # in order of first appearance, as a loop over the rows meets them
            key = self._cell_name(raw[first[j]], f"cells[{first[j]}]")
            if key not in names:
                names.append(key)
            position[j] = names.index(key)
        return names, position[inverse.reshape(-1)]

    def _check_known(self, known) -> np.ndarray:
        arr = np.asarray(known)
        if arr.dtype != bool:
            if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isin(arr, (0, 1))):
                raise ValueError("known: expected 0/1 or True/False per code")
            arr = arr.astype(bool)
        if arr.shape[-1:] != (len(self.codes),) or arr.ndim not in (1, 2):
            raise ValueError(f"known: expected shape (K,) or (N, K) with K = {len(self.codes)} codes, got {arr.shape}")
        return arr

    @property
    def known(self) -> np.ndarray | None:
        """The known codes B: (K,) bool for everybody, (N, K) per patient, or None (none)."""
        return self._known

    @property
    def n_rows(self) -> int | None:
        """Number of patients the context describes (None: one context for every patient)."""
        if self._cell_index is not None:
            return len(self._cell_index)
        if self._known is not None and self._known.ndim == 2:
            return len(self._known)
        return None

    def take(self, rows) -> "CmsHccValue":
        """The same value bound to patients ``rows`` (a slice, an index array or one int).

        A context-free value (one cell, the same known codes for all) is returned as is.
        """
        if self.n_rows is None:
            return self
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        if isinstance(rows, (int, np.integer)):
            rows = [int(rows)]
        if self._cell_index is not None:
            out._cell_index = self._cell_index[rows]
        if self._known is not None and self._known.ndim == 2:
            out._known = self._known[rows]
        return out

    def with_context(self, cells, known=None) -> "CmsHccValue":
        """The same value (codes, model, year, adjustments) for other patients: ``cells`` (N,) names
        each one's cell, ``known`` (N, K), (K,) or None their known codes.

        The tables are reused when every cell is one of this value's ``cell_names`` (a value built
        with ``cells=list(CELL_NAMES)`` covers them all: the distributed engine builds one per run
        and binds it to each batch), else built anew.

        >>> v = CmsHccValue(["HCC36", "HCC38"], cells=list(CELL_NAMES))
        >>> v.with_context(["INS", "CNA"]).take(1) is not None, v.with_context(["cna"]).n_rows
        (True, 1)
        """
        raw = np.asarray(cells, dtype=object).reshape(-1)
        keys, index = self._cell_indices(raw)
        lookup = {name: i for i, name in enumerate(self.cell_names)}
        if any(key not in lookup for key in keys):
            return type(self)(self.codes, model=self.model, year=self.year, cells=raw, known=known,
                              normalization=self.normalization, coding_intensity=self.coding_intensity,
                              base_rate=self.base_rate)
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._cell_index = np.array([lookup[key] for key in keys], dtype=np.int64)[index]
        out._known = None if known is None else self._check_known(known)
        if out._known is not None and out._known.ndim == 2 and len(out._known) != len(raw):
            raise ValueError(f"cells has {len(raw)} patients but known has {len(out._known)}")
        return out

    def _context(self, n: int):
        """(cells (n,), known (n, K)) for a batch of n rows."""
        k = len(self.codes)
        if self.n_rows is not None and self.n_rows != n:
            raise ValueError(f"this CmsHccValue holds the context of {self.n_rows} patients but got {n} rows; "
                             "bind it to the rows first (value.take(rows) or favmac.functions.bind_rows)")
        cells = np.zeros(n, dtype=np.int64) if self._cell_index is None else self._cell_index
        if self._known is None:
            known = np.zeros((n, k), dtype=bool)
        else:
            known = np.broadcast_to(self._known, (n, k))
        return cells, known

    @property
    def factor(self) -> float:
        """Raw RAF -> the value's units: (1 - coding_intensity) / normalization (x base rate)."""
        out = (1.0 - self.coding_intensity) / self.normalization
        return out * self.base_rate if self.base_rate is not None else out

    @property
    def units(self) -> str:
        return "dollars" if self.base_rate is not None else "RAF"

    def __repr__(self):
        cells = self.cell_names[0] if len(self.cell_names) == 1 else f"{len(self.cell_names)} cells"
        return f"{type(self).__name__}({len(self.codes)} codes, model={self.model!r}, year={self.year}, {cells})"

    def settings(self) -> dict:
        """The model, year, cells and adjustments, for provenance records."""
        return {"model": self.model, "year": self.year, "cells": list(self.cell_names),
                "normalization": self.normalization, "coding_intensity": self.coding_intensity,
                "base_rate": self.base_rate, "units": self.units}

    # ------------------------------------------------------------------ evaluation
    def _rows(self, arrays):
        """Broadcast (..., K) arrays; the first axis is the patient axis when the context has rows."""
        arrays = [np.asarray(a) for a in arrays]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        arrays = [np.broadcast_to(a, shape) for a in arrays]  # read-only views (broadcast_arrays' are "writeable" with a FutureWarning)
        k = len(self.codes)
        if shape[-1:] != (k,):
            raise ValueError(f"expected sets over K = {k} codes (last axis), got shape {shape}")
        lead = shape[:-1]
        n_rows = self.n_rows
        if n_rows is None or n_rows == 1 or len(lead) == 0:
            # one context for every row (a context of one patient applies to all its candidate sets)
            n = int(np.prod(lead)) if lead else 1
            cells, known = self._context(1 if n_rows is None else n_rows)
            cells = np.broadcast_to(cells[:1], (n,))
            known = np.broadcast_to(known[:1], (n, k))
            if n_rows is not None and n_rows > 1:
                raise ValueError(f"this CmsHccValue holds the context of {n_rows} patients; give a batch with "
                                 "one row per patient, or bind it to one patient first (value.take(row))")
        else:
            cells, known = self._context(lead[0])
            per = int(np.prod(lead[1:])) if len(lead) > 1 else 1
            cells = np.repeat(cells, per)
            known = np.repeat(known, per, axis=0)
        flat = [a.reshape(-1, k) for a in arrays]
        return lead, flat, cells, known

    def raf(self, codes_present) -> np.ndarray:
        """Disease part of the RAF (raw, unadjusted) of sets H (..., K) bool, known codes not added."""
        from .payment_kernels import raf_sets

        lead, (sets,), cells, _ = self._rows([np.asarray(codes_present, dtype=bool)])
        return raf_sets(self._tables, sets, cells).reshape(lead)

    def __call__(self, selected, labels):
        from .payment_kernels import raf_sets

        lead, (sel, lab), cells, known = self._rows([np.asarray(selected, dtype=bool), np.asarray(labels, dtype=bool)])
        base = raf_sets(self._tables, known, cells)
        out = raf_sets(self._tables, known | (sel & lab), cells) - base
        return (out * self.factor).reshape(lead)

    def _row_context(self, n: int):
        """(cells (n,), known (n, K)) of n patients: this value's rows, or its one context for all."""
        if self.n_rows is not None:
            return self._context(n)
        cells, known = self._context(1)
        return np.broadcast_to(cells, (n,)), np.broadcast_to(known[0], (n, len(self.codes)))

    def per_target(self, selected, labels) -> np.ndarray:
        """V of T sets per patient in one compiled pass: ``selected`` (T, N, K), ``labels`` (N, K) -> (T, N).

        Equals ``[self(selected[t], labels) for t in range(T)]``; the record's RAF is computed
        once per patient and a set equal to the previous target's is not evaluated again.

        >>> v = CmsHccValue(["HCC36", "HCC38"])
        >>> v.per_target([[[True, True]], [[False, True]]], [[1, 1]]).round(3).tolist()
        [[0.166], [0.166]]
        """
        from .payment_kernels import set_payments

        selected = np.asarray(selected, dtype=bool)
        labels = np.asarray(labels, dtype=bool)
        if selected.ndim != 3 or labels.shape != selected.shape[1:]:
            raise ValueError(f"per_target: expected selected (T, N, K) and labels (N, K), got {selected.shape} and {labels.shape}")
        cells, known = self._row_context(labels.shape[0])
        return set_payments(self._tables, selected, labels, known, cells) * self.factor

    def prefixes(self, order, index, labels) -> np.ndarray:
        """V of nested sets in one compiled pass: the first ``index[t, r]`` codes of ``order[r]``, (T, N).

        ``order`` (N, K) is each patient's sequence (a nested universe's), ``index`` (T, N) the
        chosen prefix length per target, ``labels`` (N, K). Equals calling the value on those
        sets; each distinct set of confirmed codes is evaluated once per patient.

        >>> v = CmsHccValue(["HCC36", "HCC38", "HCC226"])
        >>> v.prefixes([[1, 0, 2]], [[1], [2], [3]], [[1, 1, 1]]).round(3).tolist()
        [[0.166], [0.166], [0.638]]
        """
        from .payment_kernels import prefix_payments

        order = np.atleast_2d(np.asarray(order))
        labels = np.asarray(labels, dtype=bool)
        index = np.atleast_2d(np.asarray(index))
        if order.shape != labels.shape or index.shape[1:] != order.shape[:1]:
            raise ValueError(f"prefixes: expected order (N, K), index (T, N) and labels (N, K), got {order.shape}, "
                             f"{index.shape} and {labels.shape}")
        cells, known = self._row_context(labels.shape[0])
        return prefix_payments(self._tables, order, index, labels, known, cells) * self.factor

    def proxy(self, selected, probs):
        """Vhat(S; x) = E[V(S; y)], y_k ~ Bernoulli(p_k) independent: exact (no sampling).

        ``probs`` (K,) with ``selected`` (K,) or (M, K) gives a scalar or (M,) (one patient;
        a context of one row or none); ``probs`` (N, K) with ``selected`` (N, K) gives (N,).
        """
        from .payment_kernels import proxy_sets

        probs = np.asarray(probs, dtype=float)
        selected = np.asarray(selected, dtype=bool)
        lead, (sel, p), cells, known = self._rows([selected, probs])
        return (proxy_sets(self._tables, sel, p, known, cells) * self.factor).reshape(lead)

    def weights_for(self, n_codes: int) -> np.ndarray:
        """Each code's own coefficient (alone on the record), in the value's units (one cell only).

        The ``value`` universe ranks by p_k times these; with several cells it is refused."""
        if n_codes != len(self.codes):
            raise ValueError(f"CmsHccValue has {len(self.codes)} codes, got K = {n_codes}")
        used = np.unique(self._cell_index) if self._cell_index is not None else np.zeros(1, dtype=np.int64)
        if len(used) != 1:
            raise ValueError("the per-code weights of a CmsHccValue differ by cell; with several cells use the "
                             "ratio or prob universe")
        return self._tables.hcc_coef[int(used[0])] * self.factor

    def proxy_extensions(self, base, candidates, probs) -> np.ndarray:
        """Vhat(S ∪ {k}) for every code k in ``candidates``, one patient (the reference greedy's call)."""
        base = np.asarray(base, dtype=bool)
        candidates = np.asarray(candidates, dtype=np.int64)
        trials = np.repeat(base[None, :], len(candidates), axis=0)
        trials[np.arange(len(candidates)), candidates] = True
        return np.asarray(self.proxy(trials, probs), dtype=float).reshape(len(candidates))

    def sequences(self, probs, cost_steps, order=None, tolerance: float = GAIN_TOLERANCE):
        """Greedy ratio orders (or Vhat of the prefixes of ``order``), compiled: (order (N, K), vhat (N, K + 1)).

        The hook :func:`favmac.universe.general_sequences` calls. Each step adds
        argmax_k (Vhat(S + k) - Vhat(S)) / cost_steps[k], ties to the lowest code index; gains
        are computed in raw RAF units (so the order does not depend on adjustments or base rate).
        """
        from .payment_kernels import payment_sequences

        probs = np.atleast_2d(np.asarray(probs, dtype=float))
        cells, known = self._context(probs.shape[0])
        out_order, vhat = payment_sequences(self._tables, probs, known, cells, cost_steps, tolerance, order)
        return out_order, vhat * self.factor

    # ------------------------------------------------------------------ explanation
    def breakdown(self, selected, labels=None, row: int = 0):
        """Per-code marginal payment of one patient's set, and what the set triggers.

        Parameters
        ----------
        selected : (K,) bool
            The chosen set S of patient ``row`` (of this value's context).
        labels : (K,) 0/1, optional
            True labels: the set scored is then S ∩ y (confirmed flags); else S itself.

        Returns
        -------
        dict with ``codes`` (a list of dicts, one per code of the set: ``code``, ``alone``
        (V of the code alone), ``marginal`` (V(set) - V(set without it)), ``removed_by`` (codes
        of the set or the record that rank above it in its family, or None)), ``interactions``
        (names of the interactions the set with the known codes triggers), ``count`` (number of
        payment HCCs after hierarchies) and ``value`` (V of the whole set).
        """
        one = self.take(row)
        selected = np.asarray(selected, dtype=bool)
        present = selected if labels is None else selected & np.asarray(labels, dtype=bool)
        _, known = one._context(1)
        known = known[0]
        trues = np.ones_like(present)
        members = np.flatnonzero(present)
        t = self._tables
        full = known | present
        rows = []
        total = float(one(present, trues))
        for k in members:
            without = present.copy()
            without[k] = False
            alone = np.zeros_like(present)
            alone[k] = True
            f = t.code_fam[k]
            removed = []
            for j in t.families[f]:
                if j != k and full[j]:
                    pair = (1 << int(t.code_bit[j])) | (1 << int(t.code_bit[k]))
                    if not (int(t.sub_alive[t.sub_ptr[f] + pair]) >> int(t.code_bit[k])) & 1:
                        removed.append(self.codes[j])
            rows.append({"code": self.codes[k], "alone": float(one(alone, trues)),
                         "marginal": total - float(one(without, trues)), "removed_by": removed or None})
        hits, count = self._triggered(one, full)
        return {"codes": rows, "interactions": hits, "count": count, "value": total}

    def _triggered(self, one, full):
        t = self._tables
        cells, _ = one._context(1)
        atoms = 0
        n = 0
        for f in range(len(t.fam_ptr) - 1):
            local = 0
            for j in range(t.fam_ptr[f], t.fam_ptr[f + 1]):
                if full[t.fam_codes[j]]:
                    local |= 1 << (j - t.fam_ptr[f])
            atoms |= int(t.sub_atoms[t.sub_ptr[f] + local])
            n += int(t.sub_count[t.sub_ptr[f] + local])
        names = []
        for i, name in enumerate(t.inter_names):
            a1, a2 = t.inter_atoms[i]
            if (atoms >> a1) & 1 and (a2 < 0 or (atoms >> a2) & 1) and t.inter_coef[cells[0], i] != 0:
                names.append(name)
        return names, n


class CmsHccCost:
    """Unsupported payment C(S; y) = RAF(D, B ∪ (S \\ y)) - RAF(D, B): what the false flags alone add.

    Built from a :class:`CmsHccValue` (same codes, model, cells, known codes, adjustments and
    units: RAF, or dollars with a base rate); ``proxy`` is exact (the value's proxy with p
    replaced by 1 - p). It is not additive: FavMac, ``replay`` and ``predict_with_threshold``
    calibrate on it through :class:`favmac.costs.SetCosts` (realized costs are exact integers:
    hccinfhir's coefficients have at most 3 decimals, :attr:`raw_scale`, and the payment
    adjustments and base rate are one exact factor, :attr:`unit`); the baselines and the
    distributed engine need an additive cost and refuse it (:meth:`weights_for`).

    >>> v = CmsHccValue(["HCC36", "HCC38"])
    >>> c = CmsHccCost(v)
    >>> round(float(c([True, True], [0, 1])), 3)  # HCC36 is a false flag: it alone adds its coefficient
    0.166
    >>> c.raw_unsupported([True, True], [0, 1]).tolist(), c.unit
    (166, Fraction(1, 1000))
    """

    is_additive = False
    kind = "cost"
    #: The name of this cost in messages, the settings file and the app.
    label = "unsupported payment"

    def __init__(self, value: CmsHccValue):
        if not isinstance(value, CmsHccValue):
            raise TypeError("CmsHccCost is built from a CmsHccValue")
        self.value = value

    def take(self, rows) -> "CmsHccCost":
        return CmsHccCost(self.value.take(rows))

    def with_value(self, value) -> "CmsHccCost":
        """The unsupported payment of ``value``'s members (e.g. the value bound to some patients)."""
        return self if value is self.value else CmsHccCost(value)

    @property
    def n_rows(self):
        return self.value.n_rows

    @property
    def units(self) -> str:
        return self.value.units

    def settings(self) -> dict:
        """The value's model, year, cells, adjustments and units (provenance)."""
        return {"cost": "unsupported payment", **self.value.settings()}

    def __call__(self, selected, labels):
        return self.value(selected, ~np.asarray(labels, dtype=bool))

    def proxy(self, selected, probs):
        return self.value.proxy(selected, 1.0 - np.asarray(probs, dtype=float))

    # ------------------------------------------------------------------ exact integers
    @property
    def raw_scale(self) -> int:
        """10^d making every coefficient of the model's tables an integer (1000: 3 decimals)."""
        from .thresholds import common_scale

        return common_scale(model_tables(self.value.model, self.value.year).coefficients.values())

    @property
    def unit(self):
        """Cost units per raw integer, exactly: (1 - coding_intensity) / normalization (x base rate) / raw_scale."""
        from .thresholds import exact

        v = self.value
        factor = (1 - exact(v.coding_intensity)) / exact(v.normalization)
        if v.base_rate is not None:
            factor *= exact(v.base_rate)
        return factor / self.raw_scale

    def raw_unsupported(self, selected, labels) -> np.ndarray:
        """C(S; y) in raw integers (RAF x :attr:`raw_scale`, no adjustment), exactly; same shapes as ``__call__``."""
        from .payment_kernels import raf_sets

        v = self.value
        lead, (sel, lab), cells, known = v._rows([np.asarray(selected, dtype=bool), np.asarray(labels, dtype=bool)])
        diff = raf_sets(v._tables, known | (sel & ~lab), cells) - raf_sets(v._tables, known, cells)
        # sums of a few dozen coefficients k / raw_scale: the float error is far below 1 / (2 raw_scale)
        return np.rint(diff * self.raw_scale).astype(np.int64).reshape(lead)

    def raw_max(self) -> int:
        """An upper bound on C(S; y) of every member of the value's cells, any B, S, y (raw integers).

        RAF is not monotone in CMS's tables (docs/payment.md), so RAF(all) - RAF(B) need not be
        the largest cost; this bound is max RAF - min RAF over all sets: per family the largest
        (smallest) coefficient sum of its subsets, every positive (negative) interaction, the
        largest (smallest) coefficient of a count the K codes can reach; the largest over the cells.
        """
        t, s = self.value._tables, self.raw_scale
        ints = lambda a: np.rint(np.asarray(a) * s).astype(np.int64)  # noqa: E731
        best = 0
        for cell in range(t.sub_coef.shape[0]):
            coef = ints(t.sub_coef[cell])
            hi = lo = 0
            for f in range(len(t.sub_ptr) - 1):
                block = coef[t.sub_ptr[f] : t.sub_ptr[f + 1]]
                hi, lo = hi + int(block.max()), lo + int(block.min())
            inter = ints(t.inter_coef[cell]) if t.inter_coef.size else np.zeros(0, dtype=np.int64)
            hi += int(inter[inter > 0].sum())
            lo += int(inter[inter < 0].sum())
            count = ints(t.count_coef[cell][: len(self.value.codes) + 1])  # at most K payment HCCs survive
            hi, lo = hi + int(count.max()), lo + int(count.min())
            best = max(best, hi - lo)
        return best

    def prefix_proxies(self, probs, order) -> np.ndarray:
        """Chat of the prefixes of ``order`` (N, K) per patient, (N, K + 1), compiled (the value's kernel at 1 - p)."""
        probs = np.atleast_2d(np.asarray(probs, dtype=float))
        _, chat = self.value.sequences(1.0 - probs, np.zeros_like(probs), order)
        return chat

    def joint_sequences(self, value, probs, tolerance: float = GAIN_TOLERANCE):
        """The ratio universe of ``value`` (this cost's payment value, same members) with this cost, compiled:
        (order (N, K), Vhat (N, K + 1), Chat (N, K + 1)); None for another value (the numpy path then runs).

        Each step adds argmax_k (Vhat(S + k) - Vhat(S)) / (Chat(S + k) - Chat(S)), both exact
        (:mod:`favmac.cost_kernels`)."""
        mine = self.value
        if not isinstance(value, CmsHccValue) or value._tables is not mine._tables:
            return None
        probs = np.atleast_2d(np.asarray(probs, dtype=float))
        cells, known = value._context(probs.shape[0])
        other_cells, other_known = mine._context(probs.shape[0])
        if not (np.array_equal(cells, other_cells) and np.array_equal(known, other_known)):
            return None
        from .cost_kernels import payment_cost_sequences

        order, vhat, chat = payment_cost_sequences(value._tables, probs, known, cells, tolerance)
        return order, vhat * value.factor, chat * mine.factor

    def weights_for(self, n_codes: int):
        raise ValueError("the unsupported-payment cost (CmsHccCost) is not additive: this method needs per-code cost "
                         "weights (an AdditiveCost, e.g. weighted false flags). FavMac, replay and prediction take the "
                         "unsupported-payment cost; the baselines (ClassWise, InnerSet, FPCP, CRC, RCPS) and the "
                         "distributed engine do not.")

    def __repr__(self):
        return f"CmsHccCost({self.value!r})"
