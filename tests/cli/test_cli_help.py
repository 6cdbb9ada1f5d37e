"""`--help` of the top level and of every subcommand (nested ones too) prints usage and exits 0.

argparse formats help strings with `%` (`%(default)s`), so a literal `%` in a help text crashes
`infersweep --help` with a TypeError; commands are discovered, so this walks the real parser tree and a
new command is covered without editing this file.
"""

from __future__ import annotations

import argparse

import pytest

from infersweep.cli import build_parser, main


def _command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths += _command_paths(sub, prefix + (name,))
    return paths


PATHS = _command_paths(build_parser())


def test_every_command_is_walked():
    # the walk reaches the subcommands (not just the top level), so the parametrised test means something
    assert len(PATHS) > 10 and ("compare",) in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "infersweep")
def test_help_prints_usage(path, capsys):
    with pytest.raises(SystemExit) as e:
        main([*path, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: infersweep") and "show this help message" in out
