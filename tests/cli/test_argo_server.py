"""install / submit / status / list against a stand-in for the Argo Server, through Hera's real WorkflowsService.

There is no Argo Server on this machine. The stand-in (tests/support/argo_server_standin.py) is built from the
Argo Server's swagger (tests/fixtures/argo/argo-server-swagger-v4.1.2.json, an unchanged copy): the same paths
(/api/v1/workflow-templates/{ns}, /api/v1/cron-workflows/{ns}, /api/v1/workflows/{ns}, .../{name}), the same request bodies
(WorkflowTemplateCreateRequest {namespace, template}, UpdateCronWorkflowRequest {cronWorkflow}, ...), the
same error body (grpc-gateway `{code, message}`) and status codes (404 NotFound, 409 AlreadyExists/Conflict,
401), and Kubernetes' optimistic concurrency (an update must carry the current resourceVersion). Every
request body is validated with the strict schemas (infersweep.schemas, unknown fields refused), and
every object it returns is validated the same way, so the client is tested against what a real server
accepts and returns, not against what the client happens to send.
"""

from __future__ import annotations

import json

import pytest

from infersweep.argo_server import ArgoConfigError, ArgoServerError, load_config, to_hera_model
from infersweep.cli import main
from infersweep.schemas import SchemaError, validate_document
from tests.support.argo_server_standin import NS, RECIPE, SWAGGER


def test_the_stand_in_follows_the_swagger_paths():
    paths = json.loads(SWAGGER.read_text())["paths"]
    for p in (
        "/api/v1/workflow-templates/{namespace}",
        "/api/v1/workflow-templates/{namespace}/{name}",
        "/api/v1/cron-workflows/{namespace}",
        "/api/v1/cron-workflows/{namespace}/{name}",
        "/api/v1/workflows/{namespace}",
        "/api/v1/workflows/{namespace}/{name}",
    ):
        assert p in paths
    assert "put" in paths["/api/v1/workflow-templates/{namespace}/{name}"]
    defs = json.loads(SWAGGER.read_text())["definitions"]
    assert set(defs["io.argoproj.workflow.v1alpha1.WorkflowTemplateCreateRequest"]["properties"]) == {
        "createOptions",
        "namespace",
        "template",
    }
    assert "cronWorkflow" in defs["io.argoproj.workflow.v1alpha1.UpdateCronWorkflowRequest"]["properties"]


def test_install_twice_updates_in_place_without_duplicates(argo, capsys):
    assert main(["install"]) == 0
    first = capsys.readouterr().out
    templates, crons = argo.objects("workflow-templates"), argo.objects("cron-workflows")
    assert len(templates) == 16 + 3 * 2 + 1 + 2 + 6, (
        "16 step templates + 3 engines x 2 topologies + the reaper's + 2 launchers + the 6 experiments'"
    )
    assert {t["metadata"]["name"] for t in templates} >= {
        "infersweep-vllm-agg",
        "infersweep-sglang-disagg",
        "infersweep-wait-ready",
        "infersweep-regression-check",
    }
    nightly = [c for c in crons if c["metadata"]["name"] != "infersweep-reaper"]
    assert len(nightly) == 1 and nightly[0]["spec"]["concurrencyPolicy"] == "Forbid"
    assert {c["metadata"]["name"] for c in crons} - {n["metadata"]["name"] for n in nightly} == {"infersweep-reaper"}
    assert first.count("created ") == 33 and "kubectl apply" in first and "ConfigMap/infersweep-gpu-pools" in first
    rv_before = {t["metadata"]["name"]: int(t["metadata"]["resourceVersion"]) for t in templates}

    assert main(["install"]) == 0
    second = capsys.readouterr().out
    assert second.count("updated ") == 33 and "created " not in second
    templates = argo.objects("workflow-templates")
    assert len(templates) == 31 and len(argo.objects("cron-workflows")) == 2
    for t in templates:
        assert int(t["metadata"]["resourceVersion"]) > rv_before[t["metadata"]["name"]]
    assert ("PUT", f"/api/v1/workflow-templates/{NS}/infersweep-vllm-agg") in argo.requests


