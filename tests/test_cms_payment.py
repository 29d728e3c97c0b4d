"""favmac.payment: the CMS-HCC payment value against hccinfhir's own pipeline and exact enumeration."""
from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pytest

from favmac import AdditiveCost, CmsHccCost, CmsHccValue, FavMac, bind_rows, replay
from favmac.payment_tables import CELL_NAMES, cell_from_demographics, model_tables
from favmac.universe import general_sequences

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from hccinfhir.model_coefficients import apply_coefficients
    from hccinfhir.model_demographics import categorize_demographics
    from hccinfhir.model_hierarchies import apply_hierarchies
    from hccinfhir.model_interactions import apply_interactions
    from hccinfhir.utils import load_coefficients, load_hierarchies

# Each cell with raw demographics that map to it the way hccinfhir maps them:
# (age, dual eligibility code, original reason for entitlement, long-term institutional)
CELL_MEMBERS = {
    "CNA": (72, "00", "0", False),
    "CND": (50, "00", "1", False),
    "CFA": (70, "02", "0", False),
    "CFD": (45, "04", "1", False),
    "CPA": (80, "03", "0", False),
    "CPD": (60, "01", "1", False),
    "INS": (85, "00", "0", True),
    "INSD": (55, "00", "1", True),
}

# Codes from several V28 families with interactions between them (diabetes x heart failure,
# heart failure x lung / kidney / HCC238, lung x respiratory failure, substance use x psychiatric,
# cancer and neuro for the disabled interactions), plus singletons for the count variables.
V28_CLUSTER = ["17", "18", "19", "23", "35", "36", "37", "38", "221", "222", "223", "224", "226", "238", "211",
               "213", "276", "280", "326", "327", "329", "135", "151", "155", "180", "190", "199", "379", "48", "93"]
V24_CLUSTER = ["8", "9", "10", "12", "17", "18", "19", "85", "84", "111", "112", "134", "136", "138", "54", "57",
               "58", "79", "2", "157", "159", "188", "114", "47", "6", "161", "39", "77"]


@functools.lru_cache(maxsize=4)
def _tables(year):
    return load_coefficients(f"ra_coefficients_{year}.csv"), load_hierarchies(f"ra_hierarchies_{year}.csv")


def hccinfhir_raf(hccs, demographics, model, year):
    """hccinfhir's pipeline after the diagnosis mapping: hierarchies, interactions, coefficients, sum."""
    coefficients, hierarchies = _tables(year)
    name = f"CMS-HCC Model {model}"
    present = apply_hierarchies(set(hccs), name, hierarchies)
    interactions = apply_interactions(demographics, present, name)
    return sum(apply_coefficients(demographics, present, interactions, name, coefficients).values())


def _demographics(cell):
    age, dual, orec, lti = CELL_MEMBERS[cell]
    return categorize_demographics(age, "F", dual, orec, None, "V2", False, False, False, lti, None)


@pytest.mark.parametrize("model,year", [("V28", 2026), ("V24", 2026), ("V22", 2026), ("V28", 2025)])
def test_value_equals_hccinfhir_on_random_sets_every_cell(model, year):
    hccs = model_tables(model, year).hccs
    codes = [f"HCC{h}" for h in hccs]
    rng = np.random.RandomState(len(hccs) + year)
    for cell in CELL_NAMES:
        age, dual, orec, lti = CELL_MEMBERS[cell]
        assert cell_from_demographics(age, "F", dual, orec, lti, model) == cell
        demo = _demographics(cell)
        n = 40
        known = rng.rand(n, len(codes)) < 0.02
        value = CmsHccValue(codes, model=model, year=year, cells=[cell] * n, known=known)
        selected = rng.rand(n, len(codes)) < rng.choice([0.02, 0.05, 0.1, 0.3], size=(n, 1))
        labels = rng.rand(n, len(codes)) < 0.6
        got = value(selected, labels)
        for i in range(n):
            base = {hccs[k] for k in np.flatnonzero(known[i])}
            added = {hccs[k] for k in np.flatnonzero(selected[i] & labels[i])}
            want = hccinfhir_raf(base | added, demo, model, year) - hccinfhir_raf(base, demo, model, year)
            assert got[i] == pytest.approx(want, abs=1e-9), (model, cell, sorted(base), sorted(added))


