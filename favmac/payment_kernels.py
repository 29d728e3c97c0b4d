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

import numpy as np
from numba import njit

from .formula_kernels import lowest_tied, offer

__all__ = ["raf_sets", "proxy_sets", "payment_sequences"]

_CAP = 10


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
    total += count_coef[cell, min(n, _CAP)]
    return total


@njit(cache=True)
def _raf_many(sets, cells, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, inter_coef,
              count_coef, out):
    for r in range(sets.shape[0]):
        out[r] = _raf(sets[r], cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
                      inter_coef, count_coef)


def raf_sets(t, sets, cells) -> np.ndarray:
    """RAF (disease part, raw units) of each row of ``sets`` (R, K) bool, cell index ``cells`` (R,)."""
    sets = np.ascontiguousarray(sets, dtype=np.bool_)
    out = np.empty(sets.shape[0])
    _raf_many(sets, np.ascontiguousarray(cells, dtype=np.int64), t.fam_ptr, t.fam_codes, t.sub_ptr, t.sub_count,
              t.sub_atoms, t.sub_coef, t.inter_atoms, t.inter_coef, t.count_coef, out)
    return out


@njit(cache=True)
def _family(f, uncertain, fixed, p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
            fi_ptr, fi_idx, dist, m1, m2, m12):
    """Family f's summary for the uncertain local mask and the fixed (known) local mask.

    Writes ``dist`` (11,) and, for the interactions touching f (their slot in fi_idx order),
    m1/m2/m12 (len >= touching); returns the expected coefficient sum."""
    start = fam_ptr[f]
    size = fam_ptr[f + 1] - start
    bits = np.empty(size, dtype=np.int64)
    u = 0
    for b in range(size):
        if (uncertain >> b) & 1:
            bits[u] = b
            u += 1
    for n in range(_CAP + 1):
        dist[n] = 0.0
    n_touch = fi_ptr[f + 1] - fi_ptr[f]
    for s in range(n_touch):
        m1[s] = 0.0
        m2[s] = 0.0
        m12[s] = 0.0
    ecoef = 0.0
    for pattern in range(1 << u):
        prob = 1.0
        local = fixed
        for j in range(u):
            q = p[fam_codes[start + bits[j]]]
            if (pattern >> j) & 1:
                prob *= q
                local |= 1 << bits[j]
            else:
                prob *= 1.0 - q
        row = sub_ptr[f] + local
        ecoef += prob * sub_coef[cell, row]
        dist[min(sub_count[row], _CAP)] += prob
        hits = sub_atoms[row]
        for s in range(n_touch):
            i = fi_idx[fi_ptr[f] + s]
            miss1 = ((hits >> inter_atoms[i, 0]) & 1) == 0
            a2 = inter_atoms[i, 1]
            miss2 = a2 >= 0 and ((hits >> a2) & 1) == 0
            if miss1:
                m1[s] += prob
            if miss2:
                m2[s] += prob
            if miss1 and miss2:
                m12[s] += prob
    return ecoef


@njit(cache=True)
def _convolve(a, b, out):
    for n in range(_CAP + 1):
        out[n] = 0.0
    for i in range(_CAP + 1):
        if a[i] == 0.0:
            continue
        for j in range(_CAP + 1):
            if b[j] != 0.0:
                out[min(i + j, _CAP)] += a[i] * b[j]


@njit(cache=True)
def _slot(f, i, fi_ptr, fi_idx):
    for s in range(fi_ptr[f], fi_ptr[f + 1]):
        if fi_idx[s] == i:
            return s - fi_ptr[f]
    return -1


@njit(cache=True)
def _expected(uncertain, fixed, p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms,
              inter_coef, fi_ptr, fi_idx, count_coef, n_inter):
    """E[RAF] for per-family uncertain/fixed local masks (the whole expectation, one patient)."""
    n_fam = len(fam_ptr) - 1
    total = 0.0
    dist = np.empty(_CAP + 1)
    tmp = np.empty(_CAP + 1)
    acc = np.zeros(_CAP + 1)
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
    for f in range(n_fam):
        total += _family(f, uncertain[f], fixed[f], p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                         sub_coef, inter_atoms, fi_ptr, fi_idx, dist, m1, m2, m12)
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
    for n in range(_CAP + 1):
        total += acc[n] * count_coef[cell, n]
    return total


@njit(cache=True)
def _masks(selected, known, code_fam, code_bit, n_fam, uncertain, fixed):
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
        _masks(selected[r], known[r], code_fam, code_bit, n_fam, uncertain, fixed)
        e = _expected(uncertain, fixed, probs[r], cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                      sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, count_coef, n_inter)
        base = _expected(empty, fixed, probs[r], cells[r], fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                         sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, count_coef, n_inter)
        out[r] = e - base


