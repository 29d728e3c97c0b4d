"""Every value and cost class of the package through the one contract (favmac.protocols).

For each class: the required members and their shapes and dtypes on a small batch, monotonicity on
random nested sets, and every capability the class provides (favmac.protocols.capabilities) doing
what the contract says, checked against a slow evaluation through the required members alone. A
new value or cost class is found by scanning the package (test_every_class_is_covered) and must
get an entry in INSTANCES.

The CMS-HCC payment is monotone except where CMS's own tables are not (docs/payment.md): it is
checked on codes none of whose hierarchies or counts break monotonicity.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import favmac
from favmac import protocols
from favmac.costs import SetCosts
from favmac.functions import AdditiveCost, AdditiveValue, FormulaValue
from favmac.payment import CmsHccCost, CmsHccValue
from favmac.universe import general_sequences, joint_greedy

K = 4
CODES = ["HCC36", "HCC37", "HCC18", "HCC226"]  # V28: no hierarchy among them, no count drop (see the module note)
WEIGHTS = np.array([1.5, 0.25, 2.0, 0.75])


def _payment(**context):
    return CmsHccValue(CODES, model="V28", **context)


#: One or more instances of every value and cost class of the package (name -> factory).
INSTANCES = {
    "AdditiveValue": lambda: AdditiveValue(WEIGHTS),
    "AdditiveValue (unit weights)": lambda: AdditiveValue(),
    "AdditiveCost": lambda: AdditiveCost(WEIGHTS),
    "FormulaValue (compiled)": lambda: FormulaValue("sum_hits(v) + 0.5 * n_hits", weights=WEIGHTS),
    "FormulaValue (reference)": lambda: FormulaValue("sum_hits(v) + 2 * (n_hits >= 2)", weights=WEIGHTS),  # not compiled
    "CmsHccValue": lambda: _payment(),
    "CmsHccValue (per member)": lambda: _payment(cells=["CNA", "CFA", "INS", "CNA", "CPD", "CNA"],
                                                 known=np.eye(6, K, dtype=bool)),
    "CmsHccValue (dollars)": lambda: _payment(base_rate=11_000.0, normalization=1.045, coding_intensity=0.059),
    "CmsHccCost": lambda: CmsHccCost(_payment()),
    "CmsHccCost (per member)": lambda: CmsHccCost(_payment(cells=["CNA", "CFA", "INS", "CNA", "CPD", "CNA"])),
}
N_ROWS = 6  # the per-member instances describe six patients


def _batch(seed: int, n: int = N_ROWS):
    rng = np.random.RandomState(seed)
    return rng.rand(n, K) < 0.5, rng.rand(n, K) < 0.5, rng.rand(n, K).round(3)


def _proxy_rows(function, selected, probs) -> np.ndarray:
    """Each patient's proxy of its own set: the contract's proxy takes one patient's probabilities (K,)."""
    return np.array([float(protocols.bind_rows(function, i).proxy(s, p)) for i, (s, p) in enumerate(zip(selected, probs))])


def _package_classes() -> set[str]:
    """Names of the package's classes that declare themselves a value or a cost (``kind``)."""
    found = set()
    for info in pkgutil.walk_packages(favmac.__path__, "favmac."):
        if info.name.startswith("favmac.ui") or info.name == "favmac.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and vars(cls).get("kind") in ("value", "cost"):
                found.add(name)
    return found


def test_every_class_is_covered():
    covered = {factory().__class__.__name__ for factory in INSTANCES.values()}
    assert _package_classes() <= covered, f"add these classes to INSTANCES: {sorted(_package_classes() - covered)}"


@pytest.fixture(params=sorted(INSTANCES), ids=str)
def function(request):
    return INSTANCES[request.param]()


def test_required_members(function):
    assert isinstance(function, protocols.SetFunction)
    assert function.kind in ("value", "cost")
    assert isinstance(type(function).is_additive, bool)
    selected, labels, probs = _batch(0)
    for out in (function(selected, labels), _proxy_rows(function, selected, probs)):
        out = np.asarray(out)
        assert out.shape == (N_ROWS,) and out.dtype.kind == "f" and np.all(np.isfinite(out))
    one = protocols.bind_rows(function, 0)  # one patient's probabilities against a stack of its candidate sets
    stack = np.array([[0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]], dtype=bool)
    proxies = np.asarray(one.proxy(stack, probs[0]), dtype=float)
    assert proxies.shape == (3,) and proxies[0] == 0.0
    np.testing.assert_allclose(proxies, [float(one.proxy(s, probs[0])) for s in stack])
    if protocols.n_rows(function) is None:  # one patient's candidate sets against one label vector (broadcast)
        sets = np.array([[0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]], dtype=bool)
        out = np.asarray(function(sets, labels[0]))
        assert out.shape == (3,)
        np.testing.assert_allclose(out, [float(function(s, labels[0])) for s in sets])
        assert float(function(sets[0], labels[0])) == 0.0  # nothing chosen: no value, no cost
    try:
        weights = np.asarray(function.weights_for(K))
    except ValueError as err:  # no per-code weights: the refusal says why
        assert len(str(err)) > 20
    else:
        assert weights.shape == (K,) and weights.dtype.kind == "f" and np.all(weights >= 0)


