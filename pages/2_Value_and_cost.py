"""Value & cost: what a set is worth, what a false flag costs, and the target to keep."""
import streamlit as st

from favmac.functions import FormulaError, FormulaValue
from favmac.runspec import SettingsError
from favmac.ui import actions, arrivals_view, groupings, guarantees, jobs, payment_cost, payment_view, payment_widgets, playback, recalibration_view, settings_form as form, widgets
from favmac.ui.bootstrap import page_setup
from favmac.ui.formats import INPUT_FORMAT
from favmac.ui.session import Session
from favmac.ui.units import cost_unit, plain_number, target_text, universe_math
from favmac.ui.text import md

ss = page_setup("Value & cost")
st.title("Value & cost")
widgets.require_dataset()

ds = ss.dataset
current = ss.settings
weights = ss.weight_array()
spec = ss.spec()
cmax_fp, cmax_w = spec.replace(cost_kind="fp").c_max(ds.n_codes), spec.replace(cost_kind="weighted_fp").c_max(ds.n_codes)

def guarantee_inputs() -> dict:
    """The form's right column: the guarantee and how it is calibrated; the values chosen (``score`` as picked)."""
    st.subheader("Guarantee")
    control = st.radio("Control", list(form.CONTROLS), format_func=form.CONTROLS.get,
                       index=list(form.CONTROLS).index(current["control"]), key="control",
                       help="Expected cost: mean cost per patient <= c. Violation probability: share of patients with cost > c is <= δ.")
    target = st.number_input(payment_cost.target_label(cost_kind, {"base_rate": st.session_state[Session.target_base_rate.key]}), min_value=0.0, value=float(current["target"]), step=0.1,
                             format=INPUT_FORMAT, key="target",
                             help=f"For example 1.1 = at most 1.1 false flags per chart on average (110 per 100 charts). "
                                  f"The most a chart can cost, C_max, is {cmax_fp:g} false flags (FP count) or {cmax_w:.4g} (risk-weighted).")
    delta = st.number_input("Share of charts allowed over the target, δ (violation control only)", min_value=0.0, max_value=1.0,  # RunSpec's (0, 1): a restored 0.0005 shows
                            value=float(current["delta"]), step=0.01, format=INPUT_FORMAT, key="delta", disabled=control != "violation")
    options = form.universe_options(ds.n_codes)
    # a radio: three or four choices read at a glance (and no select box's code for a first visit to fetch)
    universe = st.radio("Universe of candidate sets", options, index=options.index(current["universe"]) if current["universe"] in options else 0,
                            format_func=form.UNIVERSE_LABELS.get, key="universe",
                            help=form.EXPLAIN["universe"] + "  \n" + universe_math()
                                 + f"  \n'full' enumerates all subsets and is offered only when there are at most {form.MAX_FULL_CODES} codes.")
    score = st.radio("Threshold on", list(form.SCORE_LABELS), format_func=form.SCORE_LABELS.get,
                     index=list(form.SCORE_LABELS).index(spec.score), key="score", help=form.SCORE_HELP)
    burn_in = st.number_input("Burn-in (patients used only to calibrate)", min_value=0, max_value=ds.n_patients - 1, value=int(current["burn_in"]), step=100, key="burn_in",
                              help=form.EXPLAIN["burn_in"])
    use_window = st.checkbox("Rolling window (forget old patients, for drifting data)", value=current["window"] is not None, key="use_window")
    window = st.number_input("Window length (patients)", min_value=1, value=int(current["window"] or min(1000, ds.n_patients)), step=100, key="window",
                             disabled=not use_window)
    return {"control": control, "target": target, "delta": delta, "universe": universe, "score": score, "burn_in": burn_in,
            "window": int(window) if use_window else None,
            **guarantees.settings_fields(current, ds), **arrivals_view.settings_fields(current, ds),
            **recalibration_view.settings_fields(current, ds.n_patients)}


def keep_target_percent():
    """On a change of the Cost radio, before the page reruns: the target input keeps its
    percentage of C_max in the new cost's units (form.rescaled_target)."""
    store = st.session_state
    scales = {"fp": (cmax_fp, True), "weighted_fp": (cmax_w, form.is_integer_valued(weights))}
    if current["value_kind"] == "cms_payment":  # the saved value: its cells and known codes fix this C_max, in the typed rate's units
        rate = store.get(Session.target_base_rate.key, spec.base_rate)
        scales[payment_cost.UNSUPPORTED] = (payment_cost.c_max_of(spec, ds) * (rate or 1.0) / (spec.base_rate or 1.0), False)
    shown_kind, kind = store.get(Session.target_cost_kind.key, current["cost_kind"]), store.get("cost_kind")
    if "target" in store and shown_kind in scales and kind in scales and kind != shown_kind:
        (old_cmax, _), (new_cmax, integer_cost) = scales[shown_kind], scales[kind]
        store["target"] = form.rescaled_target(float(store["target"]), old_cmax, new_cmax, integer_cost)
    store[Session.target_cost_kind.key] = kind


def typed_base_rate():
    """The base rate typed in the form (None: RAF units); the saved one while the text is not a number."""
    try:
        return payment_view.parse_base_rate(st.session_state.get("pay_base_rate", ""))
    except SettingsError:
        return st.session_state.get(Session.target_base_rate.key, spec.base_rate)


def keep_target_in_rate_units():
    """On a change of the base-rate input, before the page reruns: under the unsupported-payment
    cost the target is in RAF or dollars of it, so it keeps its percentage of C_max (x base rate)."""
    store = st.session_state
    old, new = store.get(Session.target_base_rate.key, spec.base_rate), typed_base_rate()
    if store.get("cost_kind") == payment_cost.UNSUPPORTED and "target" in store and new != old:
        store["target"] = form.rescaled_target(float(store["target"]), old or 1.0, new or 1.0, False)
    store[Session.target_base_rate.key] = new


