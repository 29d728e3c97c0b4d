"""The payment value's greedy universe as it was before the incremental kernel (favmac.payment_kernels).

Kept for the tests only: the fast kernel (``payment_sequences``) must give the same orders and
the same Vhat (to round-off) as this one, which recomputes every candidate's gain from the
family summaries at every step. Same arguments and outputs as ``payment_sequences``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from favmac.formula_kernels import lowest_tied, offer
from favmac.payment_kernels import COUNT_CAP, family_summary, family_masks, family_patterns

@njit(cache=True)
def convolve_into(a, b, b_len, out):
    """out = a (*) b (capped), b supported on 0 .. b_len - 1."""
    for n in range(COUNT_CAP + 1):
        out[n] = 0.0
    for i in range(COUNT_CAP + 1):
        ai = a[i]
        if ai == 0.0:
            continue
        for j in range(b_len):
            if b[j] != 0.0:
                out[min(i + j, COUNT_CAP)] += ai * b[j]


@njit(cache=True)
def _count_weights(rest, count_coef, cell, size, out):
    """out[m] = E[c(N_rest + m)] for m = 0 .. size."""
    for m in range(size + 1):
        w = 0.0
        for n in range(COUNT_CAP + 1):
            if rest[n] != 0.0:
                w += rest[n] * count_coef[cell, min(n + m, COUNT_CAP)]
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
    dist = np.zeros((n_fam, COUNT_CAP + 1))
    m1 = np.ones((n_fam, width))
    m2 = np.ones((n_fam, width))
    m12 = np.ones((n_fam, width))
    # each candidate's family summary after adding it (valid until its family changes)
    c_ecoef = np.zeros(n_codes)
    c_dist = np.zeros((n_codes, COUNT_CAP + 1))
    c_m1 = np.ones((n_codes, width))
    c_m2 = np.ones((n_codes, width))
    c_m12 = np.ones((n_codes, width))
    valid = np.zeros(n_codes, dtype=np.bool_)
    nontrivial = np.empty(n_fam, dtype=np.int64)
    position = np.full(n_fam, -1, dtype=np.int64)
    prefix = np.zeros((n_fam + 1, COUNT_CAP + 1))
    suffix = np.zeros((n_fam + 1, COUNT_CAP + 1))
    rest = np.empty(COUNT_CAP + 1)
    weight = np.zeros((n_fam, COUNT_CAP + 1))
    weight_total = np.zeros(COUNT_CAP + 1)
    has_candidates = np.zeros(n_fam, dtype=np.bool_)
    chosen = np.zeros(n_codes, dtype=np.bool_)
    gains = np.empty(n_codes)
    keys = np.empty(n_codes)
    empty = np.zeros(n_fam, dtype=np.int64)
    weights, locals_ = family_patterns(fam_ptr)
    largest = 0  # the largest family, capped: how far a family's count distribution reaches
    for f in range(n_fam):
        largest = min(max(largest, fam_ptr[f + 1] - fam_ptr[f]), COUNT_CAP)
    for i in range(n_patients):
        p = probs[i]
        cell = cells[i]
        chosen[:] = False
        valid[:] = False
        family_masks(chosen, known[i], code_fam, code_bit, n_fam, empty, fixed)
        for f in range(n_fam):
            uncertain[f] = 0
            ecoef[f] = family_summary(f, 0, fixed[f], p, cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
                               inter_atoms, fi_ptr, fi_idx, dist[f], m1[f], m2[f], m12[f], weights, locals_)
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
                convolve_into(prefix[j], dist[f], fam_ptr[f + 1] - fam_ptr[f] + 1, prefix[j + 1])
            needs_rest = False  # a non-trivial family with candidates needs N without itself
            for j in range(n_l):
                needs_rest = needs_rest or has_candidates[nontrivial[j]]
            if needs_rest:
                suffix[n_l, :] = 0.0
                suffix[n_l, 0] = 1.0
                for j in range(n_l - 1, -1, -1):
                    f = nontrivial[j]
                    convolve_into(suffix[j + 1], dist[f], fam_ptr[f + 1] - fam_ptr[f] + 1, suffix[j])
            _count_weights(prefix[n_l], count_coef, cell, largest, weight_total)
            for f in range(n_fam):
                if has_candidates[f] and not trivial[f]:
                    j = position[f]
                    convolve_into(prefix[j], suffix[j + 1], COUNT_CAP + 1, rest)
                    _count_weights(rest, count_coef, cell, min(fam_ptr[f + 1] - fam_ptr[f], COUNT_CAP), weight[f])
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
                        c_ecoef[k] = family_summary(f, uncertain[f] | (1 << code_bit[k]), fixed[f], p, cell, fam_ptr,
                                             fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef, inter_atoms, fi_ptr,
                                             fi_idx, c_dist[k], c_m1[k], c_m2[k], c_m12[k], weights, locals_)
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
                    size = min(fam_ptr[f + 1] - fam_ptr[f], COUNT_CAP)
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


def previous_sequences(t, probs, known, cells, cost_steps, tolerance, order=None):
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