def test_monotone_on_random_nested_sets(function):
    """S ⊆ T gives V(S; y) <= V(T; y) and C(S; y) <= C(T; y), for random chains of nested sets."""
    rng = np.random.RandomState(1)
    for trial in range(10):
        _, labels, probs = _batch(trial + 10)
        order = np.argsort(rng.rand(N_ROWS, K), axis=1)
        ranks = np.argsort(order, axis=1)
        previous = np.zeros(N_ROWS)
        previous_proxy = np.zeros(N_ROWS)
        for size in range(K + 1):
            chosen = ranks < size  # each row's first ``size`` codes of its order
            now = np.asarray(function(chosen, labels), dtype=float)
            assert np.all(now >= previous - 1e-12), (trial, size)
            proxy = _proxy_rows(function, chosen, probs)
            assert np.all(proxy >= previous_proxy - 1e-9), (trial, size)
            previous, previous_proxy = now, proxy


def test_additive_capability(function):
    if not protocols.is_additive(function):
        assert "additive" not in protocols.capabilities(type(function))
        return
    assert protocols.provides(function, "additive")
    selected, labels, probs = _batch(2)
    contributions = np.asarray(function.contributions(labels))
    assert contributions.shape == (N_ROWS, K)
    np.testing.assert_allclose((contributions * selected).sum(axis=1), function(selected, labels))
    weights = function.weights_for(K)
    hit = function.kind == "value"  # a value counts a code that is present, a cost one that is not
    for k in range(K):
        alone = np.zeros(K, dtype=bool)
        alone[k] = True
        assert float(function(alone, alone if hit else ~alone)) == pytest.approx(weights[k])
    expected = (selected * (probs if hit else 1 - probs) * weights).sum(axis=1)
    np.testing.assert_allclose(function.proxy(selected, probs), expected)


def test_member_context(function):
    if not protocols.provides(function, "member_context"):
        assert protocols.bind_rows(function, slice(0, 2)) is function and protocols.n_rows(function) is None
        return
    selected, labels, probs = _batch(3)
    rows = protocols.n_rows(function)
    if rows is None:  # one context for everybody: bound to any rows, it computes what it did
        bound = protocols.bind_rows(function, slice(1, 3))
        assert protocols.n_rows(bound) is None
        np.testing.assert_allclose(bound(selected, labels), function(selected, labels))
        return
    assert rows == N_ROWS
    whole = np.asarray(function(selected, labels))
    for i in range(N_ROWS):  # each patient alone, bound to its own row, as the engine slices them
        one = protocols.bind_rows(function, i)
        assert float(one(selected[i], labels[i])) == pytest.approx(whole[i])
        assert float(one.proxy(selected[i], probs[i])) == pytest.approx(float(function.proxy(selected, probs)[i]))  # a batch
    part = protocols.bind_rows(function, slice(2, 5))
    assert protocols.n_rows(part) == 3
    np.testing.assert_allclose(part(selected[2:5], labels[2:5]), whole[2:5])


def test_value_context_and_cost_of_value(function):
    if protocols.has_member_context(function):
        moved = function.with_context(["CFA", "CNA"], known=np.zeros((2, K), dtype=bool))
        assert protocols.n_rows(moved) == 2 and type(moved) is type(function)
        alone = CmsHccValue(CODES, model="V28", segment="CFA")
        assert float(moved.take(0)([1, 1, 0, 1], [1, 1, 1, 1])) == pytest.approx(float(alone([1, 1, 0, 1], [1, 1, 1, 1])
                                                                                        * function.factor / alone.factor))
    if protocols.provides(function, "cost_of_value"):
        other = _payment(base_rate=1_000.0)
        moved = protocols.cost_for_value(function, other)
        assert moved.value is other
        assert protocols.cost_for_value(function, None) is function
    else:
        assert protocols.cost_for_value(function, AdditiveValue()) is function


def test_own_sequences(function):
    own = protocols.own_sequences(function)
    if own is None:
        return
    _, _, probs = _batch(4)
    value = protocols.bind_rows(function, slice(0, N_ROWS))
    cost_steps = (1.0 - probs) * WEIGHTS
    order, vhat = protocols.own_sequences(value)(probs, cost_steps)
    assert order.shape == (N_ROWS, K) and vhat.shape == (N_ROWS, K + 1)
    for i in range(N_ROWS):  # Vhat of every prefix of the greedy order is the value's own proxy of it
        one = protocols.bind_rows(value, i)
        for j in range(K + 1):
            chosen = np.zeros(K, dtype=bool)
            chosen[order[i, :j]] = True
            assert vhat[i, j] == pytest.approx(float(one.proxy(chosen, probs[i])), abs=1e-9)


