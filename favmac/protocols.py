"""What a value and a cost must provide, and what they may: the one statement of the contract.

A value V(S; y) and a cost C(S; y) (docs/method.md "Value and cost") are set functions of the chosen codes
S and the true labels y. Every value and cost the engine takes provides :class:`SetFunction`:

* ``kind`` — ``"value"`` or ``"cost"``;
* ``is_additive`` — True when the function is a sum of per-code weights (the :class:`Additive`
  members below are then provided); a function that does not declare it is *not* additive
  (:func:`is_additive`: the one place this default is decided);
* ``__call__(selected, labels)`` — V or C of sets ``selected`` (..., K) bool against ``labels``
  (broadcast against it), a float array of the leading shape;
* ``proxy(selected, probs)`` — Vhat or Chat of one patient: ``probs`` (K,) against a set (K,) or a
  stack of its candidate sets (M, K), a float or (M,) (a function with per-patient context is bound
  to the patient first, :func:`bind_rows`; some take a batch of patients too);
* ``weights_for(n_codes)`` — per-code weights (K,) (the ``value`` universe orders by p_k times
  them); a function without meaningful per-code weights raises ValueError saying why.

Both are monotone in S (docs/method.md), except where CMS's own tables are not (docs/payment.md).

Optional capabilities, each a :class:`typing.Protocol` of the members it needs; the engine asks
for a capability with the functions below (never ``getattr`` / ``hasattr`` on a value or cost):

=====================  ============================================================  =======================
capability             members                                                       provided by
=====================  ============================================================  =======================
:class:`Additive`      ``contributions(labels)`` (N, K), ``weights_for``             AdditiveValue, AdditiveCost
:class:`MemberContext` ``take(rows)``, ``n_rows`` (per-patient context)              CmsHccValue, CmsHccCost
:class:`ValueContext`  ``with_context(cells, known)`` (the value for other members)  CmsHccValue
:class:`CostOfValue`   ``with_value(value)`` (the cost of that value's members)      CmsHccCost
:class:`OwnSequences`  ``sequences(probs, cost_steps, order, tolerance)``: its own   CmsHccValue
                       compiled greedy of the nested universes
:class:`Compiled`      ``compiled(n_codes)`` (a formula's instructions or None),     FormulaValue
                       ``label_draws``, ``non_finite_error``
:class:`Prefixes`      ``prefixes(order, index, labels)``: V of nested sets at once  CmsHccValue
:class:`PerTarget`     ``per_target(selected, labels)``: V of T sets per patient     CmsHccValue
:class:`SetCost`       ``raw_unsupported``, ``unit``, ``raw_max``: a cost that is a  CmsHccCost
                       set function, as exact integers (:class:`favmac.costs.SetCosts`)
:class:`PrefixProxies` ``prefix_proxies(probs, order)``: Chat of nested sets at once CmsHccCost
:class:`JointSequences` ``joint_sequences(value, probs)``: the ratio universe with    CmsHccCost
                       this cost, compiled (None for a value it does not know)
:class:`Units`         ``units``: the unit of its amounts ("RAF", "dollars")          CmsHccValue, CmsHccCost
=====================  ============================================================  =======================

A class provides a capability when it defines every member of the capability's protocol
(:func:`capabilities`, computed once per class). ``tests/test_protocols.py`` runs every value and
cost class of the package through this contract.
"""
from __future__ import annotations

import functools
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["SetFunction", "Additive", "MemberContext", "ValueContext", "CostOfValue", "OwnSequences", "Compiled",
           "Prefixes", "PerTarget", "SetCost", "PrefixProxies", "JointSequences", "Units", "CAPABILITIES",
           "capabilities", "provides", "is_additive", "is_set_cost", "bind_rows", "n_rows", "own_sequences",
           "compiled_formula", "prefix_values", "per_target_values", "cost_for_value", "has_member_context",
           "prefix_proxies", "joint_sequences", "units_of"]