def test_clustered_sets_with_interactions_match_hccinfhir():
    # dense sets inside interacting families, where hierarchies, interactions and counts all act
    rng = np.random.RandomState(7)
    for model, cluster in (("V28", V28_CLUSTER), ("V24", V24_CLUSTER)):
        codes = [f"HCC{h}" for h in cluster]
        for cell in ("CNA", "CND", "CFD", "INS", "INSD"):
            value = CmsHccValue(codes, model=model, segment=cell)
            demo = _demographics(cell)
            for _ in range(60):
                present = rng.rand(len(codes)) < rng.uniform(0.1, 0.7)
                want = hccinfhir_raf({cluster[k] for k in np.flatnonzero(present)}, demo, model, 2026) - \
                    hccinfhir_raf(set(), demo, model, 2026)
                assert float(value.raf(present)) == pytest.approx(want, abs=1e-9)


def _enumerated_expectation(value, selected, probs):
    idx = np.flatnonzero(selected)
    total = 0.0
    for bits in itertools.product([0, 1], repeat=len(idx)):
        labels = np.zeros(len(probs), dtype=bool)
        labels[idx] = bits
        weight = np.prod([probs[k] if b else 1 - probs[k] for k, b in zip(idx, bits)])
        total += weight * float(value(selected, labels))
    return total


@pytest.mark.parametrize("model,cluster", [("V28", V28_CLUSTER), ("V24", V24_CLUSTER)])
def test_proxy_is_the_exact_expectation(model, cluster):
    rng = np.random.RandomState(11)
    codes = [f"HCC{h}" for h in cluster]
    for cell in ("CNA", "CFD", "INSD"):
        known = rng.rand(len(codes)) < 0.1
        value = CmsHccValue(codes, model=model, segment=cell, known=known, normalization=1.02, coding_intensity=0.059)
        for _ in range(25):
            selected = np.zeros(len(codes), dtype=bool)
            selected[rng.choice(len(codes), rng.randint(1, 11), replace=False)] = True
            probs = rng.rand(len(codes))
            probs[rng.rand(len(codes)) < 0.1] = rng.choice([0.0, 1.0])
            assert float(value.proxy(selected, probs)) == pytest.approx(_enumerated_expectation(value, selected, probs), abs=1e-12)


def test_proxy_of_the_empty_set_and_of_known_codes_is_exactly_zero():
    codes = [f"HCC{h}" for h in V28_CLUSTER]
    known = np.zeros(len(codes), dtype=bool)
    known[[2, 9, 13]] = True
    value = CmsHccValue(codes, known=known)
    probs = np.full(len(codes), 0.37)
    assert float(value.proxy(np.zeros(len(codes), bool), probs)) == 0.0
    assert float(value.proxy(known, probs)) == 0.0
    assert float(value(known, np.ones(len(codes), bool))) == 0.0


def test_cost_is_the_payment_of_the_false_flags_with_exact_proxy():
    codes = [f"HCC{h}" for h in V28_CLUSTER]
    rng = np.random.RandomState(5)
    value = CmsHccValue(codes, segment="CPD", known=rng.rand(len(codes)) < 0.1)
    cost = CmsHccCost(value)
    for _ in range(20):
        selected = np.zeros(len(codes), dtype=bool)
        selected[rng.choice(len(codes), 8, replace=False)] = True
        labels = rng.rand(len(codes)) < 0.5
        assert float(cost(selected, labels)) == pytest.approx(float(value(selected & ~labels, np.ones(len(codes), bool))))
        probs = rng.rand(len(codes))
        assert float(cost.proxy(selected, probs)) == pytest.approx(_enumerated_expectation(cost, selected, probs), abs=1e-12)
    with pytest.raises(ValueError, match="not additive"):  # the baselines' per-code weights (tests/test_unsupported_payment.py)
        cost.weights_for(len(codes))


def test_adjustments_and_base_rate_scale_the_value():
    codes = ["HCC37", "HCC226"]
    raw = CmsHccValue(codes)
    paid = CmsHccValue(codes, normalization=1.045, coding_intensity=0.059, base_rate=11_000)
    sets, labels = np.array([True, True]), np.array([1, 1])
    assert float(paid(sets, labels)) == pytest.approx(float(raw(sets, labels)) * (1 - 0.059) / 1.045 * 11_000)
    order_raw, _ = raw.sequences([[0.5, 0.4]], [[0.2, 0.3]])
    order_paid, _ = paid.sequences([[0.5, 0.4]], [[0.2, 0.3]])
    assert order_raw.tolist() == order_paid.tolist()