def test_submit_status_list_round_trip(argo, capsys):
    assert main(["install"]) == 0
    capsys.readouterr()
    assert main(["submit", RECIPE, "--set", "prometheus-url=http://prom:9090"]) == 0
    out = capsys.readouterr().out
    (wf,) = argo.objects("workflows")
    name = wf["metadata"]["name"]
    assert f"{argo.url}/workflows/{NS}/{name}" in out
    assert wf["spec"]["workflowTemplateRef"] == {"name": "infersweep-vllm-agg"}
    params = {p["name"]: p["value"] for p in wf["spec"]["arguments"]["parameters"]}
    assert params["prometheus-url"] == "http://prom:9090"
    # The GPU guard is on the pipeline template's gpu-span (tests/workflows/test_gpu_guard.py); the run carries its keys.
    assert "synchronization" not in wf["spec"] and params["gpu-lock-1"] == "h100-8gpu"
    assert wf["metadata"]["labels"]["infersweep.io/model"].startswith("nvidia_NVIDIA-Nemotron-3-Nano")

    # What the controller writes back (shape of io.argoproj.workflow.v1alpha1.WorkflowStatus).
    wf["status"] = {
        "phase": "Failed",
        "progress": "4/6",
        "startedAt": "2025-01-01T01:00:00Z",
        "finishedAt": "2025-01-01T01:09:00Z",
        "message": "child 'wait-ready' failed",
        "nodes": {
            f"{name}-1": {
                "id": f"{name}-1",
                "name": f"{name}.wait-ready",
                "displayName": "wait-ready",
                "type": "Pod",
                "phase": "Failed",
                "message": "pod w-0 container main: ImagePullBackOff",
            }
        },
    }
    validate_document(wf)
    assert main(["status", name]) == 0
    out = capsys.readouterr().out
    assert "Failed (4/6)" in out and "wait-ready" in out and "ImagePullBackOff" in out

    assert main(["list", "-l", f"infersweep.io/recipe={RECIPE}"]) == 0
    out = capsys.readouterr().out
    assert name in out and "Failed" in out
    assert main(["list", "-l", "infersweep.io/recipe=other"]) == 0
    assert "no workflows" in capsys.readouterr().out


def test_experiment_submit_creates_one_validated_workflow_with_every_treatment(argo, capsys):
    assert main(["install"]) == 0  # the experiment's steps are templateRefs to the step templates
    capsys.readouterr()
    assert main(["experiment", "submit", "nemotron-rr-vs-kv"]) == 0
    out = capsys.readouterr().out
    (wf,) = argo.objects("workflows")
    name = wf["metadata"]["name"]
    assert f"{argo.url}/workflows/{NS}/{name}" in out and "frontend only" in out
    assert wf["metadata"]["labels"]["infersweep.io/experiment"] == "nemotron-rr-vs-kv"
    # The Workflow only references the experiment's template, which the submit applied first (Strict mode)
    from workflows import strict

    assert strict.violations(wf) == [] and set(wf["spec"]) == {"workflowTemplateRef", "priority"}
    (wt,) = [
        t
        for t in argo.objects("workflow-templates")
        if t["metadata"]["name"] == wf["spec"]["workflowTemplateRef"]["name"]
    ]
    tasks = {t["name"] for tpl in wt["spec"]["templates"] if tpl.get("dag") for t in tpl["dag"]["tasks"]}
    assert {"t0-deploy", "t1-deploy", "compare", "verdict"} <= tasks
    # a bad experiment is refused before any request
    before = len(argo.requests)
    assert main(["experiment", "submit", "no-such-experiment"]) == 2
    assert len(argo.requests) == before


