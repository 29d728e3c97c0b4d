"""Slow, literal re-implementations of the baselines' docs/method.md definitions (shared by tests/baselines).

The brute force recomputes everything from scratch at every step with plain Python lists
and Fractions (numbers read as the decimals they print as), so ties are decided exactly.
It imports nothing from favmac. ``window`` keeps the last ``window`` calibration patients.
"""
import functools
import math
from fractions import Fraction

import numpy as np
from scipy.stats import binom


def start_of(n, window):
    """First calibration patient at stream position n."""
    return 0 if window is None else max(0, n - window)


def q(x) -> Fraction:
    x = float(x)
    return Fraction(int(x)) if x.is_integer() else Fraction(repr(x))


def spec_quantile(values, beta: Fraction):
    """Q(beta) = inf{t : F(t) >= beta}, F the empirical cdf of values ∪ {+inf} (weight 1 each)."""
    points = sorted(values) + [math.inf]
    if beta <= 0:
        return -math.inf  # F(t) >= beta for every t
    for t in sorted(set(points)):
        if Fraction(sum(1 for v in points if v <= t), len(points)) >= beta:
            return t
    return math.inf  # beta > 1: no t qualifies


def c_max_of(weights):
    return sum((q(w) for w in weights), Fraction(0))


def bf_classwise(probs, labels, weights, targets, burn_in, window=None):
    N, K = probs.shape
    cmax = c_max_of(weights)
    selected = np.zeros((len(targets), N - burn_in, K), bool)
    final = np.zeros((len(targets), K))
    for t, c in enumerate(targets):
        beta = Fraction(0) if cmax == 0 else 1 - q(c) / cmax
        for n in range(burn_in, N + 1):
            for k in range(K):
                negatives = [float(probs[i, k]) for i in range(start_of(n, window), n) if not labels[i, k]]
                thr = spec_quantile(negatives, beta)
                if n == N:
                    final[t, k] = thr
                else:
                    selected[t, n - burn_in, k] = probs[n, k] > thr
    return selected, final


def bf_inner_set(probs, labels, weights, targets, burn_in, delta, window=None):
    N, K = probs.shape
    cmax = c_max_of(weights)
    scores = [max([float(probs[i, k]) for k in range(K) if not labels[i, k]], default=0.0) for i in range(N)]
    thresholds = np.zeros((len(targets), N - burn_in))
    final = np.zeros(len(targets))
    for t, c in enumerate(targets):
        if delta is not None:
            beta = 1 - q(delta)
        else:
            beta = Fraction(0) if cmax == 0 else 1 - q(c) / cmax
        for n in range(burn_in, N + 1):
            tau = spec_quantile(scores[start_of(n, window):n], beta)
            if n == N:
                final[t] = tau
            else:
                thresholds[t, n - burn_in] = tau
    selected = probs[burn_in:][None, :, :] > thresholds[:, :, None]
    return thresholds, selected, final


def summed_costs(probs, labels, weights, lambdas, n, first=0):
    """Exact summed calibration cost of S_lambda = {k : p_k >= lambda} over patients first..n-1."""
    return [
        sum((q(weights[k]) for i in range(first, n) for k in range(probs.shape[1])
             if not labels[i, k] and probs[i, k] >= lam), Fraction(0))
        for lam in lambdas
    ]


def bf_grid_method(probs, labels, weights, targets, burn_in, grid, accept, window=None):
    """Smallest lambda in grid ∪ {+inf} whose summed cost is accepted; +inf (empty) if none."""
    N = probs.shape[0]
    lambdas = list(grid) + [math.inf]
    thresholds = np.zeros((len(targets), N - burn_in))
    final = np.zeros(len(targets))
    for n in range(burn_in, N + 1):
        first = start_of(n, window)
        sums = summed_costs(probs, labels, weights, lambdas, n, first)
        for t, c in enumerate(targets):
            lam = next((lam for lam, total in zip(lambdas, sums) if accept(total, n - first, c)), math.inf)
            if n == N:
                final[t] = lam
            else:
                thresholds[t, n - burn_in] = lam
    selected = probs[burn_in:][None, :, :] >= thresholds[:, :, None]
    return thresholds, selected, final


