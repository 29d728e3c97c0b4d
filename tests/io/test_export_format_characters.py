"""Invisible format characters (Unicode category Cf: bidi overrides and isolates, direction marks,
zero-width characters, the BOM) never reach an exported file raw (issue 32): a U+202E from a
weights description survived into 690 rows of the exported chosen sets. Every CSV export goes
through favmac.io.to_safe_csv (the app's Export page, the CLI, a program's export), which writes
each such character as a visible [U+XXXX] marker, as formula cells already get their quote."""
from __future__ import annotations

import sys
import unicodedata

import numpy as np
import pandas as pd
import pytest

from favmac.export import description_lists
from favmac.io import safe_csv, to_safe_csv

ALL_FORMAT = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]


def test_the_pattern_is_exactly_unicodes_format_category():
    pattern = safe_csv.format_characters()
    assert all(pattern.fullmatch(ch) for ch in ALL_FORMAT)
    others = "".join(chr(c) for c in range(0x3000) if unicodedata.category(chr(c)) != "Cf")
    assert pattern.search(others) is None  # letters of every script, combining marks, spaces, controls


def test_a_description_with_a_bidi_override_is_marked_in_every_row():
    descriptions = ["Diabetes with complications", "Heart \u202eeruliaf", "Drug use\u2066 disorder"]
    selected = np.array([[True, True, False], [False, True, True], [False, False, False]] * 230)
    frame = pd.DataFrame({"patient_id": [f"P{i}" for i in range(len(selected))],
                          "descriptions": description_lists(selected, descriptions)}).set_index("patient_id")
    text = to_safe_csv(frame).decode("utf-8")
    assert not safe_csv.format_characters().search(text)
    assert text.count("Heart [U+202E]eruliaf") == 460 and text.count("Drug use[U+2066] disorder") == 230


@pytest.mark.parametrize("char", ["\u202e", "\u2067", "\u200b", "\u200d", "\ufeff", "\u00ad", "\U000e0041"])
def test_cells_headers_and_index_lose_the_raw_character(char):
    frame = pd.DataFrame({f"note{char}": [f"a{char}b", f"={char}1", 3.5], "n": [1, 2, 3]},
                         index=pd.Index([f"P{char}1", "P2", "P3"], name="patient_id"))
    text = to_safe_csv(frame).decode("utf-8")
    marker = f"[U+{ord(char):04X}]"
    assert char not in text
    assert f"note{marker}" in text and f"a{marker}b" in text and f"P{marker}1" in text
    assert f"'={marker}1" in text  # the formula quote is kept
    assert ",3.5," in text  # numbers untouched


def test_a_frame_without_format_characters_is_written_as_before():
    frame = pd.DataFrame({"code": ["HCC18", "José", "مريض"], "x": [0.1 + 0.2, -1.0, 2.0]})
    assert to_safe_csv(frame) == "code,x\nHCC18,0.3\nJosé,-1\nمريض,2\n".encode()
