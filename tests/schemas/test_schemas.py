"""infersweep.schemas against the real upstream schemas (no mocks): the copies shipped in
infersweep/reference, real upstream DGDs kept in tests/fixtures/dynamo, and, when ../shared is there,
every upstream Dynamo recipe and 1.6.1 template (those tests skip without it).

Every negative test asserts the offending path is named, so a validator that silently accepts
(or rejects everything) fails here.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from infersweep.schemas import (
    SchemaError,
    reference_dir,
    validate_argo,
    validate_dgd,
    validate_document,
    validate_yaml_stream,
)
from infersweep.schemas import core as schemas

ARGO_VERSIONS = ["v4.1.2", "v3.7.18"]
from tests.conftest import FIXTURES, needs_shared, shared_dir

REFERENCE = shared_dir() / "reference"  # upstream DGDs and templates; needed at collection time (may be absent)


def minimal_workflow(**spec) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "demo-"},
        "spec": {
            "entrypoint": "main",
            "templates": [{"name": "main", "container": {"image": "alpine:3", "command": ["true"]}}],
            **spec,
        },
    }


def error_lines(excinfo) -> list[str]:
    return str(excinfo.value).splitlines()


# ------------------------------------------------------------------------------------------------
# reference_dir


def test_reference_dir_is_the_copy_shipped_in_the_package(monkeypatch):
    monkeypatch.delenv("INFERSWEEP_REFERENCE", raising=False)
    assert reference_dir() == Path(schemas.__file__).resolve().parents[1] / "reference"


@needs_shared
def test_the_shipped_reference_matches_shared(monkeypatch):
    monkeypatch.delenv("INFERSWEEP_REFERENCE", raising=False)
    found = reference_dir()
    for rel in (
        "argo/schema-v4.1.2.json",
        "argo/schema-v3.7.18.json",
        "dynamo/crds/nvidia.com_dynamographdeployments.yaml",
    ):
        assert (found / rel).read_bytes() == (REFERENCE / rel).read_bytes(), f"{rel} differs from shared/reference"


def test_reference_dir_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("INFERSWEEP_REFERENCE", str(tmp_path))
    assert reference_dir() == tmp_path
    monkeypatch.setenv("INFERSWEEP_REFERENCE", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError):
        reference_dir()


@needs_shared
def test_reference_fixture(reference):
    assert reference == REFERENCE


# ------------------------------------------------------------------------------------------------
# Argo


@pytest.mark.parametrize("version", ARGO_VERSIONS)
def test_minimal_workflow_is_valid(version):
    validate_argo(minimal_workflow(), version)


def test_minimal_workflow_is_valid_for_all_versions_via_dispatch():
    validate_document(minimal_workflow())


@pytest.mark.parametrize("kind", ["WorkflowTemplate", "ClusterWorkflowTemplate"])
def test_templates_kinds_are_valid(kind):
    doc = minimal_workflow()
    doc["kind"] = kind
    doc["metadata"] = {"name": "bench-steps"}
    validate_document(doc)


@pytest.mark.parametrize("version", ARGO_VERSIONS)
def test_misspelled_spec_field_is_rejected_with_its_path(version):
    doc = minimal_workflow()
    doc["spec"]["entrypont"] = doc["spec"].pop("entrypoint")
    with pytest.raises(SchemaError) as excinfo:
        validate_argo(doc, version)
    assert error_lines(excinfo) == [
        f"Workflow/demo-: spec.entrypont: unknown field (did you mean 'entrypoint'?) (Argo {version})"
    ]


def test_unknown_field_deep_in_a_container_is_rejected():
    doc = minimal_workflow()
    doc["spec"]["templates"][0]["container"]["imagePullPolicyy"] = "Always"
    with pytest.raises(SchemaError, match=r"spec\.templates\[0\]\.container\.imagePullPolicyy: unknown field"):
        validate_document(doc)


def test_unknown_field_in_an_inline_dag_template_is_rejected():
    # DAGTask.inline is a Template again: the schema is recursive and must stay strict there.
    doc = minimal_workflow()
    doc["spec"]["templates"][0] = {
        "name": "main",
        "dag": {"tasks": [{"name": "a", "inline": {"container": {"image": "x"}, "retryStrateg": {}}}]},
    }
    with pytest.raises(SchemaError, match=r"spec\.templates\[0\]\.dag\.tasks\[0\]\.inline\.retryStrateg"):
        validate_document(doc)


@pytest.mark.parametrize("field", ["semaphore", "mutex"])
def test_singular_synchronization_fields_exist_only_in_v3(field):
    # v3.6 added plural `semaphores`/`mutexes`; 3.7 still accepts the deprecated singulars,
    # v4 removed them (Hera would drop them silently).
    lock = {"configMapKeyRef": {"name": "locks", "key": "gpu"}} if field == "semaphore" else {"name": "gpu"}
    plural = {"semaphore": "semaphores", "mutex": "mutexes"}[field]
    doc = minimal_workflow(synchronization={field: lock})
    validate_argo(doc, "v3.7.18")
    with pytest.raises(SchemaError) as excinfo:
        validate_argo(doc, "v4.1.2")
    assert error_lines(excinfo) == [
        f"Workflow/demo-: spec.synchronization.{field}: unknown field (did you mean '{plural}'?) (Argo v4.1.2)"
    ]
    with pytest.raises(SchemaError, match=r"\(Argo v4\.1\.2\)$"):
        validate_document(doc)  # names only the version that fails


@pytest.mark.parametrize("version", ARGO_VERSIONS)
def test_plural_synchronization_fields_are_valid(version):
    sync = {
        "semaphores": [{"configMapKeyRef": {"name": "locks", "key": "gpu"}}],
        "mutexes": [{"name": "gpu"}],
    }
    validate_argo(minimal_workflow(synchronization=sync), version)


def test_cron_workflow_schedule_singular_is_gone_in_v4():
    doc = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "CronWorkflow",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "workflowSpec": minimal_workflow()["spec"]},
    }
    validate_argo(doc, "v3.7.18")
    with pytest.raises(SchemaError) as excinfo:
        validate_argo(doc, "v4.1.2")
    assert error_lines(excinfo) == [
        "CronWorkflow/nightly: spec.schedule: unknown field (did you mean 'schedules'?) (Argo v4.1.2)",
        "CronWorkflow/nightly: spec.schedules: required field is missing (Argo v4.1.2)",
    ]
    doc["spec"]["schedules"] = [doc["spec"].pop("schedule")]
    validate_document(doc)


@pytest.mark.parametrize("limit", [3, "3"])
def test_int_or_string_accepts_int_and_string(limit):
    doc = minimal_workflow()
    template = doc["spec"]["templates"][0]
    template["retryStrategy"] = {"limit": limit, "backoff": {"duration": "10s", "factor": 2}}
    template["container"]["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}}
    template["container"]["ports"] = [{"containerPort": 8000, "name": "http"}]
    validate_document(doc)


def test_int_or_string_rejects_other_types():
    doc = minimal_workflow()
    doc["spec"]["templates"][0]["retryStrategy"] = {"limit": 2.5}
    with pytest.raises(SchemaError) as excinfo:
        validate_argo(doc)
    assert error_lines(excinfo) == [
        "Workflow/demo-: spec.templates[0].retryStrategy.limit: expected string or integer, got number (Argo v4.1.2)"
    ]


def test_container_port_is_integer_only():
    doc = minimal_workflow()
    doc["spec"]["templates"][0]["container"]["ports"] = [{"containerPort": "8000"}]
    with pytest.raises(SchemaError, match=r"ports\[0\]\.containerPort: expected integer, got string"):
        validate_argo(doc)


def test_quantities_accept_numbers():
    doc = minimal_workflow()
    resources = {"limits": {"nvidia.com/gpu": 1, "cpu": "500m"}, "requests": {"memory": "1Gi", "cpu": 0.5}}
    doc["spec"]["templates"][0]["container"]["resources"] = resources
    validate_document(doc)


def test_template_parallelism_and_friends():
    doc = minimal_workflow(parallelism=4)
    template = doc["spec"]["templates"][0]
    template.update(parallelism=2, activeDeadlineSeconds=600, timeout="10m", failFast=True)
    validate_document(doc)

    template["parallelism"] = "2"
    template["paralellism"] = 2
    with pytest.raises(SchemaError) as excinfo:
        validate_argo(doc)
    assert error_lines(excinfo) == [
        "Workflow/demo-: spec.templates[0].paralellism: unknown field (did you mean 'parallelism'?) (Argo v4.1.2)",
        "Workflow/demo-: spec.templates[0].parallelism: expected integer, got string (Argo v4.1.2)",
    ]


def test_workflow_metadata_name_and_labels_are_checked():
    doc = minimal_workflow()
    doc["metadata"] = {"name": "Bench_Run", "labels": {"app": "infer sweep", "team": 7}}
    with pytest.raises(SchemaError) as excinfo:
        validate_argo(doc)
    assert error_lines(excinfo) == [
        "Workflow/Bench_Run: metadata.labels.app: 'infer sweep' is not a valid label value (<=63 alnum, '-', '_', '.')",
        "Workflow/Bench_Run: metadata.labels.team: expected string, got integer (Argo v4.1.2)",
        "Workflow/Bench_Run: metadata.name: 'Bench_Run' is not a DNS-1123 subdomain (<=253, lowercase alnum, '-', '.')",
    ]


def test_unknown_argo_version_is_a_usage_error():
    with pytest.raises(ValueError, match="available"):
        validate_argo(minimal_workflow(), "v9.9.9")


def test_schema_error_lists_at_most_twenty_sorted_violations():
    doc = minimal_workflow()
    doc["spec"]["templates"] = [{"name": f"t{i}", "container": {"image": "x"}, "bogus": i} for i in range(25)]
    with pytest.raises(SchemaError) as excinfo:
        validate_argo(doc)
    lines = error_lines(excinfo)
    assert len(excinfo.value.violations) == 25
    assert len(lines) == 21 and lines[-1] == "... and 5 more"
    # numeric index order: [2] after [1], [10] after [9]
    assert lines[:3] == [f"Workflow/demo-: spec.templates[{i}].bogus: unknown field (Argo v4.1.2)" for i in range(3)]
    assert lines[10].startswith("Workflow/demo-: spec.templates[10].bogus")


def thirty_kb_workflow() -> dict:
    tasks, templates = [], []
    for i in range(32):
        tasks.append({"name": f"t{i}", "template": f"step-{i}", **({"depends": f"t{i - 1}"} if i else {})})
        templates.append(
            {
                "name": f"step-{i}",
                "inputs": {"parameters": [{"name": "x", "value": "1"}]},
                "retryStrategy": {"limit": 3, "retryPolicy": "OnFailure", "backoff": {"duration": "10s"}},
                "container": {
                    "image": "python:3.11",
                    "command": ["python", "-m", "steps.run"],
                    "args": ["--x", "{{inputs.parameters.x}}"],
                    "env": [{"name": f"E{j}", "value": "v"} for j in range(5)],
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi"},
                        "limits": {"nvidia.com/gpu": "1"},
                    },
                    "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
                    "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                },
                "outputs": {"parameters": [{"name": "out", "valueFrom": {"path": "/tmp/out"}}]},
            }
        )
    return minimal_workflow(templates=[{"name": "main", "dag": {"tasks": tasks}}, *templates])


# ------------------------------------------------------------------------------------------------
# DynamoGraphDeployment

TEMPLATES = sorted((REFERENCE / "dynamo" / "templates-1.6.1").glob("*/*.yaml"))


def _recipe_docs(kinds: set[str]) -> list[tuple[str, int, dict]]:
    root = REFERENCE / "dynamo" / "recipes"
    found = []
    for path in sorted(root.rglob("*.yaml")):
        for index, doc in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d):
            if doc.get("kind") in kinds:
                found.append((str(path.relative_to(root)), index, doc))
    return found


RECIPE_DGDS = _recipe_docs({"DynamoGraphDeployment"})

# Upstream documents our checker rejects ON PURPOSE although the API server accepts them.
# `subComponentType: null`: the API server prunes nulls of non-nullable fields (so it deploys,
# as if the field were absent); we reject null because a None rendered from our Python means a
# missing value that would vanish silently. Not hidden: the exact violation is asserted.
KNOWN_UPSTREAM_NULLS = {
    "qwen3-32b/vllm/disagg-kv-router/deploy.yaml": [
        "DynamoGraphDeployment/disagg-router-6p-2d: spec.services.Frontend.subComponentType: expected string, got null"
    ],
}


def drop_nulls(value):
    """What the API server does to nulls of non-nullable fields before validation."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


