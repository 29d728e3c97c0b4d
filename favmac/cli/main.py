"""The favmac command's entry point: parse, run the command, report bad input as one ``error:`` line."""
from __future__ import annotations

import sys
import warnings

from ..access import AccessDenied
from ..functions import FormulaError
from ..io import DataError
from ..runspec import SettingsError
from .commands import build_parser, command
from .options import refuse_id_segments

__all__ = ["main", "EXIT_BAD_INPUT"]


EXIT_BAD_INPUT = 2


def _note(message, category, filename, lineno, file=None, line=None):
    """The library's own warnings (UserWarning: "costs too large for exact int64 arithmetic ...") as one
    "note:" line, without the source file and line a Python warning prints; any other warning as Python shows it."""
    if issubclass(category, UserWarning) and not issubclass(category, DeprecationWarning):
        print(f"note: {message}", file=sys.stderr)
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), end="", file=sys.stderr)


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    args = build_parser().parse_args(argv)
    run = command(args.command).run
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _note
            refuse_id_segments(args)
            return run(args)
    except SettingsError as err:
        print(f"error: settings: {err}", file=sys.stderr)
    except (LookupError, AccessDenied, RuntimeError) as err:  # a program not found, access refused, a store that cannot be used
        print(f"error: {str(err).strip(chr(39))}", file=sys.stderr)
    except (DataError, FormulaError) as err:
        print(f"error: {err}", file=sys.stderr)
    except ValueError as err:  # the library validates its own arguments with ValueError
        print(f"error: {err}", file=sys.stderr)
    except OSError as err:  # the file it names; without one (a network error reading --data) the command's own file
        where = err.filename or getattr(args, "out", None) or getattr(args, "data", None)
        print(f"error: {where}: {err.strerror or err}" if where else f"error: {err.strerror or err}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return EXIT_BAD_INPUT
