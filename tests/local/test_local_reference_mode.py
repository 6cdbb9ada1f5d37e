"""The controller's `templateReferencing` modes in the local executor (argo-workflows v4.1.2, 16a52d6,
workflow/controller/operator.go setExecWorkflow :4482-4505, setStoredWfSpec :4595-4643, operate :235-238)."""

from __future__ import annotations

import copy
import threading
import time
from pathlib import Path

from infersweep.local.argo import LocalArgo, LocalCluster
from tests.support.local_cluster import local_cluster

SECURE_ERROR = "WorkflowSpec may not change during execution when the controller is set `templateReferencing: Secure`"


def _template(tmp: Path, sleep: str) -> dict:
    sh = lambda name, script: {  # noqa: E731
        "name": name,
        "container": {"image": "alpine", "command": ["sh", "-c"], "args": [script]},
    }
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "WorkflowTemplate",
        "metadata": {"name": "pipe"},
        "spec": {
            "entrypoint": "main",
            "onExit": "teardown",
            "arguments": {"parameters": [{"name": "sleep", "value": sleep}]},
            "templates": [
                {"name": "main", "dag": {"tasks": [{"name": "work", "template": "work"}]}},
                sh("work", "sleep {{workflow.parameters.sleep}}"),
                sh("teardown", f"touch {tmp}/torn-down"),
            ],
        },
    }


def _run(tmp: Path, mode: str, change_after: float | None) -> LocalArgo:
    store = [_template(tmp, "2")]
    cluster = local_cluster(tmp, template_referencing=mode, current_templates=lambda: copy.deepcopy(store))
    wf = {"kind": "Workflow", "metadata": {"name": "run"}, "spec": {"workflowTemplateRef": {"name": "pipe"}}}
    argo = LocalArgo(wf, copy.deepcopy(store), cluster)
    if change_after is not None:

        def reinstall():  # `infersweep install` of a newer checkout while the run is in its DAG
            time.sleep(change_after)
            store[0] = _template(tmp, "3")

        threading.Thread(target=reinstall, daemon=True).start()
    argo.run()
    return argo


def test_secure_errors_a_running_workflow_whose_template_changes_and_skips_its_exit_handler(tmp_path):
    argo = _run(tmp_path, "Secure", change_after=0.5)
    assert (argo.phase, argo.message) == ("Error", SECURE_ERROR)
    assert not (tmp_path / "torn-down").exists()  # operate returned before the exit handler


def test_secure_with_an_unchanged_template_and_strict_with_a_changed_one_run_to_the_end(tmp_path):
    assert _run(tmp_path / "a", "Secure", change_after=None).phase == "Succeeded"
    assert (tmp_path / "a" / "torn-down").exists()
    assert _run(tmp_path / "b", "Strict", change_after=0.5).phase == "Succeeded"  # Strict does not compare


def test_reference_mode_errors_a_workflow_with_inline_templates(tmp_path):
    cluster = LocalCluster(
        pythons={},
        pvc_dirs=lambda c: tmp_path / c,
        run_dir=tmp_path,
        cwd=tmp_path,
        env={},
        state_dir=tmp_path / "state",
        template_referencing="Strict",
    )
    wf = {
        "kind": "Workflow",
        "metadata": {"name": "inline"},
        "spec": {
            "entrypoint": "m",
            "templates": [{"name": "m", "container": {"image": "alpine", "command": ["true"]}}],
        },
    }
    argo = LocalArgo(wf, [], cluster)
    argo.run()
    assert argo.phase == "Error"
    assert (
        argo.message == "workflows must use workflowTemplateRef to be executed when the controller is in reference mode"
    )