@runtime_checkable
class SetFunction(Protocol):
    """What every value and cost provides (the module docstring)."""

    kind: str
    is_additive: bool

    def __call__(self, selected, labels) -> np.ndarray: ...

    def proxy(self, selected, probs) -> np.ndarray: ...

    def weights_for(self, n_codes: int) -> np.ndarray: ...


class Additive(Protocol):
    """A sum of per-code weights: V(S; y) = sum_{k in S} contributions(y)_k."""

    def contributions(self, labels) -> np.ndarray: ...

    def weights_for(self, n_codes: int) -> np.ndarray: ...


class MemberContext(Protocol):
    """Per-patient context (a cell and known codes per member): bound to some patients with ``take``."""

    n_rows: int | None

    def take(self, rows): ...


class ValueContext(Protocol):
    """A value that can describe other members (``with_context(cells, known)``)."""

    def with_context(self, cells, known=None): ...


class CostOfValue(Protocol):
    """A cost defined by a value (the unsupported payment of a payment value): ``with_value(value)``."""

    def with_value(self, value): ...


class OwnSequences(Protocol):
    """A value with its own greedy of the nested universes: (order (N, K), Vhat (N, K + 1))."""

    def sequences(self, probs, cost_steps, order=None, tolerance: float = ...): ...


class Compiled(Protocol):
    """A formula value that may compile to instructions (:mod:`favmac.formula_kernels`)."""

    def compiled(self, n_codes: int): ...

    def label_draws(self, n_codes: int): ...

    def non_finite_error(self) -> Exception: ...


class Prefixes(Protocol):
    """V of nested sets in one pass: the first ``index[t, r]`` codes of ``order[r]``, (T, N)."""

    def prefixes(self, order, index, labels) -> np.ndarray: ...


class PerTarget(Protocol):
    """V of T sets per patient in one pass: ``selected`` (T, N, K), ``labels`` (N, K) -> (T, N)."""

    def per_target(self, selected, labels) -> np.ndarray: ...


class SetCost(Protocol):
    """A cost that is a set function, as exact integers: raw integers times an exact ``unit``."""

    unit: object

    def raw_unsupported(self, selected, labels) -> np.ndarray: ...

    def raw_max(self) -> int: ...


class PrefixProxies(Protocol):
    """Chat of the prefixes of ``order`` (N, K) per patient, (N, K + 1)."""

    def prefix_proxies(self, probs, order) -> np.ndarray: ...


class JointSequences(Protocol):
    """The ratio universe of a value with this cost: (order, Vhat, Chat), or None for a value it does not know."""

    def joint_sequences(self, value, probs, tolerance: float = ...): ...


class Units(Protocol):
    """The unit of the function's amounts (e.g. "RAF" or "dollars")."""

    units: str


#: Every optional capability, by name.
CAPABILITIES = {
    "additive": Additive,
    "member_context": MemberContext,
    "value_context": ValueContext,
    "cost_of_value": CostOfValue,
    "own_sequences": OwnSequences,
    "compiled": Compiled,
    "prefixes": Prefixes,
    "per_target": PerTarget,
    "set_cost": SetCost,
    "prefix_proxies": PrefixProxies,
    "joint_sequences": JointSequences,
    "units": Units,
}


def _members(protocol) -> tuple[str, ...]:
    """The members a protocol names: its methods and its annotated attributes."""
    names = {name for name, attr in vars(protocol).items() if callable(attr) and not name.startswith("_")}
    names |= set(getattr(protocol, "__annotations__", {}))
    return tuple(sorted(names))


@functools.lru_cache(maxsize=None)
def capabilities(cls: type) -> frozenset:
    """The names of :data:`CAPABILITIES` that class ``cls`` provides (it defines every member), computed
    once per class. Members are looked up on the class: a property counts, an attribute set in
    ``__init__`` does not.

    >>> from favmac import AdditiveValue, CmsHccCost
    >>> sorted(capabilities(AdditiveValue)), "set_cost" in capabilities(CmsHccCost)
    (['additive'], True)
    """
    return frozenset(name for name, protocol in CAPABILITIES.items()
                     if all(hasattr(cls, member) for member in _members(protocol)))


