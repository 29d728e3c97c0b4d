"""Value and cost set functions, and their proxies.

A set S is a boolean mask over the K codes (last axis); every function here accepts any
leading batch shape, so ``value(selected, labels)`` works for one patient (K,), a stream
(N, K) or a stack of candidate sets (M, K) against one label vector.

* Additive value  V(S; y) = sum_{k in S} y_k v_k          proxy  sum_{k in S} p_k v_k
* Additive cost   C(S; y) = sum_{k in S} (1 - y_k) w_k    proxy  sum_{k in S} (1 - p_k) w_k
* Formula value   any expression over the true hits S ∩ y, evaluated safely with
  simpleeval; its proxy is a seeded Monte Carlo mean over y ~ Bernoulli(p) (or exact
  enumeration when K is small).
"""
from __future__ import annotations

import ast
import math

import numpy as np
from simpleeval import SimpleEval

__all__ = ["AdditiveValue", "AdditiveCost", "FormulaValue", "FormulaError", "code_weights"]


def code_weights(weights, n_codes: int, name: str) -> np.ndarray:
    """Per-code weights as a float array of length ``n_codes`` (None = all ones)."""
    if weights is None:
        return np.ones(n_codes, dtype=float)
    arr = np.asarray(weights, dtype=float)
    if arr.shape != (n_codes,):
        raise ValueError(f"{name}: expected {n_codes} per-code weights, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name}: weights must be finite and >= 0")
    return arr


class _Additive:
    """Shared machinery of the additive value and cost."""

    is_additive = True
    kind = ""

    def __init__(self, weights=None):
        if weights is not None:
            weights = np.asarray(weights, dtype=float)
            if weights.ndim != 1:
                raise ValueError(f"{type(self).__name__}: weights must be one-dimensional, got shape {weights.shape}")
            if not np.all(np.isfinite(weights)) or np.any(weights < 0):
                raise ValueError(f"{type(self).__name__}: weights must be finite and >= 0")
        self.weights = weights

    def weights_for(self, n_codes: int) -> np.ndarray:
        """The weight vector for K = ``n_codes`` codes (all ones when weights is None)."""
        return code_weights(self.weights, n_codes, type(self).__name__)

    def __repr__(self):
        w = "None" if self.weights is None else f"<{len(self.weights)} weights>"
        return f"{type(self).__name__}(weights={w})"


class AdditiveValue(_Additive):
    """V(S; y) = sum_{k in S} y_k v_k. ``weights=None`` counts true positives (V_TP).

    Examples
    --------
    >>> v = AdditiveValue([1.0, 2.0, 3.0])
    >>> float(v([True, True, False], [1, 0, 1]))
    1.0
    >>> float(v.proxy([True, True, False], [0.5, 0.5, 0.9]))
    1.5
    """

    kind = "value"

    def __call__(self, selected, labels):
        selected = np.asarray(selected, dtype=bool)
        labels = np.asarray(labels, dtype=bool)
        return (selected & labels) @ self.weights_for(selected.shape[-1])

    def proxy(self, selected, probs):
        selected = np.asarray(selected, dtype=bool)
        probs = np.asarray(probs, dtype=float)
        return (selected * probs) @ self.weights_for(selected.shape[-1])

    def contributions(self, labels):
        """Per-code terms y_k v_k whose sum over S is V(S; y)."""
        labels = np.asarray(labels, dtype=bool)
        return labels * self.weights_for(labels.shape[-1])