@needs_shared
def test_there_are_templates_and_recipes_of_both_versions():
    assert len(TEMPLATES) >= 7
    versions = {doc["apiVersion"] for _, _, doc in RECIPE_DGDS}
    assert versions == {"nvidia.com/v1alpha1", "nvidia.com/v1beta1"}


@needs_shared
@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_dynamo_templates_validate(path):
    text = path.read_text()
    doc = yaml.safe_load(text)
    assert doc["apiVersion"] == "nvidia.com/v1beta1"
    validate_dgd(doc)
    assert validate_yaml_stream(text) == 1


@needs_shared
@pytest.mark.parametrize("relpath,index,doc", RECIPE_DGDS, ids=[f"{r}#{i}" for r, i, _ in RECIPE_DGDS])
def test_upstream_recipe_dgds_validate(relpath, index, doc):
    expected = KNOWN_UPSTREAM_NULLS.get(relpath)
    if expected is None:
        validate_dgd(doc)
        return
    with pytest.raises(SchemaError) as excinfo:
        validate_dgd(doc)
    assert error_lines(excinfo) == expected
    validate_dgd(drop_nulls(doc))


@needs_shared
@pytest.mark.parametrize(
    "relpath,index,doc",
    _recipe_docs({"ConfigMap", "PersistentVolumeClaim"}),
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_upstream_recipe_core_objects_validate(relpath, index, doc):
    validate_document(doc)


@needs_shared
def test_upstream_jobs_and_pods_have_no_schema_and_fail_loudly():
    docs = _recipe_docs({"Job", "Pod"})
    assert docs
    for _, _, doc in docs:
        with pytest.raises(SchemaError, match=r": kind: no schema for "):
            validate_document(doc)


@pytest.fixture
def v1beta1_dgd() -> dict:
    # Dynamo 1.6.1 templates-1.6.1/vllm/agg.yaml, copied unchanged into the repo.
    return yaml.safe_load((FIXTURES / "dynamo" / "templates-1.6.1-vllm-agg.yaml").read_text())


@pytest.fixture
def v1alpha1_dgd() -> dict:
    # Upstream recipes/llama-3-70b/vllm/agg/deploy.yaml, copied unchanged into the repo.
    path = FIXTURES / "dynamo" / "recipes-llama-3-70b-vllm-agg-deploy.yaml"
    return yaml.safe_load(path.read_text())


def test_v1beta1_unknown_component_field_is_rejected(v1beta1_dgd):
    v1beta1_dgd["spec"]["components"][1]["replica"] = 2
    v1beta1_dgd["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]["imagee"] = "x"
    with pytest.raises(SchemaError) as excinfo:
        validate_document(v1beta1_dgd)
    assert error_lines(excinfo) == [
        "DynamoGraphDeployment/vllm-agg: spec.components[1].podTemplate.spec.containers[0].imagee: "
        "unknown field (did you mean 'image'?)",
        "DynamoGraphDeployment/vllm-agg: spec.components[1].replica: unknown field (did you mean 'replicas'?)",
    ]


def test_v1alpha1_unknown_service_field_is_rejected(v1alpha1_dgd):
    v1alpha1_dgd["spec"]["services"]["Frontend"]["componentTyp"] = "frontend"
    with pytest.raises(SchemaError) as excinfo:
        validate_dgd(v1alpha1_dgd)
    assert error_lines(excinfo) == [
        "DynamoGraphDeployment/llama3-70b-agg: spec.services.Frontend.componentTyp: "
        "unknown field (did you mean 'componentType'?)"
    ]


def test_v1alpha1_fields_are_not_v1beta1_fields(v1alpha1_dgd):
    v1alpha1_dgd["apiVersion"] = "nvidia.com/v1beta1"
    with pytest.raises(SchemaError, match=r"spec\.services: unknown field"):
        validate_dgd(v1alpha1_dgd)


def test_v1beta1_scaling_adapter_takes_no_fields(v1beta1_dgd):
    # v1beta1 `scalingAdapter` is presence-only: the API server would prune `enabled: false`
    # to `{}`, which ENABLES the adapter. Our checker must refuse the field.
    v1beta1_dgd["spec"]["components"][1]["scalingAdapter"] = {"enabled": False}
    with pytest.raises(SchemaError, match=r"scalingAdapter\.enabled: unknown field \(this object takes no fields\)"):
        validate_dgd(v1beta1_dgd)
    v1beta1_dgd["spec"]["components"][1]["scalingAdapter"] = {}
    validate_dgd(v1beta1_dgd)


def test_dgd_int_or_string_and_preserve_unknown_fields(v1beta1_dgd):
    worker = v1beta1_dgd["spec"]["components"][1]
    worker["podTemplate"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1
    worker["providerOverride"] = {
        "apiVersion": "grove.io/v1alpha1",
        "value": {"anything": {"goes": ["here"]}},
    }
    validate_dgd(v1beta1_dgd)


@pytest.mark.parametrize("name", ["Vllm-Agg", "vllm_agg", "-vllm", "x" * 254])
def test_dgd_invalid_metadata_name_is_rejected(v1beta1_dgd, name):
    v1beta1_dgd["metadata"]["name"] = name
    with pytest.raises(SchemaError, match=r": metadata\.name: .* is not a DNS-1123 subdomain"):
        validate_dgd(v1beta1_dgd)


def test_dgd_metadata_is_checked_by_hand(v1beta1_dgd):
    v1beta1_dgd["metadata"] = {
        "name": "vllm-agg.v1",
        "labels": {"example.com/run": "a" * 64, "bad key": "x", "ok": "yes"},
        "annotation": {"x": "y"},
    }
    with pytest.raises(SchemaError) as excinfo:
        validate_dgd(v1beta1_dgd)
    prefix = "DynamoGraphDeployment/vllm-agg.v1: metadata."
    assert error_lines(excinfo) == [
        prefix + "annotation: unknown field",
        prefix + "labels[\"bad key\"]: invalid key (optional DNS prefix + '/' + name of <=63 alnum, '-', '_', '.')",
        prefix + f"labels[\"example.com/run\"]: '{'a' * 64}' is not a valid label value (<=63 alnum, '-', '_', '.')",
    ]


def test_dgd_requires_a_name(v1beta1_dgd):
    v1beta1_dgd["metadata"] = {"generateName": "vllm-"}
    with pytest.raises(SchemaError, match=r"metadata\.name: required field is missing"):
        validate_dgd(v1beta1_dgd)


@pytest.mark.parametrize("api_version", ["nvidia.com/v1", "nvidia.com/v1alpha2", "apps/v1"])
def test_dgd_other_api_versions_are_rejected(v1beta1_dgd, api_version):
    v1beta1_dgd["apiVersion"] = api_version
    with pytest.raises(SchemaError, match="apiVersion: expected DynamoGraphDeployment of"):
        validate_dgd(v1beta1_dgd)


def test_crd_conversion_rules():
    node = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "ignored"}],
        "properties": {
            "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "port": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
            "empty": {"type": "object"},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    converted = schemas._crd_to_json_schema(node)
    assert converted["additionalProperties"] is False
    assert "x-kubernetes-validations" not in converted
    props = converted["properties"]
    assert "additionalProperties" not in props["open"]
    assert props["port"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert props["empty"]["additionalProperties"] is False
    assert props["map"]["additionalProperties"] == {"type": "string"}


# ------------------------------------------------------------------------------------------------
# Kubernetes core / RBAC objects and streams

RBAC_STREAM = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: infersweep}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: infersweep-dgd}
rules:
- apiGroups: [nvidia.com]
  resources: [dynamographdeployments]
  verbs: [get, list, watch, create, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: infersweep-dgd}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: infersweep-dgd}
