"""Where the project's data lives, found the same way from a checkout, an installed wheel and a step image."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def params_dir() -> Path:
    """Recipes and shared facts: $INFERSWEEP_PARAMS, else the checkout's params/."""
    return Path(os.environ.get("INFERSWEEP_PARAMS", REPO_ROOT / "params"))


def venv_python(name: str) -> str:
    """The interpreter of one of the project's side environments (.venv-aiperf, .venv-dynamo)."""
    env = os.environ.get(f"INFERSWEEP_{name.upper()}_PYTHON")
    return env or str(REPO_ROOT / f".venv-{name}" / "bin" / "python")
