"""favmac.samples: the bundled sample files, found from any directory (library and ``favmac samples path``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import favmac.samples
from favmac.cli import main
from favmac.io import DataError
from favmac.samples import samples_dir

REPO = Path(__file__).resolve().parents[1]


def test_samples_dir_is_the_repositorys_sample_folder_with_every_sample_file():
    folder = samples_dir()
    assert folder == (REPO / "sample_data").resolve() and folder.is_absolute()
    for name in ("hcc_calibration.csv", "hcc_new_patients.csv", "hcc_weights.csv", "hcc_probs.csv", "hcc_labels.csv",
                 "digits_calibration.csv", "digits_new_patients.csv", "digits_weights.csv", "drift_calibration.csv",
                 "drift_new_patients.csv", "drift_weights.csv", "groupings_calibration.csv"):
        assert (folder / name).is_file(), name


def test_favmac_samples_path_prints_the_folder_from_any_directory(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "favmac", "samples", "path"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"{samples_dir()}\n"


def test_without_the_sample_files_it_says_where_it_looked_and_how_to_get_them(monkeypatch, capsys):
    monkeypatch.setattr(favmac.samples, "SAMPLE_FOLDER", "no_such_folder")
    with pytest.raises(DataError) as caught:
        samples_dir()
    assert caught.value.file == str(REPO / "no_such_folder")
    assert "pip install -e ." in str(caught.value) and "make_sample_data.py --out DIR" in str(caught.value)
    assert main(["samples", "path"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {REPO / 'no_such_folder'}: the bundled sample files are not there")


def test_samples_takes_only_known_actions(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["samples", "list"])
    assert caught.value.code == 2
    assert "invalid choice: 'list' (choose from 'path')" in capsys.readouterr().err