def follow_default_score():
    """On Apply, before the page reruns: a score left at the default it showed follows the chosen
    control, universe and target (form.score_for), so the radio shows the score that is saved."""
    store, keys = st.session_state, ("control", "delta", "universe", "score", "target", "cost_kind")
    if all(k in store for k in keys) and store["universe"] != "full":
        store["score"] = form.score_for(Session(store).settings, {k: store[k] for k in keys}, weights)


# not a form: what an option turns on (δ, the window, the formula, the adaptive rate) is editable
# only while the option is on, so the page reruns when an option changes; Apply saves
with st.container(border=True):
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Value of a chosen set")
        kinds = payment_widgets.value_options(form.VALUE_KINDS, ds.codes)
        value_kind = st.radio("Value", kinds, format_func=form.VALUE_KINDS.get,
                              index=kinds.index(current["value_kind"]) if current["value_kind"] in kinds else 0, key="value_kind",
                              help="TP count: number of true codes found. Risk-weighted TP: sum of the risk weights of the true codes found. "
                                   "Custom: any formula over the true hits. CMS-HCC payment: the member's risk score with "
                                   "hierarchies, interactions and demographic cells (CMS-HCC codes only).")
        payment = payment_widgets.payment_inputs(current, ds.codes, value_kind, on_base_rate=keep_target_in_rate_units)
        st.session_state[Session.target_base_rate.key] = typed_base_rate()  # the target below is in this rate's units
        formula = st.text_area("Custom value formula (used when 'Custom formula' is chosen)", key="formula", height=80,
                               value=current["formula"] if current["value_kind"] == "formula" else "",
                               placeholder=f"for example {form.PAPER_FORMULA}", disabled=value_kind != "formula")
        with st.expander("How to write a formula"):
            st.markdown(FormulaValue.HELP)
            st.markdown(form.FORMULA_EXAMPLE)
        st.subheader("Cost of a chosen set")
        cost_kinds = payment_cost.cost_options(value_kind)
        cost_kind = st.radio("Cost", cost_kinds, format_func=form.COST_KINDS.get,
                             index=payment_cost.cost_index(cost_kinds, current["cost_kind"]), key="cost_kind", on_change=keep_target_percent,
                             help="FP count: number of flagged codes that are absent. Risk-weighted FP: sum of their risk weights. "
                                  + payment_cost.HELP)
        st.session_state[Session.target_cost_kind.key] = cost_kind  # the target below is in this cost's units
        if cost_kind == payment_cost.UNSUPPORTED and value_kind == "cms_payment":  # as typed, not as last saved
            st.caption(payment_cost.c_max_caption(payment_cost.typed_spec(spec, payment, typed_base_rate()), ds))
        st.caption(f"The most one chart can cost (C_max, every code flagged and none present): {cmax_fp:g} false flags (FP count) "
                   f"or {cmax_w:.4g} in risk weight (risk-weighted FP). "
                   "The per-code risk weights are edited on the Data page.", help=form.EXPLAIN["C_max"])
    with right:
        chosen = guarantee_inputs()
    submitted = st.button("Apply settings", type="primary", key="apply_settings", on_click=follow_default_score)

if submitted and payment_widgets.accept(ss, payment) and actions.apply_settings(ss, {**current, **payment, "value_kind": value_kind,
                                             "formula": formula if value_kind == "formula" else current["formula"],
                                             "cost_kind": cost_kind,
                                             **chosen, "score": form.score_for(current, {**chosen, "cost_kind": cost_kind}, weights),
                                             "recalibrate": form.fold_for(current, chosen, ds.n_patients)}):
    widgets.refresh_sidebar_summary()  # drawn before the new settings
widgets.show_message("settings")
if submitted and chosen["universe"] == "full" and chosen["score"] == "price":
    st.caption("The 'full' universe has no greedy order, so it has no price score: the cost score is used.")
st.page_link("pages/1_Data.py", label="Edit the per-code risk weights on the Data page", icon=":material/table_view:")

saved = ss.settings
cmax = ss.c_max()
st.info(f"The promise: **{target_text(saved)}**.", icon=":material/handshake:")
guarantees.delay_warning(saved.get("adaptive_rate"), saved.get("label_delay"))  # gamma too fast for labels d patients late
st.caption(f"Target c = {saved['target']:g} {cost_unit(saved)} = {form.target_percent(saved['target'], cmax):.1f} % of the most a chart can cost "
           f"(C_max = {plain_number(cmax)}), the paper's 0–100 scale.")
if saved["value_kind"] == "formula":
    try:
        st.caption(md(form.formula_preview(saved["formula"], weights, ds.prob_array()[0], ds.label_array()[0], ds.codes)))
    except FormulaError as err:
        st.error(md(err))
    if submitted and ss.message_level("settings") == "success":
        with st.spinner("Timing the formula on a few patients…"):
            seconds = playback.estimate_replay_seconds(ds.prob_array(), ds.label_array(), ss.spec())
        if seconds > 10:
            st.warning(f"A custom formula needs a Monte Carlo estimate of V̂ for every candidate set: replaying all {ds.n_patients:,} patients "
                       f"with the '{saved['universe']}' universe will take about {seconds / 60:.1f} minutes. "
                       + ("The 'prob' universe needs far fewer estimates per patient." if saved["universe"] != "prob" else ""))
if saved.get("segment"):
    groupings.show_grouping_tables(jobs.online(ss), saved)
