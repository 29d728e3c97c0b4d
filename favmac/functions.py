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
from dataclasses import dataclass

import numpy as np
from simpleeval import SimpleEval

from .protocols import bind_rows, is_additive  # noqa: F401 (favmac.functions.bind_rows, as before; defined in favmac.protocols)

__all__ = ["AdditiveValue", "AdditiveCost", "FormulaValue", "FormulaError", "CompiledFormula", "code_weights",
           "bind_rows", "false_flag_weights"]


def false_flag_weights(cost, n_codes: int | None = None) -> np.ndarray | None:
    """w_k, what one false flag of each code costs, for an additive cost; None when it is not one.

    :func:`favmac.scores.default_score` compares the target with the cheapest of them. An
    :class:`AdditiveCost` knows its weights without K (an FP count: ones); another additive cost
    (``weights_for(K)``) needs ``n_codes``; a set cost (``is_additive`` False, e.g. the unsupported
    payment) has no per-code weights.

    >>> false_flag_weights(AdditiveCost()).tolist(), false_flag_weights(AdditiveCost([0.5, 2.0])).tolist()
    ([1.0], [0.5, 2.0])
    """
    if not is_additive(cost):  # favmac.protocols: a set cost has no per-code weights
        return None
    if isinstance(cost, _Additive):
        return np.ones(1) if cost.weights is None else np.asarray(cost.weights, dtype=float)
    return None if n_codes is None else np.asarray(cost.weights_for(int(n_codes)), dtype=float)


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


_REDUCTIONS = ("sum_hits", "prod_hits", "max_hits", "min_hits", "sum_selected")
_SET_NAMES = frozenset(("n_hits", "n_selected") + _REDUCTIONS)
_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow", ast.Mod: "mod",
           ast.FloorDiv: "floordiv"}
_CALLS = {"sqrt": "sqrt", "log": "log", "exp": "exp", "abs": "abs", "minimum": "minimum", "maximum": "maximum"}


@dataclass(frozen=True)
class CompiledFormula:
    """A formula value for K codes as reductions plus postfix instructions (no user text left).

    ``kinds[r]`` indexes ``favmac.formula_kernels.REDUCTIONS`` and ``coefs[r]`` (K,) is the
    per-code array that reduction r reduces; ``program`` rows are (opcode, argument) with
    opcodes from ``favmac.formula_kernels.OPCODES`` (argument: a constant's index for
    "const", a reduction's index for "slot"). ``reads_selection`` says a reduction runs over
    the chosen set S rather than the true hits only.
    """

    program: np.ndarray
    constants: np.ndarray
    kinds: np.ndarray
    coefs: np.ndarray
    reads_selection: bool


class _NotCompilable(Exception):
    """A construct the compiler does not cover; the reference (simpleeval) path evaluates it."""


class _FormulaCompiler:
    """Walks the parsed (already validated) formula; sub-expressions that do not depend on
    the set are evaluated once, by the same simpleeval evaluator and numpy functions as the
    reference path, into constants or per-code arrays."""

    def __init__(self, weights: np.ndarray):
        from .formula_kernels import OPCODES, REDUCTIONS

        self._opcodes, self._reductions = OPCODES, REDUCTIONS
        self._n_codes = len(weights)
        self._code_level = _formula_evaluator({"v": weights, "pi": math.pi, "e": math.e}, dict(_ELEMENTWISE))
        self.program: list[tuple[int, int]] = []
        self.constants: list[float] = []
        self.slots: list[tuple[str, np.ndarray]] = []
        self.reads_selection = False

    def result(self) -> CompiledFormula:
        n_codes = self._n_codes
        return CompiledFormula(
            program=np.array(self.program, dtype=np.int64).reshape(-1, 2),
            constants=np.array(self.constants, dtype=float),
            kinds=np.array([self._reductions[name] for name, _ in self.slots], dtype=np.int64),
            coefs=np.array([coef for _, coef in self.slots], dtype=float).reshape(len(self.slots), n_codes),
            reads_selection=self.reads_selection,
        )

    def _evaluate(self, node):
        try:
            with np.errstate(all="ignore"):
                return np.asarray(self._code_level.eval("", previously_parsed=node), dtype=float)
        except Exception:
            raise _NotCompilable from None

    def _slot(self, name: str, coef: np.ndarray) -> None:
        if name == "sum_selected":
            self.reads_selection = True
        for index, (other, other_coef) in enumerate(self.slots):
            if other == name and np.array_equal(other_coef, coef, equal_nan=True):
                break
        else:
            index = len(self.slots)
            self.slots.append((name, coef))
        self.program.append((self._opcodes["slot"], index))

    def emit(self, node) -> None:
        if not any(isinstance(sub, ast.Name) and sub.id in _SET_NAMES for sub in ast.walk(node)):
            value = self._evaluate(node)
            if value.ndim != 0:
                raise _NotCompilable  # a per-code array outside a reduction
            self.constants.append(float(value))
            self.program.append((self._opcodes["const"], len(self.constants) - 1))
        elif isinstance(node, ast.Name) and node.id in ("n_hits", "n_selected"):
            self._slot("sum_hits" if node.id == "n_hits" else "sum_selected", np.ones(self._n_codes))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            self.emit(node.left)
            self.emit(node.right)
            self.program.append((self._opcodes[_BINARY[type(node.op)]], 0))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            self.emit(node.operand)
            if isinstance(node.op, ast.USub):
                self.program.append((self._opcodes["neg"], 0))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            name, args = node.func.id, node.args
            if name in _REDUCTIONS and len(args) == 1:
                if any(isinstance(sub, ast.Name) and sub.id in _SET_NAMES for sub in ast.walk(args[0])):
                    raise _NotCompilable  # a reduction of a set-dependent quantity
                coef = self._evaluate(args[0])
                try:
                    coef = np.array(np.broadcast_to(coef, (self._n_codes,)), dtype=float)
                except ValueError:
                    raise _NotCompilable from None
                self._slot(name, coef)
            elif name in _CALLS and len(args) == (2 if name in ("minimum", "maximum") else 1):
                for arg in args:
                    self.emit(arg)
                self.program.append((self._opcodes[_CALLS[name]], 0))
            else:
                raise _NotCompilable
        else:
            raise _NotCompilable


