"""Value/cost functions, the formula value and the general greedy universe."""
import itertools

import numpy as np
import pytest

from favmac import AdditiveCost, AdditiveValue, FavMac, FormulaError, FormulaValue, greedy_order, replay

V_GEN = "prod_hits((v + 5) / 10) + sum_hits((v - 5) ** 2)"
DIGITS = np.array([10, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=float)  # code "0" counts as 10


def v_gen_direct(S, y):
    hits = [DIGITS[k] for k in range(10) if S[k] and y[k]]
    return float(np.prod([(k + 5) / 10 for k in hits]) + sum((k - 5) ** 2 for k in hits))


def test_v_gen_formula_matches_the_paper_definition():
    f = FormulaValue(V_GEN, weights=DIGITS)
    rng = np.random.RandomState(0)
    S = rng.rand(200, 10) < 0.5
    y = rng.rand(200, 10) < 0.3
    got = f(S, y)
    assert got == pytest.approx([v_gen_direct(s, t) for s, t in zip(S, y)])


def test_additive_functions():
    v, c = AdditiveValue([1, 2, 3]), AdditiveCost([0.5, 1, 2])
    S, y, p = np.array([1, 1, 0], bool), np.array([1, 0, 1], bool), np.array([0.2, 0.5, 0.9])
    assert v(S, y) == 1 and c(S, y) == 1
    assert v.proxy(S, p) == pytest.approx(0.2 + 1.0) and c.proxy(S, p) == pytest.approx(0.4 + 0.5)
    assert c.c_max(3) == 3.5 and AdditiveCost().c_max(4) == 4
    with pytest.raises(ValueError):
        AdditiveCost([-1.0])


def test_exact_proxy_is_the_expectation():
    f = FormulaValue(V_GEN, weights=DIGITS[:4])
    p = np.array([0.3, 0.8, 0.5, 0.1])
    S = np.array([1, 1, 0, 1], bool)
    expect = 0.0
    for y in itertools.product([0, 1], repeat=4):
        prob = np.prod([pk if yk else 1 - pk for pk, yk in zip(p, y)])
        expect += prob * f(S, np.array(y, bool))
    assert f.proxy(S, p) == pytest.approx(expect)


def test_monte_carlo_proxy_is_seeded_and_close():
    f = FormulaValue("sum_hits(v)", weights=np.arange(1, 13.0), n_samples=4000, seed=3)
    p = np.linspace(0.05, 0.95, 12)
    S = np.ones(12, bool)
    assert f.proxy(S, p) == f.proxy(S, p)  # reproducible
    assert f.proxy(S, p) == pytest.approx(np.dot(p, np.arange(1, 13.0)), rel=0.03)


@pytest.mark.parametrize("formula", ['__import__("os")', "'a' * 10 ** 9", "v.__class__", "lambda: 1", "open('x')", "", "1 +"])
def test_unsafe_or_broken_formulas_are_rejected(formula):
    with pytest.raises(FormulaError):
        FormulaValue(formula)


def brute_greedy(p, value, w):
    chosen, order = [], []
    def vhat(S):
        mask = np.zeros(len(p), bool)
        mask[list(S)] = True
        return float(value.proxy(mask, p))
    for _ in range(len(p)):
        best, best_key = None, None
        for k in range(len(p)):
            if k in chosen:
                continue
            num = vhat(chosen + [k]) - vhat(chosen)
            num = 0.0 if abs(num) <= 1e-12 * max(1.0, abs(vhat(chosen))) else num
            den = (1 - p[k]) * w[k]
            key = (np.inf if num > 0 else -np.inf) if den == 0 else num / den
            if best_key is None or key > best_key:
                best, best_key = k, key
        chosen.append(best)
        order.append(best)
    return order


def test_general_greedy_ratio_order_matches_brute_force():
    rng = np.random.RandomState(5)
    f = FormulaValue(V_GEN, weights=DIGITS[:6])
    w = np.ones(6)
    for _ in range(15):
        p = rng.choice([0.0, 0.2, 0.5, 0.9, 1.0], size=6)
        assert greedy_order(p[None, :], f, AdditiveCost(w), "ratio")[0].tolist() == brute_greedy(p, f, w)


def test_formula_value_replay_equals_loop():
    rng = np.random.RandomState(1)
    probs = rng.rand(40, 5).round(2)
    labels = rng.rand(40, 5) < probs
    f, c = FormulaValue(V_GEN, weights=DIGITS[:5]), AdditiveCost()
    res = replay(probs, labels, f, c, [1.1, 2.1], burn_in=10)
    for t, target in enumerate([1.1, 2.1]):
        fm = FavMac(f, c, target)
        fm.update(probs[:10], labels[:10])
        for n in range(10, 40):
            assert res.thresholds[t, n - 10] == fm.threshold
            assert (res.selected[t, n - 10] == fm.predict(probs[n])).all()
            assert res.value[t, n - 10] == pytest.approx(f(fm.predict(probs[n]), labels[n]))
            fm.update(probs[n], labels[n])


def test_explain_shows_the_cut():
    fm = FavMac(AdditiveValue(), AdditiveCost(), 1.5)
    fm.update([[0.9, 0.2, 0.6]], [[1, 0, 0]])
    table = fm.explain([0.95, 0.1, 0.5], codes=["A", "B", "C"])
    assert table["code"].tolist() == ["A", "C", "B"]
    assert table["selected"].tolist() == [True, False, False]
    assert table["chat"].is_monotonic_increasing


@pytest.mark.parametrize(
    "formula",
    [
        V_GEN,
        "sum_hits(v) + 2 * max_hits(v) - min_hits(v / 2)",
        "sqrt(sum_selected(v) + 1) + n_hits * 0.5 + n_selected / 10",
        "sum_hits(v) * n_hits + prod_hits(1 + v / 10)",
    ],
)
@pytest.mark.parametrize("n_codes", [6, 13])  # exact enumeration and Monte Carlo
def test_proxy_extensions_equal_the_stacked_proxy(formula, n_codes):
    rng = np.random.RandomState(n_codes)
    f = FormulaValue(formula, weights=rng.uniform(0.5, 9, n_codes).round(1), n_samples=300)
    p = rng.rand(n_codes)
    base = rng.rand(n_codes) < 0.4
    candidates = np.flatnonzero(~base)
    trials = np.repeat(base[None, :], len(candidates), axis=0)
    trials[np.arange(len(candidates)), candidates] = True
    assert f.proxy_extensions(base, candidates, p) == pytest.approx(f.proxy(trials, p), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("formula, says", [
    ("+".join(["1"] * 5000), "9,999 characters long"),           # the 9,999-character chain
    ("+".join(["1"] * 2400), "nested too deeply"),               # a long chain under the length limit
    ("-" * 3000 + "1", "nested too deeply"),                      # unary nesting
    ("sqrt(" * 150 + "v" + ")" * 150, "nested too deeply"),       # nested calls
    ("1" + "**2" * 1500, "nested too deeply"),
], ids=["chain-9999", "chain-2400", "unary-3000", "calls-150", "powers-1500"])
def test_deep_or_long_formulas_are_refused_with_a_formula_error(formula, says):
    with pytest.raises(FormulaError, match=says) as err:
        FormulaValue(formula)
    assert "sum_hits" in str(err.value) and (err.value.__context__ is None or err.value.__suppress_context__)  # no parser traceback


def test_formulas_below_the_depth_limit_still_work():
    f = FormulaValue("+".join(["sum_hits(v)"] * 40) + "+" + "+".join(["1"] * 50))
    assert float(f([True, False], [True, True])) == 90.0
    assert float(FormulaValue("(" * 150 + "n_hits" + ")" * 150)([True, True], [True, False])) == 1.0
