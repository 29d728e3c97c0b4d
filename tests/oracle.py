"""A slow, literal evaluation of the SPEC definitions, used as the tests' reference.

Everything exact is done with Fractions (numbers read as the decimals they print as);
sets are Python tuples of code indices. Only Chat of a ``full``-universe set reuses numpy's
summation (Chat is a float whose last bit depends on the summation order; the SPEC leaves
that order to the implementation).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def q(x) -> Fraction:
    if isinstance(x, Fraction):
        return x
    x = float(x)
    return Fraction(int(x)) if x.is_integer() else Fraction(repr(x))


def ratio_key(p, v, w):
    num, den = p * v, (1 - p) * w
    if den == 0:
        return math.inf if num > 0 else -math.inf
    return num / den


def universe_sets(p, v, w, universe):
    """Candidate sets with their Chat, Vhat (additive proxies) as (tuple, chat, vhat)."""
    K = len(p)
    if universe == "full":
        out = []
        for mask in range(2**K):
            S = tuple(k for k in range(K) if mask >> k & 1)
            sel = np.zeros(K, bool)
            sel[list(S)] = True
            chat = float(np.sum((sel * ((1.0 - p) * w))[None, None, :], axis=2)[0, 0])
            vhat = float(np.sum((sel * (p * v))[None, None, :], axis=2)[0, 0])
            out.append((S, chat, vhat))
        return out
    if universe == "prob":
        key = lambda k: (-p[k], k)
    elif universe == "value":
        key = lambda k: (-(p[k] * v[k]), k)
    else:
        key = lambda k: (-ratio_key(p[k], v[k], w[k]), k)
    order = sorted(range(K), key=key)
    out, chat, vhat = [((), 0.0, 0.0)], 0.0, 0.0
    for j, k in enumerate(order):
        chat = chat + (1.0 - p[k]) * w[k]
        vhat = vhat + p[k] * v[k]
        out.append((tuple(order[: j + 1]), chat, vhat))
    return out


def true_cost(S, y, w) -> Fraction:
    return sum((q(w[k]) for k in S if not y[k]), Fraction(0))


def expected_threshold(cal, v, w, c, universe, c_max=None):
    """T_c = sup{t : (C_max + sum_i C+(t; Z_i)) / (N + 1) <= c}, evaluated literally."""
    c = q(c)
    cmax = q(c_max) if c_max is not None else sum((q(x) for x in w), Fraction(0))
    N = len(cal)
    tables = [[(chat, true_cost(S, y, w)) for S, chat, _ in universe_sets(p, v, w, universe)] for p, y in cal]

    def g_after(b):  # G just above b: sets with Chat <= b
        tot = sum((max([C for chat, C in tab if chat <= b], default=Fraction(0)) for tab in tables), Fraction(0))
        return (cmax + tot) / (N + 1)

    if cmax / (N + 1) > c:
        return -math.inf
    keys = sorted({chat for tab in tables for chat, _ in tab})
    for b in keys:
        if g_after(b) > c:
            return b
    return math.inf


def violation_threshold(cal, v, w, c, delta, universe):
    """T_{c,delta} = sup{t : #{i : C+(t; Z_i) <= c} >= (1 - delta)(N + 1)}, literally."""
    c, need = q(c), (1 - q(delta)) * (len(cal) + 1)
    tables = [[(chat, true_cost(S, y, w)) for S, chat, _ in universe_sets(p, v, w, universe)] for p, y in cal]

    def count_after(b):
        return sum(1 for tab in tables if max([C for chat, C in tab if chat <= b], default=Fraction(0)) <= c)

    if len(cal) < need:  # even t = -inf (all C+ = 0) cannot reach the count
        return -math.inf
    keys = sorted({chat for tab in tables for chat, _ in tab})
    for b in keys:
        if count_after(b) < need:
            return b
    return math.inf


def predict(p, v, w, T, universe):
    """argmax{Vhat(S) : S in U, Chat(S) < T}: nested -> the last maximum; full -> Vhat desc, Chat asc, enumeration."""
    sets = universe_sets(p, v, w, universe)
    ok = [(i, S, chat, vhat) for i, (S, chat, vhat) in enumerate(sets) if chat < T]
    if not ok:
        return ()
    if universe == "full":
        return min(ok, key=lambda r: (-r[3], r[2], r[0]))[1]
    best = max(r[3] for r in ok)
    return [r for r in ok if r[3] == best][-1][1]


def grouped_thresholds(stream, groups, v, w, c, universe, burn_in, delta=None, window=None):
    """Segments, literally: the threshold at position n >= burn_in comes from the earlier patients of
    n's own group (the last ``window`` of them). ``stream`` is a list of (p, y)."""
    out = []
    for n in range(burn_in, len(stream)):
        cal = [stream[i] for i in range(n) if groups[i] == groups[n]]
        if window:
            cal = cal[-window:]
        if delta is None:
            out.append(expected_threshold(cal, v, w, c, universe))
        else:
            out.append(violation_threshold(cal, v, w, c, delta, universe))
    return out


def adaptive_session(stream, v, w, c, gamma, universe, burn_in, window=None):
    """The adaptive target, literally: c_{burn_in} = c, c_{n+1} = c_n + gamma (c - C_n), each
    threshold computed at c_n with exact Fractions. Returns (thresholds, targets c_n, chosen sets,
    realized costs) for n = burn_in..N-1."""
    c0, gamma = q(c), q(gamma)
    c_n = c0
    thresholds, targets, sets, costs = [], [], [], []
    for n in range(burn_in, len(stream)):
        cal = stream[:n]
        if window:
            cal = cal[-window:]
        T = expected_threshold(cal, v, w, c_n, universe)
        p, y = stream[n]
        S = predict(p, v, w, T, universe)
        C = true_cost(S, y, w)
        thresholds.append(T)
        targets.append(c_n)
        sets.append(S)
        costs.append(C)
        c_n = c_n + gamma * (c0 - C)
    return thresholds, targets, sets, costs