def test_bad_input_fails_before_any_request(argo, capsys):
    assert main(["submit", RECIPE, "--set", "prometheus_url=x"]) == 2
    assert "no such recipe field or run parameter; did you mean prometheus-url?" in capsys.readouterr().err
    assert main(["submit", "no-such-recipe"]) == 2
    assert argo.requests == []


def test_submit_without_installed_templates_is_refused_by_the_server(argo, capsys):
    assert main(["submit", RECIPE]) == 2
    assert "infersweep-vllm-agg" in capsys.readouterr().err


def test_wrong_token_is_one_line(argo, capsys, monkeypatch):
    monkeypatch.setenv("ARGO_TOKEN", "wrong")
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert "401" in err and "Traceback" not in err


def test_config_precedence_flags_env_file(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("host: https://file:2746\ntoken: filetok\nnamespace: filens\n")
    c = load_config(env={}, config_path=cfg)
    assert (c.host, c.token, c.namespace, c.verify_ssl) == ("https://file:2746/", "filetok", "filens", True)
    env = {
        "ARGO_SERVER": "argo:2746",
        "ARGO_SECURE": "false",
        "ARGO_TOKEN": "Bearer envtok",
        "ARGO_NAMESPACE": "envns",
        "ARGO_INSECURE_SKIP_VERIFY": "true",
        "ARGO_BASE_HREF": "/argo/",
    }
    c = load_config(env=env, config_path=cfg)
    assert (c.host, c.token, c.namespace, c.verify_ssl) == ("http://argo:2746/argo/", "Bearer envtok", "envns", False)
    assert c.ui_link("wf-1") == "http://argo:2746/argo/workflows/envns/wf-1"
    c = load_config(host="https://flag:443", namespace="flagns", env=env, config_path=cfg)
    assert (c.host, c.namespace) == ("https://flag:443/argo/", "flagns")
    with pytest.raises(ArgoConfigError, match="ARGO_SERVER"):
        load_config(env={}, config_path=tmp_path / "missing.yaml")
    cfg.write_text("server: x\n")
    with pytest.raises(ArgoConfigError, match="unknown keys"):
        load_config(env={}, config_path=cfg)


def test_a_field_hera_would_drop_is_refused_before_sending():
    doc = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "WorkflowTemplate",
        "metadata": {"name": "t"},
        "spec": {
            "entrypoint": "a",
            "templates": [{"name": "a", "container": {"image": "x"}}],
            "synchronization": {"semaphore": {"configMapKeyRef": {"name": "p", "key": "h100"}}},
        },
    }
    with pytest.raises(SchemaError, match="semaphore"):
        to_hera_model(doc)
    assert isinstance(ArgoServerError("x"), Exception)


def test_watch_follows_the_run_until_it_ends(argo, capsys):
    from infersweep.argo_server import ArgoServer, load_config
    from infersweep.commands.submit import watch

    assert main(["install"]) == 0 and main(["submit", RECIPE]) == 0
    capsys.readouterr()
    (wf,) = argo.objects("workflows")
    phases = iter(["Running", "Succeeded"])

    def controller(_line):  # each printed change, the "controller" moves the run on
        wf["status"] = {"phase": next(phases, "Succeeded"), "progress": "1/2"}

    wf["status"] = {"phase": "Pending"}
    server = ArgoServer(load_config(default_namespace=NS))
    lines = []
    assert (
        watch(server, wf["metadata"]["name"], poll_s=0.01, out=lambda s: (lines.append(s), controller(s)))
        == "Succeeded"
    )
    name = wf["metadata"]["name"]
    assert [ln.split(": ")[1].split()[0] for ln in lines if ln.startswith(name)] == ["Pending", "Running", "Succeeded"]
    assert (
        lines[-1] == f"logs:    infersweep logs {name} [STEP]"
    )  # then where the results are (tests/cli/test_watch.py)