def test_tables_monotone_except_where_cms_tables_are_not():
    """RAF is non-decreasing when a code is added, except where hccinfhir's tables say otherwise.

    Two kinds of exception (listed in docs/payment.md): a hierarchy parent whose coefficient is
    below its child's (V28: 62 < 63, 221 < 222, 192 < 180 ... in most cells), and a parent that
    removes two children which do not remove each other (the payment-HCC count drops). There
    the value of a flag can be negative; the universe then keeps the best prefix by Vhat (not
    the longest), and the guarantees (which bound the cost) are unaffected.
    """
    tables = model_tables("V28", 2026)
    lower = {(p, c) for p, kids in tables.children.items() for c in kids
             if c in tables.hccs and tables.coefficient("cna", f"hcc{p}") < tables.coefficient("cna", f"hcc{c}")}
    assert lower == {("62", "63"), ("62", "64"), ("62", "68"), ("191", "180"), ("191", "181"), ("192", "180"),
                     ("192", "181"), ("192", "182"), ("192", "253"), ("192", "254"), ("221", "222"), ("221", "223"),
                     ("397", "202"), ("398", "202")}
    codes = [f"HCC{h}" for h in tables.hccs]
    value = CmsHccValue(codes)
    rng = np.random.RandomState(3)
    exceptions = 0
    for _ in range(300):
        present = rng.rand(len(codes)) < 0.08
        base = float(value.raf(present))
        for k in np.flatnonzero(~present):
            more = present.copy()
            more[k] = True
            drop = base - float(value.raf(more))
            if drop > 1e-12:
                exceptions += 1
                parents = {p for p, kids in tables.children.items() if tables.hccs[k] == p}
                assert parents, f"RAF fell when adding HCC{tables.hccs[k]}, which is no hierarchy parent"
    assert exceptions > 0
    # a negative marginal payment is real: confirming a heart transplant status (221) for a member
    # whose record has end-stage heart failure (222) lowers the CNA risk score
    hf = CmsHccValue(["HCC221", "HCC222"], known=[False, True])
    assert float(hf([True, False], [1, 1])) < 0


def _reference_greedy(value, probs, cost_steps):
    """docs/method.md's greedy, literally: each step adds argmax (Vhat(S+k) - Vhat(S)) / cost step, ties to the lowest index."""
    n_codes = len(probs)
    chosen = np.zeros(n_codes, dtype=bool)
    order, vhat = [], [0.0]
    for _ in range(n_codes):
        current = float(value.proxy(chosen, probs))
        best, best_key = None, -np.inf
        for k in np.flatnonzero(~chosen):
            trial = chosen.copy()
            trial[k] = True
            gain = float(value.proxy(trial, probs)) - current
            if abs(gain) <= 1e-12 * max(1.0, abs(current)):
                gain = 0.0
            key = (np.inf if gain > 0 else -np.inf) if cost_steps[k] == 0 else gain / cost_steps[k]
            if best is None or key > best_key + 1e-12 * max(1.0, abs(best_key) if np.isfinite(best_key) else 1.0):
                best, best_key = k, key
        chosen[best] = True
        order.append(best)
        vhat.append(float(value.proxy(chosen, probs)))
    return order, vhat


def test_compiled_greedy_equals_a_slow_reference_greedy():
    rng = np.random.RandomState(2)
    codes = [f"HCC{h}" for h in V28_CLUSTER]
    n = 25
    value = CmsHccValue(codes, cells=rng.choice(list(CELL_NAMES), n), known=rng.rand(n, len(codes)) < 0.05)
    probs = rng.rand(n, len(codes)) ** 2
    cost = AdditiveCost(np.round(rng.uniform(0.1, 1.0, len(codes)), 3))
    order, vhat = general_sequences(probs, value, cost)
    ref_order, ref_vhat = general_sequences(probs, value, cost, reference=True)
    np.testing.assert_array_equal(order, ref_order)
    np.testing.assert_allclose(vhat, ref_vhat, atol=1e-12)
    steps = (1 - probs) * cost.weights_for(len(codes))
    for i in range(5):
        literal_order, literal_vhat = _reference_greedy(value.take(i), probs[i], steps[i])
        assert order[i].tolist() == literal_order
        np.testing.assert_allclose(vhat[i], literal_vhat, atol=1e-12)
    # a lower code of a family whose higher code is already in S adds little and waits: alone HCC38
    # would come second (0.9 x 0.166 / 0.5 > 0.2 x 0.319 / 0.8), after HCC37 it pays only if 37 fails
    fam = CmsHccValue(["HCC37", "HCC38", "HCC280"])
    o, v = fam.sequences([[0.9, 0.9, 0.2]], [[0.1, 0.5, 0.8]])
    assert o[0].tolist() == [0, 2, 1]
    assert v[0, 3] - v[0, 2] == pytest.approx(0.9 * 0.1 * 0.166)


