"""The per-code weights file: columns ``code``, ``weight`` (>= 0) and an optional ``description``."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .csv_parsing import check_ids_visible, numeric_block
from .errors import DataError, join_few, plural
from .layouts import parse_table

__all__ = ["read_weights"]


def read_weights(source, codes=None, name=None) -> pd.DataFrame:
    """Read per-code weights: columns ``code``, ``weight`` (>= 0) and optional ``description``.

    Parameters
    ----------
    source : path, bytes or file-like
        CSV or Parquet.
    codes : list of str, optional
        The data's codes. Every one needs a weight; rows for other codes are ignored.
        The result follows this order. None keeps every row in file order.

    Returns
    -------
    DataFrame
        Index ``code`` (text); columns ``weight`` (float64) and ``description`` (text, "" if absent).
    """
    layout = "A weights file has the columns code, weight and optionally description, then one row per code."
    try:
        frame, rows, file = parse_table(source, name, text_columns=("code", "description"))
    except DataError as err:  # the generic fix speaks of patient_id and patients
        if err.problem.startswith(("the file is empty", "the first row is empty", "the file has a header row but no",
                                   "the file has column names but no")):
            raise DataError(err.problem, file=err.file, row=err.row, fix=layout) from None
        raise
    missing_cols = [c for c in ("code", "weight") if c not in frame.columns]
    if missing_cols:
        raise DataError(
            f"there is no {join_few(missing_cols)} column (found: {join_few(frame.columns)}).",
            file=file, row=1, fix=layout,
        )
    code_col = frame["code"].str.strip()
    blank = (code_col.isna() | (code_col == "")).to_numpy()
    if blank.any():
        raise DataError(
            f"{plural(int(blank.sum()), 'row')} {'has' if blank.sum() == 1 else 'have'} a weight but no code.",
            file=file, row=int(rows[np.argmax(blank)]), column="code", fix="Fill in the code or delete the row.",
        )
    code_index = pd.Index(code_col.to_numpy(dtype=object), name="code", dtype=object)
    # refused in the data's code names; here it would only show as "no weight" for the code
    check_ids_visible(code_index.tolist(), rows, file, column="code", what="code")
    dup = code_index.duplicated(keep=False)
    if dup.any():
        dup_codes = pd.unique(code_index[dup])
        raise DataError(
            f"{plural(len(dup_codes), 'code')} {'appears' if len(dup_codes) == 1 else 'appear'} more than once: "
            f"{join_few(dup_codes)}.",
            file=file, row=int(rows[dup][0]), column="code", fix="Give each code exactly one weight row.",
        )
    if codes is not None:
        codes = [str(c) for c in codes]
        known = set(code_index)  # once, not per code
        missing = [c for c in codes if c not in known]
        if missing:
            folded = {str(k).casefold(): k for k in known}
            other_case = [(c, folded[c.casefold()]) for c in missing if c.casefold() in folded]
            hint = (f" (the file has {other_case[0][1]!r} for {other_case[0][0]}: codes are matched exactly, upper/lower "
                    "case included)" if other_case else "")
            raise DataError(
                f"{plural(len(missing), 'code')} in the data {'has' if len(missing) == 1 else 'have'} no weight: "
                f"{join_few(missing, quote=False, limit=10)}{hint}.",
                file=file, column="code", fix="Add a row (code, weight) for each of them.",
            )
        position = code_index.get_indexer(codes)
        frame = frame.iloc[position]
        rows = rows[position]
        code_index = code_index[position]
    weights = numeric_block(frame.reset_index(drop=True), ["weight"], rows, file, "weight")[:, 0]
    if "description" in frame.columns:
        description = frame["description"].fillna("").str.strip().to_numpy(dtype=object)
    else:
        description = np.full(len(code_index), "", dtype=object)
    return pd.DataFrame({"weight": weights, "description": description}, index=code_index)
