"""Compiled inner loops for formula values (numba): the general greedy universe in one pass.

A formula value V(S; y) = f(r_1, ..., r_R) depends on the set only through a few
reductions r over the true hits S ∩ y (sum, product, max, min of a per-code array, the
hit count) or over S itself (``sum_selected``, ``n_selected``). ``FormulaValue.compiled``
turns the validated formula into

* ``kinds`` (R,) and ``coefs`` (R, K): each reduction and the per-code array it reduces
  (evaluated once with numpy from the formula's own sub-expressions);
* ``program`` (n, 2) and ``constants``: f as postfix instructions over the reductions.

Nothing here evaluates user text: the kernel interprets those integer instructions.
For every patient the kernel keeps, per label draw y_d, the reductions of the current set
S, so a candidate S + k only costs the draws where code k is a hit (all draws when the
formula also reads the chosen set). The proxy gain of k is accumulated directly as
sum_d w_d (f(S + k; y_d) - f(S; y_d)), and Vhat of each prefix as sum_d w_d f(S; y_d).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "OPCODES",
    "REDUCTIONS",
    "BINARY_OPS",
    "UNARY_OPS",
    "STATUS_OK",
    "STATUS_NON_FINITE",
    "formula_sequences",
    "lowest_tied",
    "offer",
]

OPCODES = {name: i for i, name in enumerate(
    ["const", "slot", "add", "sub", "mul", "div", "pow", "mod", "floordiv", "minimum", "maximum",
     "neg", "sqrt", "log", "exp", "abs"])}
BINARY_OPS = ("add", "sub", "mul", "div", "pow", "mod", "floordiv", "minimum", "maximum")
UNARY_OPS = ("neg", "sqrt", "log", "exp", "abs")
REDUCTIONS = {name: i for i, name in enumerate(["sum_hits", "prod_hits", "max_hits", "min_hits", "sum_selected"])}
STATUS_OK, STATUS_NON_FINITE = 0, 1

_CONST, _SLOT, _ADD, _SUB, _MUL, _DIV, _POW, _MOD, _FLOORDIV, _MINIMUM, _MAXIMUM = range(11)
_NEG, _SQRT, _LOG, _EXP, _ABS = range(11, 16)
_SUM_HITS, _PROD_HITS, _MAX_HITS, _MIN_HITS, _SUM_SELECTED = range(5)


@njit(cache=True, inline="always", error_model="numpy")
def _np_minimum(a, b):
    if a != a or b != b:
        return math.nan
    return a if a <= b else b


@njit(cache=True, inline="always", error_model="numpy")
def _np_maximum(a, b):
    if a != a or b != b:
        return math.nan
    return a if a >= b else b


@njit(cache=True, inline="always", error_model="numpy")
def _np_mod(a, b):
    """numpy.mod for floats (npy_divmod's remainder: the sign of the divisor)."""
    mod = np.fmod(a, b)
    if b == 0.0:
        return mod
    if mod != 0.0:
        if (b < 0.0) != (mod < 0.0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


@njit(cache=True, inline="always", error_model="numpy")
def _np_floor_divide(a, b):
    """numpy.floor_divide for floats (npy_floor_divide)."""
    if b == 0.0:
        return a / b
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0.0:
        if (b < 0.0) != (mod < 0.0):
            div -= 1.0
    if div != 0.0:
        floordiv = math.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = math.copysign(0.0, a / b)
    return floordiv


@njit(cache=True, error_model="numpy")
def _run(program, constants, slots, count, stack, out):
    """Evaluate the postfix ``program`` for ``count`` points; slot r of point h is slots[r, h]."""
    top = 0
    for i in range(program.shape[0]):
        op = program[i, 0]
        arg = program[i, 1]
        if op == _CONST:
            value = constants[arg]
            for h in range(count):
                stack[top, h] = value
            top += 1
        elif op == _SLOT:
            for h in range(count):
                stack[top, h] = slots[arg, h]
            top += 1
        elif op < _NEG:
            a = top - 2
            b = top - 1
            if op == _ADD:
                for h in range(count):
                    stack[a, h] = stack[a, h] + stack[b, h]
            elif op == _SUB:
                for h in range(count):
                    stack[a, h] = stack[a, h] - stack[b, h]
            elif op == _MUL:
                for h in range(count):
                    stack[a, h] = stack[a, h] * stack[b, h]
            elif op == _DIV:
                for h in range(count):
                    stack[a, h] = stack[a, h] / stack[b, h]
            elif op == _POW:
                for h in range(count):
                    stack[a, h] = stack[a, h] ** stack[b, h]
            elif op == _MOD:
                for h in range(count):
                    stack[a, h] = _np_mod(stack[a, h], stack[b, h])
            elif op == _FLOORDIV:
                for h in range(count):
                    stack[a, h] = _np_floor_divide(stack[a, h], stack[b, h])
            elif op == _MINIMUM:
                for h in range(count):
                    stack[a, h] = _np_minimum(stack[a, h], stack[b, h])
            else:
                for h in range(count):
                    stack[a, h] = _np_maximum(stack[a, h], stack[b, h])
            top -= 1
        else:
            a = top - 1
            if op == _NEG:
                for h in range(count):
                    stack[a, h] = -stack[a, h]
            elif op == _SQRT:
                for h in range(count):
                    x = stack[a, h]
                    stack[a, h] = math.sqrt(x) if x >= 0.0 else math.nan
            elif op == _LOG:
                for h in range(count):
                    x = stack[a, h]
                    if x > 0.0:
                        stack[a, h] = math.log(x)
                    elif x == 0.0:
                        stack[a, h] = -math.inf
                    else:
                        stack[a, h] = math.nan
            elif op == _EXP:
                for h in range(count):
                    stack[a, h] = math.exp(stack[a, h])
            else:
                for h in range(count):
                    stack[a, h] = abs(stack[a, h])
    for h in range(count):
        out[h] = stack[0, h]


@njit(cache=True, inline="always", error_model="numpy")
def _combine(kind, acc, c):
    if kind == _PROD_HITS:
        return acc * c
    if kind == _MAX_HITS:
        return _np_maximum(acc, c)
    if kind == _MIN_HITS:
        return _np_minimum(acc, c)
    return acc + c


@njit(cache=True, inline="always", error_model="numpy")
def _slot_value(kind, acc, n_hits, n_codes):
    """A reduction's value: max/min over all K codes see a 0 at every code that is not a hit."""
    if n_hits < n_codes:
        if kind == _MAX_HITS:
            return _np_maximum(acc, 0.0)
        if kind == _MIN_HITS:
            return _np_minimum(acc, 0.0)
    return acc


@njit(cache=True, error_model="numpy")
def _initial(kind):
    if kind == _PROD_HITS:
        return 1.0
    if kind == _MAX_HITS:
        return -math.inf
    if kind == _MIN_HITS:
        return math.inf
    return 0.0


@njit(cache=True, error_model="numpy")
def _kernel(probs, cost_steps, program, constants, kinds, coefs, uniforms, exact, reads_selection,
            tolerance, fixed_order, out_order, out_vhat):
    n_patients, n_codes = probs.shape
    n_slots = kinds.shape[0]
    n_draws = (1 << n_codes) if exact else uniforms.shape[0]
    greedy = fixed_order.shape[0] == 0
    depth = max(program.shape[0], 1)
    hits = np.zeros((n_draws, n_codes), dtype=np.bool_)
    weights = np.empty(n_draws)
    acc = np.empty((n_draws, n_slots))
    n_hits = np.zeros(n_draws, dtype=np.int64)
    f_set = np.empty(n_draws)
    hit_index = np.empty((n_codes, n_draws), dtype=np.int64)
    hit_count = np.zeros(n_codes, dtype=np.int64)
    all_draws = np.arange(n_draws)
    slots = np.empty((max(n_slots, 1), n_draws))
    stack = np.empty((depth, n_draws))
    out = np.empty(n_draws)
    chosen = np.zeros(n_codes, dtype=np.bool_)
    gains = np.zeros(n_codes)
    keys = np.zeros(n_codes)
    for i in range(n_patients):
        p = probs[i]
        hit_count[:] = 0
        for d in range(n_draws):
            w = 1.0
            for k in range(n_codes):
                if exact:
                    y = ((d >> k) & 1) == 1
                    w *= p[k] if y else 1.0 - p[k]
                else:
                    y = uniforms[d, k] < p[k]
                hits[d, k] = y
                if y:
                    hit_index[k, hit_count[k]] = d
                    hit_count[k] += 1
            weights[d] = w if exact else 1.0 / n_draws
            n_hits[d] = 0
            for r in range(n_slots):
                acc[d, r] = _initial(kinds[r])
        # f(S; y_d) for the empty set
        for d in range(n_draws):
            for r in range(n_slots):
                slots[r, d] = _slot_value(kinds[r], acc[d, r], 0, n_codes)
        _run(program, constants, slots, n_draws, stack, f_set)
        current = 0.0
        for d in range(n_draws):
            if not np.isfinite(f_set[d]):
                return STATUS_NON_FINITE
            current += weights[d] * f_set[d]
        out_vhat[i, 0] = current
        chosen[:] = False
        for step in range(n_codes):
            if greedy:
                best = -1
                best_key = -math.inf
                for k in range(n_codes):
                    if chosen[k]:
                        continue
                    index = all_draws if reads_selection else hit_index[k]
                    count = n_draws if reads_selection else hit_count[k]
                    for h in range(count):
                        d = index[h]
                        hit = hits[d, k]
                        for r in range(n_slots):
                            kind = kinds[r]
                            a = acc[d, r]
                            if kind == _SUM_SELECTED or hit:
                                a = _combine(kind, a, coefs[r, k])
                            slots[r, h] = _slot_value(kind, a, n_hits[d] + (1 if hit else 0), n_codes)
                    _run(program, constants, slots, count, stack, out)
                    gain = 0.0
                    for h in range(count):
                        if not np.isfinite(out[h]):
                            return STATUS_NON_FINITE
                        d = index[h]
                        gain += weights[d] * (out[h] - f_set[d])
                    best, best_key = offer(k, gain, cost_steps[i, k], tolerance, current, gains, keys, best, best_key)
                best = lowest_tied(best, best_key, chosen, keys, gains, cost_steps[i], tolerance * max(1.0, abs(current)))
            else:
                best = fixed_order[i, step]
            chosen[best] = True
            out_order[i, step] = best
            index = all_draws if reads_selection else hit_index[best]
            count = n_draws if reads_selection else hit_count[best]
            for h in range(count):
                d = index[h]
                hit = hits[d, best]
                if hit:
                    n_hits[d] += 1
                for r in range(n_slots):
                    kind = kinds[r]
                    if kind == _SUM_SELECTED or hit:
                        acc[d, r] = _combine(kind, acc[d, r], coefs[r, best])
                    slots[r, h] = _slot_value(kind, acc[d, r], n_hits[d], n_codes)
            _run(program, constants, slots, count, stack, out)
            for h in range(count):
                if not np.isfinite(out[h]):
                    return STATUS_NON_FINITE
                f_set[index[h]] = out[h]
            current = 0.0
            for d in range(n_draws):
                current += weights[d] * f_set[d]
            out_vhat[i, step + 1] = current
    return STATUS_OK


@njit(cache=True)
def offer(k, gain, cost_step, tolerance, current, gains, keys, best, best_key):
    """Record candidate k's gain and ratio key; return the (best, best_key) so far.

    The rule every compiled greedy universe shares: summation round-off must not turn a zero
    gain into "positive / 0 = +inf", so a gain within ``tolerance * max(1, |current|)`` of zero
    is zero; a zero cost step gives +inf for a positive gain, -inf otherwise (docs/method.md "Universes").
    """
    if abs(gain) <= tolerance * max(1.0, abs(current)):
        gain = 0.0
    if cost_step == 0.0:
        key = math.inf if gain > 0.0 else -math.inf
    else:
        key = gain / cost_step
    gains[k] = gain
    keys[k] = key
    if best < 0 or key > best_key:
        return k, key
    return best, best_key


@njit(cache=True)
def lowest_tied(best, best_key, chosen, keys, gains, cost_steps, allowance):
    """The lowest unchosen code whose key ties ``best_key`` (universe.first_tied_maximum's rule)."""
    for k in range(best):
        if chosen[k]:
            continue
        if math.isinf(best_key):
            tied = keys[k] == best_key
        else:
            den = cost_steps[k]
            tied = keys[k] == best_key or (den > 0.0 and gains[k] >= best_key * den - allowance)
        if tied:
            return k
    return best


def formula_sequences(probs, cost_steps, compiled, uniforms, tolerance: float, order=None):
    """Greedy ratio orders and prefix proxies of every patient for a compiled formula.

    Parameters
    ----------
    probs, cost_steps : ndarray (N, K)
        Probabilities and per-code cost-proxy increments (1 - p_k) w_k.
    compiled : favmac.functions.CompiledFormula
    uniforms : ndarray (D, K) or None
        Monte Carlo uniforms (draw d hits code k iff uniforms[d, k] < p_k); None enumerates
        all 2^K label vectors with their probabilities.
    tolerance : float
        Gains with |gain| <= tolerance * max(1, |Vhat(S)|) count as zero.
    order : ndarray (N, K), optional
        A given order (the ``prob``/``value`` universes): only the prefix proxies are computed.

    Returns
    -------
    (order, vhat, status): int64 (N, K), float (N, K + 1), and STATUS_OK or STATUS_NON_FINITE.
    """
    probs = np.ascontiguousarray(probs, dtype=np.float64)
    n_patients, n_codes = probs.shape
    out_order = np.empty((n_patients, n_codes), dtype=np.int64)
    out_vhat = np.empty((n_patients, n_codes + 1))
    exact = uniforms is None
    status = _kernel(
        probs,
        np.ascontiguousarray(cost_steps, dtype=np.float64),
        compiled.program,
        compiled.constants,
        compiled.kinds,
        compiled.coefs,
        np.zeros((0, n_codes)) if exact else np.ascontiguousarray(uniforms, dtype=np.float64),
        exact,
        compiled.reads_selection,
        float(tolerance),
        np.zeros((0, n_codes), dtype=np.int64) if order is None else np.ascontiguousarray(order, dtype=np.int64),
        out_order,
        out_vhat,
    )
    return out_order, out_vhat, status
