"""Compiled CMS-HCC payment kernels (numba): the RAF of sets, its exact expectation, the greedy.

Tables: :class:`favmac.payment_tables.RestrictedTables`. A set H of the K data codes is read
family by family: its family-local subset index gives the survivors' count, the atoms they
hit and their coefficient sum; then interactions (both atoms hit) and the count variable.

Exact expectation under independent y_k ~ Bernoulli(p_k) (codes in the known set B present
with probability 1): families are independent, so per family the distribution over its
local subsets is enumerated (2^u patterns for u uncertain codes) and reduced to

* ``ecoef``: the expected coefficient sum of its survivors;
* ``dist``: the distribution of its survivor count (0 ... 10, 10 meaning "10 or more");
* per interaction i touching it, ``m1, m2, m12``: the probability that its survivors miss
  atom 1, atom 2, both.

Then E[RAF] = sum ecoef + sum_i coef_i (1 - prod m1 - prod m2 + prod m12) (one-atom
interactions: 1 - prod m1) + sum_n c_n P(N = n), N's distribution being the (capped)
convolution of the families' ``dist``. Nothing is sampled.
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from .formula_kernels import offer

__all__ = ["raf_sets", "proxy_sets", "payment_sequences", "prefix_payments", "set_payments"]

COUNT_CAP = 10
#: 0 as a kernel argument: a literal ``0`` would compile the called kernel once more, for that literal
_ZERO = np.int64(0)

#: ``formula_kernels.offer`` inlined (the greedy runs without reference counting; see :func:`_sequences`)
_offer = njit(inline="always")(offer.py_func)


@njit(cache=True)
def _raf(h, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, inter_coef, count_coef):
    total = 0.0
    atoms = np.int64(0)
    n = 0
    for f in range(len(fam_ptr) - 1):
        local = 0
        for j in range(fam_ptr[f], fam_ptr[f + 1]):
            if h[fam_codes[j]]:
                local |= 1 << (j - fam_ptr[f])
        row = sub_ptr[f] + local
        total += sub_coef[cell, row]
        atoms |= sub_atoms[row]
        n += sub_count[row]
    for i in range(inter_atoms.shape[0]):
        a1 = inter_atoms[i, 0]
        a2 = inter_atoms[i, 1]
        if (atoms >> a1) & 1 and (a2 < 0 or (atoms >> a2) & 1):
            total += inter_coef[cell, i]
    total += count_coef[cell, min(n, COUNT_CAP)]
    return total


@njit(cache=True)
def _raf_many(sets, cells, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, inter_coef,
              count_coef, out):
    for r in range(sets.shape[0]):
        out[r] = _raf(sets[r], cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
                      inter_coef, count_coef)


def _arg(x, dtype) -> np.ndarray:
    """``x`` as a C-contiguous, writeable ``dtype`` array (copied only if need be): numba types a
    read-only array apart, so one would compile every kernel it reaches once more (the app's data
    frames hand out read-only arrays)."""
    out = np.ascontiguousarray(x, dtype=dtype)
    return out if out.flags.writeable else out.copy()


def raf_sets(t, sets, cells) -> np.ndarray:
    """RAF (disease part, raw units) of each row of ``sets`` (R, K) bool, cell index ``cells`` (R,)."""
    sets = _arg(sets, np.bool_)
    out = np.empty(sets.shape[0])
    _raf_many(sets, _arg(cells, np.int64), t.fam_ptr, t.fam_codes, t.sub_ptr, t.sub_count,
              t.sub_atoms, t.sub_coef, t.inter_atoms, t.inter_coef, t.count_coef, out)
    return out


@njit(cache=True, _nrt=False)
def _family_at(f, uncertain, fixed, p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
               fi_ptr, fi_idx, dist, at, m1, m2, m12, m_at, weights, locals_):
    """Family f's summary for the uncertain local mask and the fixed (known) local mask.

    Writes ``dist`` (11,) and, for the interactions touching f (their slot in fi_idx order),
    m1/m2/m12 (len >= touching); returns the expected coefficient sum. ``weights`` and
    ``locals_`` are scratch (>= 2^size): the 2^u outcomes of the u uncertain codes, pattern bit
    j being the j-th uncertain code by local bit, with their probabilities built by doubling
    (each probability is the product of its factors in local-bit order, as a loop over the
    codes would take it) and their local subset index. ``dist`` is written from ``at`` and
    m1/m2/m12 from ``m_at`` (rows of 2-D arrays through flat views: a row view per call would
    cost two reference-count updates)."""
    start = fam_ptr[f]
    size = fam_ptr[f + 1] - start
    weights[0] = 1.0
    locals_[0] = fixed
    n_patterns = 1
    for b in range(size):
        if (uncertain >> b) & 1:
            q = p[fam_codes[start + b]]
            for s in range(n_patterns):
                weights[n_patterns + s] = weights[s] * q
                locals_[n_patterns + s] = locals_[s] | (1 << b)
                weights[s] = weights[s] * (1.0 - q)
            n_patterns *= 2
    for n in range(COUNT_CAP + 1):
        dist[at + n] = 0.0
    n_touch = fi_ptr[f + 1] - fi_ptr[f]
    for s in range(n_touch):
        m1[m_at + s] = 0.0
        m2[m_at + s] = 0.0
        m12[m_at + s] = 0.0
    ecoef = 0.0
    for pattern in range(n_patterns):
        prob = weights[pattern]
        row = sub_ptr[f] + locals_[pattern]
        ecoef += prob * sub_coef[cell, row]
        dist[at + min(sub_count[row], COUNT_CAP)] += prob
        hits = sub_atoms[row]
        for s in range(n_touch):
            i = fi_idx[fi_ptr[f] + s]
            miss1 = ((hits >> inter_atoms[i, 0]) & 1) == 0
            a2 = inter_atoms[i, 1]
            miss2 = a2 >= 0 and ((hits >> a2) & 1) == 0
            if miss1:
                m1[m_at + s] += prob
            if miss2:
                m2[m_at + s] += prob
            if miss1 and miss2:
                m12[m_at + s] += prob
    return ecoef


#: :func:`_family_at` inlined (the greedy's candidate refresh, where a call costs about what the work does)
_family_at_inline = njit(inline="always")(_family_at.py_func)


@njit(cache=True, inline="always")
def family_summary(f, uncertain, fixed, p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
            fi_ptr, fi_idx, dist, m1, m2, m12, weights, locals_):
    """:func:`_family_at` writing ``dist`` (11,) and m1/m2/m12 from their start (``np.int64(uncertain)``: a
    caller's literal 0 would compile the kernel once more, for that literal)."""
    return _family_at(f, np.int64(uncertain), fixed, p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
                      inter_atoms, fi_ptr, fi_idx, dist, _ZERO, m1, m2, m12, _ZERO, weights, locals_)


@njit(cache=True, inline="always")
def family_patterns(fam_ptr):
    """Scratch for :func:`family_summary`: (weights, local indices), 2^size of the largest family each."""
    largest = 0
    for f in range(len(fam_ptr) - 1):
        largest = max(largest, fam_ptr[f + 1] - fam_ptr[f])
    return np.empty(1 << largest), np.empty(1 << largest, dtype=np.int64)


@njit(cache=True)
def _convolve(a, b, out):
    for n in range(COUNT_CAP + 1):
        out[n] = 0.0
    for i in range(COUNT_CAP + 1):
        if a[i] == 0.0:
            continue
        for j in range(COUNT_CAP + 1):
            if b[j] != 0.0:
                out[min(i + j, COUNT_CAP)] += a[i] * b[j]


@njit(cache=True)
def _expected(uncertain, fixed, p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
              inter_coef, fi_ptr, fi_idx, count_coef, n_inter):
    """E[RAF] for per-family uncertain/fixed local masks (the whole expectation, one patient)."""
    n_fam = len(fam_ptr) - 1
    total = 0.0
    dist = np.empty(COUNT_CAP + 1)
    tmp = np.empty(COUNT_CAP + 1)
    acc = np.zeros(COUNT_CAP + 1)
    acc[0] = 1.0
    width = 1
    for f in range(n_fam):
        width = max(width, fi_ptr[f + 1] - fi_ptr[f])
    m1 = np.empty(width)
    m2 = np.empty(width)
    m12 = np.empty(width)
    p1 = np.ones(n_inter)
    p2 = np.ones(n_inter)
    p12 = np.ones(n_inter)
    weights, locals_ = family_patterns(fam_ptr)
    for f in range(n_fam):
        total += family_summary(f, uncertain[f], fixed[f], p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                         sub_coef, inter_atoms, fi_ptr, fi_idx, dist, m1, m2, m12, weights, locals_)
        _convolve(acc, dist, tmp)
        acc[:] = tmp
        for s in range(fi_ptr[f + 1] - fi_ptr[f]):
            i = fi_idx[fi_ptr[f] + s]
            p1[i] *= m1[s]
            p2[i] *= m2[s]
            p12[i] *= m12[s]
    for i in range(n_inter):
        if inter_atoms[i, 1] < 0:
            total += inter_coef[cell, i] * (1.0 - p1[i])
        else:
            total += inter_coef[cell, i] * (1.0 - p1[i] - p2[i] + p12[i])
    for n in range(COUNT_CAP + 1):
        total += acc[n] * count_coef[cell, n]
    return total


@njit(cache=True, inline="always")
def family_masks(selected, known, code_fam, code_bit, n_fam, uncertain, fixed):
    for f in range(n_fam):
        uncertain[f] = 0
        fixed[f] = 0
    for k in range(len(selected)):
        if known[k]:
            fixed[code_fam[k]] |= 1 << code_bit[k]
        elif selected[k]:
            uncertain[code_fam[k]] |= 1 << code_bit[k]


@njit(cache=True)
def _proxy_many(selected, probs, known, cells, code_fam, code_bit, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, count_coef, out):
    n_fam = len(fam_ptr) - 1
    n_inter = inter_atoms.shape[0]
    uncertain = np.zeros(n_fam, dtype=np.int64)
    fixed = np.zeros(n_fam, dtype=np.int64)
    empty = np.zeros(n_fam, dtype=np.int64)
    for r in range(selected.shape[0]):
        family_masks(selected[r], known[r], code_fam, code_bit, n_fam, uncertain, fixed)
        e = _expected(uncertain, fixed, probs[r], cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                      sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, count_coef, n_inter)
        base = _expected(empty, fixed, probs[r], cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                         sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, count_coef, n_inter)
        out[r] = e - base


def proxy_sets(t, selected, probs, known, cells) -> np.ndarray:
    """E[RAF(B ∪ (S ∩ y))] - RAF(B), raw units, for rows of ``selected``/``probs``/``known`` (R, K)."""
    out = np.empty(selected.shape[0])
    _proxy_many(_arg(selected, np.bool_), _arg(probs, np.float64),
                _arg(known, np.bool_), _arg(cells, np.int64), t.code_fam,
                t.code_bit, t.fam_ptr, t.fam_codes, t.sub_ptr, t.sub_count, t.sub_atoms, t.sub_coef, t.inter_atoms,
                t.inter_coef, t.fi_ptr, t.fi_idx, t.count_coef, out)
    return out


@njit(cache=True, _nrt=False)
def _convolve_at(a, a_at, dist, d_at, reach, out, out_at):
    """out = a (*) dist (capped at 10), dist supported on 0 .. reach; each array read or written
    from its offset (rows of 2-D arrays through flat views).

    Each output's products are added in the order of a loop over a's entries, then dist's (the
    sums of accumulating into ``out``, to the bit), one output at a time so that the sum stays in
    a register; written out for a family of at most one survivor (a Bernoulli count, most
    families)."""
    if reach == 1:
        d0 = dist[d_at]
        d1 = dist[d_at + 1]
        out[out_at] = 0.0 + a[a_at] * d0
        for n in range(1, COUNT_CAP):
            out[out_at + n] = (0.0 + a[a_at + n - 1] * d1) + a[a_at + n] * d0
        out[out_at + COUNT_CAP] = ((0.0 + a[a_at + COUNT_CAP - 1] * d1) + a[a_at + COUNT_CAP] * d0) + a[a_at + COUNT_CAP] * d1
        return
    for n in range(COUNT_CAP):
        w = 0.0
        for i in range(max(0, n - reach), n + 1):
            w += a[a_at + i] * dist[d_at + n - i]
        out[out_at + n] = w
    w = 0.0
    for i in range(max(0, COUNT_CAP - reach), COUNT_CAP + 1):
        for j in range(COUNT_CAP - i, reach + 1):
            w += a[a_at + i] * dist[d_at + j]
    out[out_at + COUNT_CAP] = w


#: :func:`_convolve_at` inlined (the greedy's count weights, :func:`_weight_row`)
_convolve_at_inline = njit(inline="always")(_convolve_at.py_func)


@njit(cache=True, inline="always")
def convolve_into(a, dist, reach, out):
    """out = a (*) dist (capped at 10), dist supported on 0 .. reach (:func:`_convolve_at`)."""
    _convolve_at(a, _ZERO, dist, _ZERO, reach, out, _ZERO)


@njit(cache=True, inline="always")
def _fold_back_at(after, after_at, dist, d_at, reach, out, out_at):
    """out[n] = sum_b dist[b] after[min(n + b, 10)]: E[after(n + M)] for a family count M ~ dist
    (summed over b in order; written out for a Bernoulli count; offsets as in :func:`_convolve_at`)."""
    if reach == 1:
        d0 = dist[d_at]
        d1 = dist[d_at + 1]
        for n in range(COUNT_CAP):
            out[out_at + n] = (0.0 + d0 * after[after_at + n]) + d1 * after[after_at + n + 1]
        out[out_at + COUNT_CAP] = (0.0 + d0 * after[after_at + COUNT_CAP]) + d1 * after[after_at + COUNT_CAP]
        return
    for n in range(COUNT_CAP + 1):
        w = 0.0
        for b in range(reach + 1):
            w += dist[d_at + b] * after[after_at + min(n + b, COUNT_CAP)]
        out[out_at + n] = w


@njit(cache=True, _nrt=False)
def _weights_at(before, b_at, after, a_at, reach, out, out_at):
    """out[m] = sum_a before[a] after[min(a + m, 10)] for m = 0 .. reach (offsets as in :func:`_convolve_at`)."""
    for m in range(reach + 1):
        w = 0.0
        for a in range(COUNT_CAP + 1):
            w += before[b_at + a] * after[a_at + min(a + m, COUNT_CAP)]
        out[out_at + m] = w


#: :func:`_weights_at` inlined (the greedy's count weights, :func:`_weight_row`)
_weights_at_inline = njit(inline="always")(_weights_at.py_func)


@njit(cache=True, inline="always")
def weights_from(before, after, reach, out):
    """out[m] = sum_a before[a] after[min(a + m, 10)] for m = 0 .. reach (:func:`_weights_at`)."""
    _weights_at(before, _ZERO, after, _ZERO, reach, out, _ZERO)


@njit(cache=True, inline="always")
def _open_families(n_fam, is_open, trivial, opened, position, w_row, closed, coef, prefix, back, fill, row_ok):
    """Start the count weights W_f[m] = E[c(N without f + m)] over the open families whose count is
    not surely 0 (``opened``, index order; ``position`` of each, -1 for the others).

    Row f of ``w_table`` (``w_row[f]`` = f) holds W_f for those, row ``n_fam`` W_total (every
    other family's). W_f = prefix[j] against back[j + 1], j = f's position: ``prefix[j]`` is
    the count distribution of ``closed`` and opened[0 .. j - 1] (a forward pass of convolutions),
    ``back[j]`` the expected count coefficients after opened[j ..] (a backward pass). They are
    computed on demand (:func:`_weight_row`): ``prefix[j]`` is valid for j <= ``fill[0]``,
    ``back[j]`` for j >= ``fill[1]``; ``fill[2]`` = the number of open families; ``row_ok``
    marks the rows that are up to date."""
    n_open = 0
    for f in range(n_fam):
        w_row[f] = n_fam
        position[f] = -1
        row_ok[f] = False
        if is_open[f] and not trivial[f]:
            opened[n_open] = f
            position[f] = n_open
            w_row[f] = f
            n_open += 1
    row_ok[n_fam] = False
    for n in range(COUNT_CAP + 1):
        prefix[0, n] = closed[n]
        back[n_open, n] = coef[n]
    fill[0] = 0
    fill[1] = n_open
    fill[2] = n_open


@njit(cache=True, inline="always")
def _weight_row(f, n_fam, opened, position, dist, reach, largest, coef, prefix, back, fill, row_ok, w_table):
    """The row of ``w_table`` family f's candidates use, computed first if it is not up to date
    (with the forward and backward steps it needs, :func:`_open_families`). ``dist``, ``prefix``,
    ``back`` and ``w_table`` are flat views of the (rows, 11) arrays."""
    j = position[f]
    row = f if j >= 0 else n_fam
    if row_ok[row]:
        return row
    width = COUNT_CAP + 1
    end = j if j >= 0 else fill[2]
    while fill[0] < end:
        a = fill[0]
        g = opened[a]
        _convolve_at_inline(prefix, a * width, dist, g * width, reach[g], prefix, (a + 1) * width)
        fill[0] = a + 1
    if j < 0:  # W_total
        _weights_at_inline(prefix, end * width, coef, 0, largest, w_table, n_fam * width)
    else:
        while fill[1] > j + 1:
            b = fill[1] - 1
            g = opened[b]
            _fold_back_at(back, (b + 1) * width, dist, g * width, reach[g], back, b * width)
            fill[1] = b
        _weights_at_inline(prefix, j * width, back, (j + 1) * width, reach[f], w_table, f * width)
    row_ok[row] = True
    return row


@njit(cache=True, inline="always")
def _family_changed(f, n_fam, position, fill, row_ok):
    """Family f's count distribution changed (f stays open and not surely 0): the prefixes after it,
    the back passes before it and every row but its own are out of date."""
    j = position[f]
    fill[0] = min(fill[0], j)
    fill[1] = max(fill[1], j + 1)
    for g in range(n_fam + 1):
        if g != f:
            row_ok[g] = False


@njit(cache=True, inline="always")
def interaction_context(f, m1, m2, m12, fi_ptr, fi_idx, if_ptr, if_idx, if_slot, o1, o2, o12):
    """For each interaction touching family f: the other families' products of m1, m2, m12."""
    for s in range(fi_ptr[f + 1] - fi_ptr[f]):
        inter = fi_idx[fi_ptr[f] + s]
        a1 = 1.0
        a2 = 1.0
        a12 = 1.0
        for e in range(if_ptr[inter], if_ptr[inter + 1]):
            g = if_idx[e]
            if g == f:
                continue
            sg = if_slot[e]
            a1 *= m1[g, sg]
            a2 *= m2[g, sg]
            a12 *= m12[g, sg]
        o1[f, s] = a1
        o2[f, s] = a2
        o12[f, s] = a12


@njit(cache=True, inline="always")
def family_fixed_gain(k, f, cell, ecoef, c_ecoef, m1, m2, m12, c_m1, c_m2, c_m12, o1, o2, o12, fi_ptr, fi_idx, inter_atoms,
                inter_coef):
    """Candidate k's gain from its family f's expected coefficients and the interactions touching f
    (``c_*``: f's summary with k added; ``o*``: the other families' products, :func:`interaction_context`)."""
    gain = c_ecoef[k] - ecoef[f]
    for s in range(fi_ptr[f + 1] - fi_ptr[f]):
        inter = fi_idx[fi_ptr[f] + s]
        if inter_atoms[inter, 1] < 0:
            delta = o1[f, s] * (m1[f, s] - c_m1[k, s])
        else:
            delta = o1[f, s] * (m1[f, s] - c_m1[k, s]) + o2[f, s] * (m2[f, s] - c_m2[k, s]) + o12[f, s] * (
                c_m12[k, s] - m12[f, s])
        gain += inter_coef[cell, inter] * delta
    return gain


@njit(cache=True)
def _monotone_counts(fam_ptr, sub_ptr, sub_count):
    """Per family: is its (capped) survivor count non-decreasing in the set of present codes?

    Chains (HCC37/38, CKD 326-329, ...) are; a parent that removes two children which do not
    remove each other is not (docs/payment.md "Monotonicity")."""
    n_fam = len(fam_ptr) - 1
    out = np.ones(n_fam, dtype=np.bool_)
    for f in range(n_fam):
        size = fam_ptr[f + 1] - fam_ptr[f]
        for local in range(1 << size):
            here = min(sub_count[sub_ptr[f] + local], COUNT_CAP)
            for b in range(size):
                if not (local >> b) & 1 and min(sub_count[sub_ptr[f] + (local | (1 << b))], COUNT_CAP) < here:
                    out[f] = False
    return out


@njit(cache=True)
def _marginal_tables(n_codes, fam_ptr, fam_codes, sub_ptr, sub_coef, inter_coef, fi_ptr, fi_idx, count_coef):
    """Per cell, the most one code can add to the RAF through each part of it, whatever else is present.

    Returns ``coef_gain`` (C, K): the largest rise of its family's coefficient sum when the code
    joins any subset of its family; ``inter_gain`` (C, F): sum of |coefficient| of the
    interactions touching the family (adding a code switches each on or off at most once);
    ``magnitude`` (C,): a size of the RAF's terms (for round-off allowances)."""
    n_cells = sub_coef.shape[0]
    n_fam = len(fam_ptr) - 1
    coef_gain = np.full((n_cells, n_codes), -math.inf)
    inter_gain = np.zeros((n_cells, n_fam))
    magnitude = np.ones(n_cells)
    for cell in range(n_cells):
        for f in range(n_fam):
            start = fam_ptr[f]
            size = fam_ptr[f + 1] - start
            largest = 0.0
            for local in range(1 << size):
                here = sub_coef[cell, sub_ptr[f] + local]
                largest = max(largest, abs(here))
                for b in range(size):
                    if not (local >> b) & 1:
                        k = fam_codes[start + b]
                        rise = sub_coef[cell, sub_ptr[f] + (local | (1 << b))] - here
                        coef_gain[cell, k] = max(coef_gain[cell, k], rise)
            magnitude[cell] += largest
            for s in range(fi_ptr[f], fi_ptr[f + 1]):
                inter_gain[cell, f] += abs(inter_coef[cell, fi_idx[s]])
        for i in range(inter_coef.shape[1]):
            magnitude[cell] += abs(inter_coef[cell, i])
        for n in range(COUNT_CAP + 1):
            magnitude[cell] += abs(count_coef[cell, n])
    return coef_gain, inter_gain, magnitude


@njit(cache=True, _nrt=False)
def _count_bounds(p, known_i, cell, fixed, coef, monotone, reach, largest, fam_ptr, fam_codes, sub_ptr, sub_count,
                  sub_atoms, sub_coef, inter_atoms, fi_ptr, fi_idx, weights, locals_, up_dist, s1, s2, s12, acc, tmp,
                  up, lo, rise_up, rise_any):
    """Bounds on the count variables' part of the gains, valid at every step of one patient.

    W_f[m] - W_f[0] = E[D_m(N')] with D_m(a) = c(min(a + m, 10)) - c(a) and N' the (capped)
    survivor count of the families other than f, in any state of the greedy. ``lo[m]`` = min_a
    D_m(a). ``up[m]`` = E[D_m^(N_up)], D_m^ the running maximum of D_m (non-decreasing, so its
    expectation grows with N) and N_up a count that dominates every N' stochastically: the sum
    over families of each family's count with all of its codes added (a family whose count is
    non-decreasing in the present codes: couple the labels) or of its largest possible count (the
    others). For the a-priori bounds (a code adding d = 0 .. r survivors to a monotone family,
    any change of at most r to another): ``rise_up[r]`` = E[max(0, D_1^, ..., D_r^)(N_up)] and
    ``rise_any[r]`` = max(0, max over a and |d| <= r of c(a + d) - c(a)). Returns max_n |c(n)|."""
    n_fam = len(fam_ptr) - 1
    for n in range(COUNT_CAP + 1):
        acc[n] = 0.0
    acc[0] = 1.0
    for f in range(n_fam):
        if monotone[f]:
            mask = 0
            for j in range(fam_ptr[f], fam_ptr[f + 1]):
                c = fam_codes[j]
                if not known_i[c] and p[c] > 0.0:
                    mask |= 1 << (j - fam_ptr[f])
            _family_at_inline(f, mask, fixed[f], p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
                              inter_atoms, fi_ptr, fi_idx, up_dist, 0, s1, s2, s12, 0, weights, locals_)
        else:
            for n in range(COUNT_CAP + 1):
                up_dist[n] = 0.0
            up_dist[reach[f]] = 1.0
        convolve_into(acc, up_dist, reach[f], tmp)
        for n in range(COUNT_CAP + 1):
            acc[n] = tmp[n]
    for n in range(COUNT_CAP + 1):
        tmp[n] = 0.0  # max(0, D_1^, ..., D_m^) so far
    rise_any[0] = 0.0
    for m in range(1, largest + 1):
        running = -math.inf
        lowest = math.inf
        total = 0.0
        rising = 0.0
        worst = rise_any[m - 1]
        for a in range(COUNT_CAP + 1):
            d = coef[min(a + m, COUNT_CAP)] - coef[a]
            running = max(running, d)
            lowest = min(lowest, d)
            total += acc[a] * running
            tmp[a] = max(tmp[a], running)
            rising += acc[a] * tmp[a]
            worst = max(worst, d, coef[max(a - m, 0)] - coef[a])
        up[m] = total
        lo[m] = lowest
        rise_up[m] = rising
        rise_any[m] = worst
    largest_coef = 0.0
    for n in range(COUNT_CAP + 1):
        largest_coef = max(largest_coef, abs(coef[n]))
    return largest_coef


@njit(cache=True, inline="always")
def _gain_bound(fixed_gain, step_dist, k, reach, up, lo, largest_coef):
    """An upper bound on fixed_gain + sum_m step[m] W[m], step = row k of ``step_dist`` (the gain as the
    greedy computes it, in floating point) for any W the patient's steps can produce: sum_m step[m] W[m] =
    (sum_m step[m]) W[0] + sum_{m >= 1} step[m] (W[m] - W[0]), each W[m] - W[0] in [lo[m], up[m]]
    (:func:`_count_bounds`), |W[0]| <= max |c|; plus 1e-11 of the terms' magnitude for round-off
    (which is about 1e-15 of it)."""
    total = 0.0
    magnitude = abs(fixed_gain)
    for m in range(reach + 1):
        total += step_dist[k, m]
        magnitude += abs(step_dist[k, m]) * largest_coef
    bound = fixed_gain + abs(total) * largest_coef
    for m in range(1, reach + 1):
        if step_dist[k, m] > 0.0:
            bound += step_dist[k, m] * up[m]
        else:
            bound += step_dist[k, m] * lo[m]
    return bound + 1e-11 * magnitude


@njit(cache=True)
def _workspace(n_fam, n_codes, width, largest):
    """The greedy's scratch arrays, in the order :func:`_greedy` unpacks them."""
    return (
        np.zeros(n_fam, dtype=np.int64),  # uncertain
        np.zeros(n_fam, dtype=np.int64),  # fixed
        np.zeros(n_fam, dtype=np.bool_),  # trivial: the family's count is 0 for sure
        np.zeros(n_fam, dtype=np.bool_),  # is_open
        np.zeros(n_fam),  # ecoef
        np.zeros((n_fam, COUNT_CAP + 1)),  # dist
        np.ones((n_fam, width)),  # m1
        np.ones((n_fam, width)),  # m2
        np.ones((n_fam, width)),  # m12
        np.ones((n_fam, width)),  # o1: per family and touching interaction: the other families' products
        np.ones((n_fam, width)),  # o2
        np.ones((n_fam, width)),  # o12
        np.zeros(n_fam, dtype=np.bool_),  # context_ok
        np.zeros(n_codes),  # c_ecoef: each candidate's family summary after adding it (valid until its family changes)
        np.zeros((n_codes, COUNT_CAP + 1)),  # c_dist
        np.ones((n_codes, width)),  # c_m1
        np.ones((n_codes, width)),  # c_m2
        np.ones((n_codes, width)),  # c_m12
        np.zeros(n_codes, dtype=np.bool_),  # valid
        np.zeros(n_codes, dtype=np.bool_),  # stale
        np.zeros(n_codes),  # fixed_gain
        np.zeros((n_codes, COUNT_CAP + 1)),  # step_dist
        np.zeros(n_codes, dtype=np.int64),  # code_reach
        np.zeros(n_codes),  # prior: lazy, the a-priori bound on the candidate's gain (any step)
        np.zeros(n_codes),  # bound: lazy, a bound on its gain (prior while stale, then _gain_bound)
        np.zeros(n_codes),  # bound_key
        np.zeros(n_fam, dtype=np.int64),  # w_row
        np.zeros((n_fam + 1, COUNT_CAP + 1)),  # w_table
        np.zeros(n_fam, dtype=np.int64),  # position
        np.zeros(n_fam + 1, dtype=np.bool_),  # row_ok
        np.zeros(3, dtype=np.int64),  # fill
        np.zeros(COUNT_CAP + 1),  # closed
        np.zeros(COUNT_CAP + 1),  # tmp
        np.empty(n_fam, dtype=np.int64),  # opened
        np.zeros((n_fam + 1, COUNT_CAP + 1)),  # prefix
        np.zeros((n_fam + 1, COUNT_CAP + 1)),  # back
        np.zeros(largest + 1),  # up
        np.zeros(largest + 1),  # lo
        np.zeros(largest + 1),  # rise_up
        np.zeros(largest + 1),  # rise_any
        np.zeros(COUNT_CAP + 1),  # up_dist
        np.zeros(COUNT_CAP + 1),  # acc
        np.ones(width),  # s1
        np.ones(width),  # s2
        np.ones(width),  # s12
        np.zeros(n_codes, dtype=np.bool_),  # chosen
        np.zeros(n_codes, dtype=np.bool_),  # idle
        np.empty(n_codes, dtype=np.int64),  # active: the candidates still to add that are not idle, by index
        np.empty(n_codes, dtype=np.int64),  # idle_left: the idle ones, by index
        np.zeros(n_codes, dtype=np.int64),  # evaluated: the stamp of the step that last evaluated it
        np.empty(n_codes),  # gains
        np.empty(n_codes),  # keys
    )


@njit(cache=True)
def _extents(fam_ptr, sub_ptr, sub_count, fi_ptr):
    """(reach, largest, width): per family the most survivors it can have (capped), their maximum, and
    the most interactions touching one family. A kernel of its own: computed inline, the loops' first
    values (the literals 0 and 1) would have numba compile ``_workspace`` and ``_greedy`` twice, once
    for those literals."""
    n_fam = len(fam_ptr) - 1
    width = 1
    for f in range(n_fam):
        width = max(width, fi_ptr[f + 1] - fi_ptr[f])
    reach = np.zeros(n_fam, dtype=np.int64)
    largest = 0
    for f in range(n_fam):
        for row in range(sub_ptr[f], sub_ptr[f + 1]):
            reach[f] = max(reach[f], min(sub_count[row], COUNT_CAP))
        largest = max(largest, reach[f])
    return reach, largest, width


@njit(cache=True, nogil=True)  # nogil: payment_sequences runs row blocks on threads
def _sequences(probs, known, cells, cost_steps, fixed_order, greedy, lazy, tolerance, code_fam, code_bit, fam_ptr,
               fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, if_ptr, if_idx,
               if_slot, count_coef, out_order, out_vhat):
    """:func:`_greedy` with its tables and scratch arrays (allocated here: the greedy itself runs without
    numba's reference counting, which cost a quarter of its time in the inlined helpers' array arguments)."""
    n_patients, n_codes = probs.shape
    n_fam = len(fam_ptr) - 1
    reach, largest, width = _extents(fam_ptr, sub_ptr, sub_count, fi_ptr)
    monotone = _monotone_counts(fam_ptr, sub_ptr, sub_count)
    coef_gain, inter_gain, magnitude = _marginal_tables(n_codes, fam_ptr, fam_codes, sub_ptr, sub_coef, inter_coef,
                                                        fi_ptr, fi_idx, count_coef)
    weights, locals_ = family_patterns(fam_ptr)
    work = _workspace(n_fam, n_codes, width, largest)
    _greedy(probs, known, cells, cost_steps, fixed_order, greedy, lazy, tolerance, code_fam, code_bit, fam_ptr, fam_codes,
            sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, if_ptr, if_idx, if_slot,
            count_coef, out_order, out_vhat, reach, largest, width, monotone, coef_gain, inter_gain, magnitude, weights,
            locals_, work)


@njit(cache=True, inline="always", _nrt=False)
def _drop(items, n, item):
    """Remove ``item`` from ``items[:n]`` keeping the others' order; the new length (``n`` if absent)."""
    for a in range(n):
        if items[a] == item:
            for b in range(a, n - 1):
                items[b] = items[b + 1]
            return n - 1
    return n


@njit(cache=True, nogil=True, _nrt=False)
def _greedy(probs, known, cells, cost_steps, fixed_order, greedy, lazy, tolerance, code_fam, code_bit, fam_ptr, fam_codes,
            sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, if_ptr, if_idx, if_slot,
            count_coef, out_order, out_vhat, reach, largest, width, monotone, coef_gain, inter_gain, magnitude, weights,
            locals_, work):
    """One pass over the patients; each patient's greedy sequence is built incrementally.

    Candidate k of family f gains Vhat(S + k) - Vhat(S) = ``fixed_gain[k]`` (its family's
    expected coefficients and the interaction terms) + sum_m ``step[k, m]`` W_f[m], where
    ``step[k]`` = dist_f after adding k - dist_f now (the family's survivor-count distribution)
    and W_f[m] = E[c(N without f + m)] (the count variables). ``fixed_gain`` and ``step`` change
    only when f changes (f's candidates are then re-enumerated) or a family sharing an
    interaction with f changes (f's interaction context is recomputed): they are cached, and
    ``stale`` marks the candidates to refresh. W changes with the "open"
    families (codes still to add that are not on the record): a family that can no longer change
    is folded once into ``closed``; the open families whose count is not surely 0 are ordered,
    and W_f = (closed and the open families before f) against (the expected count coefficients
    after the open families after f): a forward and a backward pass, computed row by row as the
    evaluated candidates need them and kept while the families they span do not change
    (:func:`_open_families`, :func:`_weight_row`, :func:`_family_changed`); every other family
    uses W_total (row ``n_fam`` of ``w_table``). The helpers are inlined (``inline="always"``; the
    ``*_inline`` twins of kernels used elsewhere too) but for the patient's bounds,
    :func:`_count_bounds`, a kernel of its own (run once per patient): compiled and cached once.

    Which gains a step evaluates (the same gains, to the bit, as evaluating all of them):

    * "idle" candidates (on the record, or p = 0) gain exactly 0 at every step (adding them
      changes no family summary: their outcomes have probability 0 or 1), so their gain and key
      are set once;
    * with ``lazy`` every other candidate has an upper bound on its gain: while it is stale, the
      a-priori bound p_k (the most k can add to its family's coefficients + |coefficients| of the
      interactions touching it + the most it can add through the count variables) from
      :func:`_marginal_tables` and :func:`_count_bounds`; once refreshed, the tighter
      :func:`_gain_bound`. A step evaluates the candidate with the largest bound ratio first, then,
      in index order, every other candidate whose bound could reach the best ratio found so far
      less the tie allowance (refreshing a stale one first, and skipping it if its refreshed bound
      cannot). A candidate skipped that way has a ratio below the maximum and cannot tie with it
      (``lowest_tied``'s rule, applied to the evaluated and idle candidates only), so the argmax,
      its tie break and the gains added to Vhat are those of the full scan. Without ``lazy``
      every stale candidate is refreshed and every gain evaluated at every step.
    """
    n_patients, n_codes = probs.shape
    n_fam = len(fam_ptr) - 1
    (uncertain, fixed, trivial, is_open, ecoef, dist, m1, m2, m12, o1, o2, o12, context_ok, c_ecoef, c_dist, c_m1,
     c_m2, c_m12, valid, stale, fixed_gain, step_dist, code_reach, prior, bound, bound_key, w_row, w_table, position,
     row_ok, fill, closed, tmp, opened, prefix, back, up, lo, rise_up, rise_any, up_dist, acc, s1, s2, s12, chosen,
     idle, active, idle_left, evaluated, gains, keys) = work
    stamp = 0
    largest_coef = 0.0
    # flat views of the (rows, 11) and (rows, width) arrays: the helpers take a row by its offset
    row_len = COUNT_CAP + 1
    dist_flat = dist.reshape(-1)
    m1_flat = m1.reshape(-1)
    m2_flat = m2.reshape(-1)
    m12_flat = m12.reshape(-1)
    c_dist_flat = c_dist.reshape(-1)
    c_m1_flat = c_m1.reshape(-1)
    c_m2_flat = c_m2.reshape(-1)
    c_m12_flat = c_m12.reshape(-1)
    prefix_flat = prefix.reshape(-1)
    back_flat = back.reshape(-1)
    w_flat = w_table.reshape(-1)
    for i in range(n_patients):
        p = probs[i]
        cell = cells[i]
        coef = count_coef[cell]
        known_i = known[i]
        for k in range(n_codes):
            chosen[k] = False
        family_masks(chosen, known_i, code_fam, code_bit, n_fam, uncertain, fixed)
        for n in range(COUNT_CAP + 1):
            closed[n] = 0.0
        closed[0] = 1.0
        for f in range(n_fam):
            ecoef[f] = _family_at_inline(f, 0, fixed[f], p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
                                  inter_atoms, fi_ptr, fi_idx, dist_flat, f * row_len, m1_flat, m2_flat, m12_flat,
                                  f * width, weights, locals_)
            trivial[f] = dist[f, 0] == 1.0
            context_ok[f] = False
            is_open[f] = False
            for j in range(fam_ptr[f], fam_ptr[f + 1]):
                if not known_i[fam_codes[j]]:
                    is_open[f] = True
            if not is_open[f] and not trivial[f]:
                _convolve_at_inline(closed, 0, dist_flat, f * row_len, reach[f], tmp, 0)
                for n in range(COUNT_CAP + 1):
                    closed[n] = tmp[n]
        n_active = 0
        n_idle = 0
        for k in range(n_codes):
            valid[k] = False
            idle[k] = known_i[k] or p[k] == 0.0
            stale[k] = not idle[k]
            if idle[k]:  # gain exactly 0 at every step; the key as ``offer`` makes it
                gains[k] = 0.0
                keys[k] = -math.inf if cost_steps[i, k] == 0.0 else 0.0 / cost_steps[i, k]
                idle_left[n_idle] = k
                n_idle += 1
            else:
                active[n_active] = k
                n_active += 1
        if greedy and lazy and n_active > 0:
            largest_coef = _count_bounds(p, known_i, cell, fixed, coef, monotone, reach, largest, fam_ptr, fam_codes,
                                         sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, fi_ptr, fi_idx, weights,
                                         locals_, up_dist, s1, s2, s12, acc, tmp, up, lo, rise_up, rise_any)
            slack = 1e-10 * magnitude[cell]
            for a in range(n_active):
                k = active[a]
                f = code_fam[k]
                rise = rise_up[reach[f]] if monotone[f] else rise_any[reach[f]]
                prior[k] = p[k] * (coef_gain[cell, k] + inter_gain[cell, f] + rise) + slack
                bound[k] = prior[k]
                den = cost_steps[i, k]
                bound_key[k] = bound[k] / den if den > 0.0 else math.inf
        current = 0.0
        out_vhat[i, 0] = 0.0
        restart = True  # the open families (or the closed ones' distribution) changed: W from scratch
        for step in range(n_codes):
            stamp += 1
            allowance = tolerance * max(1.0, abs(current))
            best = -1
            best_key = -math.inf
            first = -1  # lazy: the candidate with the largest bound on its ratio is evaluated first
            if greedy and lazy:
                first_key = -math.inf
                for a in range(n_active):
                    k = active[a]
                    if first < 0 or bound_key[k] > first_key:
                        first = k
                        first_key = bound_key[k]
            # the candidates this step considers: greedy, ``first`` then the others by index; a given order, its code
            for a in range(-1, n_active if greedy else 0):
                if not greedy:
                    k = fixed_order[i, step]
                    if idle[k]:
                        best = k
                        continue
                elif a < 0:
                    if first < 0:
                        continue
                    k = first
                else:
                    k = active[a]
                    if k == first:
                        continue
                den = cost_steps[i, k]
                prune = greedy and lazy and best >= 0 and den > 0.0 and best_key > -math.inf
                limit = 0.0
                if prune:
                    if best_key == math.inf:
                        continue  # a finite ratio neither beats nor ties +inf
                    reach_key = best_key * den
                    limit = reach_key - allowance - 1e-12 * abs(reach_key)
                    if max(bound[k], 0.0) < limit:
                        continue  # cannot beat or tie the best (0: a gain within the allowance)
                if stale[k]:  # refresh its cached terms
                    f = code_fam[k]
                    if not valid[k]:
                        c_ecoef[k] = _family_at_inline(f, uncertain[f] | (1 << code_bit[k]), fixed[f], p, cell, fam_ptr,
                                                fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, fi_ptr,
                                                fi_idx, c_dist_flat, k * row_len, c_m1_flat, c_m2_flat, c_m12_flat,
                                                k * width, weights, locals_)
                        valid[k] = True
                    if not context_ok[f]:
                        interaction_context(f, m1, m2, m12, fi_ptr, fi_idx, if_ptr, if_idx, if_slot, o1, o2, o12)
                        context_ok[f] = True
                    fixed_gain[k] = family_fixed_gain(k, f, cell, ecoef, c_ecoef, m1, m2, m12, c_m1, c_m2, c_m12, o1, o2, o12,
                                                fi_ptr, fi_idx, inter_atoms, inter_coef)
                    code_reach[k] = reach[f]
                    for m in range(reach[f] + 1):
                        step_dist[k, m] = c_dist[k, m] - dist[f, m]
                    stale[k] = False
                    if greedy and lazy:
                        bound[k] = min(prior[k], _gain_bound(fixed_gain[k], step_dist, k, code_reach[k], up, lo,
                                                             largest_coef))
                        bound_key[k] = bound[k] / den if den > 0.0 else math.inf
                        if prune and max(bound[k], 0.0) < limit:
                            continue
                if restart:
                    restart = False
                    _open_families(n_fam, is_open, trivial, opened, position, w_row, closed, coef, prefix, back, fill,
                                   row_ok)
                gain = fixed_gain[k]
                row = _weight_row(code_fam[k], n_fam, opened, position, dist_flat, reach, largest, coef, prefix_flat,
                                  back_flat, fill, row_ok, w_flat)
                for m in range(code_reach[k] + 1):
                    gain += step_dist[k, m] * w_table[row, m]
                best, best_key = _offer(k, gain, den, tolerance, current, gains, keys, best, best_key)
                evaluated[k] = stamp
            if greedy:
                for a in range(n_idle):  # idle candidates: constant keys, the first of the largest
                    k = idle_left[a]
                    if best < 0 or keys[k] > best_key:
                        best = k
                        best_key = keys[k]
                # the lowest unchosen code whose key ties best_key (formula_kernels.lowest_tied's rule); a
                # candidate that was not evaluated cannot tie
                for k in range(best):
                    if chosen[k] or not (idle[k] or evaluated[k] == stamp):
                        continue
                    if math.isinf(best_key):
                        tied = keys[k] == best_key
                    else:
                        den = cost_steps[i, k]
                        tied = keys[k] == best_key or (den > 0.0 and gains[k] >= best_key * den - allowance)
                    if tied:
                        best = k
                        break
            chosen[best] = True
            out_order[i, step] = best
            if idle[best]:
                n_idle = _drop(idle_left, n_idle, best)
            else:
                n_active = _drop(active, n_active, best)
            if not known_i[best]:
                f = code_fam[best]
                uncertain[f] |= 1 << code_bit[best]
                if not idle[best]:  # p = 0: the family's summary is unchanged, to the bit
                    changed = False
                    for n in range(COUNT_CAP + 1):
                        if dist[f, n] != c_dist[best, n]:
                            changed = True
                    was_trivial = trivial[f]
                    ecoef[f] = c_ecoef[best]
                    for n in range(COUNT_CAP + 1):
                        dist[f, n] = c_dist[best, n]
                    for s in range(fi_ptr[f + 1] - fi_ptr[f]):
                        m1[f, s] = c_m1[best, s]
                        m2[f, s] = c_m2[best, s]
                        m12[f, s] = c_m12[best, s]
                    trivial[f] = dist[f, 0] == 1.0
                    if changed and not restart:
                        if trivial[f] != was_trivial:
                            restart = True
                        elif not trivial[f]:
                            _family_changed(f, n_fam, position, fill, row_ok)
                still_open = False
                for j in range(fam_ptr[f], fam_ptr[f + 1]):
                    c = fam_codes[j]
                    if not (chosen[c] or known_i[c]):
                        valid[c] = False
                        still_open = True
                        if not idle[c]:
                            stale[c] = True
                            bound[c] = prior[c]
                            bound_key[c] = bound[c] / cost_steps[i, c] if cost_steps[i, c] > 0.0 else math.inf
                for s in range(fi_ptr[f], fi_ptr[f + 1]):  # the families sharing an interaction with f
                    inter = fi_idx[s]
                    for e in range(if_ptr[inter], if_ptr[inter + 1]):
                        g = if_idx[e]
                        if g != f and context_ok[g]:
                            context_ok[g] = False
                            for j in range(fam_ptr[g], fam_ptr[g + 1]):
                                c = fam_codes[j]
                                if not (chosen[c] or idle[c]):
                                    stale[c] = True
                                    bound[c] = prior[c]
                                    bound_key[c] = bound[c] / cost_steps[i, c] if cost_steps[i, c] > 0.0 else math.inf
                if not still_open:
                    is_open[f] = False
                    if not trivial[f]:
                        restart = True  # f leaves the open families for the closed ones
                        _convolve_at_inline(closed, 0, dist_flat, f * row_len, reach[f], tmp, 0)
                        for n in range(COUNT_CAP + 1):
                            closed[n] = tmp[n]
            current += gains[best]
            out_vhat[i, step + 1] = current


def payment_sequences(t, probs, known, cells, cost_steps, tolerance, order=None, lazy=True):
    """Greedy ratio orders (or the prefixes of ``order``) and raw-unit Vhat of every prefix.

    Returns (order int64 (N, K), vhat float (N, K + 1)); vhat[:, 0] = 0. ``lazy=False`` evaluates
    every candidate's gain at every step (the same arrays, slower; the tests compare the two).
    """
    probs = _arg(probs, np.float64)
    n_patients, n_codes = probs.shape
    out_order = np.empty((n_patients, n_codes), dtype=np.int64)
    out_vhat = np.empty((n_patients, n_codes + 1))
    greedy = order is None
    fixed_order = np.zeros((0, n_codes), dtype=np.int64) if greedy else _arg(order, np.int64)
    known = _arg(known, np.bool_)
    cells = _arg(cells, np.int64)
    cost_steps = _arg(cost_steps, np.float64)

    def run(rows: slice) -> None:  # each patient's sequence depends on its own row only
        _sequences(probs[rows], known[rows], cells[rows], cost_steps[rows], fixed_order if greedy else fixed_order[rows], greedy,
                   bool(lazy), float(tolerance), t.code_fam, t.code_bit, t.fam_ptr, t.fam_codes, t.sub_ptr, t.sub_count, t.sub_atoms,
                   t.sub_coef, t.inter_atoms, t.inter_coef, t.fi_ptr, t.fi_idx, t.if_ptr, t.if_idx, t.if_slot, t.count_coef,
                   out_order[rows], out_vhat[rows])

    blocks = row_blocks(n_patients)
    if len(blocks) == 1:
        run(blocks[0])
    else:
        with ThreadPoolExecutor(max_workers=len(blocks)) as pool:
            list(pool.map(run, blocks))  # list(): re-raises a block's error here
    return out_order, out_vhat


THREAD_ROWS = 2_000  # fewer patients per thread than this are not worth a thread


def row_blocks(n_rows: int, min_rows: int | None = None) -> list[slice]:
    """Contiguous row blocks, one per available core (at most 8), each of at least ``min_rows`` rows.

    The payment greedy costs tens of microseconds per patient; its kernel releases the GIL, so
    a 100,000-patient batch runs on every core of the machine (results do not depend on the split).

    >>> row_blocks(100, min_rows=2_000)
    [slice(0, 100, None)]
    >>> len(row_blocks(10**6)) == min(8, _cores())
    True
    """
    min_rows = THREAD_ROWS if min_rows is None else min_rows
    n_blocks = max(1, min(_cores(), 8, n_rows // max(min_rows, 1)))
    edges = np.linspace(0, n_rows, n_blocks + 1).round().astype(np.int64)
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@njit(cache=True)
def _prefix_payments(order, index, labels, known, cells, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
                     inter_atoms, inter_coef, count_coef, out):
    """out[t, r] = RAF(B ∪ (S ∩ y)) - RAF(B), S = the first index[t, r] codes of order[r].

    Along a nested sequence the set B ∪ (S ∩ y) grows only at the confirmed codes that are not
    on the record, so the targets of a patient share its RAF per number of such codes: each
    distinct set is evaluated once, by the same ``_raf`` as ``raf_sets``."""
    n_targets, n_rows = index.shape
    n_codes = order.shape[1]
    h = np.zeros(n_codes, dtype=np.bool_)
    hits_at = np.zeros(n_codes + 1, dtype=np.int64)
    by_hits = np.zeros(n_codes + 1)
    done = np.zeros(n_codes + 1, dtype=np.bool_)
    for r in range(n_rows):
        hits = 0
        for j in range(n_codes):
            k = order[r, j]
            if labels[r, k] and not known[r, k]:
                hits += 1
            hits_at[j + 1] = hits
        for n in range(hits + 1):
            done[n] = False
        base = 0.0
        for t in range(n_targets):
            n_hits = hits_at[index[t, r]]
            if n_hits == 0:
                out[t, r] = 0.0
                continue
            if not done[n_hits]:
                for k in range(n_codes):
                    h[k] = known[r, k]
                if not done[0]:
                    base = _raf(h, cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
                                inter_coef, count_coef)
                    done[0] = True
                added = 0
                for j in range(n_codes):
                    if added == n_hits:
                        break
                    k = order[r, j]
                    if labels[r, k] and not known[r, k]:
                        h[k] = True
                        added += 1
                by_hits[n_hits] = _raf(h, cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
                                       inter_atoms, inter_coef, count_coef) - base
                done[n_hits] = True
            out[t, r] = by_hits[n_hits]


def prefix_payments(t, order, index, labels, known, cells) -> np.ndarray:
    """Raw-unit V of the first ``index[t, r]`` codes of ``order[r]`` (T, R), known codes (R, K), cells (R,)."""
    index = _arg(np.atleast_2d(index), np.int64)
    out = np.empty(index.shape)
    _prefix_payments(_arg(order, np.int64), index, _arg(labels, np.bool_),
                     _arg(known, np.bool_), _arg(cells, np.int64), t.fam_ptr,
                     t.fam_codes, t.sub_ptr, t.sub_count, t.sub_atoms, t.sub_coef, t.inter_atoms, t.inter_coef,
                     t.count_coef, out)
    return out


@njit(cache=True)
def _set_payments(selected, labels, known, cells, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
                  inter_atoms, inter_coef, count_coef, out):
    """out[t, r] = RAF(B ∪ (S_tr ∩ y)) - RAF(B) for sets ``selected`` (T, R, K); the record's RAF once
    per patient, and a set equal to the previous target's (after ∩ y, ∪ B) is not evaluated again."""
    n_targets, n_rows, n_codes = selected.shape
    h = np.zeros(n_codes, dtype=np.bool_)
    previous = np.zeros(n_codes, dtype=np.bool_)
    for r in range(n_rows):
        base = _raf(known[r], cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
                    inter_coef, count_coef)
        last = 0.0
        for t in range(n_targets):
            same = t > 0
            for k in range(n_codes):
                h[k] = known[r, k] or (selected[t, r, k] and labels[r, k])
                same = same and h[k] == previous[k]
            if not same:
                last = _raf(h, cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
                            inter_coef, count_coef) - base
                for k in range(n_codes):
                    previous[k] = h[k]
            out[t, r] = last


def set_payments(t, selected, labels, known, cells) -> np.ndarray:
    """Raw-unit V of sets ``selected`` (T, R, K) with labels and known codes (R, K), cells (R,): (T, R)."""
    selected = _arg(selected, np.bool_)
    out = np.empty(selected.shape[:2])
    _set_payments(selected, _arg(labels, np.bool_), _arg(known, np.bool_),
                  _arg(cells, np.int64), t.fam_ptr, t.fam_codes, t.sub_ptr, t.sub_count,
                  t.sub_atoms, t.sub_coef, t.inter_atoms, t.inter_coef, t.count_coef, out)
    return out
