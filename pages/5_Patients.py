"""Patients: one patient's probabilities, the greedy order and where the threshold cut it."""
import numpy as np
import streamlit as st

from favmac.controller import FavMac
from favmac.recalibration import recalibration_of, run_probabilities
from favmac.replay import predict_with_threshold
from favmac.ui import figures, groupings, jobs, patients, payment_view, payment_widgets, widgets
from favmac.ui.playback import format_threshold
from favmac.ui.bootstrap import page_setup
from favmac.ui.text import md
from favmac.ui.formats import column_format
from favmac.ui.units import amount_format, cost_amount, cost_short, cost_unit, in_dollars, threshold_text, threshold_tile, value_shown, value_unit

ss = page_setup("Patients")
st.title("Patients")
widgets.require_dataset()

ds = ss.dataset
settings = ss.settings
spec = ss.spec()
weights_df = ss.weights
new = ss.new_patients

sources = ["Calibration stream"] + (["New patients"] if new is not None else [])
source = st.radio("Patients from", sources, horizontal=True, key="patient_source")  # drawn before the replay is awaited
result = jobs.online(ss)
if source == "Calibration stream":
    first = patients.first_informative_step(result, ds.label_array(), ds.prob_array())
    if result.n_steps <= patients.MAX_SELECT_OPTIONS:
        ids = [str(i) for i in result.patient_ids]
        pick = st.selectbox(f"Patient id ({len(ids):,} predicted after the burn-in; type to search)", ids, key="patient_select", index=first)
        step = ids.index(pick)
    else:  # a search box: a select box with every id would take seconds to draw
        typed = st.text_input(f"Patient id ({result.n_steps:,} predicted after the burn-in)", value=str(result.patient_ids[first]),
                              key="patient_search", help="Type a patient id exactly; ids that start with what you typed are suggested.")
        step, suggestions = patients.find_patient(result.patient_ids, typed)
        if step is None:
            st.warning(f"No predicted patient has the id {md(typed)}."
                       + (f" Ids starting with it: {md(', '.join(suggestions))}." if suggestions else "")
                       + " Showing the first informative patient instead.")
            step = first
        pick = str(result.patient_ids[step])
    position = result.burn_in + step
    segment = groupings.segment_columns(settings)[:1]  # the column maps per segment were fitted on
    group = ds.segments(segment[0])[position] if segment else None
    probs_row = run_probabilities(result, ds.prob_array()[position], group)  # as the run saw them
    labels_row = ds.label_array()[position]
    threshold = float(result.thresholds[0, step])
    selected_row = result.selected[0, step]
    where = groupings.stream_patient_where(result, step, position)
    value, cost = payment_view.patient_functions(spec, ds.codes, ds.members, position)
else:
    ids = [str(i) for i in new.index]
    pick = st.selectbox(f"New patient id ({len(ids):,})", ids, key="patient_select_new")
    value, cost = payment_view.patient_functions(spec, ds.codes, new.attrs.get("members"), ids.index(pick))
    threshold, where = groupings.new_patient_threshold(result, new, pick, ds.n_patients, spec.segment)  # stops on a missing column
    view = groupings.new_patients_for(new, spec.segment)
    group = None if view is None or view.attrs.get("groups") is None else view.attrs["groups"][ids.index(pick)]
    probs_row = run_probabilities(result, new.loc[pick].to_numpy(dtype=float), group)  # the run's maps
    labels_row = None
    selected_row = predict_with_threshold(probs_row[None, :], value, cost, threshold, universe=settings["universe"],
                                          score=spec.score)[0]

if recalibration_of(result) is not None:
    st.caption("Probabilities are shown as the run used them: after the recalibration maps fitted on the fold "
               "(Value & cost → Recalibration).")
summary = patients.patient_summary(selected_row, probs_row, labels_row, value, cost)
label, shown_threshold, why = threshold_tile(threshold, settings, spec.score)
tiles = [("Codes chosen", summary["n_selected"], None),
         (label, shown_threshold, f"{why} Where it comes from: {md(where)}."),
         ("Expected value of the set", value_shown(summary["vhat"], settings),
          f"V̂, in {value_unit(settings)}: the set's value averaged over the codes' probabilities."),
         (f"Expected {cost_short(settings)}", cost_amount(summary["chat"], settings),
          "Ĉ, the cost proxy. The chosen set is the largest prefix of the greedy order whose score (Ĉ, or the price score) is < T.")]