def provides(function, capability: str) -> bool:
    """Whether ``function``'s class provides ``capability`` (a name of :data:`CAPABILITIES`)."""
    if capability not in CAPABILITIES:
        raise ValueError(f"capability: expected one of {', '.join(CAPABILITIES)}; got {capability!r}")
    return capability in capabilities(type(function))


def is_additive(function) -> bool:
    """True when ``function`` declares ``is_additive = True``. One that does not declare it is not
    additive: the engine then takes the general path (proxies of sets; for a cost, the exact integers
    of a set cost), never per-code weights it was not promised.

    >>> from favmac import AdditiveCost, FormulaValue
    >>> is_additive(AdditiveCost()), is_additive(FormulaValue("n_hits")), is_additive(object())
    (True, False, False)
    """
    return _declared(function, "is_additive") is True


def _declared(function, name: str):
    """The value of attribute ``name`` as the class (or its bases) declares it, None when it does not."""
    for klass in type(function).__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def is_set_cost(cost) -> bool:
    """True for a cost that is a set function (not additive), e.g. ``CmsHccCost``: the threshold engine
    takes its exact integers from :class:`favmac.costs.SetCosts` and its universes from
    :func:`favmac.universe.set_cost_candidates`."""
    return not is_additive(cost)


def bind_rows(function, rows):
    """``function`` bound to the patients ``rows`` (a slice, an index array or one int): ``take(rows)``
    for a function with per-patient context (:class:`MemberContext`, e.g. ``CmsHccValue`` with a cell
    and known codes per patient), the function itself otherwise. Replay, the universes, FavMac and the
    export call this wherever they slice patients.

    >>> from favmac import AdditiveValue
    >>> v = AdditiveValue([1.0, 2.0])
    >>> bind_rows(v, slice(0, 10)) is v
    True
    """
    return function.take(rows) if provides(function, "member_context") else function


def n_rows(function) -> int | None:
    """The number of patients ``function``'s context describes; None for one context for all (or none)."""
    return function.n_rows if provides(function, "member_context") else None


def own_sequences(value):
    """``value.sequences`` (its own compiled greedy, :class:`OwnSequences`), or None."""
    return value.sequences if provides(value, "own_sequences") else None


def compiled_formula(value, n_codes: int):
    """``value.compiled(n_codes)`` (a formula's instructions, :class:`Compiled`), or None."""
    return value.compiled(n_codes) if provides(value, "compiled") else None


def prefix_values(value):
    """``value.prefixes`` (V of nested sets in one pass, :class:`Prefixes`), or None."""
    return value.prefixes if provides(value, "prefixes") else None


def per_target_values(value):
    """``value.per_target`` (V of T sets per patient in one pass, :class:`PerTarget`), or None."""
    return value.per_target if provides(value, "per_target") else None


def cost_for_value(cost, value):
    """The cost of ``value``'s members: ``cost.with_value(value)`` for a cost defined by a value
    (:class:`CostOfValue`), ``cost`` itself otherwise (or when ``value`` is None)."""
    return cost.with_value(value) if value is not None and provides(cost, "cost_of_value") else cost


def has_member_context(value) -> bool:
    """True for a value whose members differ by context it can be given (:class:`ValueContext`)."""
    return provides(value, "value_context")


def prefix_proxies(cost):
    """``cost.prefix_proxies`` (Chat of nested sets in one pass, :class:`PrefixProxies`), or None."""
    return cost.prefix_proxies if provides(cost, "prefix_proxies") else None


def joint_sequences(cost):
    """``cost.joint_sequences`` (the ratio universe with this cost, :class:`JointSequences`), or None."""
    return cost.joint_sequences if provides(cost, "joint_sequences") else None


def units_of(function) -> str | None:
    """``function.units`` (:class:`Units`), or None for a function in plain cost or value units."""
    return function.units if provides(function, "units") else None
