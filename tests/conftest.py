"""Shared pytest fixtures.

Two kinds of reference material:
  * fixtures the tests *need* live in the repository (tests/fixtures/: measured AIPerf artifact dirs, the
    Argo Server swagger, two upstream DGDs), so a fresh clone with nothing beside it passes;
  * outside material the tests only *compare with* (the seed documents, upstream Dynamo recipes and
    templates) stays in the read-only shared/ folder beside the checkout; those tests skip with
    SHARED_SKIP_REASON when it is absent. CI sets INFERSWEEP_REQUIRE_SHARED=1 to turn the skip into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES, REPO  # noqa: F401 (REPO: imported from here by tests)


def shared_dir() -> Path:
    """The read-only shared/ folder beside the checkout; $INFERSWEEP_SHARED overrides it. May not exist."""
    env = os.environ.get("INFERSWEEP_SHARED")
    return Path(env) if env else REPO.parent / "shared"


SHARED_SKIP_REASON = (
    f"compares with outside material in {shared_dir()} (seed documents / upstream Dynamo recipes and "
    "templates), which is absent: clone it beside the repository or set INFERSWEEP_SHARED"
)


def has_shared() -> bool:
    """Whether the shared/ folder is there. Absent + INFERSWEEP_REQUIRE_SHARED=1 is an error (CI)."""
    present = (shared_dir() / "reference").is_dir()
    if not present and os.environ.get("INFERSWEEP_REQUIRE_SHARED") == "1":
        raise RuntimeError(f"INFERSWEEP_REQUIRE_SHARED=1 but {shared_dir()} has no reference/")
    return present


# Mark a test (or `pytestmark = needs_shared` a module) that reads shared/.
needs_shared = pytest.mark.skipif(not has_shared(), reason=SHARED_SKIP_REASON)


@pytest.fixture(scope="session")
def reference() -> Path:
    """The read-only shared/reference folder (upstream Dynamo recipes/templates, ...); skips when absent."""
    if not has_shared():
        pytest.skip(SHARED_SKIP_REASON)
    return shared_dir() / "reference"


@pytest.fixture(scope="session")
def aiperf_ref() -> Path:
    """Real AIPerf 0.13.0 artifact dirs (a good run and its failure cases), measured once; in the repo."""
    return FIXTURES / "aiperf" / "0.13.0"


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy a fixture dir writable (the shared originals are read-only, modes included)."""
    for root, _dirs, files in os.walk(src):
        target = dst / Path(root).relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            (target / name).write_bytes((Path(root) / name).read_bytes())
    return dst
