"""Format and import order are ruff's (pyproject.toml [tool.ruff]): `ruff format` and `ruff check --fix` make a
tree pass, so a review never argues about either. ruff is a test dependency (`.[test]`)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

CHECKED = ["infersweep", "steps", "workflows", "benchmarks", "scripts", "tests"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        pytest.fail("ruff is not installed in this environment: scripts/setup.sh installs it with .[test]")
    return subprocess.run([ruff, *args, *CHECKED], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_the_code_is_formatted():
    r = _ruff("format", "--check")
    assert r.returncode == 0, f"run `ruff format {' '.join(CHECKED)}`:\n{r.stdout}{r.stderr}"


def test_imports_are_in_order():
    r = _ruff("check", "--select", "I")
    assert r.returncode == 0, f"run `ruff check --select I --fix {' '.join(CHECKED)}`:\n{r.stdout}{r.stderr}"


def test_pyflakes_and_bugbear_find_nothing():
    """An undefined name, an unused import, a loop variable a closure captures late, a zip that drops the tail of
    a longer list: errors in every checked folder (pyproject.toml selects F and B), whether or not a test runs the line."""
    r = _ruff("check", "--select", "F,B", "--no-fix")
    assert r.returncode == 0, f"fix what `ruff check --select F,B {' '.join(CHECKED)}` reports:\n{r.stdout}{r.stderr}"


def test_the_lint_rules_would_catch_an_undefined_name(tmp_path):
    """The check above is live: the same ruff, the same configuration, on a module that calls a name it never
    imported (the shape of experiment_run.py's render_dgd NameError) reports F821."""
    bad = tmp_path / "calls_unimported.py"
    bad.write_text("def deploy(recipe):\n    return render_dgd(recipe)\n")
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    r = subprocess.run(
        [ruff, "check", "--config", str(REPO / "pyproject.toml"), str(bad)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 1 and "F821" in r.stdout, r.stdout + r.stderr
