"""Turning the bytes of a CSV into a checked table: decoding, header, ids and numeric cells.

Tolerated silently: a UTF-8 (or UTF-16) byte-order mark, Windows or old-Mac line endings,
spaces around header names and ids, blank lines, empty trailing columns. Refused with a
:class:`~favmac.io.errors.DataError` naming the file, row and column: binary files (images,
spreadsheets, archives, Parquet where only CSV is read), other delimiters than commas, a
header without rows, duplicate or unnamed columns, ragged rows, missing or repeated ids and
cells that are not finite numbers in the allowed range.

The id and numeric-cell checks (:func:`patient_ids`, :func:`numeric_block`) work on any
parsed frame, so the Parquet reader applies exactly the same rules and wording.
"""
from __future__ import annotations

import csv
import io
import os
import re
import warnings

import numpy as np
import pandas as pd

from ..validation import MAX_WEIGHT
from .errors import LIST_LIMIT, DataError, also_count, join_few, plural

__all__ = [
    "ID_COLUMN",
    "SAVE_AS_CSV",
    "source_name",
    "read_bytes",
    "binary_kind",
    "check_not_binary",
    "text_encoding",
    "decode_text",
    "check_delimiter",
    "parse_csv",
    "csv_header",
    "header_sample",
    "header_names",
    "MAX_COLUMNS",
    "UNNAMED",
    "finish_frame",
    "raise_ragged_row",
    "check_id_column",
    "patient_ids",
    "check_code_names",
    "check_ids_visible",
    "BIDI_CONTROLS",
    "numeric_block",
]

ID_COLUMN = "patient_id"

SAVE_AS_CSV = "Save it as comma-separated CSV (in Excel: File > Save As > 'CSV UTF-8 (Comma delimited)')."

#: Most columns a table may have: a wide file of favmac.runspec.MAX_CODES codes (a prob_ and a label_
#: column each) plus room for the id, segment and other columns. Checked on the header alone (CSV's
#: first row, Parquet's schema) before any cell is read: a 1,000,000-column header is refused in about
#: a second instead of parsing for minutes in gigabytes (tests/io/test_column_limit.py).
MAX_COLUMNS = 201_000

#: Prefix of the placeholder names :func:`header_names` gives unnamed CSV columns (they must stay empty).
UNNAMED = "\x00unnamed"

# Unicode's bidirectional controls (embeddings, overrides, isolates and the invisible direction
# marks): they reorder how the text around them is drawn ("Trojan Source"), so an id or a code
# holding one reads as something else; and the zero-width characters (space, joiners, word
# joiner, a BOM inside the text), which make "P\u200b1" look exactly like "P1". Refused in ids and
# code names; shown as a visible [U+XXXX] marker wherever other user text is displayed
# (favmac/ui/text.py).
BIDI_CONTROLS = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
_BIDI_FIX = ("Remove the invisible direction-control characters (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, "
             "U+061C) and zero-width characters (U+200B-U+200D, U+2060, U+FEFF) from {what}: they make the text "
             "display in another order than it is written, or two different values look the same.")


def _bidi_message(text: str) -> str:
    found = BIDI_CONTROLS.search(text).group()
    kind = "zero-width" if found in "\u200b\u200c\u200d\u2060\ufeff" else "direction-control"
    return f"contains the invisible {kind} character U+{ord(found):04X}"


_DELIMITER_NAMES = {";": "semicolons (;)", "\t": "tabs", "|": "vertical bars (|)"}

