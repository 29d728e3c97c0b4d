"""The readers: label-arrival dates (UTC offsets, years pandas cannot hold) and empty weights/date/CMS cells.

Label-arrival dates from the audit: offsets and years pandas cannot hold in nanoseconds.

Before: a column mixing UTC offsets escaped as pandas' ValueError ("Mixed timezones detected"),
and a year before 1678 or after 2261 wrapped around silently (1500-01-01 read as 2084-07-20)."""
import numpy as np
import pytest

from favmac.io import DataError, load_calibration


def wide(arrivals, predicted):
    rows = "\n".join(f"p{i},0.2,0,{a},{d}" for i, (a, d) in enumerate(zip(arrivals, predicted)))
    return ("patient_id,prob_A,label_A,arrived,predicted_at\n" + rows + "\n").encode()


def test_mixed_utc_offsets_are_read_on_one_clock():
    data = load_calibration(wide(["2024-01-05T00:00:00+05:00", "2024-02-01"], ["2024-01-01", "2024-01-03"]),
                            label_available_column="arrived")
    assert data.label_available_at.tolist() == [1, 1]


@pytest.mark.parametrize("arrivals, predicted, row, column", [
    (["1500-01-01", "2024-02-01"], ["1400-01-01", "2024-01-03"], 2, "arrived"),
    (["2300-01-05", "2300-02-01"], ["2024-01-01", "2024-01-03"], 2, "arrived"),
    (["2024-01-05", "2024-02-01"], ["2024-01-01", "0001-01-03"], 3, "predicted_at"),
])
def test_years_outside_the_timestamp_range_are_refused(arrivals, predicted, row, column):
    with pytest.raises(DataError, match="outside the years") as err:
        load_calibration(wide(arrivals, predicted), name="late.csv", label_available_column="arrived")
    assert (err.value.row, err.value.column) == (row, column)


def test_an_empty_prediction_date_says_so():
    with pytest.raises(DataError, match="the cell is empty") as err:
        load_calibration(wide(["2024-01-05", "2024-02-01"], ["2024-01-01", ""]), label_available_column="arrived")
    assert (err.value.row, err.value.column) == (3, "predicted_at")


def test_ordinary_dates_unchanged():
    data = load_calibration(wide(["2024-01-02", "2024-01-09", "2024-01-09"], ["2024-01-01", "2024-01-02", "2024-01-08"]),
                            label_available_column="arrived")
    assert np.array_equal(data.label_available_at, [0, 2, 2])


@pytest.mark.parametrize("data, problem", [(b"", "the file is empty."), (b"code,weight\n", "no data rows")])
def test_an_empty_weights_file_describes_the_weights_layout(data, problem):
    from favmac.io import read_weights

    with pytest.raises(DataError) as err:
        read_weights(data, ["A"], name="w.csv")
    assert problem in err.value.problem
    assert "code, weight" in err.value.fix and "patient_id" not in str(err.value)


def test_an_empty_cms_cell_says_it_is_empty():
    data = b"patient_id,cms_cell,prob_HCC37,label_HCC37\np1,CNA,0.2,0\np2, ,0.3,1\n"
    with pytest.raises(DataError, match="has no CMS-HCC coefficient cell") as err:
        load_calibration(data, name="cells.csv")
    assert (err.value.row, err.value.column) == (3, "cms_cell") and "None" not in str(err.value)


def test_day_first_dates_are_read_day_first_throughout_the_file():
    # format="mixed" read each cell on its own: 13/01/2024 day-first but 05/01/2024 as May 1st, in one column
    predicted = ["01/01/2024", "02/01/2024", "03/01/2024", "13/01/2024"]
    data = load_calibration(wide(["05/01/2024", "05/01/2024", "14/01/2024", "14/01/2024"], predicted),
                            label_available_column="arrived")
    assert data.label_available_at.tolist() == [2, 2, 3, 3]  # arrived 5 Jan (before the 13 Jan prediction), 14 Jan
    data = load_calibration(wide(["01/05/2024", "01/05/2024", "01/14/2024", "01/14/2024"],
                                 ["01/01/2024", "01/02/2024", "01/03/2024", "01/13/2024"]), label_available_column="arrived")
    assert data.label_available_at.tolist() == [2, 2, 3, 3]  # month-first, as its 01/13 and 01/14 say


def test_ambiguous_or_mixed_day_month_order_is_refused():
    with pytest.raises(DataError, match="day.*month|month.*day") as err:
        load_calibration(wide(["03/02/2024", "05/02/2024"], ["01/02/2024", "02/02/2024"]), name="d.csv",
                         label_available_column="arrived")
    assert err.value.row == 2 and "YYYY-MM-DD" in str(err.value)
    with pytest.raises(DataError, match="day-first.*month-first|month-first.*day-first") as err:
        load_calibration(wide(["13/02/2024", "02/14/2024"], ["01/02/2024", "02/02/2024"]), name="d.csv",
                         label_available_column="arrived")
    assert err.value.column == "arrived"