def test_compiled_formula(function):
    if not protocols.provides(function, "compiled"):
        assert protocols.compiled_formula(function, K) is None
        return
    _, _, probs = _batch(5)
    compiled = protocols.compiled_formula(function, K)
    fast_order, fast_vhat = general_sequences(probs, function, AdditiveCost(WEIGHTS))
    slow_order, slow_vhat = general_sequences(probs, function, AdditiveCost(WEIGHTS), reference=True)
    np.testing.assert_array_equal(fast_order, slow_order)
    np.testing.assert_allclose(fast_vhat, slow_vhat, rtol=1e-12, atol=1e-12)
    # a comparison is a construct the compiler does not take: that formula keeps the reference path
    assert (compiled is None) == (">=" in function.formula)


def test_prefixes_and_per_target(function):
    selected, labels, _ = _batch(6)
    rng = np.random.RandomState(6)
    prefixes = protocols.prefix_values(function)
    if prefixes is not None:
        order = np.argsort(rng.rand(N_ROWS, K), axis=1)
        index = rng.randint(0, K + 1, size=(3, N_ROWS))
        out = prefixes(order, index, labels)
        ranks = np.argsort(order, axis=1)
        for t in range(3):
            sets = ranks < index[t][:, None]
            np.testing.assert_allclose(out[t], function(sets, labels))
    per_target = protocols.per_target_values(function)
    if per_target is not None:
        stack = rng.rand(3, N_ROWS, K) < 0.5
        np.testing.assert_allclose(per_target(stack, labels), [function(stack[t], labels) for t in range(3)])


def test_set_cost(function):
    if function.kind != "cost":
        return
    assert protocols.is_set_cost(function) == (not protocols.is_additive(function))
    if not protocols.is_set_cost(function):
        return
    assert protocols.provides(function, "set_cost")
    selected, labels, probs = _batch(7)
    costs = SetCosts(function)
    exact = costs.set_costs(selected, labels)
    np.testing.assert_allclose(exact / costs.scale, function(selected, labels), rtol=1e-12, atol=1e-12)
    everything = np.ones((N_ROWS, K), dtype=bool)
    assert int(np.max(function.raw_unsupported(everything, np.zeros((N_ROWS, K), dtype=bool)))) <= function.raw_max()
    own_chat = protocols.prefix_proxies(function)
    if own_chat is not None:
        order = np.argsort(-probs, axis=1, kind="stable")
        chat = own_chat(probs, order)
        ranks = np.argsort(order, axis=1)
        for j in range(K + 1):
            np.testing.assert_allclose(chat[:, j], _proxy_rows(function, ranks < j, probs), atol=1e-9)
    joint = protocols.joint_sequences(function)
    if joint is not None:
        value = function.value
        assert joint(AdditiveValue(WEIGHTS), probs) is None  # a value it does not know: the numpy path runs
        order, vhat, chat = joint(value, probs)
        ref_order, ref_vhat, ref_chat = joint_greedy(probs, value, function)
        np.testing.assert_array_equal(order, ref_order)
        np.testing.assert_allclose(vhat, ref_vhat, atol=1e-9)
        np.testing.assert_allclose(chat, ref_chat, atol=1e-9)


def test_units(function):
    units = protocols.units_of(function)
    assert units is None or units in ("RAF", "dollars")


def test_capabilities_match_the_classes():
    """The capability table of favmac.protocols' docstring, as the classes provide it."""
    table = {cls.__name__: sorted(protocols.capabilities(cls))
             for cls in (AdditiveValue, AdditiveCost, FormulaValue, CmsHccValue, CmsHccCost)}
    assert table == {
        "AdditiveValue": ["additive"],
        "AdditiveCost": ["additive"],
        "FormulaValue": ["compiled"],
        "CmsHccValue": ["member_context", "own_sequences", "per_target", "prefixes", "units", "value_context"],
        "CmsHccCost": ["cost_of_value", "joint_sequences", "member_context", "prefix_proxies", "set_cost", "units"],
    }


def test_is_additive_is_decided_once():
    """A function that does not declare is_additive is not additive, wherever it is asked."""

    class Undeclared:
        kind = "value"

        def __call__(self, selected, labels):
            return np.sum(np.asarray(selected) & np.asarray(labels), axis=-1).astype(float)

    class Declared(Undeclared):
        is_additive = True

    assert not protocols.is_additive(Undeclared()) and protocols.is_set_cost(Undeclared())
    assert protocols.is_additive(Declared())
    with pytest.raises(ValueError, match="capability"):
        protocols.provides(Declared(), "no such capability")
