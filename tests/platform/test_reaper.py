"""`argo terminate` leaks no GPUs: the reaper CronWorkflow deletes every DGD whose run is over.

Terminate skips the exit handler (argo-workflows v4.1.2 workflow/controller/operator.go operate(): the
onExit node runs only when ShutdownStrategy.ShouldExecute(true), which is false for Terminate), so the
teardown never runs. The reaper (steps/reap.py -> infersweep/platform/reaper.py, CronWorkflow `infersweep-reaper` from `infersweep
install`, every 2 minutes) runs against tests/support/k8s_standin.py through the real `kubernetes` client:
a terminated run's DGD goes, a running run's stays, a DGD nobody's run owns is left alone.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from tests.support.paths import REPO

DGD = ("nvidia.com", "v1beta1", "bench", "dynamographdeployments")
WF = ("argoproj.io", "v1alpha1", "bench", "workflows")


def _dgd(name: str, owner: tuple[str, str] | None) -> dict:
    meta = {"name": name, "namespace": "bench", "labels": {"infersweep.io/run": owner[0] if owner else "manual"}}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Workflow",
                "name": owner[0],
                "uid": owner[1],
                "blockOwnerDeletion": False,
                "controller": False,
            }
        ]
    return {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment", "metadata": meta, "spec": {}}


def _wf(name: str, uid: str, phase: str | None, status_bytes: int = 0) -> dict:
    """A Workflow as the controller leaves it: its phase also in the labels `phase` and `completed`
    (argo-workflows v4.1.2 operator.go markWorkflowPhase :2775-2777, :2830); none before the first reconcile."""
    labels = (
        {
            "workflows.argoproj.io/phase": phase,
            "workflows.argoproj.io/completed": str(phase in ("Succeeded", "Failed", "Error")).lower(),
        }
        if phase
        else {}
    )
    status = {"phase": phase, "nodes": {"n": {"message": "x" * status_bytes}}} if phase else {}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": name, "uid": uid, "labels": labels},
        "status": status,
    }


def _reap(api, tmp_path) -> subprocess.CompletedProcess:
    """steps.reap against the stand-in, as the reaper CronWorkflow runs it (its kubeconfig, nothing in-cluster)."""
    env = dict(os.environ, KUBECONFIG=str(api.kubeconfig(tmp_path)), PYTHONPATH=str(REPO))
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.run(
        [sys.executable, "-m", "steps.reap", "--namespace", "bench"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_reaper_deletes_the_dgds_of_finished_runs_only(tmp_path):
    from tests.support.k8s_standin import K8sStandin

    with K8sStandin() as api:
        runs = {
            "running": ("wf-running", "u1", "Running"),
            "terminated": ("wf-terminated", "u2", "Failed"),
            "new": ("wf-new", "u3", None),
            "succeeded": ("wf-ok", "u4", "Succeeded"),
        }
        for name, uid, phase in runs.values():
            api.objects[(*WF, name)] = _wf(name, uid, phase)
        api.objects[(*WF, "wf-reused")] = _wf("wf-reused", "u-new", "Running")  # same name, a new run
        for key, (name, uid, _) in runs.items():
            api.objects[(*DGD, f"dgd-{key}")] = _dgd(f"dgd-{key}", (name, uid))
        api.objects[(*DGD, "dgd-deleted-wf")] = _dgd("dgd-deleted-wf", ("wf-gone", "u9"))
        api.objects[(*DGD, "dgd-reused")] = _dgd("dgd-reused", ("wf-reused", "u-old"))
        api.objects[(*DGD, "dgd-manual")] = _dgd("dgd-manual", None)
        p = _reap(api, tmp_path)
        assert p.returncode == 0, p.stderr
        left = {k[4] for k in api.objects if k[:4] == DGD}
        assert left == {"dgd-running", "dgd-new", "dgd-manual"}, p.stdout
        assert "wf-terminated is Failed" in p.stdout and "wf-gone no longer exists" in p.stdout
        # a second pass finds nothing to do (idempotent)
        p = _reap(api, tmp_path)
        assert p.returncode == 0 and "0 DGD(s) deleted" in p.stdout


def test_the_reaper_never_reads_every_retained_workflow(tmp_path):
    """A week of retained runs (here 120 completed Workflows of 40 kB status each, about 5 MB) is not read:
    the reaper lists the live Workflows by the controller's `completed` label, in pages, and looks up a
    finished run's Workflow by name (issue 34 item 8: full lists under a 256Mi limit OOM-kill the reaper at a
    few hundred runs, and then nothing is reaped)."""
    from tests.support.k8s_standin import K8sStandin

    with K8sStandin() as api:
        for i in range(120):
            api.objects[(*WF, f"old-{i:03}")] = _wf(f"old-{i:03}", f"o{i}", "Succeeded", 40_000)
        for i in range(60):  # more live runs than one page
            api.objects[(*WF, f"live-{i:03}")] = _wf(f"live-{i:03}", f"l{i}", "Running")
        api.objects[(*DGD, "dgd-live")] = _dgd("dgd-live", ("live-059", "l59"))
        api.objects[(*DGD, "dgd-old")] = _dgd("dgd-old", ("old-007", "o7"))
        p = _reap(api, tmp_path)
        assert p.returncode == 0, p.stderr
        assert {k[4] for k in api.objects if k[:4] == DGD} == {"dgd-live"}
        assert "old-007 is Succeeded" in p.stdout
        read = sum(n for m, path, n in api.sent if m == "GET" and path.endswith("/workflows"))
        assert read < 200_000, f"the reaper read {read} bytes of Workflows"


def test_the_reaper_reads_workflows_as_metadata_only(tmp_path):
    """Live runs are read too, and a live run's status is the big part (its nodes grow through a sweep): the
    reaper asks the API server for the Workflow lists as PartialObjectMetadataList (issue 34 item 8, metadata
    only), so 60 running Workflows of 40 kB status each cost their metadata, and the verdicts still hold (the
    controller's phase label stands for the status)."""
    from infersweep.platform.reaper import METADATA_LIST_ACCEPT
    from tests.support.k8s_standin import K8sStandin

    with K8sStandin() as api:
        for i in range(60):
            api.objects[(*WF, f"live-{i:03}")] = _wf(f"live-{i:03}", f"l{i}", "Running", 40_000)
        api.objects[(*WF, "done")] = _wf("done", "d1", "Failed", 40_000)
        api.objects[(*DGD, "dgd-live")] = _dgd("dgd-live", ("live-001", "l1"))
        api.objects[(*DGD, "dgd-done")] = _dgd("dgd-done", ("done", "d1"))
        p = _reap(api, tmp_path)
        assert p.returncode == 0, p.stderr
        assert {k[4] for k in api.objects if k[:4] == DGD} == {"dgd-live"}
        assert "done is Failed" in p.stdout
        lists = [a for m, path, a in api.accepts if m == "GET" and path.endswith("/workflows")]
        assert lists and all(a == METADATA_LIST_ACCEPT for a in lists), lists
        read = sum(n for m, path, n in api.sent if m == "GET" and path.endswith("/workflows"))
        assert read < 100_000, f"the reaper read {read} bytes of Workflows"


@pytest.fixture(scope="module")
def installed():
    return install_set(load_cluster_settings())


def test_install_creates_the_reaper_every_few_minutes_with_its_own_rbac(installed):
    argo, kube = installed
    cron = next(d for d in argo if d["kind"] == "CronWorkflow" and d["metadata"]["name"] == "infersweep-reaper")
    schedule = cron["spec"]["schedules"][0]
    minutes = schedule.split()[0]
    # GPUs of a terminated run are free within one period (+ a pod start): at most 5 minutes
    assert minutes.startswith("*/") and int(minutes[2:]) <= 5, schedule
    # what runs is the reaper's WorkflowTemplate (the CronWorkflow only references it: templateReferencing Strict)
    assert cron["spec"]["workflowSpec"] == {"workflowTemplateRef": {"name": "infersweep-reaper"}}
    spec = next(d for d in argo if d["kind"] == "WorkflowTemplate" and d["metadata"]["name"] == "infersweep-reaper")[
        "spec"
    ]
    assert spec["serviceAccountName"] == "infersweep-reaper"
    container = spec["templates"][0]["container"]
    assert container["command"] == ["python", "-m", "steps.reap"]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in kube}
    assert {
        ("ServiceAccount", "infersweep-reaper"),
        ("Role", "infersweep-reaper"),
        ("RoleBinding", "infersweep-reaper"),
    } <= kinds
    binding = next(d for d in kube if d["kind"] == "RoleBinding" and d["metadata"]["name"] == "infersweep-reaper")
    assert binding["subjects"][0]["name"] == "infersweep-reaper"
