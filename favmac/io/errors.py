"""The error every reader raises, and the wording helpers its messages share.

A :class:`DataError` message names the file, the row (counted as a spreadsheet shows it:
the header is row 1) or column, the problem and the fix, e.g.
``probs.csv, row 3, column HCC18: 'abc' is not a number. Probabilities must be ...``.
"""
from __future__ import annotations

__all__ = ["DataError", "LIST_LIMIT", "join_few", "plural", "also_count"]

# How many offending ids/rows/codes a message lists before saying "and N more".
LIST_LIMIT = 5


class DataError(ValueError):
    """An input file (or setting) that FavMac cannot use; the message says where and how to fix it.

    Attributes
    ----------
    file : str or None
        Display name of the offending file.
    row : int or None
        Row as a spreadsheet shows it (the header is row 1, the first patient row 2).
    column : str or None
        Column name (or ``"column <n>"`` for an unnamed one).
    problem, fix : str
        The two halves of the message.

    Examples
    --------
    >>> err = DataError("'abc' is not a number.", file="probs.csv", row=3, column="HCC18",
    ...                 fix="Probabilities must be numbers between 0 and 1.")
    >>> str(err)
    "probs.csv, row 3, column HCC18: 'abc' is not a number. Probabilities must be numbers between 0 and 1."
    """

    def __init__(self, problem: str, *, file=None, row=None, column=None, fix: str = ""):
        self.problem = problem
        self.fix = fix
        self.file = file
        self.row = None if row is None else int(row)
        self.column = column
        where = ", ".join(
            part
            for part in (
                file,
                None if row is None else f"row {int(row)}",
                None if column is None else f"column {column}",
            )
            if part
        )
        message = f"{where}: {problem}" if where else problem
        if fix:
            message = f"{message} {fix}"
        super().__init__(message)

    def __reduce__(self):
        return (
            _rebuild_data_error,
            (self.problem, self.file, self.row, self.column, self.fix),
        )


def _rebuild_data_error(problem, file, row, column, fix):
    return DataError(problem, file=file, row=row, column=column, fix=fix)


def join_few(items, quote: bool = True, limit: int = LIST_LIMIT) -> str:
    """The first ``limit`` items joined by commas, then "and N more".

    Examples
    --------
    >>> join_few(["a", "b", "c"], limit=2)
    "'a', 'b' and 1 more"
    >>> join_few([3, 5], quote=False)
    '3, 5'
    """
    items = list(items)
    shown = [repr(str(x)) if quote else str(x) for x in items[:limit]]
    text = ", ".join(shown)
    if len(items) > limit:
        text += f" and {len(items) - limit} more"
    return text


def plural(n: int, word: str, plural_form: str | None = None) -> str:
    """``n`` and the word, in the plural unless ``n == 1``.

    Examples
    --------
    >>> plural(1, "code"), plural(3, "patient id")
    ('1 code', '3 patient ids')
    """
    return f"{n} {word if n == 1 else (plural_form or word + 's')}"


def also_count(count: int) -> str:
    """Say how many cells share the problem when the first bad cell is not the only one.

    Examples
    --------
    >>> also_count(1), also_count(4)
    ('', ' (4 cells in this file have this problem)')
    """
    return f" ({count} cells in this file have this problem)" if count > 1 else ""
