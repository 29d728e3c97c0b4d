"""Baselines against slow, literal re-implementations of the SPEC definitions.

The brute force recomputes everything from scratch at every step with plain Python lists
and Fractions (numbers read as the decimals they print as), so ties are decided exactly.
"""
import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom

from favmac import AdditiveCost, AdditiveValue, FormulaValue
from favmac.baselines import (
    BASELINE_CONTROLS,
    classwise,
    crc,
    fpcp,
    hb_p_value,
    inner_set,
    lambda_grid,
    quantile_rank,
    rcps,
)


def q(x) -> Fraction:
    x = float(x)
    return Fraction(int(x)) if x.is_integer() else Fraction(repr(x))


# ----------------------------------------------------------------------------------------
# Brute force
# ----------------------------------------------------------------------------------------
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


def bf_classwise(probs, labels, weights, targets, burn_in):
    N, K = probs.shape
    cmax = c_max_of(weights)
    selected = np.zeros((len(targets), N - burn_in, K), bool)
    final = np.zeros((len(targets), K))
    for t, c in enumerate(targets):
        beta = Fraction(0) if cmax == 0 else 1 - q(c) / cmax
        for n in range(burn_in, N + 1):
            for k in range(K):
                negatives = [float(probs[i, k]) for i in range(n) if not labels[i, k]]
                thr = spec_quantile(negatives, beta)
                if n == N:
                    final[t, k] = thr
                else:
                    selected[t, n - burn_in, k] = probs[n, k] > thr
    return selected, final


def bf_inner_set(probs, labels, weights, targets, burn_in, delta):
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
            tau = spec_quantile(scores[:n], beta)
            if n == N:
                final[t] = tau
            else:
                thresholds[t, n - burn_in] = tau
    selected = probs[burn_in:][None, :, :] > thresholds[:, :, None]
    return thresholds, selected, final


def summed_costs(probs, labels, weights, lambdas, n):
    """Exact summed calibration cost of S_lambda = {k : p_k >= lambda} over patients 0..n-1."""
    return [
        sum((q(weights[k]) for i in range(n) for k in range(probs.shape[1])
             if not labels[i, k] and probs[i, k] >= lam), Fraction(0))
        for lam in lambdas
    ]


def bf_grid_method(probs, labels, weights, targets, burn_in, grid, accept):
    """Smallest lambda in grid ∪ {+inf} whose summed cost is accepted; +inf (empty) if none."""
    N = probs.shape[0]
    lambdas = list(grid) + [math.inf]
    thresholds = np.zeros((len(targets), N - burn_in))
    final = np.zeros(len(targets))
    for n in range(burn_in, N + 1):
        sums = summed_costs(probs, labels, weights, lambdas, n)
        for t, c in enumerate(targets):
            lam = next((lam for lam, total in zip(lambdas, sums) if accept(total, n, c)), math.inf)
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


# ----------------------------------------------------------------------------------------
# Random instances
# ----------------------------------------------------------------------------------------
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


def control(method):
    """RCPS needs a violation level; the others run under expected-cost control."""
    return {"delta": 0.1} if method is rcps else {}


def same(a, b):
    return np.array_equal(np.asarray(a, float), np.asarray(b, float), equal_nan=True)


# ----------------------------------------------------------------------------------------
# Exact quantile ranks
# ----------------------------------------------------------------------------------------
def test_exact_ceiling():
    assert quantile_rank(0.9, [19]).tolist() == [18]  # float 0.9 * 20 would round up to 19
    assert quantile_rank(1 - q(0.1), [19]).tolist() == [18]
    assert quantile_rank(0.7, [9]).tolist() == [7]
    # edges: beta <= 0 -> 0 (-inf); beta > 1 -> m + 1 (+inf); empty calibration -> +inf
    assert quantile_rank(0.0, [0, 5]).tolist() == [0, 0]
    assert quantile_rank(-0.3, [4]).tolist() == [0]
    assert quantile_rank(1.5, [0, 4]).tolist() == [1, 5]
    assert quantile_rank(0.5, [0]).tolist() == [1]


def test_exact_ceiling_end_to_end():
    # C_FP with K = 1 and c = 0.7: beta = 1 - 0.7 = 0.3 and m + 1 = 10 give rank 3 exactly;
    # in floats 1 - 0.7 = 0.30000000000000004 and ceil(10 * that) = 4.
    calibration = np.array([0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85])
    probs = np.append(calibration, 0.30)[:, None]
    labels = np.zeros_like(probs, dtype=int)
    value, cost = AdditiveValue(), AdditiveCost()
    res = classwise(probs, labels, value, cost, [0.7], burn_in=9)
    assert res.selected[0, 0, 0]  # 0.30 > t = 0.25, the 3rd smallest (not 0.35, the 4th)
    assert res.settings["code_thresholds"] == [[0.30]]  # all 10 negatives: ceil(0.3 * 11) = 4th
    res = inner_set(probs, labels, value, cost, [0.7], burn_in=9)  # eps = 0.7 / C_max, same ranks
    assert res.thresholds[0, 0] == 0.25 and res.selected[0, 0, 0]


