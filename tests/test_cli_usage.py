"""Each command's --help starts with its own usage line ("usage: favmac predict [-h] ..."), not the top-level one."""
import pytest

from favmac.cli import main
from favmac.cli.commands import COMMANDS


@pytest.mark.parametrize("name", [entry.name for entry in COMMANDS])
def test_usage_line_names_the_command(name, capsys):
    with pytest.raises(SystemExit):
        main([name, "--help"])
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"usage: favmac {name} [-h]"), first