subjects:
- {kind: ServiceAccount, name: infersweep, namespace: bench}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: sweep-config, labels: {app.kubernetes.io/part-of: infersweep}}
data:
  sweep.yaml: "concurrency: [1, 4]"
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: model-cache}
spec:
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 100Gi}}
"""


def test_core_and_rbac_stream_validates():
    assert validate_yaml_stream(RBAC_STREAM + "---\n") == 5  # trailing empty document not counted


@pytest.mark.parametrize(
    "old,new,expected",
    [
        (
            "  verbs: [get",
            "  verb: [get",
            "Role/infersweep-dgd: rules[0].verb: unknown field (did you mean 'verbs'?)",
        ),
        (
            "roleRef: {apiGroup: rbac.authorization.k8s.io, ",
            "roleRef: {",
            "roleRef.apiGroup: required field is missing",
        ),
        (
            "- {kind: ServiceAccount, name: infersweep, ",
            "- {kind: ServiceAccount, nmae: infersweep, ",
            "subjects[0].nmae",
        ),
        ("data:\n", "date:\n", "ConfigMap/sweep-config: date: unknown field (did you mean 'data'?)"),
        (
            "metadata: {name: infersweep}",
            "metadata: {name: infersweep}\nsecret: []",
            "ServiceAccount/infersweep: secret",
        ),
        ("accessModes:", "accesModes:", "PersistentVolumeClaim/model-cache: spec.accesModes: unknown field"),
        (
            "metadata: {name: model-cache}",
            "metadata: {name: Model_Cache}",
            "metadata.name: 'Model_Cache' is not",
        ),
    ],
)
def test_core_and_rbac_typos_are_rejected(old, new, expected):
    assert old in RBAC_STREAM
    with pytest.raises(SchemaError) as excinfo:
        validate_yaml_stream(RBAC_STREAM.replace(old, new, 1))
    assert expected in str(excinfo.value)


def test_stream_reports_violations_of_all_documents():
    bad_wf = yaml.safe_dump(minimal_workflow(entrypont="main"))
    stream = RBAC_STREAM.replace("verbs:", "verb:") + "---\n" + bad_wf
    with pytest.raises(SchemaError) as excinfo:
        validate_yaml_stream(stream)
    text = str(excinfo.value)
    assert "Role/infersweep-dgd: rules[0].verb" in text
    assert "Workflow/demo-: spec.entrypont: unknown field" in text


def test_unsupported_kinds_and_non_mappings_fail_loudly():
    with pytest.raises(SchemaError, match="no schema for apps/v1 Deployment"):
        validate_document({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}})
    with pytest.raises(SchemaError, match="apiVersion and kind are required"):
        validate_document({"metadata": {"name": "x"}})
    with pytest.raises(SchemaError, match="expected a mapping"):
        validate_yaml_stream("- just\n- a list\n")


def test_validation_does_not_mutate_the_document():
    doc = thirty_kb_workflow()
    before = copy.deepcopy(doc)
    validate_document(doc)
    assert doc == before