def test_sibling_adds_only_when_the_higher_code_fails():
    v = CmsHccValue(["HCC36", "HCC38"])  # 36 removes 38 (both 0.166 in CNA): 38 pays only if 36 is false
    assert float(v.proxy([True, True], [0.9, 0.8]) - v.proxy([True, False], [0.9, 0.8])) == pytest.approx(0.1 * 0.8 * 0.166)


def _payment_stream(seed, n=160):
    rng = np.random.RandomState(seed)
    codes = [f"HCC{h}" for h in ["35", "36", "37", "38", "222", "224", "226", "238", "280", "326", "328", "329"]]
    probs = np.round(rng.rand(n, len(codes)) ** 1.5, 3)
    labels = rng.rand(n, len(codes)) < probs
    known = labels & (rng.rand(n, len(codes)) < 0.2)
    value = CmsHccValue(codes, cells=rng.choice(["CNA", "CND", "CFA", "INS"], n), known=known)
    cost = AdditiveCost(np.round(rng.uniform(0.1, 1.0, len(codes)), 2))
    return probs, labels, value, cost


@pytest.mark.parametrize("score,delta", [("price", None), ("cost", None), ("cost", 0.2), ("price", 0.2)])
def test_replay_equals_a_favmac_loop_with_member_context(score, delta):
    probs, labels, value, cost = _payment_stream(1)
    targets = [0.5, 1.3]
    res = replay(probs, labels, value, cost, targets, burn_in=30, score=score, delta=delta)
    for t, target in enumerate(targets):
        fm = FavMac(value, cost, target, delta=delta, score=score)
        fm.update(probs[:30], labels[:30], value=bind_rows(value, slice(0, 30)))
        for n in range(30, len(probs)):
            assert fm.threshold == res.thresholds[t, n - 30]
            chosen = fm.predict(probs[n], value=value.take(n))
            np.testing.assert_array_equal(chosen, res.chosen.masks(t)[n - 30])
            assert res.value[t, n - 30] == pytest.approx(float(value.take(n)(chosen, labels[n])))
            fm.update(probs[n], labels[n], value=value.take(n))


@pytest.mark.parametrize("score", ["price", "cost"])
def test_replay_thresholds_equal_the_oracle(score):
    from tests import oracle

    rng = np.random.RandomState(9)
    codes = ["HCC37", "HCC38", "HCC226", "HCC280", "HCC238", "HCC329"]
    value = CmsHccValue(codes, segment="CND")
    weights = np.round(rng.uniform(0.1, 1.0, len(codes)), 2)
    probs = np.round(rng.rand(35, len(codes)), 3)
    labels = rng.rand(35, len(codes)) < probs
    res = replay(probs, labels, value, AdditiveCost(weights), [0.6], burn_in=0, score=score)

    @functools.lru_cache(maxsize=None)
    def value_fn(S, y):  # the payment of the true hits of S, cached: the oracle asks for it very often
        mask = np.zeros(len(codes), dtype=bool)
        mask[list(S)] = True
        return float(value(mask, np.array(y)))

    for n in (5, 20, 34):
        cal = [(probs[i], tuple(labels[i])) for i in range(n)]
        expected = oracle.expected_threshold(cal, np.ones(len(codes)), weights, 0.6, "ratio", score=score,
                                             value_fn=value_fn)
        assert res.thresholds[0, n] == expected


