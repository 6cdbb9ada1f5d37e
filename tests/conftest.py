"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def reference() -> Path:
    """The read-only shared/reference folder (Argo schemas, Dynamo CRDs/recipes/templates, ...)."""
    return shared_dir() / "reference"


def shared_dir() -> Path:
    """The read-only shared/ folder beside the checkout; $INFERSWEEP_SHARED overrides it."""
    import os

    env = os.environ.get("INFERSWEEP_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def aiperf_ref() -> Path:
    """Real AIPerf 0.13.0 artifact dirs (a good run and its failure cases), measured once."""
    path = shared_dir() / "reference" / "aiperf" / "0.13.0"
    if not path.is_dir():
        pytest.fail(f"AIPerf reference artifacts missing at {path} (set INFERSWEEP_SHARED)")
    return path


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy a fixture dir writable (the shared originals are read-only, modes included)."""
    import os

    for root, _dirs, files in os.walk(src):
        target = dst / Path(root).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            (target / name).write_bytes((Path(root) / name).read_bytes())
    return dst
