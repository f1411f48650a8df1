"""The qjm command's entry: each subcommand's module adds that command, and a process
started for one command imports that command's module alone."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from qjm.cli.main import COMMANDS, build_parser, command_of


@pytest.mark.parametrize("module", COMMANDS)
def test_each_module_adds_the_command_its_name_ends_with(module: str) -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    importlib.import_module(module).add_parser(sub)
    assert list(sub.choices) == [command_of(module)]


def test_the_full_parser_has_every_command_and_one_command_only_its_own() -> None:
    def choices(parser: argparse.ArgumentParser) -> list[str]:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return list(action.choices)

    assert choices(build_parser()) == [command_of(m) for m in COMMANDS]
    assert choices(build_parser("fsck")) == ["fsck"]


def test_a_journalnode_process_does_not_import_the_other_commands() -> None:
    probe = (
        "import sys\n"
        "from qjm.cli import main\n"
        "try:\n"
        "    main.main(['journalnode', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('qjm.cli.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    loaded = out.strip().splitlines()[-1]
    assert "'qjm.cli.journalnode'" in loaded
    for other in ("qjm.cli.namenode", "qjm.cli.cluster", "qjm.cli.analyze", "qjm.cli.fsck"):
        assert f"'{other}'" not in loaded, loaded


def test_an_unknown_command_still_lists_every_command() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "qjm", "no-such-command"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2
    assert "invalid choice: 'no-such-command'" in r.stderr
    for module in COMMANDS:
        assert command_of(module) in r.stderr