class AdditiveCost(_Additive):
    """C(S; y) = sum_{k in S} (1 - y_k) w_k. ``weights=None`` counts false positives (C_FP).

    Examples
    --------
    >>> c = AdditiveCost([1.0, 2.0, 3.0])
    >>> float(c([True, True, False], [1, 0, 1]))
    2.0
    >>> c.c_max(3)
    6.0
    """

    kind = "cost"

    def __call__(self, selected, labels):
        selected = np.asarray(selected, dtype=bool)
        labels = np.asarray(labels, dtype=bool)
        return (selected & ~labels) @ self.weights_for(selected.shape[-1])

    def proxy(self, selected, probs):
        selected = np.asarray(selected, dtype=bool)
        probs = np.asarray(probs, dtype=float)
        return (selected * (1.0 - probs)) @ self.weights_for(selected.shape[-1])

    def contributions(self, labels):
        """Per-code terms (1 - y_k) w_k whose sum over S is C(S; y)."""
        labels = np.asarray(labels, dtype=bool)
        return ~labels * self.weights_for(labels.shape[-1])

    def c_max(self, n_codes: int) -> float:
        """Largest cost any set can have: the (correctly rounded) sum of the weights."""
        return math.fsum(self.weights_for(n_codes))


class FormulaError(ValueError):
    """A value formula that cannot be parsed or evaluated; the message says why."""


def _reduce_hits(func, neutral):
    def reducer(state, x):
        x = np.broadcast_to(np.asarray(x, dtype=float), state.shape)
        return func(np.where(state, x, neutral), axis=-1)

    return reducer


_ELEMENTWISE = {
    "sqrt": np.sqrt,
    "log": np.log,
    "exp": np.exp,
    "abs": np.abs,
    "minimum": np.minimum,
    "maximum": np.maximum,
}

def _numeric(op):
    """A numpy operator that refuses text (simpleeval's own guards assume Python scalars)."""

    def apply(a, b):
        if isinstance(a, (str, bytes)) or isinstance(b, (str, bytes)):
            raise FormulaError("text is not allowed in a value formula; use numbers, v and the functions")
        return op(np.asarray(a, dtype=float), np.asarray(b, dtype=float))

    return apply


_OPERATORS = {ast.Add: _numeric(np.add), ast.Sub: _numeric(np.subtract), ast.Mult: _numeric(np.multiply),
              ast.Div: _numeric(np.true_divide), ast.Pow: _numeric(np.power), ast.Mod: _numeric(np.mod),
              ast.FloorDiv: _numeric(np.floor_divide)}


def _formula_evaluator(names, functions):
    evaluator = SimpleEval(names=names, functions=functions)
    evaluator.operators.update(_OPERATORS)
    return evaluator


_FORMULA_HELP = (
    "Names: v (per-code value weight), n_hits, n_selected. Functions over the true hits "
    "S∩y: sum_hits(x), prod_hits(x), max_hits(x), min_hits(x); over the chosen set S: "
    "sum_selected(x); elementwise: sqrt, log, exp, abs, minimum, maximum."
)


