"""Adaptive target under drift (expected-cost control): c_{n+1} = c_n + gamma (c - C_n), exactly.

With an adaptive rate gamma > 0 the target used at stream position n is c_n: it starts at the
user's target c (at the end of the burn-in) and moves by gamma times the gap between c and the
realized cost C_n of the set chosen for patient n (docs/method.md, "Adaptive target
under drift"). For ANY sequence of patients, exchangeable or not, the mean realized cost over
S predicted patients is at most c + (c + gamma C_max) / (gamma S) (:func:`adaptive_bound`):
summing the recursion gives mean(C) = c - (c_S - c) / (gamma S), and c_n never falls below
-gamma C_max (once c_n < 0 the threshold is -inf, the empty set costs 0 and c_n rises).

With labels that arrive later (:mod:`favmac.arrivals`) c moves when a patient's labels
arrive, by gamma (c - C_i) with C_i the cost of the set chosen at its prediction. Then c_n
can keep falling after it turns negative: the labels still outstanding when it did belong
to patients predicted at a target >= 0, and each moves c by at least -gamma C_max. If at
most L + 1 labels are outstanding right after any prediction (that patient's own and L
earlier ones; L = d with ``label_delay=d``), c_n >= -gamma (L + 1) C_max. When all S
updates have been made (at the end of a replay every label has arrived) the mean cost is
at most c + (c + gamma (L + 1) C_max) / (gamma S); while P of the S labels are still
pending, their costs (each <= C_max) are not in c_n yet, which adds P C_max / S.

No floats in the recursion: c, gamma and the costs are decimals, so c_n * S is an integer at
the scale S = 10^(d_cost + d_gamma) (:class:`AdaptiveTarget`), where 10^d_cost makes the
cost weights, C_max and c integers and 10^d_gamma makes gamma one. The replay kernel and
:class:`favmac.FavMac` both use these integers.

>>> rule = AdaptiveTarget(target=1.5, rate=0.1, cost_scale=1)
>>> rule.scale, rule.start
(100, 150)
>>> rule.step(rule.start, 3)  # chose a set of cost 3 > 1.5: c_n drops by 0.1 * 1.5
135
>>> float(adaptive_bound(1.5, 0.1, 10, 100))
1.75
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .thresholds import common_scale, exact, scaled_int

__all__ = ["AdaptiveTarget", "DELAY_GAIN_LIMIT", "adaptive_bound", "adaptive_series", "check_adaptive_rate",
           "delay_advice", "result_bound", "result_lag"]

#: gamma times the labels' lag L above which the adaptive target reacts too late and overshoots.
#: c_n answers a cost only when its labels arrive, L patients after the prediction; with gamma L well
#: above 1 it keeps moving the same way for L patients after the cost has turned, so it oscillates
#: and the mean cost settles well above c (still within :func:`adaptive_bound`, which allows for the
#: lag). Measured on the bundled HCC cohort (4,000 patients, burn-in 1,000, c = 1.05 false flags
#: per chart, ``label_delay=200``, six random orderings): gamma = 0.05 (gamma L = 10) gave mean costs
#: 1.17-1.53 (average 1.39); gamma = 0.005 (gamma L = 1) 1.04-1.06 (1.046); without a delay,
#: gamma = 0.05 gave 1.05.
DELAY_GAIN_LIMIT = 1.0


def check_adaptive_rate(rate, delta=None) -> float | None:
    """``rate`` as a float > 0 (or None); refuses it under violation control (``delta`` given).

    >>> check_adaptive_rate(0.05), check_adaptive_rate(None, 0.1)
    (0.05, None)
    """
    if rate is None:
        return None
    if isinstance(rate, bool):
        raise ValueError(f"adaptive_rate: expected None or a number > 0, got {rate!r}")
    try:
        value = float(rate)
    except (TypeError, ValueError):
        raise ValueError(f"adaptive_rate: expected None or a number > 0, got {rate!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"adaptive_rate: expected None or a finite number > 0, got {rate!r}")
    if delta is not None:
        raise ValueError("adaptive_rate applies to expected-cost control only (delta=None); "
                         f"got delta={delta!r}. Leave adaptive_rate unset for violation control.")
    return value


class AdaptiveTarget:
    """The recursion c_{n+1} = c_n + gamma (c - C_n) as integers at one decimal scale.

    Parameters
    ----------
    target : float
        The user's target c (cost units); c_{burn_in} = c.
    rate : float
        gamma > 0.
    cost_scale : int
        The costs' scale (:attr:`favmac.thresholds.ExactCosts.scale`): realized costs
        passed to :meth:`step` are integers at this scale.

    Attributes
    ----------
    scale : int
        S = 10^(d_cost + d_gamma): c_n * S is always an integer.
    start : int
        c * S.
    rate_scaled : int
        gamma * 10^d_gamma.
    """

    def __init__(self, target, rate, cost_scale: int, min_scale: int = 1):
        self.target = exact(target)
        self.rate = exact(rate)
        base = math.lcm(int(cost_scale), common_scale([target]), int(min_scale))  # powers of ten: the largest
        self.cost_scale = int(cost_scale)
        self.rate_unit = common_scale([rate])
        self.base = base
        self.scale = base * self.rate_unit
        self.start = scaled_int(self.target, self.scale)
        self.rate_scaled = scaled_int(self.rate, self.rate_unit)
        self.target_base = scaled_int(self.target, base)
        self.cost_to_base = base // self.cost_scale

    def step(self, current: int, realized: int) -> int:
        """c_{n+1} * S from c_n * S (``current``) and C_n * cost_scale (``realized``)."""
        return int(current) + self.rate_scaled * (self.target_base - int(realized) * self.cost_to_base)

    def as_fraction(self, current: int) -> Fraction:
        """c_n exactly, from c_n * S."""
        return Fraction(int(current), self.scale)

    def largest(self, c_max, n_steps: int) -> int:
        """A bound on |c_n * S| over ``n_steps`` steps (each step moves c_n by at most gamma (|c| + C_max))."""
        move = self.rate * (abs(self.target) + exact(c_max)) * self.scale
        return abs(self.start) + math.ceil(move) * int(n_steps) + 1


def adaptive_bound(target, rate, c_max, n_steps: int, lag: int = 0, pending: int = 0) -> Fraction:
    """The deterministic bound on the mean realized cost over S steps: c + (c + gamma C_max) / (gamma S).

    With labels that arrive later (module docstring): ``lag`` L is the most labels
    outstanding right after a prediction besides that patient's own (``label_delay=d``: d;
    in a replay, the largest ``labels_pending``), and ``pending`` P the labels of the S
    patients not yet arrived when the mean is taken (0 at the end of a replay). The bound is
    then c + (c + gamma (L + 1 + P) C_max) / (gamma S); L = P = 0 is the bound above.

    >>> adaptive_bound(1, 0.5, 4, 10), adaptive_bound(1, 0.5, 4, 10, lag=2)
    (Fraction(8, 5), Fraction(12, 5))
    """
    c, gamma = exact(target), exact(rate)
    if int(n_steps) <= 0:
        raise ValueError(f"n_steps: expected at least 1 predicted patient, got {n_steps}")
    if int(lag) < 0 or int(pending) < 0:
        raise ValueError(f"lag and pending: expected counts of labels >= 0, got lag={lag}, pending={pending}")
    return c + (c + gamma * (int(lag) + 1 + int(pending)) * exact(c_max)) / (gamma * int(n_steps))


def delay_advice(rate, lag) -> str | None:
    """Why an adaptive rate is too fast for labels that arrive ``lag`` patients late, or None.

    >>> delay_advice(0.05, 200)[:60]
    'Labels arrive up to 200 patients after the prediction, so th'
    >>> delay_advice(0.005, 200) is None, delay_advice(0.05, 0) is None
    (True, True)
    """
    if rate is None or not lag or float(rate) * int(lag) <= DELAY_GAIN_LIMIT:
        return None
    suggested = DELAY_GAIN_LIMIT / int(lag)
    return (f"Labels arrive up to {int(lag):,} patients after the prediction, so the adaptive target learns of a cost "
            f"that late: with γ = {float(rate):g} (γ × {int(lag):,} = {float(rate) * int(lag):.3g}, above "
            f"{DELAY_GAIN_LIMIT:g}) it overshoots and oscillates, and the mean cost settles above the target c (within "
            f"its bound, which allows for the delay). Use γ at most {suggested:.2g}.")


def result_lag(result) -> int:
    """L of :func:`adaptive_bound` for a replay: the most labels pending at any predicted position
    (0 without a delay)."""
    pending = getattr(result, "labels_pending", None)
    return int(np.max(pending)) if pending is not None and len(pending) else 0


def result_bound(result, n_steps: int | None = None, target_index: int = 0) -> float:
    """:func:`adaptive_bound` of an adaptive replay over ``n_steps`` of its predicted patients (default
    all of them; a group's own count with per-segment control), L the run's :func:`result_lag` (at
    least any group's own), P = 0 (at the end of a replay every label has arrived)."""
    return float(adaptive_bound(result.targets[target_index], result.settings["adaptive_rate"], result.settings["c_max"],
                                result.n_steps if n_steps is None else n_steps, lag=result_lag(result)))


def adaptive_series(result, target_index: int = 0):
    """Per step of an adaptive replay: c_n, the running mean cost and its deterministic bound.

    Columns: step, position, adaptive_target (c_n used for that patient), mean_cost (running,
    steps 0..s) and bound (:func:`adaptive_bound` over s + 1 steps: c + (c + gamma C_max) /
    (gamma (s + 1)) without a delay; with labels that arrive later, L the run's largest
    ``labels_pending`` and P the labels of steps 0..s still pending after step s), which the
    running mean never exceeds. Needs ``result.adaptive_targets``.
    """
    import pandas as pd

    if result.adaptive_targets is None:
        raise ValueError("result: adaptive_series needs a replay run with adaptive_rate=")
    rate = exact(result.settings["adaptive_rate"])
    c, c_max = exact(float(result.targets[target_index])), exact(result.settings["c_max"])
    steps = np.arange(result.n_steps)
    cost = np.asarray(result.cost[target_index], dtype=float)
    lag, pending = result_lag(result), np.zeros(len(steps), dtype=np.int64)
    if result.labels_pending is not None and len(steps) > 1:
        pending[:-1] = np.asarray(result.labels_pending)[1:]  # pending after step s: at position s + 1; none at the end
    bound = float(c) + (float(c) + float(rate) * (lag + 1 + pending) * float(c_max)) / (float(rate) * (steps + 1))
    return pd.DataFrame({
        "step": steps,
        "position": steps + result.burn_in,
        "adaptive_target": np.asarray(result.adaptive_targets[target_index], dtype=float),
        "mean_cost": np.cumsum(cost) / (steps + 1),
        "bound": bound,
    })
