"""Trade-offs: value against realized cost across targets, FavMac and the baselines."""
import streamlit as st

from favmac.methods import method_labels
from favmac.ui import actions, figures, jobs, payment_view, recalibration_view, settings_form as form, tradeoffs, widgets
from favmac.ui.bootstrap import page_setup
from favmac.ui.text import md
from favmac.ui.units import plain_number

ss = page_setup("Trade-offs")
st.title("Trade-offs")
widgets.require_dataset()

ds = ss.dataset
settings = ss.settings
grid = settings["grid"]
cmax = ss.c_max()

with st.form("tradeoff_form"):
    c1, c2, c3 = st.columns([1, 1, 1])
    low = c1.number_input("Lowest target (% of C_max)", min_value=0.1, max_value=100.0, value=float(grid["low_pct"]), step=1.0, key="grid_low")
    high = c2.number_input("Highest target (% of C_max)", min_value=0.1, max_value=100.0, value=float(grid["high_pct"]), step=1.0, key="grid_high")
    n_targets = c3.number_input("Number of targets", min_value=2, max_value=50, value=int(grid["n_targets"]), step=1, key="grid_n")
    choices = tradeoffs.applicable_methods(method_labels(ds.n_codes), settings["control"], ds.n_codes)  # options follow applicability
    # pills: the handful of methods read at a glance, and (unlike a multiselect's) their front-end
    # code is small for a first visit to fetch
    methods = st.pills("Methods", choices, selection_mode="multi", default=[m for m in grid["methods"] if m in choices], key="grid_methods",
                       help="FPCP is FavMac with the 'prob' universe, so it repeats FavMac (prob).")
    recalibrate = recalibration_view.tradeoff_option(settings, ds.n_patients)
    run = st.form_submit_button("Run comparison", type="primary", key="run_tradeoffs")
if run:  # a refused grid runs nothing
    run = actions.apply_settings(ss, {**settings, "grid": {"low_pct": low, "high_pct": high, "n_targets": n_targets, "methods": methods}})
    widgets.show_message("settings")
    if run:
        widgets.refresh_sidebar_summary()  # drawn before the new grid
    settings, grid = ss.settings, ss.settings["grid"]

widgets.show_settings_line()
integer_cost = form.is_integer_valued(ss.spec().cost_weights(ds.n_codes))
targets = tradeoffs.tradeoff_targets(cmax, grid["low_pct"], grid["high_pct"], grid["n_targets"], integer_cost, include=settings["target"])
chosen = [m for m in grid["methods"] if m in choices]
if not chosen:
    st.warning("Choose at least one method.")
    st.stop()

out = jobs.tradeoffs(ss, targets, chosen, start=run, recalibrate=recalibrate)
if out is None:
    st.info(f"Press **Run comparison** to replay {len(chosen)} methods × {len(targets)} targets on "
            f"{ds.n_patients:,} patients. It runs in the background: you can switch pages and come back to the result.")
    st.stop()
for method, reason in out["skipped"].items():
    st.caption(f"{method} not shown: {reason}.")
points = out["points"]
if points.empty:
    st.warning("None of the chosen methods applies to these settings.")
    st.stop()

cost_unit, value_unit = form.cost_unit(settings), form.value_unit(settings)
left, right = st.columns(2, gap="large")
widgets.chart(figures.tradeoff_figure(points, cost_unit, value_unit), key="tradeoff_chart", where=left)
widgets.chart(figures.guarantee_figure(points, settings["control"], settings["delta"], cost_unit, value_unit), key="guarantee_chart", where=right)
st.caption(
    f"{len(targets)} targets from {plain_number(targets[0])} to {plain_number(targets[-1])} {cost_unit} per chart ({grid['low_pct']:g}–{grid['high_pct']:g} % of C_max = {plain_number(cmax)}"
    + (", moved 0.1 off whole numbers as the paper does for integer costs" if integer_cost else "")
    + f"; plus your target c = {settings['target']:g})"
    + f". Burn-in {settings['burn_in']:,} patients; every method uses all earlier patients (no rolling window"
    + (", no segments, no adaptive target" if settings.get("segment") or settings.get("adaptive_rate") else "")
    + (", every earlier patient's labels known" if settings.get("label_delay") is not None else "") + ")."
)

if recalibrate is not None:
    st.caption(recalibration_view.tradeoff_caption(recalibrate, settings))
if (versus := payment_view.payment_vs_additive(points, cost_unit)) is not None:
    st.caption(md(versus))
st.subheader("Summary (averaged over the targets)")
st.caption(f"Value captured and {cost_unit} per 100 charts; value captured (%) = share of the value of exactly the true codes. "
           "Over the target = realized minus promised, per 100 charts; charts over the target = share of patients whose cost exceeded it. "
           "This is one ordering of your patients: the promise holds on average over orderings, so a small positive "
           "'over the target' here is noise, not a broken promise. The **Validity** page replays many orderings and shows the spread.")
widgets.table(out["table"], hide_index=True, key="comparison_table",
             column_config={c: st.column_config.NumberColumn(format="dollar" if c.endswith("($)") or c.startswith("Unsupported $") else "%.2f")
                            for c in out["table"].columns if c != "Method"})
with st.expander("Every method × target"):
    widgets.table(points, hide_index=True, column_config={"ttest_p": st.column_config.NumberColumn("t-test p (cost > c)", format="%.3g"),
                                                         "binom_p": st.column_config.NumberColumn("binomial p (rate > δ)", format="%.3g")})