def proxy_sets(t, selected, probs, known, cells) -> np.ndarray:
    """E[RAF(B ∪ (S ∩ y))] - RAF(B), raw units, for rows of ``selected``/``probs``/``known`` (R, K)."""
    out = np.empty(selected.shape[0])
    _proxy_many(np.ascontiguousarray(selected, dtype=np.bool_), np.ascontiguousarray(probs, dtype=np.float64),
                np.ascontiguousarray(known, dtype=np.bool_), np.ascontiguousarray(cells, dtype=np.int64), t.code_fam,
                t.code_bit, t.fam_ptr, t.fam_codes, t.sub_ptr, t.sub_count, t.sub_atoms, t.sub_coef, t.inter_atoms,
                t.inter_coef, t.fi_ptr, t.fi_idx, t.count_coef, out)
    return out


@njit(cache=True)
def _convolve_into(a, b, b_len, out):
    """out = a (*) b (capped), b supported on 0 .. b_len - 1."""
    for n in range(_CAP + 1):
        out[n] = 0.0
    for i in range(_CAP + 1):
        ai = a[i]
        if ai == 0.0:
            continue
        for j in range(b_len):
            if b[j] != 0.0:
                out[min(i + j, _CAP)] += ai * b[j]


@njit(cache=True)
def _count_weights(rest, count_coef, cell, size, out):
    """out[m] = E[c(N_rest + m)] for m = 0 .. size."""
    for m in range(size + 1):
        w = 0.0
        for n in range(_CAP + 1):
            if rest[n] != 0.0:
                w += rest[n] * count_coef[cell, min(n + m, _CAP)]
        out[m] = w