if summary["value"] is not None:
    tiles.append((f"Confirmed value / {cost_short(settings)}",
                  f"{value_shown(summary['value'], settings)} / {cost_amount(summary['cost'], settings, 0 if float(summary['cost']).is_integer() else 3)}",
                  f"What the audit found: value in {value_unit(settings)}, cost in {cost_unit(settings)}."))
widgets.tiles(tiles)
st.caption(f"Patient {md(pick)}: {md(where)}.")  # where names the segment
if spec.value_kind == "cms_payment":
    payment_widgets.show_breakdown(value, selected_row)

if settings["universe"] == "full":
    order = np.argsort(-probs_row, kind="stable")
    explain = None
else:
    controller = FavMac(value, cost, spec.target, delta=spec.control_delta, universe=spec.universe, score=spec.score)
    explain = patients.greedy_cut(controller.explain(probs_row, codes=ds.codes), threshold)
    order = [ds.codes.index(c) for c in explain["code"]]
codes_frame = patients.patient_codes(probs_row, labels_row, selected_row, ds.codes, weights_df, order=order)
cut = None if explain is None else int(explain["selected"].sum())
# the chosen codes and the next few in the order, at most 3 x MAX_CODES_SHOWN bars
shown = min(max(figures.MAX_CODES_SHOWN, (cut or 0) + 10), 3 * figures.MAX_CODES_SHOWN)
drawn_cut = cut if cut is not None and cut < shown else None
widgets.chart(figures.patient_figure(codes_frame.head(shown), f"Patient {pick}: probability of each code", cut=drawn_cut), key="patient_chart")
if len(codes_frame) > shown:
    st.caption(f"The chart shows the first {shown} of {len(codes_frame):,} codes in this order"
               + ("." if drawn_cut is not None or cut is None else f"; the threshold cut comes after code {cut:,}, beyond it."))

st.subheader("Greedy order and the threshold cut")
if explain is None:
    st.info("The 'full' universe compares all subsets, so there is no greedy order to show; bars are sorted by probability.")
else:
    n_in = int(explain["selected"].sum())
    key_name = "price score (running max of Ĉ step / V̂ step)" if spec.score == "price" else "cumulative cost proxy Ĉ"
    st.caption(f"FavMac adds codes in this order ({settings['universe']} universe) and keeps the first {n_in}: "
               f"{threshold_text(threshold, settings, spec.score)} (in the math: the longest prefix whose {key_name} "
               f"stays below T = {format_threshold(threshold)}).")
    widgets.table(explain, hide_index=True, key="greedy_table",  # "chosen" beside the code: the table is wider than the page
                 column_order=["rank", "code", "selected", *[c for c in explain.columns if c not in ("rank", "code", "selected")]],
                 column_config={"prob": st.column_config.NumberColumn("probability", format="%.3f", help="p: the classifier's probability of the code"),
                                "value_weight": st.column_config.NumberColumn("value weight", format=amount_format(explain["value_weight"], True) if in_dollars(settings)
                                                                              else column_format(explain["value_weight"], at_most=3)),
                                "cost_weight": st.column_config.NumberColumn("cost weight", format=column_format(explain["cost_weight"], at_most=3)),
                                "chat": st.column_config.NumberColumn(f"expected {cost_unit(settings)} so far", format="%.3f",
                                                                      help="Ĉ: the cost proxy of the set up to this code"),
                                "vhat": st.column_config.NumberColumn(f"expected {value_unit(settings)} so far",
                                                                      format=amount_format(explain["vhat"], True) if in_dollars(settings) else "%.3f",
                                                                      help="V̂: the value proxy of the set up to this code"),
                                "score": st.column_config.NumberColumn("score vs T", help="The score the threshold T is compared with: chosen while below T", format=widgets.number_format(explain["score"])),
                                "selected": st.column_config.CheckboxColumn("chosen")})