class FormulaValue:
    """A general (non-additive) value given as a formula, evaluated without eval/exec.

    The formula is an expression over per-code arrays, reduced over the true hits
    S ∩ y. The paper's MNIST value V_GEN reads::

        prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)

    with ``v`` the digit's value (code "0" counted as 10).

    Parameters
    ----------
    formula : str
        The expression. See ``FormulaValue.HELP`` for the names it may use.
    weights : array-like of float, optional
        Per-code values, available as ``v`` (default all ones).
    n_samples : int
        Monte Carlo draws for the proxy when K is larger than ``exact_max_codes`` (256 by
        default: the proxy only ranks sets, the guarantee does not depend on its accuracy).
    seed : int
        Seed of the Monte Carlo draws (common random numbers: the same uniforms for every
        candidate set of a patient, so the proxy is reproducible and consistent).
    exact_max_codes : int
        Up to this many codes the proxy enumerates all 2^K label vectors exactly.

    Examples
    --------
    >>> f = FormulaValue("prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)", weights=[10, 1, 2])
    >>> float(f([True, True, False], [1, 1, 0]))  # hits are v=10 and v=1
    41.9
    """

    is_additive = False
    kind = "value"
    HELP = _FORMULA_HELP

    def __init__(self, formula: str, weights=None, *, n_samples: int = 256, seed: int = 0, exact_max_codes: int = 10):
        if not isinstance(formula, str) or not formula.strip():
            raise FormulaError("The value formula is empty. " + _FORMULA_HELP)
        self.formula = formula.strip()
        self.weights = None if weights is None else np.asarray(weights, dtype=float)
        self.n_samples = int(n_samples)
        self.seed = int(seed)
        self.exact_max_codes = int(exact_max_codes)
        self._draws: dict = {}
        self._last_draws = None
        try:
            self._tree = ast.parse(self.formula, mode="eval").body
        except SyntaxError as err:
            raise FormulaError(f"The value formula is not a valid expression ({err.msg} at column {err.offset}). {_FORMULA_HELP}") from None
        # Evaluate once on a tiny example so unknown names fail at definition time.
        self(np.array([[True, False]]), np.array([[True, True]]), _weights=np.array([1.0, 2.0]))

    def weights_for(self, n_codes: int) -> np.ndarray:
        return code_weights(self.weights, n_codes, "FormulaValue")

    def __repr__(self):
        return f"FormulaValue({self.formula!r})"

    def _evaluator(self, hits, selected, weights):
        names = {
            "v": weights,
            "n_hits": hits.sum(axis=-1).astype(float),
            "n_selected": selected.sum(axis=-1).astype(float),
            "pi": math.pi,
            "e": math.e,
        }
        functions = {
            "sum_hits": lambda x: _reduce_hits(np.sum, 0.0)(hits, x),
            "prod_hits": lambda x: _reduce_hits(np.prod, 1.0)(hits, x),
            "max_hits": lambda x: _reduce_hits(np.max, 0.0)(hits, x),
            "min_hits": lambda x: _reduce_hits(np.min, 0.0)(hits, x),
            "sum_selected": lambda x: _reduce_hits(np.sum, 0.0)(selected, x),
            **_ELEMENTWISE,
        }
        return _formula_evaluator(names, functions)

    def __call__(self, selected, labels, _weights=None):
        selected = np.asarray(selected, dtype=bool)
        labels = np.asarray(labels, dtype=bool)
        hits = selected & labels
        weights = self.weights_for(selected.shape[-1]) if _weights is None else _weights
        try:
            with np.errstate(all="ignore"):
                out = self._evaluator(hits, selected, weights).eval(self.formula, previously_parsed=self._tree)
        except FormulaError:
            raise
        except Exception as err:  # simpleeval raises several types; name the problem for the user
            raise FormulaError(f"Cannot evaluate the value formula {self.formula!r}: {err}. {_FORMULA_HELP}") from None
        out = np.broadcast_to(np.asarray(out, dtype=float), hits.shape[:-1])
        if not np.all(np.isfinite(out)):
            raise FormulaError(f"The value formula {self.formula!r} gave a non-finite value (NaN or inf) for some set.")
        return np.array(out)

    def label_draws(self, n_codes: int):
        """Uniform draws (or the full enumeration) behind the proxy.

        Returns ``(uniforms, enumeration)``: for small K, ``enumeration`` is the (2^K, K) bool
        matrix of all label vectors and ``uniforms`` is None; otherwise ``uniforms`` is a
        seeded (n_samples, K) matrix and the draw for probabilities p is ``uniforms < p``.
        """
        if n_codes in self._draws:
            return self._draws[n_codes]
        self._draws[n_codes] = self._make_draws(n_codes)
        return self._draws[n_codes]

    def _make_draws(self, n_codes: int):
        if n_codes <= self.exact_max_codes:
            grid = (np.arange(2**n_codes)[:, None] >> np.arange(n_codes)[None, :]) & 1
            return None, grid.astype(bool)
        rng = np.random.RandomState(self.seed)
        return rng.random_sample((self.n_samples, n_codes)), None

    def _draws_for(self, probs: np.ndarray):
        """(draws (D, K) bool, probability weights (D,)) for one patient's probabilities.

        The last patient's draws are kept: the greedy universe asks for them K times in a row.
        """
        key = probs.tobytes()
        if self._last_draws is not None and self._last_draws[0] == key:
            return self._last_draws[1]
        uniforms, grid = self.label_draws(probs.shape[0])
        if grid is not None:
            out = grid, np.prod(np.where(grid, probs, 1.0 - probs), axis=1)
        else:
            draws = uniforms < probs
            out = draws, np.full(draws.shape[0], 1.0 / draws.shape[0])
        self._last_draws = (key, out)
        return out

    def proxy(self, selected, probs):
        """Vhat(S; x) = E_{y ~ Bernoulli(p)} V(S; y) for one patient's probabilities ``probs`` (K,).

        ``selected`` may be one set (K,) or a stack (M, K); returns a scalar or (M,).
        """
        probs = np.asarray(probs, dtype=float)
        selected = np.asarray(selected, dtype=bool)
        if probs.ndim != 1:
            raise ValueError("FormulaValue.proxy takes one patient's probabilities (shape (K,))")
        draws, weights = self._draws_for(probs)
        values = self(selected[..., None, :], draws)  # (..., n_draws)
        return values @ weights

    def proxy_extensions(self, base, candidates, probs) -> np.ndarray:
        """Vhat(S ∪ {k}) for every code k in ``candidates`` (none of them in S).

        Same draws and same value as ``proxy`` on the stacked sets, but each reduction over the
        hits is taken once for S and then combined with code k's term, so the cost is
        O(D (K + M)) rather than O(D K M) — what makes the greedy ratio universe affordable.
        Formulas whose reduction arguments are not per-code arrays fall back to ``proxy``.
        """
        probs = np.asarray(probs, dtype=float)
        base = np.asarray(base, dtype=bool)
        candidates = np.asarray(candidates, dtype=np.int64)
        n_codes = probs.shape[0]
        draws, weights = self._draws_for(probs)
        base_hits = draws & base
        cand_hits = draws[:, candidates].T  # (M, D)
        code_values = self.weights_for(n_codes)

        def extend(reduce, combine, neutral, state, cand_state):
            def reducer(x):
                x = np.broadcast_to(np.asarray(x, dtype=float), (n_codes,))
                whole = reduce(np.where(state, x, neutral), axis=-1)
                return combine(whole[None, ...] if np.ndim(whole) else whole, np.where(cand_state, x[candidates][:, None], neutral))

            return reducer

        every = np.ones((len(candidates), 1), dtype=bool)
        functions = {
            "sum_hits": extend(np.sum, np.add, 0.0, base_hits, cand_hits),
            "prod_hits": extend(np.prod, np.multiply, 1.0, base_hits, cand_hits),
            "max_hits": extend(np.max, np.maximum, 0.0, base_hits, cand_hits),
            "min_hits": extend(np.min, np.minimum, 0.0, base_hits, cand_hits),
            "sum_selected": extend(np.sum, np.add, 0.0, base, every),
            **_ELEMENTWISE,
        }
        names = {
            "v": code_values,
            "n_hits": base_hits.sum(axis=-1)[None, :] + cand_hits,
            "n_selected": float(base.sum() + 1),
            "pi": math.pi,
            "e": math.e,
        }
        evaluator = _formula_evaluator(names, functions)
        try:
            with np.errstate(all="ignore"):
                out = evaluator.eval(self.formula, previously_parsed=self._tree)
            out = np.broadcast_to(np.asarray(out, dtype=float), (len(candidates), draws.shape[0]))
        except Exception:  # e.g. an argument that is not per-code: the general path decides
            trials = np.repeat(base[None, :], len(candidates), axis=0)
            trials[np.arange(len(candidates)), candidates] = True
            return self.proxy(trials, probs)
        if not np.all(np.isfinite(out)):
            raise FormulaError(f"The value formula {self.formula!r} gave a non-finite value (NaN or inf) for some set.")
        return out @ weights
