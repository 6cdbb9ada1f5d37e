"""The install's `--dgd-api` is what every later render on that cluster uses (issue 34 item 2): the UI
launchers bake it into their render step, and `experiment submit` reads it from the installed templates and
never replaces a v1alpha1 template with a v1beta1 one (which would deploy DGDs and 1.6 images the cluster's
Dynamo operator does not serve, after the run waited in the queue)."""

from __future__ import annotations

import json
import re

from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from steps import launcher as step
from tests.support.argo_server_standin import NS, argo  # noqa: F401 (the fixture)
from workflows.launcher import EXPERIMENT_LAUNCHER, RECIPE_LAUNCHER

EXPERIMENT = "nemotron-rr-vs-kv"
TEMPLATE = f"infersweep-experiment-{EXPERIMENT}"


def _api_versions(template: dict) -> set[str]:
    return {
        p["value"]
        for t in template["spec"]["templates"]
        for task in (t.get("dag") or {}).get("tasks") or []
        for p in (task.get("arguments") or {}).get("parameters") or []
        if p["name"] == "api-version"
    }


def _launch(wt: dict, choice: dict[str, str], tmp_path) -> dict:
    """The launcher's render step run with its installed args, the UI's values filled in."""
    render = next(t for t in wt["spec"]["templates"] if t["name"] == "render")
    values = {
        **{f"workflow.parameters.{k}": v for k, v in choice.items()},
        "workflow.parameters.set": "",
        "workflow.namespace": "bench",
        "workflow.name": "l1",
        **{f"workflow.parameters.git-{k}": "" for k in ("repo", "commit", "path")},
    }
    args = [re.sub(r"\{\{([^}]+)\}\}", lambda mt: values[mt.group(1)], a) for a in render["container"]["args"]]
    args = [a.replace("/scratch", str(tmp_path)) for a in args]
    assert step.main(args) == 0
    return json.loads((tmp_path / "manifest.json").read_text())


def test_a_ui_launch_on_a_v1alpha1_install_renders_a_v1alpha1_dgd(tmp_path):
    argo_docs, _ = install_set(load_cluster_settings(), "v1alpha1")
    wts = {d["metadata"]["name"]: d for d in argo_docs if d["kind"] == "WorkflowTemplate"}
    doc = _launch(wts[RECIPE_LAUNCHER], {"recipe": "demo-prefix-rr"}, tmp_path)
    params = {p["name"]: p["value"] for p in doc["spec"]["arguments"]["parameters"]}
    assert params["dgd-api-version"] == "v1alpha1"
    assert "apiVersion: nvidia.com/v1alpha1" in params["dgd"]
    # the experiment launcher bakes it in too (its run references the template the install rendered)
    render = next(t for t in wts[EXPERIMENT_LAUNCHER]["spec"]["templates"] if t["name"] == "render")
    assert "--dgd-api=v1alpha1" in render["container"]["args"]


def test_experiment_submit_keeps_the_installs_api_version(argo, capsys):  # noqa: F811 (the fixture)
    assert main(["install", "--dgd-api", "v1alpha1"]) == 0
    assert _api_versions(argo.store[("workflow-templates", NS, TEMPLATE)]) == {"v1alpha1"}
    capsys.readouterr()
    assert main(["experiment", "submit", EXPERIMENT]) == 0
    assert _api_versions(argo.store[("workflow-templates", NS, TEMPLATE)]) == {"v1alpha1"}

    # a --dgd-api that contradicts the install is refused, naming both and the fix; the template is untouched
    before = len(argo.requests)
    assert main(["experiment", "submit", EXPERIMENT, "--dgd-api", "v1beta1"]) == 2
    err = capsys.readouterr().err
    assert "--dgd-api v1beta1" in err and "installed with --dgd-api v1alpha1" in err
    assert not [r for r in argo.requests[before:] if r[0] in ("PUT", "POST")]
    assert _api_versions(argo.store[("workflow-templates", NS, TEMPLATE)]) == {"v1alpha1"}


def test_experiment_submit_on_a_v1beta1_install_is_unchanged(argo, capsys):  # noqa: F811 (the fixture)
    assert main(["install"]) == 0
    assert main(["experiment", "submit", EXPERIMENT]) == 0
    assert _api_versions(argo.store[("workflow-templates", NS, TEMPLATE)]) == {"v1beta1"}


def test_submit_renders_the_installs_api_version(argo, capsys):  # noqa: F811 (the fixture)
    """`infersweep submit` likewise: a v1alpha1 install's runs deploy v1alpha1 DGDs without --dgd-api."""
    assert main(["install", "--dgd-api", "v1alpha1"]) == 0
    assert main(["submit", "demo-prefix-rr"]) == 0
    (wf,) = argo.objects("workflows")
    params = {p["name"]: p["value"] for p in wf["spec"]["arguments"]["parameters"]}
    assert params["dgd-api-version"] == "v1alpha1" and "apiVersion: nvidia.com/v1alpha1" in params["dgd"]
    capsys.readouterr()
    assert main(["submit", "demo-prefix-rr", "--dgd-api", "v1beta1"]) == 2
    assert "installed with --dgd-api v1alpha1" in capsys.readouterr().err
    assert len(argo.objects("workflows")) == 1
