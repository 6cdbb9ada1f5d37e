"""The front door and docs/ link only to files that exist, and README stays a front door."""

import re

from tests.support.paths import REPO

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _pages():
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_relative_link_resolves():
    broken = []
    for page in _pages():
        for target in LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, "links to missing files:\n" + "\n".join(broken)


def test_readme_is_a_front_door():
    """Issue 23: about 150-200 lines, the cluster path as numbered steps, generated tables in docs/."""
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    steps = re.findall(r"^(\d+)\. \*\*", text, flags=re.M)
    assert steps == [str(i) for i in range(1, len(steps) + 1)] and len(steps) >= 6
    assert "catalog:begin" not in text and "(docs/catalog.md)" in text
    # the two commands CI and a new user run, exactly as .ci/run runs the second
    assert "scripts/setup.sh && .venv/bin/infersweep run --local nemotron-3-nano-fp8-vllm-agg-kv" in text
    ci = (REPO / ".ci" / "run").read_text()
    assert (
        "scripts/setup.sh --engines && .venv/bin/python -m pytest -q" in text
        and "scripts/setup.sh --engines && .venv/bin/python -m pytest -q" in ci
    )