_FORMULA_HELP = (
    "Names: v (per-code value weight), n_hits, n_selected. Functions over the true hits "
    "S∩y: sum_hits(x), prod_hits(x), max_hits(x), min_hits(x); over the chosen set S: "
    "sum_selected(x); elementwise: sqrt, log, exp, abs, minimum, maximum."
)


# Formulas are parsed and evaluated recursively (ast, simpleeval): a formula nested deeper than
# this, e.g. a chain "1+1+...+1" of thousands of terms, is refused before it can exhaust Python's
# recursion limit. The paper's V_GEN is 5 levels deep; one term per code of 35 codes is about 40.
MAX_FORMULA_DEPTH = 100
MAX_FORMULA_LENGTH = 5000


def _depth(tree: ast.AST) -> int:
    """The nesting depth of a parsed formula, counted without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


# What a value formula may call, and with how many (positional) arguments: numpy's ufuncs also
# take ``out=`` / ``where=`` and a third positional ``out``, which would write into ``v`` or read
# uninitialized memory.
_ARITY = {**{name: 1 for name in _REDUCTIONS}, "sqrt": 1, "log": 1, "exp": 1, "abs": 1, "minimum": 2, "maximum": 2}


def _yes_no(node: ast.AST) -> str | None:
    """The Python construct that asks one yes/no question (and, or, not, if-else, a < b < c), named;
    None for any other node. One formula values many sets at once, so such a question has no single
    answer (numpy's "truth value of an array is ambiguous"): conditions are 0/1 comparisons
    combined with arithmetic instead."""
    if isinstance(node, ast.BoolOp):
        return "and" if isinstance(node.op, ast.And) else "or"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return "not"
    if isinstance(node, ast.IfExp):
        return "if ... else"
    if isinstance(node, ast.Compare) and len(node.ops) > 1:
        return "a chained comparison (a < b < c)"
    return None


def _refuse_unsafe(tree: ast.AST) -> None:
    """Refuse what a value formula has no use for and could misuse: attribute access (``v.dump(path)``
    writes a file, ``v.fill(0)`` overwrites the weights, ``v.repeat(10**9)`` allocates gigabytes),
    keyword arguments, calls other than the documented functions with their argument count, and
    text, bytes or complex constants."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            raise FormulaError(f"'.{node.attr}' (attribute access) is not allowed in a value formula. {_FORMULA_HELP}")
        words = _yes_no(node)
        if words:
            raise FormulaError(f"'{words}' is not allowed in a value formula: it is evaluated for many code sets at once, so "
                               "it cannot ask one yes/no question. A comparison is 1 or 0 per set: write 'both' as a product "
                               "((n_hits > 0) * (n_selected < 3)), 'either' as maximum(a, b), 'not a' as 1 - (a), 'x if c "
                               f"else y' as (c) * x + (1 - (c)) * y, and a < b < c as (a < b) * (b < c). {_FORMULA_HELP}")
        if isinstance(node, (ast.JoinedStr, ast.Constant)) and isinstance(getattr(node, "value", ""), (str, bytes, complex)):
            raise FormulaError(f"text, bytes and complex numbers are not allowed in a value formula; use numbers, v and "
                               f"the functions. {_FORMULA_HELP}")
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name in _ARITY and (node.keywords or len(node.args) != _ARITY[name]
                                   or any(isinstance(a, ast.Starred) for a in node.args)):
                n = _ARITY[name]
                raise FormulaError(f"{name}() takes exactly {n} argument{'s' if n > 1 else ''}, without names "
                                   f"(e.g. {name}({', '.join(['v', '1'][:n])})). {_FORMULA_HELP}")


def _too_deep(formula: str) -> FormulaError:
    return FormulaError(f"The value formula is nested too deeply (more than {MAX_FORMULA_DEPTH} levels of operators, "
                        f"brackets or calls; it starts {formula[:40]!r}). Write long sums with sum_hits(...) or "
                        f"prod_hits(...) over v instead of one term per code. {_FORMULA_HELP}")


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
        self._compiled: dict = {}
        self._last_draws = None
        if len(self.formula) > MAX_FORMULA_LENGTH:
            raise FormulaError(f"The value formula is {len(self.formula):,} characters long; at most {MAX_FORMULA_LENGTH:,} are "
                               f"allowed. Write it with sum_hits(...) or prod_hits(...) over v instead of one term per code. {_FORMULA_HELP}")
        try:
            self._tree = ast.parse(self.formula, mode="eval").body
        except SyntaxError as err:
            raise FormulaError(f"The value formula is not a valid expression ({err.msg} at column {err.offset}). {_FORMULA_HELP}") from None
        except (RecursionError, MemoryError):  # the parser's own nesting limit
            raise _too_deep(self.formula) from None
        if _depth(self._tree) > MAX_FORMULA_DEPTH:
            raise _too_deep(self.formula)
        _refuse_unsafe(self._tree)
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
            raise FormulaError(f"Cannot evaluate the value formula {self.formula!r}: {str(err).rstrip('.')}. {_FORMULA_HELP}") from None
        try:
            out = np.broadcast_to(np.asarray(out, dtype=float), hits.shape[:-1])
        except (TypeError, ValueError):  # e.g. a per-code array (v, exp(v)) left outside sum_hits(...)
            raise FormulaError(f"The value formula {self.formula!r} does not give one number per set: reduce per-code "
                               f"quantities such as v with sum_hits(...), prod_hits(...), max_hits(...) or min_hits(...). "
                               f"{_FORMULA_HELP}") from None
        if not np.all(np.isfinite(out)):
            raise self.non_finite_error()
        return np.array(out)

    def compiled(self, n_codes: int) -> CompiledFormula | None:
        """The formula for K = ``n_codes`` codes as reductions and postfix instructions.

        Used by the fast general universes (``favmac.formula_kernels``). Returns None for a
        construct the compiler does not cover (comparisons, subscripts of set quantities,
        keyword arguments ...): those formulas keep the reference evaluation. O(K) once per K.

        >>> c = FormulaValue("prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)", weights=[10, 1]).compiled(2)
        >>> c.coefs.tolist(), c.reads_selection
        ([[1.5, 0.6], [25.0, 16.0]], False)
        """
        if n_codes not in self._compiled:
            compiler = _FormulaCompiler(self.weights_for(n_codes))
            try:
                compiler.emit(self._tree)
                self._compiled[n_codes] = compiler.result()
            except (_NotCompilable, RecursionError):
                self._compiled[n_codes] = None
        return self._compiled[n_codes]

    def non_finite_error(self) -> FormulaError:
        """The error raised when the formula gives NaN or inf for some set and label vector."""
        return FormulaError(f"The value formula {self.formula!r} gave a non-finite value (NaN or inf) for some set.")

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

        n_hits_after = base_hits.sum(axis=-1)[None, :] + cand_hits

        def extreme(reduce, combine, fill):
            # max/min over all K codes see a 0 at every code that is not a hit (as in __call__)
            inner = extend(reduce, combine, fill, base_hits, cand_hits)

            def reducer(x):
                out = inner(x)
                return np.where(n_hits_after < n_codes, combine(out, 0.0), out)

            return reducer

        every = np.ones((len(candidates), 1), dtype=bool)
        functions = {
            "sum_hits": extend(np.sum, np.add, 0.0, base_hits, cand_hits),
            "prod_hits": extend(np.prod, np.multiply, 1.0, base_hits, cand_hits),
            "max_hits": extreme(np.max, np.maximum, -np.inf),
            "min_hits": extreme(np.min, np.minimum, np.inf),
            "sum_selected": extend(np.sum, np.add, 0.0, base, every),
            **_ELEMENTWISE,
        }
        names = {
            "v": code_values,
            "n_hits": n_hits_after,
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
            raise self.non_finite_error()
        return out @ weights
