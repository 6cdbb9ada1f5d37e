"""Rendering matches the golden YAML committed in tests/golden (regenerate: python -m tests.support.golden)."""

from __future__ import annotations

import pytest

from tests.support.golden import GOLDEN_DIR, golden_documents

DOCS = golden_documents()


@pytest.mark.parametrize("rel", sorted(DOCS))
def test_rendered_matches_golden(rel):
    f = GOLDEN_DIR / rel
    assert f.exists(), f"{rel} is rendered but not committed: run python -m tests.support.golden"
    assert f.read_text() == DOCS[rel], (
        f"{rel} drifted from the golden file: review, then python -m tests.support.golden"
    )


def test_no_stale_golden_files():
    committed = {str(p.relative_to(GOLDEN_DIR)) for p in GOLDEN_DIR.rglob("*.yaml")}
    assert committed == set(DOCS), f"stale: {sorted(committed - set(DOCS))}"
