"""Authentication as `argo` does it (issue 23 item 5), and the version check `submit` makes.

- No Argo Server configured: install, submit and status go through the Kubernetes API with the kubeconfig
  (argo-workflows pkg/apiclient/apiclient.go: no ArgoServerOpts.URL -> newArgoKubeClient), tested against the
  Kubernetes API stand-in (tests/support/k8s_standin.py) through the real `kubernetes` client.
- Neither: one line naming both ways, before any request.
- Templates from another checkout: `submit` refuses with one line (infersweep/install_version.py).
- The Python API (infersweep/api.py): a Hera Workflow whose `.create()` submits with Hera's global_config,
  against the Argo Server stand-in of tests/support/argo_server_standin.py.
"""

from __future__ import annotations

import pytest

from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from infersweep.install_version import HASH_LABEL, VERSION_LABEL
from tests.support.argo_server_standin import NS, RECIPE, TOKEN
from tests.support.k8s_standin import K8sStandin
from workflows.install_set import install_set

ARGO = ("argoproj.io", "v1alpha1")


@pytest.fixture
def kube(monkeypatch, tmp_path):
    for var in ("ARGO_SERVER", "ARGO_TOKEN", "ARGO_NAMESPACE", "ARGO_SECURE", "ARGO_BASE_HREF"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("INFERSWEEP_CONFIG", str(tmp_path / "none.yaml"))
    with K8sStandin() as api:
        monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig(tmp_path)))
        yield api


def _objects(api, plural, ns="infersweep"):
    return {k[4]: o for k, o in api.objects.items() if k[2] == ns and k[3] == plural}


def test_without_an_argo_server_everything_goes_through_the_kubeconfig(kube, capsys):
    assert main(["install"]) == 0
    out = capsys.readouterr().out
    argo, manifests = install_set(load_cluster_settings())
    templates = _objects(kube, "workflowtemplates")
    assert set(templates) == {d["metadata"]["name"] for d in argo if d["kind"] == "WorkflowTemplate"}
    assert "infersweep-vllm-agg" in templates
    # the kubectl half of the install is done too: the Argo Server could not create these
    assert {"infersweep-gpu-pools", "artifact-repositories"} <= set(_objects(kube, "configmaps"))
    assert set(_objects(kube, "rolebindings")) == {
        d["metadata"]["name"] for d in manifests if d["kind"] == "RoleBinding"
    }
    assert {"infersweep-steps", "infersweep-reaper"} <= set(_objects(kube, "rolebindings"))
    total = len(argo) + len(manifests)
    assert "kubectl apply" not in out and out.count("created ") == total
    assert all(t["metadata"]["labels"][HASH_LABEL] for t in templates.values())

    assert main(["install"]) == 0  # idempotent: a replace with the current resourceVersion
    assert capsys.readouterr().out.count("updated ") == total
    assert ("PUT", "/apis/argoproj.io/v1alpha1/namespaces/infersweep/workflowtemplates/infersweep-vllm-agg") in [
        r[:2] for r in kube.requests
    ]

    assert main(["submit", RECIPE]) == 0
    out = capsys.readouterr().out
    ((name, wf),) = _objects(kube, "workflows").items()
    assert name.startswith(RECIPE) and wf["spec"]["workflowTemplateRef"] == {"name": "infersweep-vllm-agg"}
    assert f"submitted infersweep/{name}" in out and f"kubectl -n infersweep get workflow {name}" in out
    post = [r for r in kube.requests if r[0] == "POST" and r[1].endswith("/workflows")]
    assert post[0][1] == "/apis/argoproj.io/v1alpha1/namespaces/infersweep/workflows"

    wf["status"] = {"phase": "Running", "progress": "2/9"}
    assert main(["status", name]) == 0
    assert "Running (2/9)" in capsys.readouterr().out


def test_neither_an_argo_server_nor_a_kubeconfig_is_one_line(monkeypatch, tmp_path, capsys):
    for var in ("ARGO_SERVER", "ARGO_TOKEN", "KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("INFERSWEEP_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    assert main(["submit", RECIPE]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Argo Server and no kubeconfig" in err
    assert "ARGO_SERVER" in err and "KUBECONFIG" in err and "Traceback" not in err


def test_an_unreachable_kubeconfig_cluster_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("ARGO_SERVER", raising=False)
    monkeypatch.setenv("INFERSWEEP_CONFIG", str(tmp_path / "none.yaml"))
    with K8sStandin() as api:
        cfg = api.kubeconfig(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(cfg))  # the server is gone now
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Kubernetes API" in err and err.count("\n") == 1


def test_submit_refuses_templates_of_another_checkout(argo, capsys):  # noqa: F811
    assert main(["install"]) == 0
    capsys.readouterr()
    (pipeline,) = [t for t in argo.objects("workflow-templates") if t["metadata"]["name"] == "infersweep-vllm-agg"]
    pipeline["metadata"]["labels"][HASH_LABEL] = "0123456789abcdef"  # what an older checkout installed
    pipeline["metadata"]["labels"][VERSION_LABEL] = "0.0.9"
    assert main(["submit", RECIPE]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "infersweep-vllm-agg (0.0.9/0123456789abcdef)" in err
    assert "infersweep install" in err
    assert argo.objects("workflows") == []  # refused before the create
    assert main(["install"]) == 0 and main(["submit", RECIPE]) == 0  # a reinstall fixes it


@pytest.fixture
def hera_config(argo):  # noqa: F811
    from hera.shared import global_config

    global_config.host = argo.url
    global_config.token = TOKEN
    global_config.namespace = NS
    yield argo
    global_config.reset()


def test_the_python_api_creates_with_heras_global_config(hera_config, capsys):
    from infersweep.api import experiment_workflow, recipe_workflow

    argo = hera_config
    assert main(["install"]) == 0
    wf = recipe_workflow(RECIPE, set={"prometheus-url": "http://prom:9090"}, check_installed=True)
    assert wf.namespace == NS
    created = wf.create()
    (stored,) = argo.objects("workflows")
    assert created.metadata.name == wf.name == stored["metadata"]["name"]
    assert ("POST", f"/api/v1/workflows/{NS}") in argo.requests
    params = {p["name"]: p["value"] for p in stored["spec"]["arguments"]["parameters"]}
    assert params["prometheus-url"] == "http://prom:9090" and isinstance(stored["spec"]["priority"], int)
    # the same document `infersweep submit` sends
    assert main(["submit", RECIPE, "--set", "prometheus-url=http://prom:9090"]) == 0
    a, b = argo.objects("workflows")
    assert {**a["spec"], "priority": 0} == {**b["spec"], "priority": 0}

    exp = experiment_workflow("nemotron-rr-vs-kv")
    exp.create()
    assert any(
        w["metadata"]["labels"].get("infersweep.io/experiment") == "nemotron-rr-vs-kv"
        for w in argo.objects("workflows")
    )


def test_the_python_api_refuses_stale_templates_before_building(hera_config):
    from infersweep.api import recipe_workflow
    from infersweep.params_files import RecipeError

    with pytest.raises(RecipeError, match="not installed in namespace bench: .*infersweep-vllm-agg"):
        recipe_workflow(RECIPE, check_installed=True)
