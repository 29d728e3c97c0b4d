"""Universes U(x): the candidate sets FavMac chooses from, with their proxies.

* ``prob``  — add codes by decreasing p_k (FPCP's order).
* ``value`` — by decreasing p_k v_k.
* ``ratio`` — by decreasing r_k = p_k v_k / ((1 - p_k) w_k) (FavMac's default); a zero
  denominator with a positive numerator ranks first, 0/0 ranks last. For a formula value
  the sequence is built greedily by the marginal proxy-value / proxy-cost ratio.
* ``full``  — all 2^K subsets (K <= 14).

Ties are broken by code index. The greedy universes are nested prefixes
S_0 = {} ⊂ S_1 ⊂ … ⊂ S_K of an order; ``full`` enumerates subsets by binary counting
(bit k = code k), so candidate 0 is the empty set in every universe.

A cost that is a set function (no per-code weights, e.g. the unsupported payment
:class:`favmac.payment.CmsHccCost`) gets its universes from :func:`set_cost_candidates`: Chat
and Vhat are its exact proxies, and the ratio universe adds, at each step,
argmax_k (Vhat(S+k) - Vhat(S)) / (Chat(S+k) - Chat(S)) (compiled for the payment value with its
own unsupported payment, :mod:`favmac.cost_kernels`, else :func:`joint_greedy`). Chat of such a
cost need not be monotone along a sequence, so the "cost" score of a nested sequence is the
running max of Chat along it (:mod:`favmac.costs`' note).

The score a threshold is compared with (``cost`` or ``price``) and the default score are
:mod:`favmac.scores`'; :meth:`Candidates.scores` computes them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .parallel import map_chunks
from .protocols import (bind_rows, compiled_formula, is_additive, is_set_cost, joint_sequences, own_sequences,
                        prefix_proxies)
from .scores import GAIN_TOLERANCE, check_score, price_scores, value_increments

__all__ = [
    "UNIVERSES",
    "DEFAULT_UNIVERSE",
    "MAX_FULL_CODES",
    "check_universe",
    "ratio_keys",
    "greedy_order",
    "general_sequences",
    "first_tied_maximum",
    "Candidates",
    "PerRows",
    "ChosenSets",
    "candidate_sets",
    "set_cost_candidates",
    "joint_greedy",
    "prefix_masks",
    "all_subsets",
    "order_dtype",
    "smallest_int",
]

UNIVERSES = ("ratio", "prob", "value", "full")
#: The universe a run uses when none is given: FavMac's ratio sequence (docs/method.md "Universes").
DEFAULT_UNIVERSE = "ratio"
_ROWS = 16_384  # patients per chunk when building additive candidates (its temporaries are several (rows, K) arrays)
MAX_FULL_CODES = 14


def smallest_int(largest: int):
    """The smallest signed integer dtype holding 0..``largest`` (and its negation).

    >>> smallest_int(127), smallest_int(128), smallest_int(2**31 - 1), smallest_int(2**31)
    (<class 'numpy.int8'>, <class 'numpy.int16'>, <class 'numpy.int32'>, <class 'numpy.int64'>)
    """
    for dtype in (np.int8, np.int16, np.int32):
        if largest <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def order_dtype(n_codes: int):
    """The smallest integer dtype that holds code indices 0..K-1 (:func:`smallest_int` of K - 1):
    int8 up to 128 codes, then int16, int32.

    Orders (N, K) are the largest integer arrays of a replay; their dtype changes no result.

    >>> order_dtype(128), order_dtype(129), order_dtype(2**15 + 1)
    (<class 'numpy.int8'>, <class 'numpy.int16'>, <class 'numpy.int32'>)
    """
    return smallest_int(n_codes - 1)


def check_universe(universe: str, n_codes: int) -> None:
    """Raise ValueError for an unknown universe or a ``full`` universe over too many codes.

    The one place this rule lives; favmac.io and the app wrap its message in their own errors.
    """
    if universe not in UNIVERSES:
        shown = repr(universe) if len(repr(universe)) <= 60 else repr(universe)[:57] + "..."  # user text: kept short
        raise ValueError(f"unknown universe {shown}; choose one of {', '.join(UNIVERSES)} (ratio is FavMac's default).")
    if universe == "full" and n_codes > MAX_FULL_CODES:
        raise ValueError(
            f"the 'full' universe enumerates all 2^K candidate sets and allows at most {MAX_FULL_CODES} codes, "
            f"but this data has {n_codes} codes (2^{n_codes} sets). Use the 'ratio' universe (FavMac's default), "
            f"or keep at most {MAX_FULL_CODES} codes."
        )


def _along(terms: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per-code ``terms`` (N, K) taken in each patient's ``order``."""
    return np.take_along_axis(terms, np.asarray(order, dtype=np.int64), axis=1)


