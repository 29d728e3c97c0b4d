"""Home: what FavMac Studio does, the guarantee in plain words, what is loaded, the steps."""
import streamlit as st

from favmac.ui import auth, widgets
from favmac.ui.bootstrap import page_setup
from favmac.ui.navigation import EXPLAIN, PAGES
from favmac.ui.text import md

ss = page_setup("Home")

st.title("FavMac Studio")
auth.show_local_mode_note()
st.info("**Start here:** open **Online session** to watch FavMac choose codes patient by patient on the loaded data "
        "(a bundled sample until you upload your own files on **Data**).", icon=":material/flag:")
st.markdown(
    "FavMac Studio suggests which diagnosis codes (HCCs) to flag for each patient, from the "
    "probabilities your classifier gives. It picks the set of codes worth the most (true codes "
    "found, weighted by risk if you like) while keeping the cost of false flags under a target "
    "you choose. It learns its threshold online, patient by patient, as coding audits confirm "
    "which codes were really present."
)

st.subheader("The guarantee, in plain words")
st.markdown(
    "- **Expected cost control:** on average, the flagged codes that turn out wrong cost at most "
    "**c** per patient — for example at most 1.1 false flags per patient.\n"
    "- **Violation control:** at most a share **δ** of patients (say 10 %) get false flags "
    "costing more than **c**.\n\n"
    "Both hold whenever the patients arrive in an order that could as well have been shuffled "
    "(exchangeable data), whatever the classifier — a poorly calibrated classifier costs value, "
    "not the guarantee."
)
st.caption("  \n".join(EXPLAIN.values()))

st.subheader("Loaded now")
if ss.message_level("calibration") == "error":
    widgets.show_message("calibration")
if ss.has_dataset:
    ds = ss.dataset
    new = ss.new_patients
    st.markdown(f"**{md(ds.name)}**")
    cols = st.columns(3)
    cols[0].metric("Calibration patients", f"{ds.n_patients:,}")
    cols[1].metric("Codes", ds.n_codes)
    cols[2].metric("New patients", "none" if new is None else f"{len(new):,}")
    widgets.show_settings_line()

st.subheader("Steps")
for entry in PAGES[1:]:
    st.page_link(entry.path, label=f"**{entry.title}** — {entry.help}", icon=entry.icon)
