"""Validity: did the promise hold on this data? Many random orderings, a test and a plain verdict."""
import streamlit as st

from favmac.io import DataError
from favmac.ui import jobs, validity, widgets
from favmac.ui.bootstrap import page_setup
from favmac.ui.settings_form import cost_unit
from favmac.ui.text import md, md_frame
from favmac.ui.units import cost_figure, cost_short, counts_styled

ss = page_setup("Validity")
st.title("Validity")
widgets.require_dataset()
widgets.show_settings_line()
st.markdown(
    "FavMac's promise holds when patients arrive in a random order relative to each other (no drift). "
    "This check replays **your** patients in many random orders and measures the outcome each time: if the promise "
    "holds, the outcomes centre at or below the target. It also replays the order the patients really arrived in: "
    "an outcome far outside the random orders' range is a sign of drift over time."
)
if ss.settings.get("label_delay"):
    st.caption(f"Labels arrive {ss.settings['label_delay']:,} patients after the prediction (Value & cost): every "
               "ordering is replayed with that delay, each patient calibrated on the labels that have arrived.")
elif column := ss.settings.get("label_available_column"):
    st.caption(f"Labels arrive as the column {md(column)} says (Value & cost): in every ordering each patient keeps its "
               "own wait (its arrival minus its position), each patient calibrated on the labels that have arrived.")
# the widgets' own keys are dropped when another page runs; "validity_params" keeps the choice,
# so coming back finds the same check (and its running job) instead of the defaults
if ss.validity_params is None:
    ss.validity_params = {"orderings": validity.MIN_ORDERINGS, "seed": 0}
params = ss.validity_params
left, right = st.columns(2)
n_orderings = left.number_input("Random orderings", min_value=validity.MIN_ORDERINGS, max_value=5000,
                                value=int(params["orderings"]), step=100, key="validity_orderings",
                                on_change=lambda: params.update(orderings=st.session_state["validity_orderings"]))
seed = right.number_input("Seed", min_value=0, max_value=2**31 - 1, value=int(params["seed"]), step=1, key="validity_seed",
                          on_change=lambda: params.update(seed=st.session_state["validity_seed"]),
                          help="The orderings are numpy.random.RandomState(seed).permutation(N), drawn in sequence.")
pressed = st.button("Run the validity check", type="primary", key="run_validity", icon=":material/verified:")
report = None
try:
    # in the background: a progress bar (kept while you visit other pages) until the report is ready
    report = jobs.validity(ss, int(n_orderings), int(seed), start=pressed)
except (DataError, ValueError) as err:  # DataError: files; ValueError: a setting the check refuses, named
    st.error(md(err))  # the message quotes file names and cells
if report is None:
    st.info("Press **Run the validity check**; it replays the whole stream once per ordering.")
    st.stop()

show_verdict = {"success": st.success, "warning": st.warning, "error": st.error}[validity.verdict_kind(report, ss.spec().segment is None)]
show_verdict(md(report.verdict), icon=":material/gavel:")  # names segments
settings = ss.settings
widgets.chart(validity.histogram_figure(report, cost_unit(settings)), key="validity_histogram")
expected = report.control == "expected"
per_chart = f"{cost_short(settings)} per chart" if expected else "charts over c"  # the tiles' unit, on the tiles
beside = [report.mean, report.promised if report.adaptive_bound is None else report.adaptive_bound]  # one number of decimals
widgets.tiles([  # sized to their labels: none cut
    (f"Mean over orderings ({per_chart})", cost_figure(report.mean, settings, beside) if expected else f"{100 * report.mean:.2f} %",
     f"{cost_unit(settings).capitalize()} per chart, averaged over the orderings" if expected
     else "Share of charts over the target, averaged over the orderings"),
    (f"Promised at most ({per_chart})", cost_figure(report.promised, settings, beside) if expected else f"{100 * report.promised:g} %",
     f"{cost_unit(settings).capitalize()} per chart" if expected else "Share of charts over the target")
    if report.adaptive_bound is None else  # the adaptive target promises its bound, in any order
    (f"Adaptive bound ({per_chart})", cost_figure(report.adaptive_bound, settings, beside),
     "What the adaptive target promises for any order: c + (c + γ (L + 1) C_max) / (γ S), S predicted patients, "
     "L the most labels pending."),
    ("p-value (t-test)" if report.adaptive_bound is None else "p-value against the target c",
     "< 0.001" if report.p_value < 0.001 else f"{report.p_value:.3f}",
     "One-sided: the chance of an average this high if the promise held." if report.adaptive_bound is None else
     "One-sided t-test of the orderings' mean against c, which the adaptive target steers to but does not promise."),
    ("p-value (binomial)", f"{report.binomial_p_value:.3f}", "Exact binomial test on the first predicted patient of every ordering.")
    if report.binomial_p_value is not None else
    ("Arrival-order p-value", f"{report.order_p_value:.3f}",
     "Share of random orderings at least as costly as the order the patients arrived in.")])
st.caption(f"Mean over orderings and the promise: {cost_unit(settings)} per chart (patient)." if expected else
           "Mean over orderings and the promise: share of charts (patients) costing more than the target c.")
tables = validity.grouping_frames(report)
if tables:
    st.subheader("Per segment" if len(tables) == 1 else "Per segment, for each grouping")
    st.caption(md(validity.table_caption(report, settings)))
for name, table in tables.items():
    if len(tables) > 1:
        st.markdown(f"**{md(name)}**")  # column names are user text
    st.table(counts_styled(md_frame(table.set_index("segment"))))  # segment values are user text; counts as 1,500