# Leading bytes of binary formats people upload by mistake, and what to call them.
_MAGIC = (
    (b"PAR1", "a Parquet file"),
    (b"PK\x03\x04", "a ZIP archive or an Excel workbook (.xlsx)"),
    (b"\xd0\xcf\x11\xe0", "an old Excel workbook (.xls)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"\x1f\x8b", "a gzip-compressed file"),
)
_BINARY_SAMPLE = 65536
# Control bytes that never occur in text (tab, newline, vertical tab, form feed, carriage
# return and the old DOS end-of-file mark 0x1A are allowed).
_CONTROL_BYTES = bytes([b for b in range(32) if b not in (9, 10, 11, 12, 13, 26)]) + b"\x7f"


def source_name(source, name=None) -> str:
    """The display name of a source: ``name`` if given, else the path's or upload's file name.

    Examples
    --------
    >>> source_name("/data/probs.csv"), source_name(b"", "x.csv"), source_name(b"")
    ('probs.csv', 'x.csv', 'uploaded file')
    """
    if name:
        return str(name)
    if isinstance(source, (str, os.PathLike)):
        return os.path.basename(os.fspath(source)) or os.fspath(source)
    file_name = getattr(source, "name", None)
    if isinstance(file_name, str) and file_name:
        return os.path.basename(file_name)
    return "uploaded file"


def read_bytes(source, file: str) -> bytes:
    """The raw bytes of a path, bytes object or file-like (Streamlit UploadedFile included).

    Raises
    ------
    DataError
        If a path does not exist or is a folder.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise DataError("the file does not exist.", file=os.fspath(source), fix="Check the path.") from None
        except IsADirectoryError:
            raise DataError("this is a folder, not a file.", file=os.fspath(source), fix="Give the path of a CSV or Parquet file.") from None
    if hasattr(source, "getvalue"):
        data = source.getvalue()
    elif hasattr(source, "read"):
        if hasattr(source, "seek"):
            source.seek(0)
        data = source.read()
    else:
        raise TypeError(f"cannot read {file}: expected a path, bytes or a file-like object, got {type(source).__name__}")
    if isinstance(data, str):
        data = data.encode("utf-8")
    return bytes(data)


def binary_kind(data: bytes) -> str | None:
    """What a non-text file looks like ("a PNG image", "binary data"), or None for text.

    A file is binary when it starts with a known format's signature, or its first 64 KB
    hold a NUL byte or more than 0.1 % control characters. UTF-16 text (with its
    byte-order mark) counts as text.

    Examples
    --------
    >>> binary_kind(b"patient_id,A\\n1,0.5\\n") is None
    True
    >>> binary_kind(b"\\x89PNG\\r\\n\\x1a\\n")
    'a PNG image'
    >>> binary_kind(bytes(range(256)))
    'binary data'
    """
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    sample = data[:_BINARY_SAMPLE]
    if b"\x00" in sample:
        return "binary data"
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if controls > max(2, len(sample) // 1000):
        return "binary data"
    return None


def text_encoding(data: bytes, truncated: bool = False) -> str:
    """The text encoding of a CSV's bytes, as :func:`decode_text` decodes them.

    BOM-marked UTF-16 -> ``"utf-16"`` (UTF-32 -> ``"utf-32"``); UTF-8 with or without a byte-order mark ->
    ``"utf-8-sig"``; anything else -> ``"cp1252"`` (Windows-1252, what Excel on Windows writes
    for "CSV"; ids and codes are ASCII in practice). ``truncated``: ``data`` is only the start of
    the file, so a UTF-8 character cut at its very end does not count against UTF-8.

    Examples
    --------
    >>> text_encoding(b"\\xef\\xbb\\xbfpatient_id"), text_encoding(b"\\xff\\xfep\\x00"), text_encoding(b"id,caf\\xe9")
    ('utf-8-sig', 'utf-16', 'cp1252')
    >>> text_encoding(b"id,caf\\xc3", truncated=True)
    'utf-8-sig'
    """
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):  # before UTF-16: the same first bytes
        return "utf-32"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        if not truncated or err.start < len(data) - 3:  # not just a character cut at the sample's end
            return "cp1252"
    return "utf-8-sig"


def decode_text(data: bytes, encoding: str | None = None) -> str:
    """Text of a CSV's bytes with line endings made ``\\n`` and the byte-order mark removed.

    ``encoding`` defaults to :func:`text_encoding` of ``data``.

    Examples
    --------
    >>> decode_text(b"\\xef\\xbb\\xbfa,b\\r\\n1,2\\r")
    'a,b\\n1,2\\n'
    """
    text = data.decode(encoding or text_encoding(data), errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def parse_csv(source, name=None, text_columns=(ID_COLUMN,)):
    """Parse a CSV into ``(frame, rows, file)``.

    ``frame`` holds the stripped header names as columns, ``text_columns`` (if present) as
    text, other columns as pandas inferred them; ``rows`` gives each frame row's
    spreadsheet row number; ``file`` is the display name. Fully empty rows and empty
    unnamed columns are dropped.

    Raises
    ------
    DataError
        For a binary or empty file, a header-only file, another delimiter than commas,
        duplicate or unnamed-but-filled columns and rows with more cells than the header.

    Examples
    --------
    >>> frame, rows, file = parse_csv(b"patient_id,A\\n007,0.5\\n\\n008,1\\n", name="p.csv")
    >>> frame["patient_id"].tolist(), rows.tolist(), file
    (['007', '008'], [2, 4], 'p.csv')
    """
    file = source_name(source, name)
    data = read_bytes(source, file)
    check_not_binary(data, file)
    encoding = text_encoding(data)  # once: a whole-file decode attempt
    check_one_encoding(data, file, encoding)
    text = decode_text(data, encoding)
    names = csv_header(text, file)
    frame = _read_frame(text, names, [c for c in text_columns if c in names], file)
    return (*finish_frame(frame, file), file)


# A valid UTF-8 sequence of two to four bytes (rare by chance in Windows-1252 text: "Ã©" is one)
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def check_one_encoding(data: bytes, file: str, encoding: str | None = None) -> None:
    """Refuse a file that is UTF-8 but for some bytes: decoded as Windows-1252 (:func:`text_encoding`), its
    UTF-8 characters would change silently ('Zoë' read as 'ZoÃ«'). Names the row of the first byte that is not
    UTF-8."""
    if (encoding or text_encoding(data)) != "cp1252" or not _UTF8_SEQUENCE.search(data):
        return
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        row = data[:err.start].count(b"\n" if b"\n" in data else b"\r") + 1  # old Mac files end lines with \r alone
        raise DataError(f"the file is UTF-8 except for the byte 0x{data[err.start]:02X} in this row, which is not UTF-8 "
                        "(the file mixes two text encodings); read as Windows-1252 its other accented characters "
                        "would change.", file=file, row=row,
                        fix="Save the file again as UTF-8 (in Excel: File > Save As > 'CSV UTF-8 (Comma delimited)'), "
                        "or fix that row's text.") from None


def check_not_binary(data: bytes, file: str) -> None:
    """Refuse bytes that are not a text CSV (an image, a spreadsheet, Parquet), saying what they look like.

    ``data`` may be the whole file or its first 64 KB (what :func:`binary_kind` inspects).

    Raises
    ------
    DataError
        If :func:`binary_kind` finds a binary format.
    """
    kind = binary_kind(data)
    if kind is not None:
        fix = ("Choose the data file itself (CSV or Parquet); a spreadsheet must be saved as comma-separated "
               "CSV (in Excel: File > Save As > 'CSV UTF-8 (Comma delimited)').")
        if kind == "a Parquet file":
            fix = ("Give Parquet files to load_calibration / load_new_patients (which read them), "
                   "or " + SAVE_AS_CSV[0].lower() + SAVE_AS_CSV[1:])
        looks = "it looks binary" if kind == "binary data" else f"it looks like {kind}"
        raise DataError(f"this is not a text CSV file ({looks}).", file=file, fix=fix)


def check_delimiter(first_line: str, file: str) -> None:
    """Refuse a header row whose columns are separated by ';', tabs or '|' rather than commas.

    Examples
    --------
    >>> check_delimiter("patient_id,A,B", "p.csv")
    >>> check_delimiter("patient_id;A;B", "p.csv")
    Traceback (most recent call last):
    ...
    favmac.io.errors.DataError: p.csv, row 1: the columns are separated by semicolons (;), not commas. Save it as comma-separated CSV (in Excel: File > Save As > 'CSV UTF-8 (Comma delimited)').
    """
    counts = {d: first_line.count(d) for d in (",", ";", "\t", "|")}
    found = max(counts, key=counts.get)
    if found != "," and counts[found] > counts[","]:
        raise DataError(
            f"the columns are separated by {_DELIMITER_NAMES[found]}, not commas.",
            file=file, row=1, fix=SAVE_AS_CSV,
        )


def csv_header(text: str, file: str) -> list[str]:
    """The checked column names of a CSV's text (from :func:`decode_text`; the whole file or its start).

    Raises
    ------
    DataError
        For an empty file or first row, another delimiter than commas (:func:`check_delimiter`)
        and a duplicate name (:func:`header_names`).

    Examples
    --------
    >>> csv_header(" patient_id , HCC18,\\n007,0.5,\\n", "p.csv")
    ['patient_id', 'HCC18', '\\x00unnamed3']
    """
    if not text.strip():
        raise DataError(
            "the file is empty.",
            file=file,
            fix="Expected a CSV with a header row (patient_id, then one column per code) and one row per patient.",
        )
    first_line = text.split("\n", 1)[0]
    if not first_line.strip():
        raise DataError(
            "the first row is empty.", file=file, row=1,
            fix="The header (patient_id, then the code names) must be on row 1.",
        )
    check_delimiter(first_line, file)
    if '"' not in first_line and first_line.count(",") >= MAX_COLUMNS:  # counted without splitting the row
        _too_many_columns(first_line.count(",") + 1, file)
    try:
        names = next(csv.reader([first_line]))
    except csv.Error as err:  # a name longer than the csv module's field limit (131,072 characters), a stray NUL
        raise DataError(f"the header row cannot be read as CSV ({err}).", file=file, row=1,
                        fix="Row 1 must hold the column names (patient_id, then the codes), each a short name.") from None
    return header_names(names, file)


def header_sample(read, first: int = 65536, limit: int = 256 * 2**20) -> tuple[bytes, bool]:
    """The start of a CSV through its whole first row (the header), and whether bytes remain.

    ``read(n)`` returns the next ``n`` bytes (a file handle's ``read``). At least ``first``
    bytes; more until the first line break (a 50,000-column header is a few MB: a fixed
    sample would cut it and lose the later columns), at most ``limit``; then a few bytes so a
    UTF-16/32 line break is whole.

    >>> import io
    >>> sample, more = header_sample(io.BytesIO(b"patient_id," + b"x" * 70000 + b"\\n1,2" * 50000).read, first=10)
    >>> len(sample) > 70000, more
    (True, True)
    """
    sample = read(first)
    chunk = sample
    while chunk and b"\n" not in sample and len(sample) < limit:
        chunk = read(len(sample))
        sample += chunk
    tail = read(8) if chunk else b""
    return sample + tail, len(tail) == 8


def _too_many_columns(count: int, file: str):
    raise DataError(
        f"the header has {count:,} columns; FavMac reads at most {MAX_COLUMNS:,} (100,000 codes in the wide layout).",
        file=file, row=1,
        fix="Check that this is the right file (one column per code, not one per patient); "
            "split a larger code set into several files.",
    )


def header_names(header, file: str) -> list[str]:
    """Stripped column names, refusing duplicates; unnamed columns get placeholder names.

    Placeholders start with :data:`UNNAMED`; :func:`finish_frame` drops them when empty.
    More than :data:`MAX_COLUMNS` columns are refused.
    """
    if len(header) > MAX_COLUMNS:
        _too_many_columns(len(header), file)
    header = [str(h).strip() for h in header]
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if column and column in seen:
            raise DataError(
                f"the column name {column!r} appears more than once (columns {seen[column]} and {position}).",
                file=file, row=1, fix="Each column needs a unique name; each code exactly one column.",
            )
        seen.setdefault(column, position)
    # Unnamed columns must be empty (Excel's trailing commas).
    return [h if h else f"{UNNAMED}{i}" for i, h in enumerate(header, start=1)]


def finish_frame(frame: pd.DataFrame, file: str, no_rows: str | None = "the file has a header row but no data rows.",
                 first_row: int = 2):
    """Drop fully empty rows and empty unnamed columns; return ``(frame, rows)``.

    ``rows`` are spreadsheet row numbers of the kept rows, the frame's first row being
    ``first_row`` (2, the row below the header, for a whole file; later for a chunk of one).

    Raises
    ------
    DataError
        If an unnamed column holds values, or no row is left (message ``no_rows``; None
        accepts an empty result, as for one chunk of a file read in pieces).
    """
    rows = np.arange(first_row, frame.shape[0] + first_row)
    blank_rows = frame.isna().all(axis=1).to_numpy() if frame.shape[1] else np.ones(frame.shape[0], bool)
    if blank_rows.any():
        frame = frame.loc[~blank_rows]
        rows = rows[~blank_rows]
    for i, column in enumerate(list(frame.columns), start=1):
        if str(column).startswith(UNNAMED):
            filled = frame[column].notna().to_numpy()
            if filled.any():
                raise DataError(
                    "this column has values but no name in the header.",
                    file=file, row=int(rows[np.argmax(filled)]), column=f"{i}",
                    fix="Put the code name in row 1 of that column, or delete the column.",
                )
            frame = frame.drop(columns=column)
    if frame.shape[0] == 0 and no_rows is not None:
        raise DataError(no_rows, file=file, fix="Add one row per patient below the header.")
    return frame.reset_index(drop=True), rows


def _read_frame(text: str, names: list[str], text_columns: list[str], file: str) -> pd.DataFrame:
    dtype = {c: str for c in text_columns} or None
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return pd.read_csv(
                io.StringIO(text), header=0, names=names, dtype=dtype, index_col=False,
                skip_blank_lines=False, skipinitialspace=True, low_memory=False,
            )
        except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError) as err:
            raise_ragged_row(io.StringIO(text), len(names), file, err)
    raise AssertionError("unreachable")


def raise_ragged_row(lines, n_columns: int, file: str, err) -> None:
    """Explain a tokenizing failure: raise a DataError at the first row with more cells than the header.

    Parameters
    ----------
    lines : iterable of str
        The file's text lines from the header on (a ``StringIO`` or a text-mode file, read
        lazily, so a large file is scanned without being held in memory).
    n_columns : int
        Columns in the header.
    file : str
        Display name for the message.
    err : Exception
        The parser's error, quoted when no row has too many cells.

    Raises
    ------
    DataError
        Always.
    """
    for number, cells in enumerate(csv.reader(lines), start=1):
        if len(cells) > n_columns:
            raise DataError(
                f"this row has {len(cells)} cells but the header has {n_columns} columns.",
                file=file, row=number,
                fix="Check for commas inside values (decimals must use a dot, e.g. 0.25) or a missing header name.",
            ) from None
    raise DataError(f"the file cannot be read as CSV ({err}).", file=file, fix=SAVE_AS_CSV) from None


def check_id_column(columns, file: str) -> None:
    """Refuse a header without the ``patient_id`` column, naming a look-alike column if there is one."""
    columns = list(columns)
    if ID_COLUMN not in columns:
        similar = [c for c in columns if c.lower().replace(" ", "_") in ("patient_id", "patientid", "id", "patient")]
        hint = f" Rename the column {similar[0]!r} to patient_id." if similar else (
            " The first column should be named patient_id and hold each patient's id."
        )
        raise DataError(
            f"there is no {ID_COLUMN!r} column (found: {join_few(columns)}).",
            file=file, row=1, fix=hint.strip(),
        )


def patient_ids(frame: pd.DataFrame, rows: np.ndarray, file: str) -> pd.Index:
    """The validated, stripped patient ids (text) of a parsed frame.

    Raises
    ------
    DataError
        If the ``patient_id`` column is missing, an id is blank or an id repeats.
    """
    check_id_column(frame.columns, file)
    ids = frame[ID_COLUMN].str.strip()
    missing = (ids.isna() | (ids == "")).to_numpy()
    if missing.any():
        bad_rows = rows[missing]
        which = f"row {bad_rows[0]} has" if len(bad_rows) == 1 else (
            f"{len(bad_rows)} rows have"
        )
        listed = "" if len(bad_rows) == 1 else f" (rows {join_few(bad_rows, quote=False)})"
        raise DataError(
            f"{which} no patient id{listed}.",
            file=file, row=int(bad_rows[0]), column=ID_COLUMN,
            fix="Fill in an id for every patient or delete those rows.",
        )
    values = ids.to_numpy(dtype=object)
    index = pd.Index(values, name=ID_COLUMN, dtype=object)
    check_ids_visible(values.tolist(), rows, file)
    duplicated = index.duplicated(keep=False)
    if duplicated.any():
        dup_ids = pd.unique(index[duplicated])
        where = {}
        for pid, row in zip(index[duplicated], rows[duplicated]):
            where.setdefault(pid, []).append(str(row))
        details = "; ".join(f"{pid!r} (rows {', '.join(where[pid][:LIST_LIMIT])})" for pid in dup_ids[:LIST_LIMIT])
        more = f"; and {len(dup_ids) - LIST_LIMIT} more" if len(dup_ids) > LIST_LIMIT else ""
        raise DataError(
            f"{plural(len(dup_ids), 'patient id')} {'appears' if len(dup_ids) == 1 else 'appear'} "
            f"more than once: {details}{more}.",
            file=file, row=int(rows[duplicated][0]), column=ID_COLUMN,
            fix="Each patient must have exactly one row.",
        )
    return index


def check_ids_visible(ids, rows, file: str, *, column: str = ID_COLUMN, what: str = "patient id") -> None:
    """Refuse ids (text: patient ids, or a weights file's codes with ``what="code"``) holding an invisible
    direction-control or zero-width character (:data:`BIDI_CONTROLS`); ``rows[i]`` is the row that names
    ``ids[i]`` in messages."""
    joined = "\n".join(ids)
    if not joined.isascii() and BIDI_CONTROLS.search(joined):  # one scan of all ids; the row only on a hit
        at = next(i for i, pid in enumerate(ids) if BIDI_CONTROLS.search(pid))
        raise DataError(f"the {what} {ids[at]!r} {_bidi_message(ids[at])}.", file=file, row=int(rows[at]),
                        column=column, fix=_BIDI_FIX.format(what=f"the {what}s" if what != "patient id" else "the ids"))


def check_code_names(codes, file: str) -> None:
    """Refuse code names containing ';' (FavMac joins codes with it in its output) or a
    direction-control character (:data:`BIDI_CONTROLS`), and two codes that differ only in upper/lower
    case (HCC18 and hcc18: one code's column twice, as a spreadsheet shows them)."""
    seen = {}
    for code in codes:
        folded = code.casefold()
        if folded in seen and seen[folded] != code:
            raise DataError(f"the codes {seen[folded]!r} and {code!r} differ only in upper/lower case.", file=file,
                            row=1, column=code, fix="Keep one column per code (or give the codes distinct names).")
        seen.setdefault(folded, code)
        if BIDI_CONTROLS.search(code):
            raise DataError(f"the code name {code!r} {_bidi_message(code)}.", file=file, row=1, column=code,
                            fix=_BIDI_FIX.format(what="the code names"))
        if ";" in code:
            raise DataError(
                f"the code name {code!r} contains ';', which FavMac uses to join codes in its output.",
                file=file, row=1, column=code, fix="Rename the code without ';'.",
            )


def numeric_block(frame, columns, rows, file, kind) -> np.ndarray:
    """The (N, len(columns)) float64 values of ``columns``, or a DataError at the first bad cell.

    ``kind`` is "probability" (in [0, 1]), "label" (0 or 1) or "weight" (>= 0); it selects
    the range check and the wording. Text that is not a number, empty cells, NaN and
    infinities are refused in every kind.
    """
    rule = {
        "probability": "Probabilities must be numbers between 0 and 1, written with a dot as decimal separator.",
        "label": "Labels must be 1 (the patient has the code) or 0 (does not).",
        "weight": f"Weights must be numbers between 0 and {MAX_WEIGHT:,.0f}, written with a dot as decimal separator.",
    }[kind]
    # Columns pandas could not parse as numbers hold text somewhere: find the first such cell.
    # (the dtypes read once: frame[c] per column cost 0.3 ms each, a minute per pass at 25,000 codes)
    dtype_of = dict(zip(frame.columns, frame.dtypes)) if frame.columns.is_unique else None
    non_numeric = [
        c for c in columns
        if not (pd.api.types.is_numeric_dtype(d := frame[c] if dtype_of is None else dtype_of[c])
                and not pd.api.types.is_bool_dtype(d))
    ]
    if non_numeric:
        frame = frame[list(columns)].copy()
        bad = np.zeros((frame.shape[0], len(non_numeric)), dtype=bool)
        texts = {}
        for j, column in enumerate(non_numeric):
            col = frame[column]
            texts[column] = col
            if pd.api.types.is_bool_dtype(col):
                bad[:, j] = True
                continue
            stripped = col.astype("str").str.strip().where(col.notna())
            numbers = pd.to_numeric(stripped.replace("", np.nan), errors="coerce")
            bad[:, j] = (numbers.isna() & stripped.notna() & (stripped != "")).to_numpy()
            frame[column] = numbers.astype(np.float64)
        if bad.any():
            i, j, count = _first_true(bad)
            cell = texts[non_numeric[j]].iloc[i]
            fix = rule
            if kind == "label" and str(cell).strip().lower() in ("true", "false", "yes", "no"):
                fix = "Write labels as 1 (has the code) and 0 (does not) instead of TRUE/FALSE or yes/no."
            raise DataError(
                f"{str(cell)!r} is not a number{also_count(count)}.",
                file=file, row=int(rows[i]), column=non_numeric[j], fix=fix,
            )
    values = frame[list(columns)].to_numpy(dtype=np.float64)
    nan = np.isnan(values)
    if nan.any():
        i, j, count = _first_true(nan)
        raise DataError(
            f"the cell is empty (or NaN){also_count(count)}.",
            file=file, row=int(rows[i]), column=columns[j],
            fix=f"Every cell needs a value. {rule}",
        )
    inf = np.isinf(values)
    if inf.any():
        i, j, count = _first_true(inf)
        raise DataError(
            f"the value is infinite ({values[i, j]}){also_count(count)}.",
            file=file, row=int(rows[i]), column=columns[j], fix=rule,
        )
    if kind == "probability":
        bad = (values < 0.0) | (values > 1.0)
        if bad.any():
            i, j, count = _first_true(bad)
            raise DataError(
                f"probability {_shown(values[i, j])} is outside [0, 1]{also_count(count)}.",
                file=file, row=int(rows[i]), column=columns[j],
                fix=f"{rule} If the file holds percentages, divide by 100; if it holds logits or scores, "
                "convert them to probabilities first.",
            )
    elif kind == "label":
        bad = (values != 0.0) & (values != 1.0)
        if bad.any():
            i, j, count = _first_true(bad)
            raise DataError(
                f"label {_shown(values[i, j])} is not 0 or 1{also_count(count)}.",
                file=file, row=int(rows[i]), column=columns[j], fix=rule,
            )
    elif kind == "weight":
        bad = values < 0.0
        if bad.any():
            i, j, count = _first_true(bad)
            raise DataError(
                f"weight {_shown(values[i, j])} is negative{also_count(count)}.",
                file=file, row=int(rows[i]), column=columns[j], fix=rule,
            )
        bad = values > MAX_WEIGHT
        if bad.any():
            i, j, count = _first_true(bad)
            raise DataError(
                f"weight {_shown(values[i, j])} is above the largest allowed weight {MAX_WEIGHT:,.0f}{also_count(count)}.",
                file=file, row=int(rows[i]), column=columns[j], fix=rule,
            )
    return values


def _shown(x) -> str:
    """A cell's number for a message: short (``%g``) unless that rounds it (1.0000001 is not "1")."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


def _first_true(mask: np.ndarray):
    """(row index, column index, total count) of the first True cell in reading order."""
    flat = int(np.argmax(mask.reshape(-1)))
    i, j = divmod(flat, mask.shape[1])
    return i, j, int(mask.sum())
