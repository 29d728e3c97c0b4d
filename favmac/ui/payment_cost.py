"""The unsupported-payment cost on Value & cost: offered with the CMS-HCC payment value only, with its unit.

The cost itself is :class:`favmac.payment.CmsHccCost` (RunSpec ``cost_kind="cms_unsupported"``):
the payment the false flags alone would add, RAF(D, B ∪ (S \\ y)) - RAF(D, B), the RADV exposure.
"""
from __future__ import annotations

from favmac.runspec import COST_KINDS
from favmac.tradeoffs import UNSUPPORTED_PAYMENT as UNSUPPORTED  # the cost kind, named once (favmac.tradeoffs)
from favmac.ui.text import md
from favmac.ui.units import cost_unit, plain_number

__all__ = ["UNSUPPORTED", "HELP", "cost_options", "cost_index", "target_label", "c_max_of", "c_max_caption", "typed_spec"]

HELP = ("Unsupported payment (RADV exposure): the payment the false flags alone would add to the member's "
        "risk score, with the same hierarchies, interactions, cell and known codes as the payment value; in "
        "dollars with a base rate, else in RAF. Offered with the CMS-HCC payment value.")


def cost_options(value_kind: str) -> list[str]:
    """The cost kinds the chosen value allows: the unsupported payment only with the payment value.

    >>> cost_options("tp"), cost_options("cms_payment")[-1]
    (['fp', 'weighted_fp'], 'cms_unsupported')
    """
    return [k for k in COST_KINDS if k != UNSUPPORTED or value_kind == "cms_payment"]


def cost_index(options: list[str], current: str) -> int:
    """The radio's index of the saved cost (the first option when the value no longer allows it)."""
    return options.index(current) if current in options else 0


def target_label(cost_kind: str, settings: dict) -> str:
    """The target input's label for the chosen cost.

    >>> target_label("cms_unsupported", {"base_rate": 11000.0})
    'Target c (dollars of unsupported payment per chart)'
    """
    if cost_kind == UNSUPPORTED:
        return f"Target c ({cost_unit({'cost_kind': UNSUPPORTED, 'base_rate': settings.get('base_rate')})} per chart)"
    return "Target c (false flags, or their risk weight, per chart)"


def c_max_of(spec, dataset) -> float:
    """C_max of the unsupported payment for ``dataset`` (its codes and cells) under ``spec``'s payment value."""
    return float(spec.replace(cost_kind=UNSUPPORTED).c_max(dataset.n_codes, dataset.codes, dataset.members))


def typed_spec(spec, payment: dict, base_rate):
    """``spec`` (the saved run) with the payment value as the form shows it now, before Apply:
    ``payment`` the payment inputs (``payment_widgets.payment_inputs``; its base rate, typed text,
    is replaced by ``base_rate``, the parsed number or None for RAF). What the unsupported-payment
    caption describes, so it follows every input as it changes rather than the last saved run.

    >>> from favmac.runspec import RunSpec
    >>> s = typed_spec(RunSpec(), {"cms_model": "V28", "cms_year": 2026, "base_rate": "11,000"}, 11000.0)
    >>> (s.value_kind, s.cost_kind, s.cms_year, s.base_rate)
    ('cms_payment', 'cms_unsupported', 2026, 11000.0)
    """
    fields = {k: v for k, v in payment.items() if k != "base_rate"}
    return spec.replace(value_kind="cms_payment", cost_kind=UNSUPPORTED, base_rate=base_rate, **fields)


def c_max_caption(spec, dataset) -> str:
    """The caption under the cost radio when the unsupported payment is chosen (``spec``: the run
    with the payment value, :func:`typed_spec`; ``dataset``: its data, whose codes and cells fix
    C_max). Markdown: the reason inputs that cannot price the data are refused is escaped."""
    spec = spec.replace(cost_kind=UNSUPPORTED)
    try:
        c_max = c_max_of(spec, dataset)
    except ValueError as err:  # typed inputs that cannot price the data (a model without its codes): say so, no traceback
        return f"Unsupported payment: no C_max with these payment inputs. {md(err)}"
    unit = cost_unit({"cost_kind": UNSUPPORTED, "base_rate": spec.base_rate})
    return (f"Unsupported payment: the target is in {unit} per chart. The most one chart can cost "
            f"(C_max) is {plain_number(c_max)}: a bound on any member's unsupported payment in the data's cells (every code "
            "flagged, none present), which the calibration adds once as its margin of safety.")


