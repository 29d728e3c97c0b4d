"""The scores a threshold is compared with, and the default score (docs/method.md "The score a threshold is on").

* ``cost``  — the cumulative cost proxy Chat(S) (the paper's rule; every universe);
* ``price`` — the running max of the step prices (Chat increment / Vhat increment) along a
  nested sequence, score(S_0) = -inf (greedy universes only).

:func:`default_score` is the one place the default is decided; :func:`check_score` the one
check of a score against a universe. The candidate sets themselves (:class:`favmac.universe.Candidates`)
compute their scores with :func:`price_scores`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SCORES", "DEFAULT_SCORE", "GAIN_TOLERANCE", "default_score", "check_score", "step_prices", "price_scores",
           "value_increments"]

#: The scores a threshold can be on: "cost" (Chat, the paper's) and "price" (marginal price).
SCORES = ("cost", "price")
#: The default score under expected-cost control: it found more value at the same budget on
#: every workload measured (docs/score_comparison.md). See default_score for the whole rule.
DEFAULT_SCORE = "price"
#: Round-off-sized gains count as zero: a value gain within GAIN_TOLERANCE * max(1, |Vhat|) is no gain
#: (the price steps here, the greedy ratio steps of favmac.universe and of the payment value's kernels).
GAIN_TOLERANCE = 1e-12


def default_score(universe: str | None = None, delta=None, target=None, cost_weights=None) -> str:
    """The score a run uses when none is given: the one place this decision lives (docs/method.md "Default score").

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


def result_score(result, cost_weights=None) -> str:
    """The score ``result``'s thresholds are on (a :class:`favmac.result.ReplayResult`): the one its run recorded
    (``settings["score"]``), else :func:`default_score` of its universe, control and targets: every reader of a
    result (the export, the app's tables) asks here instead of guessing.

    >>> from types import SimpleNamespace
    >>> result_score(SimpleNamespace(settings={"score": "cost"})), result_score(SimpleNamespace(settings={}, delta=None, targets=[1.0]))
    ('cost', 'price')
    """
    settings = getattr(result, "settings", None) or {}
    if settings.get("score"):
        return settings["score"]
    return default_score(settings.get("universe"), getattr(result, "delta", None), getattr(result, "targets", None),
                         cost_weights)


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
    """pi_j = cost increment / value increment of each step, with docs/method.md's conventions.

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


def value_increments(vhat: np.ndarray) -> np.ndarray:
    """Vhat(S_j) - Vhat(S_{j-1}) along nested sequences; round-off-sized gains count as zero.

    The same tolerance as the greedy ratio steps (:func:`favmac.universe.general_sequences`), so a gain
    the greedy treats as zero has an infinite price here too.
    """
    gains = np.diff(vhat, axis=1)
    scale = np.maximum(1.0, np.abs(vhat[:, :-1]))
    return np.where(np.abs(gains) <= GAIN_TOLERANCE * scale, 0.0, gains)
