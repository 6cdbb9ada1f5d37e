"""Claims in comments and docs that the code contradicted (issue 34 item 14), each checked against what the
code renders, so the text cannot drift again unnoticed."""

from __future__ import annotations

import re

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.experiment.plan import make_plan
from infersweep.experiment.spec import all_experiment_paths, load_experiment
from infersweep.paths import params_dir
from tests.support.paths import REPO
from workflows import gpu_guard
from workflows.experiment import experiment_workflow
from workflows.pipeline import pipeline_template
from workflows.strict import violations


@pytest.fixture(scope="module")
def span_tasks() -> list[str]:
    wt = pipeline_template("vllm", "agg", load_cluster_settings()).to_dict()
    span = next(t for t in wt["spec"]["templates"] if t["name"] == "gpu-span")
    return [t["name"] for t in span["dag"]["tasks"]]


def test_the_gpu_guard_is_not_said_to_cover_teardown(span_tasks):
    """The lock is the gpu-span template's; teardown is the exit handler's, after the release."""
    assert "teardown" not in span_tasks and "deploy" in span_tasks
    first = gpu_guard.__doc__.split("\n\n", 1)[0]
    span = re.search(r"\(([^()]*->[^()]*)\)", first).group(1)
    assert "teardown" not in span, f"workflows/gpu_guard.py says the span is ({span})"
    line = next(ln for ln in (params_dir() / "cluster.yaml").read_text().splitlines() if "workflows/gpu_guard.py" in ln)
    assert "to teardown" not in line, f"params/cluster.yaml: {line}"


def test_docs_do_not_say_the_experiment_workflow_is_refused_under_strict():
    settings = load_cluster_settings()
    for p in all_experiment_paths():
        assert violations(experiment_workflow(make_plan(load_experiment(p)), settings).to_dict()) == []
    for doc in ("docs/local-executor.md", "docs/experiments.md"):
        text = " ".join((REPO / doc).read_text().split())
        assert "experiment's Workflow has inline templates, which Strict refuses" not in text, doc
        assert "`experiment submit` is not built" not in text, doc
