"""The favmac commands: :data:`COMMANDS`, the one list a command group registers in, and the parser built from it.

A new command group is a module of this package with a :class:`~favmac.cli.parser.Command`
(its name, its line(s) in ``favmac --help``, ``add_parser(sub)`` and ``run(args)``), added to
:data:`COMMANDS` here; ``favmac --help``, the usage line and :func:`favmac.cli.main`'s dispatch
all follow this list.
"""
from __future__ import annotations

import argparse

from . import distributed, predict, program, replay, samples
from .parser import Parser

__all__ = ["COMMANDS", "build_parser", "command"]

#: Every favmac command, in the order ``favmac --help`` lists them.
COMMANDS = (predict.COMMAND, replay.COMMAND, distributed.COMMAND, program.COMMAND, samples.COMMAND)


def command(name: str):
    """The registered command called ``name`` (KeyError for another)."""
    return {entry.name: entry for entry in COMMANDS}[name]


def build_parser() -> argparse.ArgumentParser:
    names = "{" + ",".join(entry.name for entry in COMMANDS) + "}"
    listing = "".join(f"  {entry.name if i == 0 else '':<11}{line}\n"
                      for entry in COMMANDS for i, line in enumerate(entry.summary))
    parser = Parser(
        prog="favmac",
        usage=f"%(prog)s [-h] {names} ...",
        description="FavMac: value-maximizing code sets with conformal cost control.\n\n"
        "commands:\n" + listing + "\n"
        "Run 'favmac <command> --help' for the options of each.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # the commands are listed in the description (one line each), not again by argparse
    # prog: each command's usage line reads "favmac predict ...", not the top-level usage with the name appended
    sub = parser.add_subparsers(dest="command", required=True, metavar=names, help=argparse.SUPPRESS, prog=parser.prog)
    for entry in COMMANDS:
        entry.add_parser(sub)
    return parser
