"""The app's pages, in menu order: file, title, icon, URL path and a one-line purpose.

``studio.py`` (the router) builds ``st.navigation`` from this table and the sidebar menu
(``favmac.ui.widgets.show_menu``) links to the same entries, so the list lives in one place.
``EXPLAIN`` holds the one-line explanations of the words a newcomer meets first. Nothing here
imports more than the standard library (the Home page draws its text before the data loads).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageEntry:
    path: str
    title: str
    icon: str
    url_path: str
    help: str = ""


PAGES = (
    PageEntry("pages/0_Home.py", "Home", ":material/home:", ""),
    PageEntry("pages/1_Data.py", "Data", ":material/table_view:", "Data",
              "Pick a bundled sample or upload your calibration stream, new patients and risk weights."),
    PageEntry("pages/2_Value_and_cost.py", "Value & cost", ":material/tune:", "Value_and_cost",
              "Say what a good set is worth and what a false flag costs; set the target."),
    PageEntry("pages/3_Online_session.py", "Online session", ":material/play_circle:", "Online_session",
              "Replay the stream patient by patient and watch the cost stay under the target."),
    PageEntry("pages/4_Trade-offs.py", "Trade-offs", ":material/insights:", "Trade-offs",
              "Compare FavMac with the baselines across a range of targets."),
    PageEntry("pages/5_Patients.py", "Patients", ":material/person_search:", "Patients",
              "Inspect one patient's probabilities, the greedy order and where the threshold cut it."),
    PageEntry("pages/6_Export.py", "Export", ":material/download:", "Export",
              "Download the chosen sets and the settings; restore settings from a file."),
    PageEntry("pages/7_Validity.py", "Validity", ":material/verified:", "Validity",
              "Check that the promise held on your data: many random orderings, a test and a plain verdict."),
    PageEntry("pages/8_Programs.py", "Programs", ":material/event_repeat:", "Programs",
              "Run FavMac for months: predict each month's patients, record the chart reviews, keep every decision on record."),
)
# One-line explanations of the words a newcomer meets first (tooltips and the Home page).
EXPLAIN = {
    "C_max": "C_max is the largest cost any set can have: the cost of flagging every code when none is present "
             "(the number of codes for an FP count, the sum of the risk weights for risk-weighted FP).",
    "universe": "The universe is the family of candidate sets FavMac chooses from: codes are added one by one in the "
                "universe's order (ratio, probability or value) and it keeps the longest prefix the threshold allows.",
    "burn_in": "Burn-in: the first patients of the stream only calibrate the threshold; sets are predicted (and scored) "
               "for the patients after them.",
    "exchangeable": "Exchangeable: the patients' order carries no information, as if they had been shuffled "
                    "(no drift over time); the guarantee needs this.",
}

HOME = PAGES[0]
DATA = PAGES[1]