def test_quantile_rank_matches_fractions():
    rng = np.random.RandomState(0)
    sizes = np.arange(0, 400)
    for _ in range(200):
        beta = q(round(rng.uniform(-0.2, 1.2), rng.randint(1, 17)))
        expected = [min(max(math.ceil(beta * (m + 1)), 0), m + 1) for m in sizes]
        assert quantile_rank(beta, sizes).tolist() == expected, beta


# ----------------------------------------------------------------------------------------
# Each baseline against the brute force
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_classwise_matches_brute_force(seed):
    probs, labels, weights, targets, burn_in = instance(seed)
    res = classwise(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in)
    selected, final = bf_classwise(probs, labels, weights, targets, burn_in)
    assert np.array_equal(res.selected, selected)
    assert np.all(np.isnan(res.thresholds))
    assert same(res.settings["code_thresholds"], final)
    assert np.allclose(res.cost, AdditiveCost(weights)(selected, labels[burn_in:]))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("delta", [None, 0.1, 0.25])
def test_inner_set_matches_brute_force(seed, delta):
    probs, labels, weights, targets, burn_in = instance(seed)
    res = inner_set(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=delta, burn_in=burn_in)
    thresholds, selected, final = bf_inner_set(probs, labels, weights, targets, burn_in, delta)
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)


@pytest.mark.parametrize("seed", SEEDS)
def test_crc_matches_brute_force(seed):
    probs, labels, weights, targets, burn_in = instance(seed)
    grid_size = [2, 5, 201][seed % 3]
    res = crc(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=burn_in, grid_size=grid_size)
    grid = lambda_grid(probs, grid_size)
    thresholds, selected, final = bf_grid_method(probs, labels, weights, targets, burn_in, grid, crc_accept(weights))
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)
    assert res.settings["grid"] == grid.tolist()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("delta", [0.1, 0.3])
def test_rcps_matches_brute_force(seed, delta):
    probs, labels, weights, targets, burn_in = instance(seed, max_n=30)
    grid = np.unique(probs)  # every probability is a candidate
    res = rcps(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=delta, burn_in=burn_in, grid=grid)
    thresholds, selected, final = bf_grid_method(probs, labels, weights, targets, burn_in, grid,
                                                 rcps_accept(weights, delta))
    assert same(res.thresholds, thresholds)
    assert np.array_equal(res.selected, selected)
    assert same(res.final_thresholds, final)


def test_rcps_long_stream_matches_p_values():
    """The O(1)-per-step Bentkus/Hoeffding bounds agree with the HB p-value at large n."""
    rng = np.random.RandomState(3)
    N, K = 3000, 5
    probs = np.round(rng.rand(N, K), 2)
    labels = rng.rand(N, K) < probs
    weights = np.array([1.0, 2.0, 1.0, 3.0, 1.0])
    grid = np.linspace(0, 1, 11)
    targets = [0.5, 1.5, 3.0]
    res = rcps(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, delta=0.1, burn_in=2990, grid=grid)
    accept = rcps_accept(weights, 0.1)
    lambdas = list(grid) + [math.inf]
    for s, n in enumerate(range(2990, N)):
        sums = summed_costs(probs, labels, weights, lambdas, n)
        for t, c in enumerate(targets):
            assert res.thresholds[t, s] == next(lam for lam, total in zip(lambdas, sums) if accept(total, n, c))


def test_hb_p_value_reference():
    # Bentkus term dominates for integer risk sums far below alpha; Hoeffding caps it at 1
    assert hb_p_value(0.0, 0, 0.1) == 1.0
    p = hb_p_value(5.0, 200, 0.1)
    assert p == pytest.approx(min(math.e * binom.cdf(5, 200, 0.1), math.exp(-200 * kl(0.025, 0.1))))
    assert hb_p_value(50.0, 200, 0.1) == 1.0  # Rhat above alpha


# ----------------------------------------------------------------------------------------
# Edge cases and API
# ----------------------------------------------------------------------------------------
def test_empty_calibration_predicts_nothing():
    probs = np.array([[0.9, 0.8], [0.1, 0.6]])
    labels = np.array([[1, 0], [0, 1]])
    value, cost = AdditiveValue(), AdditiveCost()
    for method in (classwise, inner_set, crc, rcps):
        res = method(probs, labels, value, cost, [1.0], burn_in=0, **control(method))
        assert not res.selected[0, 0].any(), method.__name__
    assert inner_set(probs, labels, value, cost, [1.0]).thresholds[0, 0] == math.inf
    assert rcps(probs, labels, value, cost, [1.0], delta=0.1).thresholds[0, 0] == math.inf
    # a target at C_max allows everything, even with no calibration data
    assert classwise(probs, labels, value, cost, [2.0]).selected[0, 0].all()
    assert inner_set(probs, labels, value, cost, [2.0]).thresholds[0, 0] == -math.inf
    assert crc(probs, labels, value, cost, [2.0]).selected[0, 0].all()