def test_segments_and_contextual_value_in_replay():
    probs, labels, value, cost = _payment_stream(2)
    groups = np.array(["a", "b"])[np.arange(len(probs)) % 2]
    res = replay(probs, labels, value, cost, [1.0], burn_in=20, score="price", groups=groups)
    for label in ("a", "b"):
        rows = np.flatnonzero(groups == label)
        sub = replay(probs[rows], labels[rows], bind_rows(value, rows), cost, [1.0],
                     burn_in=int(np.searchsorted(rows, 20)), score="price")
        np.testing.assert_array_equal(res.group_thresholds[label], sub.final_thresholds)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="not payment HCCs of CMS-HCC V28.*HCC999, E11"):
        CmsHccValue(["HCC37", "HCC999", "E11"])
    with pytest.raises(ValueError, match="2025, 2026"):
        CmsHccValue(["HCC37"], year=2019)
    with pytest.raises(ValueError, match="V22, V24, V28"):
        CmsHccValue(["HCC37"], model="V99")
    with pytest.raises(ValueError, match="not a CMS-HCC coefficient cell"):
        CmsHccValue(["HCC37"], segment="NE")
    with pytest.raises(ValueError, match=r"cells\[1\]"):
        CmsHccValue(["HCC37"], cells=["CNA", "XYZ"])
    for bad in (-1, "abc", float("nan")):
        with pytest.raises(ValueError, match="base_rate"):
            CmsHccValue(["HCC37"], base_rate=bad)
    with pytest.raises(ValueError, match="normalization"):
        CmsHccValue(["HCC37"], normalization=0)
    value = CmsHccValue(["HCC37", "HCC38"], cells=["CNA", "CFA", "INS"])
    with pytest.raises(ValueError, match="context of 3 patients"):
        value(np.ones((2, 2), bool), np.ones((2, 2), bool))


def test_cells_read_by_distinct_spelling_keep_the_first_appearance_order_and_name_the_first_bad_row():
    """Cells are checked once per distinct spelling (one Python call per member cost 0.5 s at 100,000):
    the names in order of first appearance, each row's index, the first bad row in the error."""
    value = CmsHccValue(["HCC37", "HCC38"], cells=["ins", "CNA", " cna", "INS", "CFD", "cfd"])
    assert value.cell_names == ["INS", "CNA", "CFD"]
    assert value._cell_index.tolist() == [0, 1, 1, 0, 2, 2]
    with pytest.raises(ValueError, match=r"cells\[3\]: 'zz'"):
        CmsHccValue(["HCC37"], cells=["CNA", "INS", "CNA", "zz", "aa", "zz"])
    rebound = value.with_context(["CFD", "ins", "Cna"])
    assert rebound.cell_names == value.cell_names and rebound._cell_index.tolist() == [2, 0, 1]
    with pytest.raises(ValueError, match=r"cells\[1\]: 'NE'"):
        value.with_context(["CNA", "NE"])


def test_breakdown_names_the_marginal_payments_and_interactions():
    v = CmsHccValue(["HCC37", "HCC38", "HCC226", "HCC280"], segment="CNA")
    out = v.breakdown(np.array([True, True, True, False]))
    rows = {r["code"]: r for r in out["codes"]}
    assert rows["HCC38"]["marginal"] == pytest.approx(0.0) and rows["HCC38"]["removed_by"] == ["HCC37"]
    assert rows["HCC37"]["marginal"] == pytest.approx(0.0)  # 38 would take its place (same CNA coefficient)
    assert "DIABETES_HF_V28" in out["interactions"] and out["count"] == 2
    assert out["value"] == pytest.approx(float(v([True, True, True, False], [1, 1, 1, 1])))


