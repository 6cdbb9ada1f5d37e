"""What `infersweep run --local` prints for an unfinished run is a command that works when pasted (issue 38)."""

from __future__ import annotations

import shlex
from pathlib import Path

from infersweep.cli import build_parser
from infersweep.cli_util import parse_sets
from infersweep.commands.run import finish_commands
from infersweep.recipe import load_recipe
from infersweep.recipe_context import recipe_hash


def _parse(argv: list[str]):
    return build_parser(argv).parse_args(argv)


def _hash(a) -> str:
    return recipe_hash(load_recipe(a.recipe, overrides=parse_sets(a.set).recipe))


def test_the_finish_command_gives_the_runs_own_set_so_the_resume_is_accepted(tmp_path):
    """Item 8: the hint omitted --set, so the pasted --resume exited 2 ("recipe hash differs")."""
    argv = ["run", "--local", "demo-prefix-kv", "--out", str(tmp_path / "my runs"), "--set", "router=round-robin"]
    ran = _parse(argv)
    run_dir = tmp_path / "my runs" / "demo-prefix-kv-20261203-000000"
    line = finish_commands(ran, run_dir)[0]
    assert line.startswith("to finish this run: ")
    pasted = _parse(shlex.split(line.removeprefix("to finish this run: "))[1:])
    assert pasted.resume == str(run_dir) and pasted.out == ran.out
    assert _hash(pasted) == _hash(ran)  # run_local's --resume check (infersweep/local/run.py) accepts it


def test_a_retried_run_is_finished_by_retrying_it_again(tmp_path):
    """A --retry run has no RECIPE on its command line: the hint is no `run --local RECIPE --resume`."""
    ran = _parse(["run", "--local", "--retry", str(tmp_path)])
    lines = finish_commands(ran, Path(tmp_path))
    assert lines == [f"to finish this run: infersweep run --local --retry {shlex.quote(str(tmp_path))}"]
