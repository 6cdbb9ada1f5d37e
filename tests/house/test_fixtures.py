"""tests/fixtures holds unchanged copies of the shared reference material the tests need (so a fresh clone
passes alone); when ../shared is there, every copy must still equal its original."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, needs_shared, shared_dir

# fixture path (under tests/fixtures) -> original (under shared/reference)
COPIES = {
    "argo/argo-server-swagger-v4.1.2.json": "argo/argo-server-swagger-v4.1.2.json",
    "dynamo/templates-1.6.1-vllm-agg.yaml": "dynamo/templates-1.6.1/vllm/agg.yaml",
    "dynamo/recipes-llama-3-70b-vllm-agg-deploy.yaml": "dynamo/recipes/llama-3-70b/vllm/agg/deploy.yaml",
}


def test_the_fixtures_the_suite_needs_are_in_the_repository():
    for rel in COPIES:
        assert (FIXTURES / rel).is_file(), rel
    runs = sorted(p.name for p in (FIXTURES / "aiperf" / "0.13.0").iterdir())
    assert runs == [
        "dynamo-mocker-c4",
        "failed_threshold_cancelled_rc0",
        "partial_500s_rc0",
        "sigint_cancelled_rc0",
        "unreachable_rc1",
    ]


@needs_shared
@pytest.mark.parametrize("rel", sorted(COPIES))
def test_each_copied_file_equals_its_original(rel):
    assert (FIXTURES / rel).read_bytes() == (shared_dir() / "reference" / COPIES[rel]).read_bytes()


@needs_shared
def test_the_aiperf_artifact_dirs_equal_the_measured_originals():
    ours, theirs = FIXTURES / "aiperf" / "0.13.0", shared_dir() / "reference" / "aiperf" / "0.13.0"
    files = sorted(p.relative_to(theirs) for p in theirs.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
    for rel in files:
        assert (ours / rel).read_bytes() == (theirs / rel).read_bytes(), rel