def _wide_file(tmp_path, rows, codes, extra=None):
    header = ["patient_id", *(extra or {}).keys()] + [f"{kind}_{c}" for c in codes for kind in ("prob", "label")]
    lines = [",".join(header)]
    rng = np.random.RandomState(0)
    for i in range(rows):
        cells = [f"P{i:03d}", *[str(values[i]) for values in (extra or {}).values()]]
        for _ in codes:
            p = round(float(rng.rand()), 3)
            cells += [str(p), str(int(rng.rand() < p))]
        lines.append(",".join(cells))
    path = tmp_path / "members.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_readers_take_cells_and_known_codes(tmp_path):
    from favmac.io import DataError, load_calibration

    codes = ["HCC37", "HCC38", "HCC226"]
    path = _wide_file(tmp_path, 4, codes, {"cms_cell": ["CNA", "cfd", "INS", "CPA"],
                                           "known_codes": ["HCC37", "", "HCC38;HCC226", ""]})
    data = load_calibration(path)
    assert data.codes == codes
    assert data.members["cells"].tolist() == ["CNA", "CFD", "INS", "CPA"]
    assert data.members["known"].astype(int).tolist() == [[1, 0, 0], [0, 0, 0], [0, 1, 1], [0, 0, 0]]
    bad = _wide_file(tmp_path, 2, codes, {"cms_cell": ["CNA", "NE"]})
    with pytest.raises(DataError, match=r"members.csv, row 3, column cms_cell: 'NE' is not a CMS-HCC coefficient cell"):
        load_calibration(bad)
    bad = _wide_file(tmp_path, 2, codes, {"known_codes": ["HCC37", "HCC18"]})
    with pytest.raises(DataError, match=r"row 3, column known_codes: known code 'HCC18' is not one of the data's codes"):
        load_calibration(bad)
    bad = _wide_file(tmp_path, 2, codes, {"known_HCC19": [0, 1]})
    with pytest.raises(DataError, match="column known_HCC19"):
        load_calibration(bad)


def test_runspec_settings_round_trip_and_errors():
    from favmac.runspec import RunSpec, SettingsError

    spec = RunSpec(value_kind="cms_payment", cost_kind="fp", targets=(0.5,), cms_model="v24", cms_segment="cfd",
                   normalization=1.045, coding_intensity=0.059, base_rate=11000).validate(3, 10)
    assert (spec.cms_model, spec.cms_segment) == ("V24", "CFD")
    again = RunSpec.from_json(spec.to_json(["HCC18", "HCC85", "HCC19"]), codes=["HCC18", "HCC85", "HCC19"])
    assert again == spec
    value, _ = again.build(["HCC18", "HCC85", "HCC19"], {"cells": np.array(["CNA", "INS"]), "known": None})
    assert isinstance(value, CmsHccValue) and value.n_rows == 2 and value.model == "V24"
    for field, bad in (("cms_year", 2019), ("cms_model", "V99"), ("cms_segment", "NE"), ("base_rate", -1),
                       ("coding_intensity", 1.5), ("normalization", 0)):
        with pytest.raises(SettingsError, match=field):
            RunSpec(value_kind="cms_payment", targets=(0.5,), **{field: bad}).validate(3, 10)
    assert "cms_model" not in RunSpec(value_kind="tp").to_dict()  # other runs' settings files are unchanged


