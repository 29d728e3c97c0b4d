"""favmac.ui.text.sheet_frame and widgets.unshown: what st.dataframe's toolbar download and copy carry."""
from __future__ import annotations

import numpy as np
import pandas as pd

from favmac.io import to_safe_csv
from favmac.ui.text import sheet_frame
from favmac.ui.widgets import unshown


def hostile() -> pd.DataFrame:
    frame = pd.DataFrame({"code": ["=1+1", "HCC18", "-cmd|x", None],
                          "note": np.array(["@A1", 3, "\tx", "plain"], dtype=object),
                          "value": [-1.5, 2.0, np.nan, -np.inf]},
                         index=pd.Index(["+P1", "P2", "P3", "P4"], name="patient_id"))
    frame["code"] = frame["code"].astype("str")
    frame["=B2"] = ["x", "y", "z", "w"]
    return frame


def test_formula_cells_index_and_headers_are_shown_as_the_csv_writes_them():
    frame = hostile()
    shown = sheet_frame(frame)
    assert shown["code"].tolist()[:3] == ["'=1+1", "HCC18", "'-cmd|x"] and pd.isna(shown["code"].iloc[3])
    assert shown["note"].tolist() == ["'@A1", 3, "'\tx", "plain"]
    assert shown.index.tolist() == ["'+P1", "P2", "P3", "P4"] and list(shown.columns)[-1] == "'=B2"
    np.testing.assert_array_equal(shown["value"].to_numpy(), frame["value"].to_numpy())  # numbers stay numbers
    assert to_safe_csv(shown) == to_safe_csv(frame)  # what the table offers is what the export writes
    assert frame["code"].iloc[0] == "=1+1"  # the caller's frame is not changed


def test_nothing_to_neutralize_returns_the_frame_itself():
    frame = pd.DataFrame({"code": ["HCC18", "G2"], "x": [-1.0, 2.0]}, index=pd.Index(["P1", "P2"]))
    assert sheet_frame(frame) is frame
    assert sheet_frame(None) is None


def test_unshown_restores_what_the_user_did_not_edit():
    frame = pd.DataFrame({"weight": [1.0, 2.0], "description": ["=SUM(A1)", "ok"]}, index=pd.Index(["=C1", "C2"], name="code"))
    shown = sheet_frame(frame)
    assert unshown(shown.copy(), shown, frame).equals(frame)  # untouched: no edit
    edited = shown.copy()
    edited.loc["C2", "weight"] = 5.0
    edited.loc["'=C1", "description"] = "typed"
    back = unshown(edited, shown, frame)
    assert back.index.tolist() == ["=C1", "C2"] and back["weight"].tolist() == [1.0, 5.0]
    assert back["description"].tolist() == ["typed", "ok"]
