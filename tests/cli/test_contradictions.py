"""Contradictions on the command line are refused, one line, exit 2, nothing started (issue 38 item 12)."""

from __future__ import annotations

import pytest

from infersweep.cli import main as cli_main


@pytest.mark.parametrize(
    "argv, said",
    [
        (["run", "--local", "demo-prefix-kv", "--weights", "cache"], "--weights cache: only with --workers gpu"),
        (["run", "--local", "demo-prefix-kv", "--engine-cache", "x"], "--engine-cache: only with --workers gpu"),
        (["experiment", "run", "--local", "nemotron-rr-vs-kv", "--weights", "cache"], "--weights cache: only with"),
        (
            ["run", "--local", "demo-prefix-kv", "--set", "router=kv", "--set", "router=round-robin"],
            "--set router: given twice with different values",
        ),
        (
            ["render", "demo-prefix-kv", "--out", "x", "--set", "s3-prefix=a", "--set", "s3-prefix=b"],
            "--set s3-prefix: given twice with different values",
        ),
    ],
)
def test_a_contradiction_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys, argv, said):
    monkeypatch.chdir(tmp_path)
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err, err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "x").exists()


def test_the_same_set_twice_is_no_contradiction(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["render", "demo-prefix-kv", "--out", "x", "--set", "router=kv", "--set", "router=kv"]
    assert cli_main(argv) == 0


def test_validate_says_an_unpinned_revision_once_not_once_per_recipe(capsys):
    """Issue 38 item 15: `validate` printed the same "revision main" warning 51 times."""
    assert cli_main(["validate"]) == 0
    out = capsys.readouterr().out
    assert out.count("not a commit SHA") == 1
    (line,) = [ln for ln in out.splitlines() if "not a commit SHA" in ln]
    assert line.startswith("warning: ") and "@main" in line
