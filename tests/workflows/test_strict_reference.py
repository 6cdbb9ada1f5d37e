"""Every object infersweep submits runs under a controller in `templateReferencing: Strict` or `Secure`:
the rule is workflows/strict.py (argo-workflows v4.1.2 workflow/util/merge.go allowedUserOverrideFields /
ValidateUserOverrides, workflow/controller/operator.go setExecWorkflow), checked here on every rendered
Workflow and CronWorkflow."""

from __future__ import annotations

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from infersweep.recipe import all_recipe_paths, load_recipe
from workflows import strict
from workflows.render import render_recipe


@pytest.fixture(scope="module")
def settings():
    return load_cluster_settings()


def test_the_rule_is_argos_allow_list():
    # merge.go allowedUserOverrideFields at v4.1.2 and v3.7.18, as WorkflowSpec JSON names
    assert strict.ALLOWED_USER_OVERRIDE_FIELDS == {
        "arguments",
        "entrypoint",
        "shutdown",
        "suspend",
        "activeDeadlineSeconds",
        "priority",
        "ttlStrategy",
        "podGC",
        "volumeClaimGC",
        "archiveLogs",
        "workflowMetadata",
        "workflowTemplateRef",
        "metrics",
        "artifactGC",
    }
    ref = {"workflowTemplateRef": {"name": "t"}}
    assert strict.spec_violations({**ref, "arguments": {}, "priority": -5}) == []
    assert strict.spec_violations({**ref, "serviceAccountName": "x", "securityContext": {}}) == [
        "securityContext",
        "serviceAccountName",
    ]
    assert strict.spec_violations(
        {**ref, "artifactGC": {"strategy": "OnWorkflowDeletion", "serviceAccountName": "x"}}
    ) == ["artifactGC.serviceAccountName"]
    assert strict.spec_violations({"entrypoint": "main", "templates": [{"name": "main"}]})  # inline: refused


def test_every_rendered_recipe_workflow_is_accepted(settings):
    for p in all_recipe_paths():
        wf = render_recipe(load_recipe(p), settings).workflow
        assert strict.violations(wf) == [], (p, strict.violations(wf))


def test_every_installed_cron_workflow_is_accepted(settings):
    argo, _ = install_set(settings)
    crons = [d for d in argo if d["kind"] == "CronWorkflow"]
    assert {c["metadata"]["name"] for c in crons} >= {"infersweep-reaper"} and len(crons) > 1
    for c in crons:
        assert strict.violations(c) == [], (c["metadata"]["name"], strict.violations(c))
    refs = {c["spec"]["workflowSpec"]["workflowTemplateRef"]["name"] for c in crons}
    templates = {d["metadata"]["name"] for d in argo if d["kind"] == "WorkflowTemplate"}
    assert refs <= templates  # each one references a template the install creates


def test_every_experiment_workflow_is_accepted_and_its_template_is_installed(settings):
    """An experiment used to be one Workflow with inline templates and a Workflow-level synchronization: errored
    by a controller in Strict/Secure ("workflows must use workflowTemplateRef", operator.go setExecWorkflow).
    Now its Workflow only references the experiment's WorkflowTemplate, which the install set carries."""
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import all_experiment_paths, load_experiment
    from workflows.experiment import experiment_workflow

    argo, _ = install_set(settings)
    templates = {d["metadata"]["name"]: d for d in argo if d["kind"] == "WorkflowTemplate"}
    paths = all_experiment_paths()
    assert paths
    for p in paths:
        wf = experiment_workflow(make_plan(load_experiment(p)), settings).to_dict()
        wf["spec"]["priority"] = -5  # what `experiment submit` stamps (the GPU guard's queue order)
        assert strict.violations(wf) == [], (p.stem, strict.violations(wf))
        ref = wf["spec"]["workflowTemplateRef"]["name"]
        assert ref in templates, (p.stem, ref)
        # the lock is the template's, on the treatments only (a Workflow-level one is refused beside a ref)
        assert "synchronization" not in templates[ref]["spec"]