def test_zero_weights_predict_everything():
    probs = np.array([[0.9, 0.1], [0.3, 0.6], [0.2, 0.2]])
    labels = np.zeros((3, 2), int)
    cost = AdditiveCost([0.0, 0.0])
    for method in (classwise, inner_set, crc, rcps):
        res = method(probs, labels, AdditiveValue(), cost, [0.0], **control(method))
        assert res.selected.all(), method.__name__
        assert np.all(res.cost == 0)


def test_burn_in_all_gives_no_steps():
    probs, labels, weights, targets, _ = instance(1)
    for method in (classwise, inner_set, crc, rcps):
        res = method(probs, labels, AdditiveValue(), AdditiveCost(weights), targets, burn_in=len(probs),
                     **control(method))
        assert res.selected.shape == (len(targets), 0, probs.shape[1])
        assert res.cost.shape == res.value.shape == res.thresholds.shape == (len(targets), 0)


def test_result_fields_and_general_value():
    probs, labels, weights, targets, burn_in = instance(5, max_n=30)
    ids = np.array([f"p{i}" for i in range(len(probs))])
    codes = [f"C{k}" for k in range(probs.shape[1])]
    value = FormulaValue("sum_hits(v) + n_hits", weights=np.arange(1, probs.shape[1] + 1))
    res = inner_set(probs, labels, value, AdditiveCost(weights), targets, delta=0.1, burn_in=burn_in,
                    codes=codes, patient_ids=ids)
    assert res.method == "InnerSet" and res.delta == 0.1 and res.burn_in == burn_in
    assert res.codes == codes and list(res.patient_ids) == list(ids[burn_in:])
    assert np.allclose(res.value, value(res.selected, labels[burn_in:]))
    assert res.settings["control"] == "violation"
    frame = res.to_frame()
    assert len(frame) == len(targets) * (len(probs) - burn_in)
    # violation control ignores the target: the same sets for every target
    assert all(np.array_equal(res.selected[0], res.selected[t]) for t in range(len(targets)))


def test_controls_are_enforced():
    probs, labels, weights, targets, _ = instance(2)
    value, cost = AdditiveValue(), AdditiveCost(weights)
    with pytest.raises(ValueError, match="expected cost only"):
        classwise(probs, labels, value, cost, targets, delta=0.1)
    with pytest.raises(ValueError, match="expected cost only"):
        crc(probs, labels, value, cost, targets, delta=0.1)
    with pytest.raises(ValueError, match="delta: RCPS"):
        rcps(probs, labels, value, cost, targets)
    assert rcps(probs, labels, value, cost, targets, delta=0.1).delta == 0.1
    with pytest.raises(ValueError, match="additive cost"):
        inner_set(probs, labels, value, FormulaValue("n_hits"), targets)
    with pytest.raises(ValueError, match="shape"):
        inner_set(probs, labels[:, :1], value, cost, targets)
    with pytest.raises(ValueError, match="burn_in"):
        inner_set(probs, labels, value, cost, targets, burn_in=len(probs) + 1)
    with pytest.raises(ValueError, match="delta"):
        inner_set(probs, labels, value, cost, targets, delta=1.5)
    assert set(BASELINE_CONTROLS) == {"classwise", "inner_set", "fpcp", "crc", "rcps"}


def test_fpcp_is_favmac_prob_universe():
    from favmac import replay

    probs, labels, weights, targets, burn_in = instance(7, max_n=30)
    value, cost = AdditiveValue(), AdditiveCost(weights)
    for delta in (None, 0.1):
        got = fpcp(probs, labels, value, cost, targets, delta=delta, burn_in=burn_in)
        ref = replay(probs, labels, value, cost, targets, delta=delta, universe="prob", burn_in=burn_in)
        assert got.method == "FPCP"
        assert np.array_equal(got.selected, ref.selected) and same(got.thresholds, ref.thresholds)


# ----------------------------------------------------------------------------------------
# Guarantees on exchangeable data
# ----------------------------------------------------------------------------------------
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


def test_inner_set_violation_rate_is_controlled():
    probs, labels = synthetic()
    delta, targets = 0.1, [0.0, 1.1]
    _, violation = over_orderings(inner_set, probs, labels, AdditiveValue(), AdditiveCost(), targets,
                                  delta=delta, burn_in=20)
    assert np.all(violation.mean(axis=0) <= delta + 3 * violation.std(axis=0, ddof=1) / np.sqrt(len(violation)))
    assert violation.mean(axis=0)[0] > 0.5 * delta, "so loose the test says nothing"


@pytest.mark.parametrize("method", [classwise, inner_set, crc])
def test_expected_cost_is_controlled(method):
    probs, labels = synthetic(seed=1)
    weights = np.round(np.random.RandomState(0).uniform(0.2, 2.0, size=probs.shape[1]), 2)
    targets = [round(f * weights.sum(), 2) for f in (0.1, 0.3)]
    cost_means, _ = over_orderings(method, probs, labels, AdditiveValue(weights), AdditiveCost(weights), targets,
                                   n_orderings=100, burn_in=20)
    stderr = cost_means.std(axis=0, ddof=1) / np.sqrt(len(cost_means))
    assert np.all(cost_means.mean(axis=0) <= np.array(targets) + 3 * stderr)
