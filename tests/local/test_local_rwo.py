"""The local executor's check that two running pods never mount one ReadWriteOnce claim (issue 34 items 5
and 13): locally every claim is one folder, so overlapping pods always work here, while on a cluster the
second pod on another node waits in ContainerCreating on Multi-Attach until the first ends (kubernetes
pkg/controller/volume/attachdetach/reconciler reportMultiAttachError). The local run refuses it, naming both."""

from __future__ import annotations

import pytest

from infersweep.local.argo import LocalArgo
from tests.support.local_cluster import local_cluster


def _wf(mode: str, depends: str | None) -> dict:
    def task(name: str) -> dict:
        t = {"name": name, "template": "use"}
        if name == "b" and depends:
            t["depends"] = depends
        return t

    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": f"rwo-{mode.lower()}"},
        "spec": {
            "entrypoint": "main",
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "wd"},
                    "spec": {"accessModes": [mode], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
            "templates": [
                {"name": "main", "dag": {"tasks": [task("a"), task("b")]}},
                {
                    "name": "use",
                    "container": {
                        "image": "alpine",
                        "command": ["sh", "-c"],
                        "args": ["sleep 1"],
                        "volumeMounts": [{"name": "wd", "mountPath": "/wd"}],
                    },
                },
            ],
        },
    }


def test_two_running_pods_on_one_rwo_claim_are_refused(tmp_path):
    argo = LocalArgo(_wf("ReadWriteOnce", None), [], local_cluster(tmp_path))
    argo.run()
    nodes = {n["displayName"]: n for n in argo.status()["nodes"].values()}
    assert argo.phase in ("Error", "Failed")
    msgs = [n.get("message", "") for n in nodes.values() if n["displayName"] in ("a", "b")]
    assert any("Multi-Attach" in m and "ReadWriteOnce claim wd" in m for m in msgs), msgs


@pytest.mark.parametrize("mode, depends", [("ReadWriteOnce", "a"), ("ReadWriteMany", None)])
def test_one_at_a_time_or_a_shared_claim_runs(tmp_path, mode, depends):
    argo = LocalArgo(_wf(mode, depends), [], local_cluster(tmp_path))
    argo.run()
    assert argo.phase == "Succeeded", argo.status().get("message")
