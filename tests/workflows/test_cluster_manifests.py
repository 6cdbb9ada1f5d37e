"""What `infersweep install --dry-run` prints: the full set, every document valid, RBAC least-privilege.
(The GPU guard's ConfigMap and admission: tests/workflows/test_gpu_guard.py.)"""

from __future__ import annotations

import pytest
import yaml

from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from infersweep.schemas import validate_yaml_stream
from workflows.cluster import STEP_RULES, step_role, steps_role

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


def test_roles_are_namespaced_and_each_step_gets_only_its_own_calls():
    """The workflows' own account may only report outputs; deploy may create but not delete a DGD, teardown
    delete but not create one (tests/house/test_least_privilege.py derives every Role from the code)."""
    settings = load_cluster_settings()

    def rules(role):
        assert role["kind"] == "Role"
        return {
            (g, r): set(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
        }

    assert rules(steps_role()) == {("argoproj.io", "workflowtaskresults"): {"create", "patch"}}
    deploy, teardown = rules(step_role(settings, "deploy")), rules(step_role(settings, "teardown"))
    # list: its lane; update: a retried deploy replaces its own DGD (infersweep/platform/dgd_update.py)
    assert deploy[("nvidia.com", "dynamographdeployments")] == {"get", "list", "create", "update"}
    assert teardown[("nvidia.com", "dynamographdeployments")] == {"get", "delete"}
    assert deploy[("", "pods")] == {"list"} and deploy[("", "pods/log")] == {"get"}
    assert rules(step_role(settings, "ensure-pvc"))[("", "persistentvolumeclaims")] == {"get", "create"}
    for step in STEP_RULES:
        r = rules(step_role(settings, step))
        assert r[("argoproj.io", "workflowtaskresults")] == {"create", "patch"}
        assert not any("*" in v for v in r.values()) and ("", "secrets") not in r