@njit(cache=True)
def _sequences(probs, known, cells, cost_steps, fixed_order, greedy, tolerance, code_fam, code_bit, fam_ptr, fam_codes,
               sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, if_ptr, if_idx,
               if_slot, count_coef, out_order, out_vhat):
    n_patients, n_codes = probs.shape
    n_fam = len(fam_ptr) - 1
    width = 1
    for f in range(n_fam):
        width = max(width, fi_ptr[f + 1] - fi_ptr[f])
    uncertain = np.zeros(n_fam, dtype=np.int64)
    fixed = np.zeros(n_fam, dtype=np.int64)
    trivial = np.zeros(n_fam, dtype=np.bool_)
    ecoef = np.zeros(n_fam)
    dist = np.zeros((n_fam, _CAP + 1))
    m1 = np.ones((n_fam, width))
    m2 = np.ones((n_fam, width))
    m12 = np.ones((n_fam, width))
    # each candidate's family summary after adding it (valid until its family changes)
    c_ecoef = np.zeros(n_codes)
    c_dist = np.zeros((n_codes, _CAP + 1))
    c_m1 = np.ones((n_codes, width))
    c_m2 = np.ones((n_codes, width))
    c_m12 = np.ones((n_codes, width))
    valid = np.zeros(n_codes, dtype=np.bool_)
    nontrivial = np.empty(n_fam, dtype=np.int64)
    position = np.full(n_fam, -1, dtype=np.int64)
    prefix = np.zeros((n_fam + 1, _CAP + 1))
    suffix = np.zeros((n_fam + 1, _CAP + 1))
    rest = np.empty(_CAP + 1)
    weight = np.zeros((n_fam, _CAP + 1))
    weight_total = np.zeros(_CAP + 1)
    has_candidates = np.zeros(n_fam, dtype=np.bool_)
    chosen = np.zeros(n_codes, dtype=np.bool_)
    gains = np.empty(n_codes)
    keys = np.empty(n_codes)
    empty = np.zeros(n_fam, dtype=np.int64)
    largest = 0  # the largest family, capped: how far a family's count distribution reaches
    for f in range(n_fam):
        largest = min(max(largest, fam_ptr[f + 1] - fam_ptr[f]), _CAP)
    for i in range(n_patients):
        p = probs[i]
        cell = cells[i]
        chosen[:] = False
        valid[:] = False
        _masks(chosen, known[i], code_fam, code_bit, n_fam, empty, fixed)
        for f in range(n_fam):
            uncertain[f] = 0
            ecoef[f] = _family(f, 0, fixed[f], p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
                               inter_atoms, fi_ptr, fi_idx, dist[f], m1[f], m2[f], m12[f])
            trivial[f] = dist[f, 0] == 1.0
        current = 0.0
        out_vhat[i, 0] = 0.0
        for step in range(n_codes):
            for f in range(n_fam):
                has_candidates[f] = False
            if greedy:
                for k in range(n_codes):
                    if not chosen[k]:
                        has_candidates[code_fam[k]] = True
            else:
                has_candidates[code_fam[fixed_order[i, step]]] = True
            # N's distribution without family f: prefix / suffix convolutions over the non-trivial families
            n_l = 0
            for f in range(n_fam):
                position[f] = -1
                if not trivial[f]:
                    position[f] = n_l
                    nontrivial[n_l] = f
                    n_l += 1
            prefix[0, :] = 0.0
            prefix[0, 0] = 1.0
            for j in range(n_l):
                f = nontrivial[j]
                _convolve_into(prefix[j], dist[f], fam_ptr[f + 1] - fam_ptr[f] + 1, prefix[j + 1])
            needs_rest = False  # a non-trivial family with candidates needs N without itself
            for j in range(n_l):
                needs_rest = needs_rest or has_candidates[nontrivial[j]]
            if needs_rest:
                suffix[n_l, :] = 0.0
                suffix[n_l, 0] = 1.0
                for j in range(n_l - 1, -1, -1):
                    f = nontrivial[j]
                    _convolve_into(suffix[j + 1], dist[f], fam_ptr[f + 1] - fam_ptr[f] + 1, suffix[j])
            _count_weights(prefix[n_l], count_coef, cell, largest, weight_total)
            for f in range(n_fam):
                if has_candidates[f] and not trivial[f]:
                    j = position[f]
                    _convolve_into(prefix[j], suffix[j + 1], _CAP + 1, rest)
                    _count_weights(rest, count_coef, cell, min(fam_ptr[f + 1] - fam_ptr[f], _CAP), weight[f])
            best = -1
            best_key = -math.inf
            first = 0
            last = n_codes
            if not greedy:
                first = fixed_order[i, step]
                last = first + 1
            for k in range(first, last):
                if chosen[k]:
                    continue
                f = code_fam[k]
                gain = 0.0
                if not known[i, k]:
                    if not valid[k]:
                        c_ecoef[k] = _family(f, uncertain[f] | (1 << code_bit[k]), fixed[f], p, cell, fam_ptr,
                                             fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, fi_ptr,
                                             fi_idx, c_dist[k], c_m1[k], c_m2[k], c_m12[k])
                        valid[k] = True
                    gain = c_ecoef[k] - ecoef[f]
                    for s in range(fi_ptr[f + 1] - fi_ptr[f]):
                        inter = fi_idx[fi_ptr[f] + s]
                        o1 = 1.0
                        o2 = 1.0
                        o12 = 1.0
                        for e in range(if_ptr[inter], if_ptr[inter + 1]):
                            g = if_idx[e]
                            if g == f:
                                continue
                            sg = if_slot[e]
                            o1 *= m1[g, sg]
                            o2 *= m2[g, sg]
                            o12 *= m12[g, sg]
                        if inter_atoms[inter, 1] < 0:
                            delta = o1 * (m1[f, s] - c_m1[k, s])
                        else:
                            delta = o1 * (m1[f, s] - c_m1[k, s]) + o2 * (m2[f, s] - c_m2[k, s]) + o12 * (
                                c_m12[k, s] - m12[f, s])
                        gain += inter_coef[cell, inter] * delta
                    size = min(fam_ptr[f + 1] - fam_ptr[f], _CAP)
                    for m in range(size + 1):
                        w = weight_total[m] if trivial[f] else weight[f, m]
                        gain += (c_dist[k, m] - dist[f, m]) * w
                best, best_key = offer(k, gain, cost_steps[i, k], tolerance, current, gains, keys, best, best_key)
            if greedy:
                best = lowest_tied(best, best_key, chosen, keys, gains, cost_steps[i], tolerance * max(1.0, abs(current)))
            chosen[best] = True
            out_order[i, step] = best
            if not known[i, best]:
                f = code_fam[best]
                uncertain[f] |= 1 << code_bit[best]
                ecoef[f] = c_ecoef[best]
                dist[f, :] = c_dist[best]
                m1[f, :] = c_m1[best]
                m2[f, :] = c_m2[best]
                m12[f, :] = c_m12[best]
                trivial[f] = dist[f, 0] == 1.0
                for j in range(fam_ptr[f], fam_ptr[f + 1]):
                    valid[fam_codes[j]] = False
            current += gains[best]
            out_vhat[i, step + 1] = current


def payment_sequences(t, probs, known, cells, cost_steps, tolerance, order=None):
    """Greedy ratio orders (or the prefixes of ``order``) and raw-unit Vhat of every prefix.

    Returns (order int64 (N, K), vhat float (N, K + 1)); vhat[:, 0] = 0.
    """
    probs = np.ascontiguousarray(probs, dtype=np.float64)
    n_patients, n_codes = probs.shape
    out_order = np.empty((n_patients, n_codes), dtype=np.int64)
    out_vhat = np.empty((n_patients, n_codes + 1))
    greedy = order is None
    fixed_order = np.zeros((0, n_codes), dtype=np.int64) if greedy else np.ascontiguousarray(order, dtype=np.int64)
    _sequences(probs, np.ascontiguousarray(known, dtype=np.bool_), np.ascontiguousarray(cells, dtype=np.int64),
               np.ascontiguousarray(cost_steps, dtype=np.float64), fixed_order, greedy, float(tolerance), t.code_fam,
               t.code_bit, t.fam_ptr, t.fam_codes, t.sub_ptr, t.sub_count, t.sub_atoms, t.sub_coef, t.inter_atoms,
               t.inter_coef, t.fi_ptr, t.fi_idx, t.if_ptr, t.if_idx, t.if_slot, t.count_coef, out_order, out_vhat)
    return out_order, out_vhat
