"""Where things are, for every test: one REPO constant instead of a `Path(__file__).parents[N]` per file
(the test files sit one folder deeper, in tests/<area>/, since issue 22 item 7)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"
