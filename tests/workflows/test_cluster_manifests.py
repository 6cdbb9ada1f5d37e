"""What `infersweep install --dry-run` prints: the full set, every document valid, RBAC least-privilege.
(The GPU guard's ConfigMap and admission: tests/workflows/test_gpu_guard.py.)"""

from __future__ import annotations

import pytest
import yaml

from infersweep.cli import main
from infersweep.schemas import validate_yaml_stream
from workflows.cluster import steps_role

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"


@pytest.fixture(scope="module")
def dry_run():
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        assert main(["install", "--dry-run"]) == 0
    return buf.getvalue()


def test_dry_run_prints_the_full_valid_set(dry_run):
    docs = list(yaml.safe_load_all(dry_run))
    assert validate_yaml_stream(dry_run) == len(docs)
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs]
    names = {n for _, n in kinds}
    for engine in ("vllm", "sglang", "trtllm"):
        for topo in ("agg", "disagg"):
            assert f"infersweep-{engine}-{topo}" in names
    assert ("CronWorkflow", f"nightly-{RECIPE}") in kinds
    assert ("ConfigMap", "infersweep-gpu-pools") in kinds and ("ConfigMap", "artifact-repositories") in kinds
    assert {"ServiceAccount", "Role", "RoleBinding"} <= {k for k, _ in kinds}
    pipeline = next(d for d in docs if d["metadata"]["name"] == "infersweep-vllm-agg")
    assert pipeline["spec"]["artifactRepositoryRef"] == {"configMap": "artifact-repositories", "key": "infersweep-s3"}
    assert pipeline["spec"]["serviceAccountName"] == "infersweep"


def test_role_is_namespaced_and_grants_only_what_the_steps_call():
    role = steps_role()
    assert role["kind"] == "Role"
    rules = {(g, r): set(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert rules[("nvidia.com", "dynamographdeployments")] == {
        "get",
        "list",
        "create",
        "update",
        "delete",
    }  # list: deploy waits for its lane; update: a retried deploy replaces its own DGD (platform/dgd_update.py)
    assert rules[("", "pods")] == {"list"} and rules[("", "pods/log")] == {"get"}
    assert rules[("", "events")] == {"list"}
    assert rules[("", "persistentvolumeclaims")] == {"get", "create"}
    assert rules[("argoproj.io", "workflowtaskresults")] == {"create", "patch"}
    assert not any("*" in v for v in rules.values()) and ("", "secrets") not in rules
