"""favmac.validation: one wording per fault, naming the argument and the expected range."""
import numpy as np
import pytest

from favmac.validation import (
    check_burn_in,
    check_codes,
    check_delta,
    check_groups,
    check_labels,
    check_patient_ids,
    check_probs,
    check_stream,
    check_targets,
    check_window,
)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: check_probs([0.1, 0.2]), r"probs: expected shape \(N, K\), got \(2,\)"),
        (lambda: check_probs([[0.1, np.nan]]), r"probs: every probability must be a finite number in \[0, 1\]"),
        (lambda: check_probs([[0.1, -0.1]]), r"in \[0, 1\]"),
        (lambda: check_probs([[0.1, 0.2]], 3), "probs: expected 3 codes per patient, got 2"),
        (lambda: check_probs(np.zeros((2, 2, 2)), batch=True), r"expected shape \(K,\) or \(N, K\)"),
        (lambda: check_labels([[0, 1]], (2, 2)), r"labels: expected shape \(2, 2\) like probs, got \(1, 2\)"),
        (lambda: check_labels([[0, 3]], (1, 2)), "labels: every label must be 0 or 1"),
        (lambda: check_targets([]), "targets: expected one or more finite target costs"),
        (lambda: check_targets([1.0, np.inf]), "targets: expected one or more finite"),
        (lambda: check_delta(0), r"delta: expected a violation level between 0 and 1 \(exclusive\), e\.g\. 0\.1, or None for expected-cost control; got 0"),
        (lambda: check_delta(1.0), r"between 0 and 1 \(exclusive\).*got 1\.0"),
        (lambda: check_burn_in(-1, 5), r"burn_in: expected an integer between 0 and the number of patients \(5\)"),
        (lambda: check_burn_in(6, 5), "burn_in"),
        (lambda: check_burn_in(1.5, 5), "burn_in"),
        (lambda: check_window(0), r"window: expected None or a positive number of patients \(>= 1\), got 0"),
        (lambda: check_codes(["a"], 2), r"codes: expected one name per code \(2\), got 1 names"),
        (lambda: check_patient_ids([1, 2], 3), r"patient_ids: expected one id per patient, shape \(3,\)"),
        (lambda: check_groups(["a"], 2), r"groups: expected one group label per patient, shape \(2,\)"),
    ],
)
def test_messages_name_argument_and_range(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_clean_values_come_back():
    assert check_probs([0.5, 1.0], batch=True).shape == (1, 2)
    assert check_labels([1, 0], (1, 2)).dtype == bool
    assert check_targets(1).tolist() == [1.0]
    assert check_delta(None) is None and check_delta(0.1) == 0.1
    assert check_burn_in(np.int64(3), 5) == 3 and check_window(None) is None and check_window(4) == 4
    probs, labels, targets, delta, burn_in, window, codes, ids = check_stream(
        [[0.1, 0.9], [0.4, 0.2]], [[0, 1], [1, 0]], [1, 2], 0.2, 1, 3, ["A", "B"], ["p1", "p2"])
    assert labels.tolist() == [[False, True], [True, False]]
    assert (targets.tolist(), delta, burn_in, window, codes, ids.tolist()) == ([1.0, 2.0], 0.2, 1, 3, ["A", "B"], ["p1", "p2"])


def _frames():
    import pandas as pd

    rng = np.random.RandomState(5)
    probs = pd.DataFrame(rng.rand(60, 3).round(2), index=[f"p{i}" for i in range(60)], columns=["A", "B", "C"])
    labels = (rng.rand(60, 3) < probs.to_numpy()).astype(int)
    labels = pd.DataFrame(labels, index=probs.index, columns=probs.columns)
    return probs, labels


def test_label_frames_in_another_row_and_column_order_are_aligned_by_id_and_code():
    # read_probabilities / read_labels give frames in each file's order; replay and FavMac.update used them by
    # position, so every patient was scored against another patient's labels (a silent wrong answer)
    from favmac import AdditiveCost, AdditiveValue, FavMac, replay

    probs, labels = _frames()
    shuffled = labels.iloc[::-1][["C", "A", "B"]]
    value, cost = AdditiveValue(), AdditiveCost()
    want = replay(probs.to_numpy(), labels.to_numpy(), value, cost, [0.5], burn_in=20)
    got = replay(probs, shuffled, value, cost, [0.5], burn_in=20)
    assert np.array_equal(got.cost, want.cost) and np.array_equal(got.value, want.value)
    assert (FavMac(value, cost, 0.5).update(probs, shuffled).threshold
            == FavMac(value, cost, 0.5).update(probs.to_numpy(), labels.to_numpy()).threshold)


def test_label_frames_of_other_patients_or_codes_are_refused():
    from favmac import AdditiveCost, AdditiveValue, replay

    probs, labels = _frames()
    other = labels.rename(index={"p3": "q3"})
    with pytest.raises(ValueError, match="labels: .*patient.*'q3'"):
        replay(probs, other, AdditiveValue(), AdditiveCost(), [0.5])
    with pytest.raises(ValueError, match="labels: .*code.*'D'"):
        replay(probs, labels.rename(columns={"C": "D"}), AdditiveValue(), AdditiveCost(), [0.5])


def test_codes_that_contradict_the_probability_frame_columns_are_refused():
    # codes=["C", "A", "B"] beside a frame whose columns are A, B, C named every chosen code wrongly in the export
    from favmac import AdditiveCost, AdditiveValue, replay

    probs, labels = _frames()
    with pytest.raises(ValueError, match="codes: .*columns"):
        replay(probs, labels, AdditiveValue(), AdditiveCost(), [0.5], codes=["C", "A", "B"])
    result = replay(probs, labels, AdditiveValue(), AdditiveCost(), [0.5], codes=["A", "B", "C"])
    assert list(result.codes) == ["A", "B", "C"]


def test_frames_whose_names_have_nothing_in_common_pair_by_position():
    # df[prob_cols] beside df[label_cols] of one wide frame (prob_A beside label_A), or a RangeIndex beside patient
    # ids: the frames name things differently, so they pair by position as arrays do (as before name matching)
    from favmac import AdditiveCost, AdditiveValue, FavMac, replay

    probs, labels = _frames()
    value, cost = AdditiveValue(), AdditiveCost()
    want = replay(probs.to_numpy(), labels.to_numpy(), value, cost, [0.5], burn_in=20)
    prefixed = labels.rename(columns=lambda c: f"label_{c}").reset_index(drop=True)
    got = replay(probs.rename(columns=lambda c: f"prob_{c}"), prefixed, value, cost, [0.5], burn_in=20)
    assert np.array_equal(got.cost, want.cost) and np.array_equal(got.value, want.value)
    model = FavMac(value, cost, 0.5).update(probs.rename(columns=lambda c: f"prob_{c}"), prefixed)
    assert model.threshold == FavMac(value, cost, 0.5).update(probs.to_numpy(), labels.to_numpy()).threshold
    assert np.array_equal(model.predict(probs.to_numpy()[:5]), model.predict(probs.iloc[:5]))  # A, B, C: by position
    with pytest.raises(ValueError, match="differ from the codes FavMac first saw.*'C' is not among them"):
        model.predict(probs.iloc[:5].rename(columns={"A": "prob_A", "B": "prob_B"}).drop(columns="C").assign(C=0.1))
