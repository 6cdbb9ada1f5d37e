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
