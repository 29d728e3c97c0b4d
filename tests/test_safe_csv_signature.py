"""to_safe_csv returns bytes and takes ``index`` by keyword only: a file name as second argument is an error."""
import pandas as pd
import pytest

from favmac.io import to_safe_csv


def test_a_file_name_as_second_argument_is_a_type_error(tmp_path):
    frame = pd.DataFrame({"code": ["=1", "HCC18"]})
    with pytest.raises(TypeError):
        to_safe_csv(frame, str(tmp_path / "sets.csv"))
    assert not (tmp_path / "sets.csv").exists()
    assert to_safe_csv(frame, index=False) == b"code\n'=1\nHCC18\n"
