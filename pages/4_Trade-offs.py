"""Trade-offs: value against realized cost across targets, FavMac and the baselines."""
import streamlit as st

from favmac import target_grid
from favmac.methods import method_labels
from favmac.tradeoffs import RECALIBRATED_LABEL, applicable_methods, session_fold
from favmac.ui import actions, figures, jobs, payment_view, recalibration_view, settings_form as form, tradeoff_grid, tradeoffs, widgets
from favmac.ui.bootstrap import page_setup
from favmac.ui.text import md
from favmac.ui.formats import INPUT_FORMAT
from favmac.ui.units import CHARTS, value_charts

ss = page_setup("Trade-offs")
st.title("Trade-offs")
widgets.require_dataset()

ds = ss.dataset
settings = ss.settings
grid = settings["grid"]
cmax = ss.c_max()

integer_cost = form.is_integer_valued(ss.spec().cost_weights(ds.n_codes))
plan = target_grid.grid_plan(grid, ss.spec(), ds, cmax, integer_cost, include=settings["target"])
shown = tradeoff_grid.form_values(grid, plan)
with st.form("tradeoff_form"):
    c1, c2, c3 = st.columns([1, 1, 1])
    per_100 = f"{form.cost_unit(settings)} per 100 charts"
    low = c1.number_input(f"Lowest target ({per_100})", min_value=0.0, max_value=cmax * CHARTS, value=shown["low"], step=1.0,
                          format=INPUT_FORMAT, placeholder=shown["low_hint"], key="grid_low", help=tradeoff_grid.FORM_HELP)
    high = c2.number_input(f"Highest target ({per_100})", min_value=0.0, max_value=cmax * CHARTS, value=shown["high"], step=1.0,
                           format=INPUT_FORMAT, placeholder=shown["high_hint"], key="grid_high", help=tradeoff_grid.FORM_HELP)
    n_targets = c3.number_input("Number of targets", min_value=2, max_value=50, value=int(grid["n_targets"]), step=1, key="grid_n")
    choices = applicable_methods(method_labels(ds.n_codes), settings["control"], ds.n_codes)  # options follow applicability
    # pills: the handful of methods read at a glance, and (unlike a multiselect's) their front-end
    # code is small for a first visit to fetch
    methods = st.pills("Methods", choices, selection_mode="multi", default=[m for m in grid["methods"] if m in choices], key="grid_methods",
                       help="FPCP is FavMac with the 'prob' universe, so it repeats FavMac (prob).")
    # a session that recalibrates runs every row on its fold; the extra recalibrated row is for one that does not
    recalibrate = None if session_fold(ss.spec(), ds.n_patients) else recalibration_view.tradeoff_option(settings, ds.n_patients)
    run = st.form_submit_button("Run comparison", type="primary", key="run_tradeoffs")
if run:  # a refused grid runs nothing
    new_grid = tradeoff_grid.grid_from_form(grid, shown, low, high, n_targets, methods, target_grid.cost_key(settings["cost_kind"], settings.get("base_rate")))
    run = actions.apply_settings(ss, {**settings, "grid": new_grid})
    widgets.show_message("settings")
    if run:
        widgets.refresh_sidebar_summary()  # drawn before the new grid
    settings, grid = ss.settings, ss.settings["grid"]

widgets.show_settings_line()
if run:  # the grid the form just saved
    plan = target_grid.grid_plan(grid, ss.spec(), ds, cmax, integer_cost, include=settings["target"])
targets = plan.targets
chosen = [m for m in grid["methods"] if m in choices]
if not chosen:
    st.warning("Choose at least one method.")
    st.stop()

out = jobs.tradeoffs(ss, targets, chosen, start=run, recalibrate=recalibrate)
if out is None:
    st.info(f"Press **Run comparison** to replay {len(chosen)} methods × {len(targets)} targets on "
            f"{ds.n_patients:,} patients. It runs in the background: you can switch pages and come back to the result.")
    st.caption(md(tradeoff_grid.grid_caption(plan, form.cost_unit(settings))))
    st.stop()
for method, reason in out["skipped"].items():
    st.caption(f"{method} not shown: {reason}.")
points = out["points"]
if points.empty:
    st.warning("None of the chosen methods applies to these settings.")
    st.stop()

cost_unit, value_unit = form.cost_unit(settings), form.value_unit(settings)
left, right = st.columns(2, gap="large")
widgets.chart(figures.tradeoff_figure(points, cost_unit, value_unit, value_charts(settings)), key="tradeoff_chart", where=left)
widgets.chart(figures.guarantee_figure(points, settings["control"], settings["delta"], cost_unit, value_unit,
                                             value_charts(settings)), key="guarantee_chart", where=right)
st.caption(md(tradeoff_grid.grid_caption(plan, cost_unit)) + f" Burn-in {settings['burn_in']:,} patients. "
           + md(tradeoffs.settings_caption(out.get("settings", []))))

if recalibrate is not None and RECALIBRATED_LABEL in set(points["method"]):
    st.caption(recalibration_view.tradeoff_caption(recalibrate, settings))
if (versus := payment_view.payment_vs_additive(points, cost_unit)) is not None:
    st.caption(md(versus))
st.subheader("Summary (averaged over the targets)")
st.caption(("Payment captured per patient and per 1,000 members; " + cost_unit + " per 100 charts"
            if settings["value_kind"] == "cms_payment" else f"Value captured and {cost_unit} per 100 charts")
           + "; value captured (%) = share of the value of exactly the true codes. "
           "Over the target = realized minus promised, per 100 charts; charts over the target = share of patients whose cost exceeded it. "
           "This is one ordering of your patients: the promise holds on average over orderings, so a small positive "
           "'over the target' here is noise, not a broken promise. The **Validity** page replays many orderings and shows the spread.")
labels = tradeoffs.comparison_columns(settings)  # what decides the promise in view first: the table is wider than the page
widgets.table(out["table"], hide_index=True, key="comparison_table",
             column_order=[labels[k] for k in ("method", "mean_value", "mean_cost", "excess_cost", "violation_freq", "per_1000", "captured",
                                               "paper_value") if k in labels and labels[k] in out["table"].columns]
             + [c for c in (tradeoffs.DROPPED_COLUMN,) if c in out["table"].columns],
             column_config={c: st.column_config.NumberColumn(**tradeoffs.header(c), format=f) for c, f in tradeoffs.comparison_formats(out["table"]).items()})
with st.expander("Every method × target"):
    every = tradeoffs.points_display(points, settings)
    widgets.table(every, hide_index=True, column_config={
        **{c: st.column_config.NumberColumn(format=f) for c, f in tradeoffs.comparison_formats(every.drop(columns=["Patients predicted"])).items()
           if not c.endswith("p (cost > c)") and not c.endswith("p (rate > δ)")},
        "t-test p (cost > c)": st.column_config.NumberColumn(format="%.3g"),
        "binomial p (rate > δ)": st.column_config.NumberColumn(format="%.3g")})