def test_cli_replay_and_predict_with_the_payment_value(tmp_path, capsys):
    import json

    from favmac.cli import main

    codes = ["HCC37", "HCC38", "HCC226", "HCC280"]
    path = _wide_file(tmp_path, 60, codes, {"cms_cell": ["CNA", "CFD", "INS"] * 20,
                                            "known_codes": (["HCC38", "", "", ""] * 15)})
    out = tmp_path / "steps.csv"
    assert main(["replay", "--calibration", str(path), "--cms-model", "V28", "--value", "cms-payment",
                 "--cost", "weighted_fp", "--targets", "0.3", "--burn-in", "20", "--base-rate", "10000",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "FavMac (price): 60 patients x 4 codes" in printed
    record = json.loads((tmp_path / "steps.csv.provenance.json").read_text())
    assert record["settings"]["run"]["value_kind"] == "cms_payment" and record["settings"]["run"]["base_rate"] == 10000
    new = tmp_path / "new.csv"
    new.write_text("patient_id,cms_cell,known_codes,HCC37,HCC38,HCC226,HCC280\nN1,CNA,,0.9,0.2,0.8,0.1\n"
                   "N2,INS,HCC226,0.2,0.9,0.1,0.7\n")
    assert main(["predict", "--calibration", str(path), "--cms-model", "V28", "--value", "cms-payment", "--cost",
                 "weighted_fp", "--target", "0.3", "--new", str(new), "--out", str(tmp_path / "sets.csv")]) == 0
    assert "Wrote 2 patients" in capsys.readouterr().out
    assert main(["replay", "--calibration", str(path), "--value", "cms-payment", "--targets", "0.3",
                 "--base-rate", "-5", "--out", str(out)]) == 2
    assert "--base-rate" in capsys.readouterr().err


def test_baselines_score_their_sets_with_each_members_payment():
    from favmac import classwise, crc, inner_set, rcps

    probs, labels, value, cost = _payment_stream(6, n=120)
    for function, kwargs in ((classwise, {}), (crc, {}), (inner_set, {}), (rcps, {"delta": 0.2})):
        res = function(probs, labels, value, cost, [0.8], burn_in=40, **kwargs)
        sets = res.selected[0]
        want = [float(value.take(40 + i)(sets[i], labels[40 + i])) for i in range(len(sets))]
        np.testing.assert_allclose(res.value[0], want)


def test_validity_orderings_carry_each_members_context():
    """Each ordering of the Validity check is a replay of the permuted patients with their own
    cells and known codes (the value bound to the permutation), drawn as the check draws them."""
    from favmac.validity import validity_check

    probs, labels, value, cost = _payment_stream(3, n=120)
    report = validity_check(probs, labels, value, cost, 1.0, burn_in=30, score="price", seed=5)
    rng = np.random.RandomState(5)
    for r in range(3):
        order = rng.permutation(len(probs))
        res = replay(probs[order], labels[order], bind_rows(value, order), cost, [1.0], burn_in=30, score="price")
        assert report.statistic[r] == res.cost[0].mean()


@pytest.mark.parametrize("score,delta", [("price", None), ("cost", 0.2)])
def test_a_batch_across_the_recalibration_fold_binds_each_members_context(score, delta):
    """update(p, y, value=ctx) with a batch spanning the fold: the value's cells and known codes (and
    the groups) are sliced with the fold, so one batch == the fold then the rest == replay."""
    probs, labels, value, cost = _payment_stream(5, n=260)
    groups = np.array(["east", "west", "tiny"])[np.arange(len(probs)) % 3]
    fold, target = 90, 1.1
    one = FavMac(value, cost, target, delta=delta, score=score, recalibrate=fold)
    one.update(probs[:200], labels[:200], group=groups[:200], value=value.take(np.arange(200)))
    parts = FavMac(value, cost, target, delta=delta, score=score, recalibrate=fold)
    for start, stop in ((0, 40), (40, fold), (fold, 200)):  # the fold in two pieces, then the rest
        parts.update(probs[start:stop], labels[start:stop], group=groups[start:stop], value=value.take(slice(start, stop)))
    res = replay(probs[:200], labels[:200], bind_rows(value, slice(0, 200)), cost, [target], recalibrate=fold,
                 burn_in=200 - fold, score=score, delta=delta, groups=groups[:200])
    assert one.n_calibration == parts.n_calibration == 200 - fold
    assert one.recalibration_maps == parts.recalibration_maps
    assert one.threshold == parts.threshold == res.final_thresholds[0]
    for label in ("east", "west", "tiny"):
        assert one.threshold_for(label) == parts.threshold_for(label) == res.group_thresholds[label][0]
    # the member context matters: everybody in CNA with no known codes calibrates otherwise
    blind = FavMac(CmsHccValue(value.codes), cost, target, delta=delta, score=score, recalibrate=fold)
    assert blind.update(probs[:200], labels[:200]).threshold != one.threshold
    # predictions after it, each row with its own context, agree too
    rows = np.arange(200, 260)
    np.testing.assert_array_equal(one.predict(probs[rows], group=groups[rows], value=value.take(rows)),
                                  parts.predict(probs[rows], group=groups[rows], value=value.take(rows)))


def test_several_groupings_across_the_recalibration_fold():
    """A tuple of groupings spanning the fold is sliced grouping by grouping."""
    probs, labels, value, cost = _payment_stream(6, n=220)
    plan = np.array(["a", "b"])[np.arange(220) % 2]
    band = np.array(["young", "old", "old"])[np.arange(220) % 3]
    one = FavMac(value, cost, 0.9, score="price", recalibrate=60)
    one.update(probs, labels, group=(plan, band), value=value)
    parts = FavMac(value, cost, 0.9, score="price", recalibrate=60)
    parts.update(probs[:60], labels[:60], group=(plan[:60], band[:60]), value=value.take(slice(0, 60)))
    parts.update(probs[60:], labels[60:], group=(plan[60:], band[60:]), value=value.take(slice(60, None)))
    assert one.segments == parts.segments == {"a": 80, "b": 80}  # the fold joins no segment
    for key in (("a", "young"), ("b", "old"), "a", "b"):
        assert one.threshold_for(key) == parts.threshold_for(key)
