"""favmac.cli.commands: the one list a command group registers in drives the help, the usage line and the dispatch."""
from __future__ import annotations

from favmac.cli import commands, main
from favmac.cli.parser import Command


def test_the_registered_commands_are_the_help_and_the_usage():
    text = commands.build_parser().format_help()
    assert text.startswith("usage: favmac [-h] {predict,replay,calibrate,program,samples} ...")
    for entry in commands.COMMANDS:  # each listed once, its lines aligned under the command column
        assert text.count(f"\n  {entry.name:<11}{entry.summary[0]}\n") == 1
        for line in entry.summary[1:]:
            assert f"\n  {'':<11}{line}\n" in text


def test_a_new_command_group_registers_in_one_place(monkeypatch, capsys):
    ran = []

    def add_parser(sub):
        parser = sub.add_parser("hello", help="greet", description="Say hello.")
        parser.add_argument("--name", required=True)
        return parser

    entry = Command(name="hello", summary=("says hello.",), add_parser=add_parser, run=lambda args: ran.append(args.name) or 0)
    monkeypatch.setattr(commands, "COMMANDS", (*commands.COMMANDS, entry))
    assert main(["hello", "--name", "Ada"]) == 0 and ran == ["Ada"]
    text = commands.build_parser().format_help()
    assert "{predict,replay,calibrate,program,samples,hello}" in text and "\n  hello      says hello.\n" in text
    assert commands.command("hello") is entry