def ratio_keys(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator with docs/method.md's conventions: x/0 = +inf for x > 0, 0/0 last."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = numerator / denominator
    zero_den = denominator == 0
    ratio = np.where(zero_den & (numerator > 0), np.inf, ratio)
    return np.where(zero_den & (numerator <= 0), -np.inf, ratio)


def greedy_order(probs, value, cost, universe: str = "ratio") -> np.ndarray:
    """Order in which the nested universe adds codes, per patient.

    Parameters
    ----------
    probs : ndarray (N, K)
    value, cost : value and cost functions (favmac.functions)
    universe : "ratio", "prob" or "value"

    Returns
    -------
    ndarray of int64, shape (N, K): ``order[i, j]`` is the (j+1)-th code added for patient i.

    Examples
    --------
    >>> from favmac.functions import AdditiveValue, AdditiveCost
    >>> greedy_order([[0.5, 0.9, 0.5, 1.0]], AdditiveValue(), AdditiveCost(), "ratio").tolist()
    [[3, 1, 0, 2]]
    """
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    n_codes = probs.shape[1]
    check_universe(universe, n_codes)
    if universe == "full":
        raise ValueError("the 'full' universe has no greedy order")
    if universe == "prob":
        key = probs
    elif universe == "value":
        key = probs * value.weights_for(n_codes)
    elif is_additive(value):
        key = ratio_keys(probs * value.weights_for(n_codes), (1.0 - probs) * cost.weights_for(n_codes))
    else:
        return general_sequences(probs, value, cost)[0]
    return np.argsort(-key, axis=1, kind="stable").astype(np.int64)


def general_sequences(probs, value, cost, order=None, *, reference: bool = False):
    """Orders and prefix proxies of a general (formula) value for a batch of patients.

    Without ``order``: the greedy ratio universe, each step adding
    argmax_k (Vhat(S+k) - Vhat(S)) / (Chat(S+k) - Chat(S)), ties to the lowest code index.
    With ``order`` (N, K): Vhat of the prefixes of that order (``prob``/``value`` universes).

    A formula that ``value.compiled`` can turn into instructions runs in one compiled pass
    over all patients (``favmac.formula_kernels``); others, or ``reference=True``, take the
    reference path: one patient at a time through ``value.proxy_extensions``. Both use the
    same draws and agree to round-off (about 1e-15 relative) in Vhat.

    Returns
    -------
    (order, vhat): int64 (N, K) and float (N, K + 1).

    Examples
    --------
    >>> from favmac.functions import AdditiveCost, FormulaValue
    >>> f = FormulaValue("sum_hits(v) + 2 * n_hits", weights=[1.0, 3.0, 2.0])
    >>> order, vhat = general_sequences([[0.5, 0.5, 0.9]], f, AdditiveCost())
    >>> order.tolist(), vhat.round(3).tolist()
    ([[2, 1, 0]], [[0.0, 3.6, 6.1, 7.6]])
    """
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    n_patients, n_codes = probs.shape
    cost_steps = (1.0 - probs) * cost.weights_for(n_codes)
    own = None if reference else own_sequences(value)
    if own is not None:  # a value with its own compiled greedy (e.g. favmac.payment.CmsHccValue)
        return own(probs, cost_steps, order, GAIN_TOLERANCE)
    compiled = None if reference else compiled_formula(value, n_codes)
    if compiled is None:
        if order is None:
            sequences = [_greedy_ratio_reference(p, bind_rows(value, i), cost_steps[i]) for i, p in enumerate(probs)]
        else:
            sequences = [_prefix_reference(p, bind_rows(value, i), row) for i, (p, row) in enumerate(zip(probs, np.asarray(order)))]
        out_order = np.array([seq[0] for seq in sequences], dtype=np.int64).reshape(n_patients, n_codes)
        return out_order, np.array([seq[1] for seq in sequences], dtype=float).reshape(n_patients, n_codes + 1)
    from .formula_kernels import STATUS_OK, formula_sequences

    uniforms, _ = value.label_draws(n_codes)
    out_order, vhat, status = formula_sequences(probs, cost_steps, compiled, uniforms, GAIN_TOLERANCE, order)
    if status != STATUS_OK:
        raise value.non_finite_error()
    return out_order, vhat


def _prefix_reference(p: np.ndarray, value, order: np.ndarray):
    masks = np.zeros((len(order) + 1, len(order)), dtype=bool)
    for j, code in enumerate(order):
        masks[j + 1 :, code] = True
    return np.asarray(order, dtype=np.int64), value.proxy(masks, p)


def _greedy_ratio_reference(p: np.ndarray, value, cost_steps: np.ndarray):
    """Greedy sequence for a general value, one patient, through ``value.proxy_extensions``.

    Returns the order (K,) and Vhat of every prefix (K + 1,).
    """
    n_codes = p.shape[0]
    chosen = np.zeros(n_codes, dtype=bool)
    order = np.empty(n_codes, dtype=np.int64)
    vhat = np.empty(n_codes + 1)
    current = vhat[0] = float(value.proxy(chosen, p))
    for step in range(n_codes):
        remaining = np.flatnonzero(~chosen)
        trial_values = value.proxy_extensions(chosen, remaining, p)
        gains = trial_values - current
        # Summation round-off must not turn a zero gain into a "positive / 0 = +inf" ratio.
        allowance = GAIN_TOLERANCE * max(1.0, abs(current))
        gains[np.abs(gains) <= allowance] = 0.0
        steps = cost_steps[remaining]
        keys = ratio_keys(gains, steps)
        best = first_tied_maximum(keys, gains, steps, allowance)
        code = remaining[best]
        order[step] = code
        chosen[code] = True
        current = vhat[step + 1] = float(trial_values[best])
    return order, vhat


def first_tied_maximum(keys, gains, cost_steps, allowance: float) -> int:
    """Index of the lowest code whose ratio key ties the largest one.

    A finite key ties the maximum when its gain is within ``allowance`` (the round-off
    allowance of the gains) of the gain that would reach the maximum ratio: codes whose gains
    are equal in exact arithmetic tie whatever order their sums were taken in, so ties go to
    the lowest code index as docs/method.md says (``formula_kernels`` applies the same rule).

    >>> first_tied_maximum(np.array([1.0, 2.0, 2.0 - 1e-15]), np.array([1.0, 2.0, 2.0 - 1e-15]), np.ones(3), 1e-12)
    1
    >>> first_tied_maximum(np.array([2.0 - 1e-15, 2.0]), np.array([2.0 - 1e-15, 2.0]), np.ones(2), 1e-12)
    0
    """
    top = keys.max()
    if np.isinf(top):
        tied = keys == top
    else:
        tied = (keys == top) | ((cost_steps > 0) & (gains >= top * cost_steps - allowance))
    return int(np.argmax(tied))


def all_subsets(n_codes: int) -> np.ndarray:
    """All 2^K subsets as a (2^K, K) bool matrix, by binary counting (row 0 = empty set)."""
    rows = np.arange(2**n_codes)[:, None]
    return ((rows >> np.arange(n_codes)[None, :]) & 1).astype(bool)


class PerRows:
    """A part of :class:`Candidates` computed for a row selection when asked (``part(rows)``; all rows by
    default): a subset of the candidates computes only its own rows' part (a replay's chunks: no (N, M)
    table is kept).

    >>> double = PerRows(lambda rows: np.arange(6)[rows] * 2)
    >>> double(slice(1, 3)).tolist(), double().tolist()[-1]
    ([2, 4], 10)
    """

    __slots__ = ("compute",)

    def __init__(self, compute):
        self.compute = compute

    def __call__(self, rows=slice(None)):
        return self.compute(rows)


@dataclass
class Candidates:
    """The candidate sets of a batch of patients and their proxies.

    For nested universes ``order`` is (N, K) (:func:`order_dtype`) and candidate j of patient i
    is the first j codes of ``order[i]`` (M = K + 1 candidates). For ``full``, ``subsets``
    (M, K) is shared by all patients (M = 2^K). ``chat`` and ``vhat`` are (N, M); both may be
    given as a zero-argument function and are then computed on first use; a Chat given as
    :class:`PerRows` takes a row selection, so that :meth:`subset` computes only its own rows'
    Chat (a replay's chunks: no (N, M) table is kept). ``monotone`` says Vhat never
    decreases along a nested sequence (additive value), so S_hat is simply the last prefix
    under the threshold and Vhat is not needed to choose. ``steps_source`` (nested universes;
    an array pair or a zero-argument function) gives the (N, K) Chat and Vhat increments of
    every step, which the price score divides; given as :class:`PerRows`, :meth:`subset`
    computes only its own rows' steps.
    """

    universe: str
    chat_source: object
    vhat_source: object
    order: np.ndarray | None = None
    subsets: np.ndarray | None = None
    monotone: bool = False
    steps_source: object = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def chat(self) -> np.ndarray:
        if callable(self.chat_source):
            self.chat_source = self.chat_source()
        return self.chat_source

    @property
    def vhat(self) -> np.ndarray:
        if callable(self.vhat_source):
            self.vhat_source = self.vhat_source()
        return self.vhat_source

    @property
    def steps(self) -> tuple:
        """Nested universes: ``(cost_steps, value_steps)``, each (N, K), the increments of step j = 1..K."""
        if callable(self.steps_source):
            self.steps_source = self.steps_source()
        if self.steps_source is None:
            raise ValueError("these candidates carry no step increments (the 'full' universe has no steps)")
        return self.steps_source

    def scores(self, score: str = "cost") -> np.ndarray:
        """(N, M) keys a threshold is compared with: Chat (``"cost"``) or the price score (``"price"``).

        The price score is -inf for the empty set and the running max of the step prices
        (:func:`price_scores`) after it; it exists on nested universes only (ValueError for
        ``full``). Both are non-decreasing along a nested sequence.
        """
        check_score(score, self.universe)
        if score == "cost":
            return self.chat
        if "price" not in self._cache:
            self._cache["price"] = price_scores(*self.steps)
        return self._cache["price"]

    def subset(self, rows) -> "Candidates":
        """The candidates of the patients ``rows`` (a slice or index array)."""
        source = self.vhat_source
        vhat = (lambda: self.vhat[rows]) if callable(source) else source[rows]
        chat_source = self.chat_source
        if callable(chat_source):
            chat = (lambda: chat_source(rows)) if isinstance(chat_source, PerRows) else (lambda: self.chat[rows])
        else:
            chat = chat_source[rows]
        order = None if self.order is None else self.order[rows]
        source = self.steps_source
        if isinstance(source, PerRows):
            steps = lambda: source(rows)  # noqa: E731 — these patients' steps only, never the whole stream's
        else:
            steps = None if source is None else (lambda: tuple(part[rows] for part in self.steps))
        out = Candidates(self.universe, chat, vhat, order=order, subsets=self.subsets,
                         monotone=self.monotone, steps_source=steps)
        # all per patient; a snapshot (one C-level copy), as another thread may fill a cache meanwhile
        out._cache.update({name: cached[rows] for name, cached in dict(self._cache).items()})
        return out

    @classmethod
    def concatenate(cls, parts: list) -> "Candidates":
        """The candidates of several batches of patients, stacked in order (one universe)."""
        first = parts[0]
        steps = None
        if first.steps_source is not None:
            steps = lambda: tuple(np.concatenate([part.steps[i] for part in parts]) for i in range(2))  # noqa: E731
        return cls(
            first.universe,
            np.concatenate([part.chat for part in parts]),
            np.concatenate([part.vhat for part in parts]),
            order=None if first.order is None else np.concatenate([part.order for part in parts]),
            subsets=first.subsets,
            monotone=first.monotone,
            steps_source=steps,
        )

    @property
    def nested(self) -> bool:
        return self.order is not None

    @property
    def n_patients(self) -> int:
        return self.order.shape[0] if self.order is not None else self.chat.shape[0]

    @property
    def n_candidates(self) -> int:
        """M: K + 1 prefixes (nested universes) or the 2^K subsets (``full``)."""
        return self.order.shape[1] + 1 if self.order is not None else self.subsets.shape[0]

    def masks(self, index: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Boolean sets (len(index), K) for candidate ``index[r]`` of patient ``rows[r]``."""
        index = np.asarray(index, dtype=np.int64)
        rows = np.arange(len(index)) if rows is None else np.asarray(rows)
        if self.subsets is not None:
            return self.subsets[index]
        return self.code_ranks()[rows] < index[:, None]

    def code_ranks(self) -> np.ndarray:
        """Nested universes: (N, K) position of each code in its patient's order."""
        if "ranks" not in self._cache:
            ranks = np.empty_like(self.order)
            np.put_along_axis(ranks, self.order, np.arange(self.order.shape[1])[None, :], axis=1)
            self._cache["ranks"] = ranks
        return self._cache["ranks"]

    def totals(self, contributions: np.ndarray) -> np.ndarray:
        """(N, M) sums of per-code ``contributions`` (N, K) over every candidate set."""
        if self.subsets is not None:
            return contributions @ self.subsets.T.astype(float)
        return _prefix_sums(contributions, self.order)

    def best_prefix(self) -> np.ndarray:
        """For nested universes: (N, K+1) index of argmax_{i <= j} vhat (the last maximum;
        values within 1e-12 relative of the maximum count as equal to it)."""
        if "best" not in self._cache and self.monotone:
            self._cache["best"] = np.broadcast_to(np.arange(self.n_candidates), (self.n_patients, self.n_candidates))
        if "best" not in self._cache:
            running = np.maximum.accumulate(self.vhat, axis=1)
            steps = np.arange(self.vhat.shape[1])[None, :]
            # Vhat within round-off of the running maximum ties it (e.g. a code that cannot
            # change the value): ties go to the last, as for exactly equal values.
            tied = self.vhat >= running - GAIN_TOLERANCE * np.maximum(1.0, np.abs(running))
            self._cache["best"] = np.maximum.accumulate(np.where(tied, steps, 0), axis=1)
        return self._cache["best"]

    def choose(self, thresholds, score: str = "cost") -> np.ndarray:
        """Index of S_hat = argmax{Vhat(S) : score(S) < T} per patient (0 = empty set).

        ``thresholds`` is a scalar or (N,) array; ``score`` is "cost" (Chat) or "price"
        (:meth:`scores`). "<" is strict, also at T = +inf (an infinite price is never paid).
        Nested universes take the last maximum among the prefixes under the threshold (the
        largest S_j when Vhat is monotone); ``full`` breaks Vhat ties by smaller Chat, then
        by enumeration order.
        """
        thresholds = np.broadcast_to(np.asarray(thresholds, dtype=float), (self.n_patients,))
        allowed = self.scores(score) < thresholds[:, None]
        if self.nested:
            last = np.maximum(allowed.sum(axis=1) - 1, 0)
            return self.best_prefix()[np.arange(self.n_patients), last]
        index = np.zeros(self.n_patients, dtype=np.int64)
        for i in range(self.n_patients):
            ok = np.flatnonzero(allowed[i])
            if len(ok):
                keys = np.lexsort((ok, self.chat[i, ok], -self.vhat[i, ok]))
                index[i] = ok[keys[0]]
        return index


@dataclass(frozen=True)
class ChosenSets:
    """Chosen sets of a replay in compact form: which candidate, per target and step.

    ``index`` (T, S) is the chosen candidate of each step's patient (int8/int16); the sets
    themselves are the first ``index`` codes of ``order[s]`` (nested universes, ``order``
    (S, K)) or ``subsets[index]`` (``full``). 10 targets x 10^6 steps x 35 codes take
    10 MB + 70 MB here instead of 350 MB of booleans.

    >>> sets = ChosenSets(np.array([[2, 0]], dtype=np.int8), order=np.array([[1, 0, 2], [0, 2, 1]]))
    >>> sets.masks().astype(int).tolist()
    [[[1, 1, 0], [0, 0, 0]]]
    """

    index: np.ndarray
    order: np.ndarray | None = None
    subsets: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        n_codes = self.subsets.shape[1] if self.subsets is not None else self.order.shape[1]
        return (*self.index.shape, n_codes)

    def masks(self, target: int | None = None, rows=slice(None)) -> np.ndarray:
        """Boolean sets: (T, S, K), or (S, K) for one ``target``; ``rows`` selects steps."""
        if target is None:
            return np.stack([self.masks(t, rows) for t in range(self.index.shape[0])]) if len(self.index) else np.zeros(self.shape, bool)
        index = self.index[target, rows].astype(np.int64)
        if self.subsets is not None:
            return self.subsets[index]
        order = self.order[rows]
        ranks = np.empty(order.shape, dtype=np.int16 if order.shape[1] < 2**15 else np.int64)
        np.put_along_axis(ranks, order.astype(np.int64), np.arange(order.shape[1])[None, :], axis=1)
        return ranks < index[:, None]


def candidate_sets(probs, value, cost, universe: str = "ratio") -> Candidates:
    """Candidate sets of every patient with their cost proxy (Chat) and value proxy (Vhat).

    Chat of a nested prefix is the running sum of (1 - p_k) w_k along the order, so it is
    non-decreasing in floating point too.
    """
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    n_patients, n_codes = probs.shape
    check_universe(universe, n_codes)
    if is_set_cost(cost):  # a set-function cost, e.g. the unsupported payment
        return set_cost_candidates(probs, value, cost, universe)
    if universe != "full" and is_additive(value):
        cost_terms = None
    else:
        cost_terms = (1.0 - probs) * cost.weights_for(n_codes)
    if universe == "full":
        subsets = all_subsets(n_codes)
        chat = np.sum(subsets[None, :, :] * cost_terms[:, None, :], axis=2)
        if is_additive(value):
            vhat = np.sum(subsets[None, :, :] * (probs * value.weights_for(n_codes))[:, None, :], axis=2)
        else:
            vhat = np.stack([bind_rows(value, i).proxy(subsets, p) for i, p in enumerate(probs)]) if n_patients else np.zeros((0, len(subsets)))
        return Candidates(universe, chat, vhat, subsets=subsets)
    if universe == "ratio" and not is_additive(value):
        order, vhat = general_sequences(probs, value, cost)
        order = order.astype(order_dtype(n_codes))
        return Candidates(universe, _prefix_sums(cost_terms, order), vhat, order=order,
                          steps_source=lambda: (_along(cost_terms, order), value_increments(vhat)))
    del cost_terms  # large streams: recomputed only if the price score asks for the steps
    # In chunks of patients: sorting keys and summing them along the order take several
    # (N, K) temporaries, which at 10^6 x 35 would be gigabytes.
    cost_weights = cost.weights_for(n_codes)
    order = np.empty((n_patients, n_codes), dtype=order_dtype(n_codes))

    def fill(start):  # threads (favmac.parallel): each chunk writes its own rows
        rows = slice(start, start + _ROWS)
        order[rows] = greedy_order(probs[rows], value, cost, universe)

    map_chunks(fill, range(0, n_patients, _ROWS))

    # the same sums, row by row, as a table built once; a subset computes its own rows' Chat: no (N, K + 1) table is kept
    chat = PerRows(lambda rows: _prefix_sums((1.0 - probs[rows]) * cost_weights, order[rows]))
    if is_additive(value):
        value_weights = value.weights_for(n_codes)
        # a subset computes its own rows' steps (a replay's chunks): no (N, K) pair kept
        steps = PerRows(lambda rows: (_along((1.0 - probs[rows]) * cost_weights, order[rows]),
                                      _along(probs[rows] * value_weights, order[rows])))
        return Candidates(universe, chat, lambda: _prefix_sums(probs * value_weights, order), order=order,
                          monotone=True, steps_source=steps)
    _, vhat = general_sequences(probs, value, cost, order)
    steps = lambda: (_along((1.0 - probs) * cost_weights, order), value_increments(vhat))  # noqa: E731
    return Candidates(universe, chat(), vhat, order=order, steps_source=steps)


def _prefix_sums(terms: np.ndarray, order: np.ndarray) -> np.ndarray:
    """(N, K+1): 0 then the running sums of ``terms`` taken in each patient's ``order``."""
    out = np.zeros((terms.shape[0], terms.shape[1] + 1))
    np.cumsum(np.take_along_axis(terms, order, axis=1), axis=1, out=out[:, 1:])
    return out


# --------------------------------------------------------------------------- set-function costs


def prefix_masks(order: np.ndarray) -> np.ndarray:
    """(N, K + 1, K) bool: candidate j of patient i is the first j codes of ``order[i]``."""
    n_patients, n_codes = order.shape
    ranks = np.empty(order.shape, dtype=np.int64)
    np.put_along_axis(ranks, np.asarray(order, dtype=np.int64), np.arange(n_codes)[None, :], axis=1)
    return ranks[:, None, :] < np.arange(n_codes + 1)[None, :, None]


def set_proxies(function, masks, probs) -> np.ndarray:
    """(N, M) proxies of candidate sets ``masks`` (N, M, K) per patient (rows bound to ``function``)."""
    if masks.shape[0] == 0:
        return np.zeros(masks.shape[:2])
    return np.asarray(function.proxy(masks, probs[:, None, :]), dtype=float).reshape(masks.shape[:2])


def set_cost_candidates(probs, value, cost, universe: str = "ratio") -> Candidates:
    """Candidate sets with Chat = ``cost.proxy`` and Vhat = ``value.proxy`` (``value`` and ``cost``
    bound to the rows of ``probs``).

    Nested universes: ``chat`` is the running max of Chat along the sequence (the module's
    note); ``full``: Chat of every subset.
    """
    probs = np.atleast_2d(np.asarray(probs, dtype=float))
    n_patients, n_codes = probs.shape
    check_universe(universe, n_codes)
    if universe == "full":
        subsets = all_subsets(n_codes)
        masks = np.broadcast_to(subsets[None], (n_patients, *subsets.shape))
        return Candidates(universe, set_proxies(cost, masks, probs), set_proxies(value, masks, probs), subsets=subsets)
    if universe == "ratio":
        compiled = joint_sequences(cost)
        found = None if compiled is None else compiled(value, probs)
        order, vhat, chat = joint_greedy(probs, value, cost) if found is None else found
    else:
        key = probs if universe == "prob" else probs * value.weights_for(n_codes)
        order = np.argsort(-key, axis=1, kind="stable").astype(np.int64)
        masks = prefix_masks(order)
        own_chat, own_vhat = prefix_proxies(cost), own_sequences(value)
        chat = own_chat(probs, order) if own_chat is not None else set_proxies(cost, masks, probs)
        vhat = own_vhat(probs, np.zeros_like(probs), order)[1] if own_vhat is not None else set_proxies(value, masks, probs)
    chat = np.maximum.accumulate(chat, axis=1)
    order = order.astype(np.int16 if n_codes < 2**15 else np.int64)
    steps = lambda: (np.diff(chat, axis=1), value_increments(vhat))  # noqa: E731
    return Candidates(universe, chat, vhat, order=order, steps_source=steps)


def joint_greedy(probs, value, cost):
    """The ratio universe with both proxies general: order (N, K), Vhat and Chat of every prefix (N, K + 1).

    The reference (and the path for values other than the cost's own payment value); the
    payment value with its unsupported payment runs compiled (:mod:`favmac.cost_kernels`).

    All patients advance one step at a time; at step j every remaining code of every patient is
    tried (value and cost proxies of S + k, exact). Gains within round-off (1e-12 relative) of
    zero are zero; ties go to the lowest code index (:func:`first_tied_maximum`'s
    rule, row by row).
    """
    n_patients, n_codes = probs.shape
    chosen = np.zeros((n_patients, n_codes), dtype=bool)
    order = np.empty((n_patients, n_codes), dtype=np.int64)
    vhat = np.empty((n_patients, n_codes + 1))
    chat = np.empty((n_patients, n_codes + 1))
    if n_patients == 0:
        return order, vhat, chat
    vhat[:, 0] = set_proxies(value, chosen[:, None, :], probs)[:, 0]
    chat[:, 0] = set_proxies(cost, chosen[:, None, :], probs)[:, 0]
    rows = np.arange(n_patients)[:, None]
    for step in range(n_codes):
        left = n_codes - step
        remaining = np.argsort(chosen, axis=1, kind="stable")[:, :left]  # unchosen codes, ascending
        trials = np.repeat(chosen[:, None, :], left, axis=1)
        trials[rows, np.arange(left)[None, :], remaining] = True
        trial_v = set_proxies(value, trials, probs)
        trial_c = set_proxies(cost, trials, probs)
        v_now, c_now = vhat[:, step : step + 1], chat[:, step : step + 1]
        allowance = GAIN_TOLERANCE * np.maximum(1.0, np.abs(v_now))
        gains = trial_v - v_now
        gains[np.abs(gains) <= allowance] = 0.0
        cost_gains = trial_c - c_now
        cost_gains[np.abs(cost_gains) <= GAIN_TOLERANCE * np.maximum(1.0, np.abs(c_now))] = 0.0
        keys = ratio_keys(gains, cost_gains)
        top = keys.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):  # top * gain is read only where top is finite
            tied = (keys == top) | (np.isfinite(top) & (cost_gains > 0) & (gains >= top * cost_gains - allowance))
        best = np.argmax(tied, axis=1)
        code = remaining[np.arange(n_patients), best]
        order[:, step] = code
        chosen[np.arange(n_patients), code] = True
        vhat[:, step + 1] = trial_v[np.arange(n_patients), best]
        chat[:, step + 1] = trial_c[np.arange(n_patients), best]
    return order, vhat, chat
