"""The type checker (issue 40 item 5): mypy over the packages pyproject.toml [tool.mypy] lists, clean. A Protocol
view an engine reads that no longer matches the recipe model, a None that reaches an int, a name that shadows
`from __future__ import annotations`: errors before a test reaches the line. mypy is a test dependency."""

import subprocess
import sys
import tomllib

from tests.support.paths import REPO


def _mypy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_typed_packages_type_check():
    files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    assert {"infersweep/dgd", "infersweep/aiperf", "infersweep/recipe", "infersweep/results"} <= set(files)
    r = _mypy()
    assert r.returncode == 0, f"fix what `mypy` (pyproject.toml [tool.mypy]) reports:\n{r.stdout}{r.stderr}"


def test_the_checker_would_catch_a_view_the_recipe_no_longer_satisfies(tmp_path):
    """The checker is on, and strict enough for the mistake it is there for: a function that hands a recipe
    model to an engine whose view wants an attribute the model lacks."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from infersweep.engines.views import KvOffload\n"
        "class Offload:\n"
        "    cpu_gib: float | None = None\n"
        "def read(v: KvOffload) -> float | None:\n"
        "    return v.cpu_gib\n"
        "read(Offload())\n"
    )
    r = _mypy(str(bad))
    assert r.returncode == 1 and "incompatible type" in r.stdout, r.stdout + r.stderr
