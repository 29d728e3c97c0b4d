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

The score a threshold is compared with (SPEC "The score a threshold is on"):

* ``cost``  — the cumulative cost proxy Chat(S) (the paper's rule; every universe);
* ``price`` — the running max of the step prices (Chat increment / Vhat increment) along a
  nested sequence, score(S_0) = -inf (greedy universes only).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .parallel import map_chunks

__all__ = [
    "UNIVERSES",
    "MAX_FULL_CODES",
    "SCORES",
    "DEFAULT_SCORE",
    "default_score",
    "check_universe",
    "check_score",
    "step_prices",
    "price_scores",
    "greedy_order",
    "general_sequences",
    "first_tied_maximum",
    "Candidates",
    "ChosenSets",
    "candidate_sets",
    "all_subsets",
    "order_dtype",
    "smallest_int",
]

UNIVERSES = ("ratio", "prob", "value", "full")
#: The scores a threshold can be on: "cost" (Chat, the paper's) and "price" (marginal price).
SCORES = ("cost", "price")
#: The default score under expected-cost control: it found more value at the same budget on
#: every workload measured (docs/score_comparison.md). See default_score for the whole rule.
DEFAULT_SCORE = "price"
_GAIN_TOLERANCE = 1e-12
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
        raise ValueError(f"unknown universe {universe!r}; choose one of {', '.join(UNIVERSES)} (ratio is FavMac's default).")
    if universe == "full" and n_codes > MAX_FULL_CODES:
        raise ValueError(
            f"the 'full' universe enumerates all 2^K candidate sets and allows at most {MAX_FULL_CODES} codes, "
            f"but this data has {n_codes} codes (2^{n_codes} sets). Use the 'ratio' universe (FavMac's default), "
            f"or keep at most {MAX_FULL_CODES} codes."
        )


def default_score(universe: str | None = None, delta=None, target=None, cost_weights=None) -> str:
    """The score a run uses when none is given: the one place this decision lives (SPEC "Default score").

    Expected-cost control (``delta is None``) -> "price"; violation control (a ``delta``) ->
    "cost" (under violation control the price score spends well below c), except when the
    target is below the cost of the cheapest false flag (every ``target`` < min_k w_k of the
    ``cost_weights``, so a violation is any false flag): "price" there (measured: the CMS payment
    captured at c = 0.5 false flags, delta = 0.1, was 0.659 with price against 0.519 with cost).
    Without ``target`` or ``cost_weights`` (a cost that is not a sum of per-code weights) the
    control decides alone. The ``full`` universe has no price, so "cost" there whatever the
    control. FavMac, replay, predict_with_threshold, the distributed engine, RunSpec, the CLI and
    the app all call this.

    Parameters
    ----------
    universe : str, optional
    delta : float or None
        None: expected-cost control; a level: violation control.
    target : float or sequence of float, optional
        The target(s) c; with several, "price" only when every one is below the cheapest flag.
    cost_weights : sequence of float, optional
        w_k, the cost of a false flag of each code (an FP count: ones).

    >>> default_score("ratio"), default_score("ratio", delta=0.1), default_score("full")
    ('price', 'cost', 'cost')
    >>> default_score("ratio", 0.1, 0.5, [1.0, 2.0]), default_score("ratio", 0.1, 1.0, [1.0, 2.0])
    ('price', 'cost')
    """
    if universe == "full":
        return "cost"
    if delta is None:
        return DEFAULT_SCORE
    if target is not None and cost_weights is not None:
        weights = np.asarray(cost_weights, dtype=float).ravel()
        targets = np.asarray(target, dtype=float).ravel()
        if weights.size and targets.size and bool(np.all(targets < weights.min())):
            return "price"
    return "cost"


def check_score(score: str, universe: str | None = None) -> str:
    """Raise ValueError for an unknown score, or the price score on the ``full`` universe.

    The price of a set is the price of the step that added it, so it exists on the nested
    (greedy) universes only. Returns ``score``.

    >>> check_score("price", "ratio")
    'price'
    """
    if not isinstance(score, str) or score not in SCORES:
        raise ValueError(f"score: expected one of {', '.join(SCORES)} (cost is the paper's rule); got {score!r}")
    if score == "price" and universe == "full":
        raise ValueError("score: the price score is defined on nested sequences of sets (universes ratio, prob, "
                         "value), not on the 'full' universe; use score='cost' with 'full', or another universe")
    return score


def step_prices(cost_steps, value_steps) -> np.ndarray:
    """pi_j = cost increment / value increment of each step, with the SPEC's conventions.

    A float division of the two increments; a zero value increment gives +inf (whatever
    the cost increment), a zero cost increment with a positive value increment gives 0
    (-0.0 is returned as 0.0).

    >>> step_prices([0.5, 0.0, 0.3, 0.0], [0.25, 2.0, 0.0, 0.0]).tolist()
    [2.0, 0.0, inf, inf]
    """
    cost_steps = np.asarray(cost_steps, dtype=float)
    value_steps = np.asarray(value_steps, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # over: a subnormal value step, +inf as 1/0
        prices = cost_steps / value_steps
    return np.where(value_steps == 0, np.inf, prices) + 0.0


def price_scores(cost_steps, value_steps) -> np.ndarray:
    """(N, K + 1) price scores of nested sequences: -inf, then the running max of the step prices.

    ``cost_steps`` and ``value_steps`` are (N, K): the increments of Chat and Vhat of step
    j = 1..K of each patient's sequence.

    >>> price_scores([[0.5, 0.1, 0.2]], [[1.0, 0.4, 0.0]]).tolist()
    [[-inf, 0.5, 0.5, inf]]
    """
    prices = np.atleast_2d(step_prices(cost_steps, value_steps))
    out = np.empty((prices.shape[0], prices.shape[1] + 1))
    out[:, 0] = -np.inf
    np.maximum.accumulate(prices, axis=1, out=out[:, 1:])
    return out


def _value_increments(vhat: np.ndarray) -> np.ndarray:
    """Vhat(S_j) - Vhat(S_{j-1}) along nested sequences; round-off-sized gains count as zero.

    The same tolerance as the greedy ratio steps (:func:`general_sequences`), so a gain
    the greedy treats as zero has an infinite price here too.
    """
    gains = np.diff(vhat, axis=1)
    scale = np.maximum(1.0, np.abs(vhat[:, :-1]))
    return np.where(np.abs(gains) <= _GAIN_TOLERANCE * scale, 0.0, gains)


def _along(terms: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per-code ``terms`` (N, K) taken in each patient's ``order``."""
    return np.take_along_axis(terms, np.asarray(order, dtype=np.int64), axis=1)


def _ratio_keys(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator with the SPEC's conventions: x/0 = +inf for x > 0, 0/0 last."""
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
    elif value.is_additive:
        key = _ratio_keys(probs * value.weights_for(n_codes), (1.0 - probs) * cost.weights_for(n_codes))
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
    own = None if reference else getattr(value, "sequences", None)
    if own is not None:  # a value with its own compiled greedy (e.g. favmac.payment.CmsHccValue)
        return own(probs, cost_steps, order, _GAIN_TOLERANCE)
    compiled = None if reference else getattr(value, "compiled", lambda n: None)(n_codes)
    if compiled is None:
        from .functions import bind_rows

        if order is None:
            sequences = [_greedy_ratio_reference(p, bind_rows(value, i), cost_steps[i]) for i, p in enumerate(probs)]
        else:
            sequences = [_prefix_reference(p, bind_rows(value, i), row) for i, (p, row) in enumerate(zip(probs, np.asarray(order)))]
        out_order = np.array([seq[0] for seq in sequences], dtype=np.int64).reshape(n_patients, n_codes)
        return out_order, np.array([seq[1] for seq in sequences], dtype=float).reshape(n_patients, n_codes + 1)
    from .formula_kernels import STATUS_OK, formula_sequences

    uniforms, _ = value.label_draws(n_codes)
    out_order, vhat, status = formula_sequences(probs, cost_steps, compiled, uniforms, _GAIN_TOLERANCE, order)
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
        allowance = _GAIN_TOLERANCE * max(1.0, abs(current))
        gains[np.abs(gains) <= allowance] = 0.0
        steps = cost_steps[remaining]
        keys = _ratio_keys(gains, steps)
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
    the lowest code index as the SPEC says (``formula_kernels`` applies the same rule).

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


@dataclass
class Candidates:
    """The candidate sets of a batch of patients and their proxies.

    For nested universes ``order`` is (N, K) (:func:`order_dtype`) and candidate j of patient i
    is the first j codes of ``order[i]`` (M = K + 1 candidates). For ``full``, ``subsets``
    (M, K) is shared by all patients (M = 2^K). ``chat`` and ``vhat`` are (N, M); both may be
    given as a zero-argument function and are then computed on first use; a Chat function
    with a true ``takes_rows`` attribute also takes a row selection, so that :meth:`subset`
    computes only its own rows' Chat (a replay's chunks: no (N, M) table is kept). ``monotone`` says Vhat never
    decreases along a nested sequence (additive value), so S_hat is simply the last prefix
    under the threshold and Vhat is not needed to choose. ``steps_source`` (nested universes;
    an array pair or a zero-argument function) gives the (N, K) Chat and Vhat increments of
    every step, which the price score divides; a function with a true ``takes_rows`` attribute
    also takes a row selection, so that :meth:`subset` computes only its own rows' steps.
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
            chat = (lambda: chat_source(rows)) if getattr(chat_source, "takes_rows", False) else (lambda: self.chat[rows])
        else:
            chat = chat_source[rows]
        order = None if self.order is None else self.order[rows]
        source = self.steps_source
        if callable(source) and getattr(source, "takes_rows", False):
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
            tied = self.vhat >= running - _GAIN_TOLERANCE * np.maximum(1.0, np.abs(running))
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
    if not getattr(cost, "is_additive", True):  # a set-function cost, e.g. the unsupported payment
        from .costs import set_cost_candidates

        return set_cost_candidates(probs, value, cost, universe)
    if universe != "full" and value.is_additive:
        cost_terms = None
    else:
        cost_terms = (1.0 - probs) * cost.weights_for(n_codes)
    if universe == "full":
        subsets = all_subsets(n_codes)
        chat = np.sum(subsets[None, :, :] * cost_terms[:, None, :], axis=2)
        if value.is_additive:
            vhat = np.sum(subsets[None, :, :] * (probs * value.weights_for(n_codes))[:, None, :], axis=2)
        else:
            from .functions import bind_rows

            vhat = np.stack([bind_rows(value, i).proxy(subsets, p) for i, p in enumerate(probs)]) if n_patients else np.zeros((0, len(subsets)))
        return Candidates(universe, chat, vhat, subsets=subsets)
    if universe == "ratio" and not value.is_additive:
        order, vhat = general_sequences(probs, value, cost)
        order = order.astype(order_dtype(n_codes))
        return Candidates(universe, _prefix_sums(cost_terms, order), vhat, order=order,
                          steps_source=lambda: (_along(cost_terms, order), _value_increments(vhat)))
    del cost_terms  # large streams: recomputed only if the price score asks for the steps
    # In chunks of patients: sorting keys and summing them along the order take several
    # (N, K) temporaries, which at 10^6 x 35 would be gigabytes.
    cost_weights = cost.weights_for(n_codes)
    order = np.empty((n_patients, n_codes), dtype=order_dtype(n_codes))

    def fill(start):  # threads (favmac.parallel): each chunk writes its own rows
        rows = slice(start, start + _ROWS)
        order[rows] = greedy_order(probs[rows], value, cost, universe)

    map_chunks(fill, range(0, n_patients, _ROWS))

    def chat(rows=slice(None)):  # the same sums, row by row, as a table built once
        return _prefix_sums((1.0 - probs[rows]) * cost_weights, order[rows])

    chat.takes_rows = True  # a subset computes its own rows' Chat: no (N, K + 1) table is kept
    if value.is_additive:
        value_weights = value.weights_for(n_codes)

        def steps(rows=slice(None)):
            return _along((1.0 - probs[rows]) * cost_weights, order[rows]), _along(probs[rows] * value_weights, order[rows])

        steps.takes_rows = True  # a subset computes its own rows' steps (a replay's chunks): no (N, K) pair kept
        return Candidates(universe, chat, lambda: _prefix_sums(probs * value_weights, order), order=order,
                          monotone=True, steps_source=steps)
    _, vhat = general_sequences(probs, value, cost, order)
    steps = lambda: (_along((1.0 - probs) * cost_weights, order), _value_increments(vhat))  # noqa: E731
    return Candidates(universe, chat(), vhat, order=order, steps_source=steps)


def _prefix_sums(terms: np.ndarray, order: np.ndarray) -> np.ndarray:
    """(N, K+1): 0 then the running sums of ``terms`` taken in each patient's ``order``."""
    out = np.zeros((terms.shape[0], terms.shape[1] + 1))
    np.cumsum(np.take_along_axis(terms, order, axis=1), axis=1, out=out[:, 1:])
    return out
