"""A slow, literal evaluation of docs/method.md definitions, used as the tests' reference.

Everything exact is done with Fractions (numbers read as the decimals they print as);
sets are Python tuples of code indices. Only Chat of a ``full``-universe set reuses numpy's
summation (Chat is a float whose last bit depends on the summation order; docs/method.md leaves
that order to the implementation).

Scores (docs/method.md "The score a threshold is on"): ``score="cost"`` keys a set by Chat, ``"price"``
by the running max of the step prices (cost increment / value increment, both floats, a
zero value increment is +inf, a zero cost increment with a positive value increment is 0).
A general value is a Python function ``value_fn(S, y)`` of a set and a label tuple; its
proxy Vhat is the exact expectation over all 2^K label vectors (Fractions, then one
rounding to float), and the ratio universe is built greedily by marginal Vhat / Chat gains.
Tests use dyadic probabilities and values with such functions, so every Vhat is exact.

A general cost (a set function such as the unsupported payment, docs/method.md "CMS-HCC payment value")
is ``cost_fn(S, y)`` returning an exact Fraction; its Chat is the exact expectation (as for a
value), the ratio universe divides Chat gains, the "cost" key of a nested set is the running
max of Chat along the sequence (a score of x only, non-decreasing), price steps are increments
of that key, realized costs are ``cost_fn`` and C_max is given.
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


def ratio_of(num, den):
    if den == 0:
        return math.inf if num > 0 else -math.inf
    return num / den


def ratio_key(p, v, w):
    return ratio_of(p * v, (1 - p) * w)


def step_price(cost_step, value_step):
    """pi_j, literally: +inf for a zero value increment, 0 for a zero cost increment (positive value)."""
    if value_step == 0:
        return math.inf
    if cost_step == 0 and value_step > 0:
        return 0.0
    return cost_step / value_step


def general_vhat(S, p, value_fn):
    """E_{y ~ Bernoulli(p)} value_fn(S, y), exactly over all label vectors, rounded once."""
    K = len(p)
    total = Fraction(0)
    for bits in range(2**K):
        y = tuple(bool(bits >> k & 1) for k in range(K))
        weight = Fraction(1)
        for k in range(K):
            weight *= q(p[k]) if y[k] else 1 - q(p[k])
        if weight:
            total += weight * Fraction(value_fn(tuple(sorted(S)), y))
    return float(total)


def nested_order(p, v, w, universe, value_fn=None, cost_fn=None):
    """The order a greedy universe adds codes in; ties by code index."""
    K = len(p)
    if universe == "prob":
        return sorted(range(K), key=lambda k: (-p[k], k))
    if universe == "value":
        return sorted(range(K), key=lambda k: (-(p[k] * v[k]), k))
    if value_fn is None and cost_fn is None:
        return sorted(range(K), key=lambda k: (-ratio_key(p[k], v[k], w[k]), k))
    order, chosen = [], ()
    current = general_vhat(chosen, p, value_fn) if value_fn is not None else 0.0
    spent = general_vhat(chosen, p, cost_fn) if cost_fn is not None else 0.0
    for _ in range(K):
        best = None
        for k in range(K):
            if k in chosen:
                continue
            gain = general_vhat(chosen + (k,), p, value_fn) - current if value_fn is not None else p[k] * v[k]
            cost_gain = general_vhat(chosen + (k,), p, cost_fn) - spent if cost_fn is not None else (1.0 - p[k]) * w[k]
            key = ratio_of(gain, cost_gain)
            if best is None or key > best[0]:
                best = (key, k)
        chosen = chosen + (best[1],)
        order.append(best[1])
        current = general_vhat(chosen, p, value_fn) if value_fn is not None else 0.0
        spent = general_vhat(chosen, p, cost_fn) if cost_fn is not None else 0.0
    return order


def keyed_sets(p, v, w, universe, score="cost", value_fn=None, cost_fn=None):
    """Candidate sets as (tuple, key, vhat): key = Chat ("cost") or the price score ("price")."""
    sets = universe_sets(p, v, w, universe, value_fn, cost_fn)
    if score == "cost":
        return [(S, chat, vhat) for S, chat, vhat in sets]
    assert universe != "full", "the price score is defined on nested sequences only"
    out, running = [(sets[0][0], -math.inf, sets[0][2])], -math.inf
    for (before, chat_before, vhat_before), (S, chat, vhat) in zip(sets[:-1], sets[1:]):
        (k,) = set(S) - set(before)
        value_step = p[k] * v[k] if value_fn is None else vhat - vhat_before
        cost_step = (1.0 - p[k]) * w[k] if cost_fn is None else chat - chat_before
        running = max(running, step_price(cost_step, value_step))
        out.append((S, running, vhat))
    return out


def universe_sets(p, v, w, universe, value_fn=None, cost_fn=None):
    """Candidate sets with their Chat, Vhat as (tuple, chat, vhat) (additive proxies unless ``value_fn``
    / ``cost_fn``; a general cost's nested Chat is the running max along the sequence)."""
    K = len(p)
    if universe == "full":
        out = []
        for mask in range(2**K):
            S = tuple(k for k in range(K) if mask >> k & 1)
            sel = np.zeros(K, bool)
            sel[list(S)] = True
            if cost_fn is None:
                chat = float(np.sum((sel * ((1.0 - p) * w))[None, None, :], axis=2)[0, 0])
            else:
                chat = general_vhat(S, p, cost_fn)
            if value_fn is None:
                vhat = float(np.sum((sel * (p * v))[None, None, :], axis=2)[0, 0])
            else:
                vhat = general_vhat(S, p, value_fn)
            out.append((S, chat, vhat))
        return out
    order = nested_order(p, v, w, universe, value_fn, cost_fn)
    vhat0 = 0.0 if value_fn is None else general_vhat((), p, value_fn)
    out, chat, vhat = [((), 0.0, vhat0)], 0.0, 0.0
    for j, k in enumerate(order):
        if cost_fn is None:
            chat = chat + (1.0 - p[k]) * w[k]
        else:
            chat = max(chat, general_vhat(tuple(order[: j + 1]), p, cost_fn))
        vhat = vhat + p[k] * v[k] if value_fn is None else general_vhat(tuple(order[: j + 1]), p, value_fn)
        out.append((tuple(order[: j + 1]), chat, vhat))
    return out


def true_cost(S, y, w) -> Fraction:
    return sum((q(w[k]) for k in S if not y[k]), Fraction(0))


def realized_cost(S, y, w, cost_fn=None) -> Fraction:
    return true_cost(S, y, w) if cost_fn is None else Fraction(cost_fn(tuple(sorted(S)), tuple(y)))


def expected_threshold(cal, v, w, c, universe, c_max=None, score="cost", value_fn=None, cost_fn=None):
    """T_c = sup{t : (C_max + sum_i C+(t; Z_i)) / (N + 1) <= c}, evaluated literally.

    C+(t; z) = max{C(S; z) : key(S) < t}; the keys are Chat or the price score.
    """
    c = q(c)
    cmax = q(c_max) if c_max is not None else sum((q(x) for x in w), Fraction(0))
    N = len(cal)
    tables = [[(key, realized_cost(S, y, w, cost_fn)) for S, key, _ in keyed_sets(p, v, w, universe, score, value_fn, cost_fn)]
              for p, y in cal]

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


def violation_threshold(cal, v, w, c, delta, universe, score="cost", value_fn=None, cost_fn=None):
    """T_{c,delta} = sup{t : #{i : C+(t; Z_i) <= c} >= (1 - delta)(N + 1)}, literally."""
    c, need = q(c), (1 - q(delta)) * (len(cal) + 1)
    tables = [[(key, realized_cost(S, y, w, cost_fn)) for S, key, _ in keyed_sets(p, v, w, universe, score, value_fn, cost_fn)]
              for p, y in cal]

    def count_after(b):
        return sum(1 for tab in tables if max([C for chat, C in tab if chat <= b], default=Fraction(0)) <= c)

    if len(cal) < need:  # even t = -inf (all C+ = 0) cannot reach the count
        return -math.inf
    keys = sorted({chat for tab in tables for chat, _ in tab})
    for b in keys:
        if count_after(b) < need:
            return b
    return math.inf


def predict(p, v, w, T, universe, score="cost", value_fn=None, cost_fn=None):
    """argmax{Vhat(S) : S in U, key(S) < T}: nested -> the last maximum; full -> Vhat desc, Chat asc, enumeration."""
    sets = keyed_sets(p, v, w, universe, score, value_fn, cost_fn)
    ok = [(i, S, chat, vhat) for i, (S, chat, vhat) in enumerate(sets) if chat < T]
    if not ok:
        return ()
    if universe == "full":
        return min(ok, key=lambda r: (-r[3], r[2], r[0]))[1]
    best = max(r[3] for r in ok)
    return [r for r in ok if r[3] == best][-1][1]


def grouped_thresholds(stream, groups, v, w, c, universe, burn_in, delta=None, window=None, score="cost"):
    """Segments, literally: the threshold at position n >= burn_in comes from the earlier patients of
    n's own group (the last ``window`` of them). ``stream`` is a list of (p, y)."""
    out = []
    for n in range(burn_in, len(stream)):
        cal = [stream[i] for i in range(n) if groups[i] == groups[n]]
        if window:
            cal = cal[-window:]
        if delta is None:
            out.append(expected_threshold(cal, v, w, c, universe, score=score))
        else:
            out.append(violation_threshold(cal, v, w, c, delta, universe, score=score))
    return out


def adaptive_session(stream, v, w, c, gamma, universe, burn_in, window=None, score="cost"):
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
        T = expected_threshold(cal, v, w, c_n, universe, score=score)
        p, y = stream[n]
        S = predict(p, v, w, T, universe, score=score)
        C = true_cost(S, y, w)
        thresholds.append(T)
        targets.append(c_n)
        sets.append(S)
        costs.append(C)
        c_n = c_n + gamma * (c0 - C)
    return thresholds, targets, sets, costs


def arrived(stream, arrival, n, burn_in, window=None, rows=None):
    """Labels that arrive later, literally: the calibration patients of position n are those whose
    labels arrived before n was predicted (arrival[i] < n; burn-in patients from the start), in the
    order they arrived (arrival, then position); a window keeps the last ``window`` of them.
    ``rows`` restricts to some patients (a group)."""
    rows = range(len(stream)) if rows is None else rows
    when = {i: (burn_in - 1 if i < burn_in else arrival[i]) for i in rows}
    cal = sorted((when[i], i) for i in rows if when[i] < n)
    cal = [stream[i] for _, i in cal]
    return cal[-window:] if window else cal


def delayed_adaptive_session(stream, arrival, v, w, c, gamma, universe, burn_in, window=None, score="cost"):
    """The adaptive target with labels that arrive later, literally: the set of patient n is chosen at
    c_n; when its labels arrive (after position arrival[n]) the target moves by gamma (c - C_n).
    Returns (thresholds, targets c_n) for n = burn_in..N-1."""
    c0, gamma = q(c), q(gamma)
    c_n, costs = c0, {}
    thresholds, targets = [], []
    for n in range(burn_in, len(stream)):
        T = expected_threshold(arrived(stream, arrival, n, burn_in, window), v, w, c_n, universe, score=score)
        p, y = stream[n]
        costs[n] = true_cost(predict(p, v, w, T, universe, score=score), y, w)
        thresholds.append(T)
        targets.append(c_n)
        for i in range(burn_in, n + 1):
            if arrival[i] == n:
                c_n = c_n + gamma * (c0 - costs[i])
    return thresholds, targets