def bf_exact_crc(probs, labels, weights, targets, burn_in, window=None):
    """Smallest lambda in {0} ∪ {calibration probabilities} ∪ {+inf} with R(lambda) + C_max <= c (n + 1)."""
    N = probs.shape[0]
    accept = crc_accept(weights)
    thresholds = np.zeros((len(targets), N - burn_in))
    final = np.zeros(len(targets))
    for n in range(burn_in, N + 1):
        first = start_of(n, window)
        lambdas = sorted({0.0} | {float(x) for x in probs[first:n].ravel()}) + [math.inf]
        sums = summed_costs(probs, labels, weights, lambdas, n, first)
        for t, c in enumerate(targets):
            lam = next((lam for lam, total in zip(lambdas, sums) if accept(total, n - first, c)), math.inf)
            if n == N:
                final[t] = lam
            else:
                thresholds[t, n - burn_in] = lam
    selected = probs[burn_in:][None, :, :] >= thresholds[:, :, None]
    return thresholds, selected, final


def crc_accept(weights):
    cmax = c_max_of(weights)
    return lambda total, n, c: total + cmax <= q(c) * (n + 1)


def kl(r, a):
    first = r * math.log(r / a) if r > 0 else 0.0
    second = (1 - r) * math.log((1 - r) / (1 - a)) if r < 1 else 0.0
    return first + second


def rcps_accept(weights, delta):
    cmax = c_max_of(weights)

    @functools.lru_cache(maxsize=None)
    def accept(total, n, c):
        if cmax == 0:
            return c >= 0
        alpha = float(q(c) / cmax)
        if alpha >= 1:
            return True
        if alpha <= 0 or n == 0:
            return False
        s = total / cmax  # summed normalized risk, exact
        bentkus = math.e * binom.cdf(math.ceil(s), n, alpha)
        rhat = float(s) / n
        hoeffding = math.exp(-n * kl(min(rhat, alpha), alpha))
        return min(bentkus, hoeffding) <= delta

    return accept


def instance(seed, max_n=24, max_k=4):
    rng = np.random.RandomState(seed)
    N = rng.randint(1, max_n + 1)
    K = rng.randint(1, max_k + 1)
    if rng.rand() < 0.5:  # heavy ties
        probs = rng.choice([0.0, 0.2, 0.5, 0.7, 1.0], size=(N, K))
    else:
        probs = np.round(rng.rand(N, K), 3)
    labels = (rng.rand(N, K) < rng.uniform(0.1, 0.9)).astype(int)
    kind = rng.randint(4)
    if kind == 0:
        weights = np.ones(K)  # C_FP
    elif kind == 1:
        weights = rng.randint(0, 4, size=K).astype(float)
    elif kind == 2:
        weights = np.round(rng.uniform(0.1, 2.0, size=K), 2)  # decimal weights: exact ties
    else:
        weights = rng.uniform(0.1, 2.0, size=K)  # float weights
    cmax = float(c_max_of(weights))
    targets = sorted({0.0, round(0.1 * cmax, 2), round(0.5 * cmax, 1), 1.0, 1.1, 2.0, round(cmax, 6),
                      cmax + 1.0, -0.5})
    burn_in = int(rng.randint(0, N + 1)) if rng.rand() < 0.6 else 0
    return probs, labels, weights, targets, burn_in


SEEDS = range(40)


def same(a, b):
    return np.array_equal(np.asarray(a, float), np.asarray(b, float), equal_nan=True)


def synthetic(n=300, k=6, seed=0):
    rng = np.random.RandomState(seed)
    latent = rng.randn(n, 1)
    logits = latent + rng.randn(n, k) - 1.0
    labels = rng.rand(n, k) < 1 / (1 + np.exp(-logits))
    probs = np.round(1 / (1 + np.exp(-(logits + 0.8 * rng.randn(n, k)))), 3)
    return probs, labels


def over_orderings(method, probs, labels, value, cost, targets, n_orderings=150, **kwargs):
    per_ordering_cost, per_ordering_violation = [], []
    for seed in range(n_orderings):
        perm = np.random.RandomState(seed).permutation(len(probs))
        res = method(probs[perm], labels[perm], value, cost, targets, **kwargs)
        per_ordering_cost.append(res.cost.mean(axis=1))
        per_ordering_violation.append((res.cost > np.asarray(targets)[:, None]).mean(axis=1))
    return np.array(per_ordering_cost), np.array(per_ordering_violation)


def upper(samples):
    """Mean over orderings plus three standard errors."""
    return samples.mean(axis=0) + 3 * samples.std(axis=0, ddof=1) / np.sqrt(len(samples))

