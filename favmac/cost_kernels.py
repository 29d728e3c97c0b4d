"""Compiled greedy ratio universe for the CMS-HCC payment value with the unsupported-payment cost.

Both proxies are expectations of the same RAF under independent labels: Vhat with
y ~ Bernoulli(p), Chat with y ~ Bernoulli(1 - p) (the false flags). Each is kept per family
exactly as :mod:`favmac.payment_kernels` keeps the value's (expected coefficient sum, survivor
count distribution, interaction miss probabilities; its ``family_summary``, ``convolve_into`` and
``weights_from``), one state per side, so each step costs what the value's own greedy step
costs, twice. Each step adds argmax_k gain_V(k) / gain_C(k) with the shared rules of every
compiled greedy (:func:`favmac.formula_kernels.offer` and ``lowest_tied``: round-off-sized gains
are zero, x / 0 = +inf for x > 0, ties to the lowest code index). :func:`favmac.universe.set_cost_candidates`
calls :func:`payment_cost_sequences`; ``tests/test_unsupported_payment.py`` checks it against the
numpy reference (``favmac.universe.joint_greedy``), which tries every code with both exact proxies.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .formula_kernels import lowest_tied, offer
from .payment_kernels import (COUNT_CAP, convolve_into, family_fixed_gain, family_masks, family_patterns, family_summary,
                              interaction_context, weights_from)

__all__ = ["payment_cost_sequences"]


@njit(cache=True)
def _side_gains(p, cell, known_i, chosen, code_fam, code_bit, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, if_ptr, if_idx, if_slot, count_coef, uncertain, fixed,
                trivial, ecoef, dist, m1, m2, m12, c_ecoef, c_dist, c_m1, c_m2, c_m12, valid, largest, gains, scratch_w,
                scratch_l):
    """gains[k] = E[RAF(S + k)] - E[RAF(S)] for every unchosen k, one side (the value's step, payment_kernels)."""
    n_codes = len(chosen)
    n_fam = len(fam_ptr) - 1
    has_candidates = np.zeros(n_fam, dtype=np.bool_)
    for k in range(n_codes):
        if not chosen[k]:
            has_candidates[code_fam[k]] = True
    position = np.full(n_fam, -1, dtype=np.int64)
    nontrivial = np.empty(n_fam, dtype=np.int64)
    n_l = 0
    for f in range(n_fam):
        if not trivial[f]:
            position[f] = n_l
            nontrivial[n_l] = f
            n_l += 1
    prefix = np.zeros((n_fam + 1, COUNT_CAP + 1))
    suffix = np.zeros((n_fam + 1, COUNT_CAP + 1))
    prefix[0, 0] = 1.0
    for j in range(n_l):
        f = nontrivial[j]
        convolve_into(prefix[j], dist[f], min(fam_ptr[f + 1] - fam_ptr[f], COUNT_CAP), prefix[j + 1])
    suffix[n_l, 0] = 1.0
    for j in range(n_l - 1, -1, -1):
        f = nontrivial[j]
        convolve_into(suffix[j + 1], dist[f], min(fam_ptr[f + 1] - fam_ptr[f], COUNT_CAP), suffix[j])
    weight_total = np.zeros(COUNT_CAP + 1)
    weights_from(prefix[n_l], count_coef[cell], largest, weight_total)
    weight = np.zeros((n_fam, COUNT_CAP + 1))
    rest = np.empty(COUNT_CAP + 1)
    o1 = np.ones(m1.shape)  # per family and touching interaction: the other families' products (payment_kernels._context)
    o2 = np.ones(m1.shape)
    o12 = np.ones(m1.shape)
    for f in range(n_fam):
        if has_candidates[f]:
            interaction_context(f, m1, m2, m12, fi_ptr, fi_idx, if_ptr, if_idx, if_slot, o1, o2, o12)
    for f in range(n_fam):
        if has_candidates[f] and not trivial[f]:
            j = position[f]
            convolve_into(prefix[j], suffix[j + 1], COUNT_CAP, rest)
            weights_from(rest, count_coef[cell], min(fam_ptr[f + 1] - fam_ptr[f], COUNT_CAP), weight[f])
    for k in range(n_codes):
        gains[k] = 0.0
        if chosen[k] or known_i[k]:
            continue
        f = code_fam[k]
        if not valid[k]:
            c_ecoef[k] = family_summary(f, uncertain[f] | (1 << code_bit[k]), fixed[f], p, cell, fam_ptr, fam_codes, sub_ptr,
                                 sub_count, sub_atoms, sub_coef, inter_atoms, fi_ptr, fi_idx, c_dist[k], c_m1[k], c_m2[k],
                                 c_m12[k], scratch_w, scratch_l)
            valid[k] = True
        gain = family_fixed_gain(k, f, cell, ecoef, c_ecoef, m1, m2, m12, c_m1, c_m2, c_m12, o1, o2, o12, fi_ptr, fi_idx,
                           inter_atoms, inter_coef)
        size = min(fam_ptr[f + 1] - fam_ptr[f], COUNT_CAP)
        for m in range(size + 1):
            w = weight_total[m] if trivial[f] else weight[f, m]
            gain += (c_dist[k, m] - dist[f, m]) * w
        gains[k] = gain


@njit(cache=True)
def _joint(probs, known, cells, tolerance, code_fam, code_bit, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms, sub_coef,
           inter_atoms, inter_coef, fi_ptr, fi_idx, if_ptr, if_idx, if_slot, count_coef, out_order, out_vhat, out_chat):
    n_patients, n_codes = probs.shape
    n_fam = len(fam_ptr) - 1
    width = np.int64(1)  # not a literal: a literal-typed value compiles callees twice (see payment_kernels)
    for f in range(n_fam):
        width = max(width, fi_ptr[f + 1] - fi_ptr[f])
    largest = np.int64(0)
    for f in range(n_fam):
        largest = min(max(largest, fam_ptr[f + 1] - fam_ptr[f]), COUNT_CAP)
    uncertain = np.zeros(n_fam, dtype=np.int64)
    fixed = np.zeros(n_fam, dtype=np.int64)
    empty = np.zeros(n_fam, dtype=np.int64)
    trivial = np.zeros((2, n_fam), dtype=np.bool_)
    ecoef = np.zeros((2, n_fam))
    dist = np.zeros((2, n_fam, COUNT_CAP + 1))
    m1 = np.ones((2, n_fam, width))
    m2 = np.ones((2, n_fam, width))
    m12 = np.ones((2, n_fam, width))
    c_ecoef = np.zeros((2, n_codes))
    c_dist = np.zeros((2, n_codes, COUNT_CAP + 1))
    c_m1 = np.ones((2, n_codes, width))
    c_m2 = np.ones((2, n_codes, width))
    c_m12 = np.ones((2, n_codes, width))
    valid = np.zeros((2, n_codes), dtype=np.bool_)
    chosen = np.zeros(n_codes, dtype=np.bool_)
    gains = np.zeros((2, n_codes))
    keys = np.empty(n_codes)
    value_gains = np.empty(n_codes)
    side_p = np.empty((2, n_codes))
    scratch_w, scratch_l = family_patterns(fam_ptr)
    for i in range(n_patients):
        cell = cells[i]
        for k in range(n_codes):
            side_p[0, k] = probs[i, k]
            side_p[1, k] = 1.0 - probs[i, k]
        chosen[:] = False
        valid[:, :] = False
        family_masks(chosen, known[i], code_fam, code_bit, n_fam, empty, fixed)
        for f in range(n_fam):
            uncertain[f] = 0
        for s in range(2):
            for f in range(n_fam):
                ecoef[s, f] = family_summary(f, 0, fixed[f], side_p[s], cell, fam_ptr, fam_codes, sub_ptr, sub_count, sub_atoms,
                                      sub_coef, inter_atoms, fi_ptr, fi_idx, dist[s, f], m1[s, f], m2[s, f], m12[s, f],
                                      scratch_w, scratch_l)
                trivial[s, f] = dist[s, f, 0] == 1.0
        current = 0.0
        spent = 0.0
        out_vhat[i, 0] = 0.0
        out_chat[i, 0] = 0.0
        for step in range(n_codes):
            for s in range(2):
                _side_gains(side_p[s], cell, known[i], chosen, code_fam, code_bit, fam_ptr, fam_codes, sub_ptr,
                            sub_count, sub_atoms, sub_coef, inter_atoms, inter_coef, fi_ptr, fi_idx, if_ptr, if_idx,
                            if_slot, count_coef, uncertain, fixed, trivial[s], ecoef[s], dist[s], m1[s], m2[s], m12[s],
                            c_ecoef[s], c_dist[s], c_m1[s], c_m2[s], c_m12[s], valid[s], largest, gains[s], scratch_w,
                            scratch_l)
            allowance = tolerance * max(1.0, abs(spent))
            best = -1
            best_key = -math.inf
            for k in range(n_codes):
                if chosen[k]:
                    continue
                if abs(gains[1, k]) <= allowance:
                    gains[1, k] = 0.0
                best, best_key = offer(k, gains[0, k], gains[1, k], tolerance, current, value_gains, keys, best, best_key)
            best = lowest_tied(best, best_key, chosen, keys, value_gains, gains[1], tolerance * max(1.0, abs(current)))
            chosen[best] = True
            out_order[i, step] = best
            if not known[i, best]:
                f = code_fam[best]
                uncertain[f] |= 1 << code_bit[best]
                for s in range(2):
                    ecoef[s, f] = c_ecoef[s, best]
                    dist[s, f, :] = c_dist[s, best]
                    m1[s, f, :] = c_m1[s, best]
                    m2[s, f, :] = c_m2[s, best]
                    m12[s, f, :] = c_m12[s, best]
                    trivial[s, f] = dist[s, f, 0] == 1.0
                    for j in range(fam_ptr[f], fam_ptr[f + 1]):
                        valid[s, fam_codes[j]] = False
            current += value_gains[best]
            spent += gains[1, best]
            out_vhat[i, step + 1] = current
            out_chat[i, step + 1] = spent


def payment_cost_sequences(t, probs, known, cells, tolerance):
    """Greedy orders (N, K) and raw-unit Vhat, Chat of every prefix (N, K + 1) (both 0 for the empty set)."""
    probs = np.ascontiguousarray(probs, dtype=np.float64)
    n_patients, n_codes = probs.shape
    out_order = np.empty((n_patients, n_codes), dtype=np.int64)
    out_vhat = np.empty((n_patients, n_codes + 1))
    out_chat = np.empty((n_patients, n_codes + 1))
    _joint(probs, np.ascontiguousarray(known, dtype=np.bool_), np.ascontiguousarray(cells, dtype=np.int64), float(tolerance),
           t.code_fam, t.code_bit, t.fam_ptr, t.fam_codes, t.sub_ptr, t.sub_count, t.sub_atoms, t.sub_coef, t.inter_atoms,
           t.inter_coef, t.fi_ptr, t.fi_idx, t.if_ptr, t.if_idx, t.if_slot, t.count_coef, out_order, out_vhat, out_chat)
    return out_order, out_vhat, out_chat
