"""Rules of Argo v4.1.2 the conformance YAMLs cannot state exactly (texts with times and hashes, lock
queues): each test cites the Argo source it follows."""

from __future__ import annotations

import json
import re
from pathlib import Path

from infersweep.local.argo import LocalArgo
from infersweep.local.argo.text import go_quote, pod_name
from tests.support.local_cluster import local_cluster


def _sh(name: str, script: str, **extra) -> dict:
    return {"name": name, "container": {"image": "alpine", "command": ["sh", "-c"], "args": [script]}, **extra}


def _wf(name: str, templates: list[dict], **spec) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": name},
        "spec": {"entrypoint": "main", "templates": templates, **spec},
    }


def test_workflow_failures_is_argos_quoted_json(tmp_path):
    """operator.go operate: failedNodeStatus {displayName, message, templateName, phase, podName, finishedAt},
    json.Marshal'ed then strconv.Quote'd; pod names from pod_name.go GeneratePodName (v2)."""
    wf = _wf(
        "fails",
        [
            {"name": "main", "dag": {"tasks": [{"name": "boom", "template": "boom"}]}},
            _sh("boom", "exit 3"),
            _sh(
                "report",
                "cat > /tmp/o <<'EOF'\n{{workflow.failures}}\nEOF",
                outputs={"parameters": [{"name": "f", "valueFrom": {"path": "/tmp/o"}}]},
            ),
        ],
        onExit="report",
    )
    argo = LocalArgo(wf, [], local_cluster(tmp_path))
    argo.run()
    assert argo.phase == "Failed"
    text = argo.exit_node.outputs["f"]
    assert text.startswith('"[{\\"displayName\\":') and text.endswith(']"'), text
    failures = json.loads(json.loads(text))  # strconv.Quote, then json.Marshal
    by_name = {f["displayName"]: f for f in failures}
    assert set(by_name) == {"fails", "boom"}
    boom = by_name["boom"]
    assert list(boom) == ["displayName", "message", "templateName", "phase", "podName", "finishedAt"]
    assert boom["message"] == "main: Error (exit code 3)" and boom["phase"] == "Failed"
    assert boom["templateName"] == "boom" and boom["podName"] == pod_name("fails", "fails.boom", "boom")
    assert re.fullmatch(r"fails-boom-\d+", boom["podName"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", boom["finishedAt"])
    assert by_name["fails"]["podName"] == "fails"  # GeneratePodName: the root node is named as the workflow


def test_workflow_failures_without_failures_is_quoted_null(tmp_path):
    wf = _wf(
        "ok",
        [
            {"name": "main", "dag": {"tasks": [{"name": "fine", "template": "fine"}]}},
            _sh("fine", "true"),
            _sh(
                "report",
                "printf '%s' '{{workflow.failures}}' > /tmp/o",
                outputs={"parameters": [{"name": "f", "valueFrom": {"path": "/tmp/o"}}]},
            ),
        ],
        onExit="report",
    )
    argo = LocalArgo(wf, [], local_cluster(tmp_path))
    argo.run()
    assert argo.phase == "Succeeded"
    assert argo.exit_node.outputs["f"] == '"null"'  # json.Marshal of a nil slice, quoted


def test_go_quote():
    assert go_quote('a"b\\c\n') == '"a\\"b\\\\c\\n"'
    assert go_quote("é") == '"é"'


def _queue_scenario(tmp_path: Path, created_a: int, created_b: int) -> tuple[bool, bool]:
    """Two whole-pool runs A and B, each wanting locks X and Y (limit 1). H holds X while C, then A, then B
    queue on it; H releases, C takes X (heap.Remove of the front moves B, the last item, to the root; a tie
    with A leaves it there), C releases. Returns whether A, then B, can now acquire."""
    from infersweep.local.argo.sync import LocalLocks

    cms = {"default/pools": {"x": "1", "y": "1"}}
    locks = LocalLocks(tmp_path / "state", cms)
    x = {"semaphores": [{"configMapKeyRef": {"name": "pools", "key": "x"}}]}
    xy = {
        "semaphores": [
            {"configMapKeyRef": {"name": "pools", "key": "x"}},
            {"configMapKeyRef": {"name": "pools", "key": "y"}},
        ]
    }
    assert locks.try_acquire("default/h/1", x, "default", 0, 100)[0]
    assert not locks.try_acquire("default/c/1", x, "default", 0, 100)[0]
    assert not locks.try_acquire("default/a/1", xy, "default", 0, created_a)[0]
    assert not locks.try_acquire("default/b/1", xy, "default", 0, created_b)[0]
    locks.release("default/h/1", x, "default")
    assert locks.try_acquire("default/c/1", x, "default", 0, 100)[0]
    locks.release("default/c/1", x, "default")
    return (
        locks.try_acquire("default/a/1", xy, "default", 0, created_a)[0],
        locks.try_acquire("default/b/1", xy, "default", 0, created_b)[0],
    )


def test_same_second_whole_pool_runs_deadlock_as_on_a_cluster(tmp_path):
    """semaphore.go checkAcquire admits only the front of a lock's queue; multi_throttler.go priorityQueue.Less
    orders by priority then creationTimestamp (1 s), so two runs created in the same second tie, and Go's
    container/heap leaves B in front on X while A is in front on Y: neither ever acquires."""
    a, b = _queue_scenario(tmp_path, 200, 200)
    assert (a, b) == (False, False)
    for _ in range(3):  # and it stays so, however often they try
        assert _queue_scenario_retry(tmp_path) == (False, False)


def _queue_scenario_retry(tmp_path: Path) -> tuple[bool, bool]:
    from infersweep.local.argo.sync import LocalLocks

    locks = LocalLocks(tmp_path / "state", {"default/pools": {"x": "1", "y": "1"}})
    xy = {
        "semaphores": [
            {"configMapKeyRef": {"name": "pools", "key": "x"}},
            {"configMapKeyRef": {"name": "pools", "key": "y"}},
        ]
    }
    return (
        locks.try_acquire("default/a/1", xy, "default", 0, 200)[0],
        locks.try_acquire("default/b/1", xy, "default", 0, 200)[0],
    )


def test_a_second_apart_the_earlier_run_goes_first(tmp_path):
    assert _queue_scenario(tmp_path, 200, 201) == (True, False)


def test_higher_priority_goes_first(tmp_path):
    from infersweep.local.argo.sync import LocalLocks

    locks = LocalLocks(tmp_path / "state", {"default/pools": {"x": "1"}})
    x = {"semaphores": [{"configMapKeyRef": {"name": "pools", "key": "x"}}]}
    assert locks.try_acquire("default/h/1", x, "default", 0, 100)[0]
    assert not locks.try_acquire("default/early/1", x, "default", 0, 100)[0]
    ok, msg = locks.try_acquire("default/urgent/1", x, "default", 5, 300)
    assert not ok and msg == "Waiting for default/ConfigMap/pools/x lock. Lock status: 0/1"
    locks.release("default/h/1", x, "default")
    assert not locks.try_acquire("default/early/1", x, "default", 0, 100)[0]  # not at the front
    assert locks.try_acquire("default/urgent/1", x, "default", 5, 300)[0]


def test_a_pod_without_a_token_needs_an_executor_account(tmp_path):
    """workflowpod.go setupServiceAccount (argo-workflows v4.1.2 :1826-1857): automountServiceAccountToken false
    (the template's, else the spec's) without executor.serviceAccountName errors the node before any pod
    exists; with one, the pod runs (the step templates of workflows/steps_library.py PodAccount)."""
    no_token = {"automountServiceAccountToken": False}
    wf = _wf(
        "tokens",
        [
            {
                "name": "main",
                "dag": {
                    "tasks": [
                        {"name": "bare", "template": "bare"},
                        {"name": "with-executor", "template": "with-executor"},
                    ]
                },
            },
            _sh("bare", "true", **no_token),
            _sh("with-executor", "true", **no_token, executor={"serviceAccountName": "infersweep"}),
        ],
    )
    argo = LocalArgo(wf, [], local_cluster(tmp_path))
    argo.run()
    nodes = {n.display_name: n for n in argo.nodes.values()}
    assert nodes["bare"].phase == "Error"
    assert (
        nodes["bare"].message
        == "executor.serviceAccountName must not be empty if automountServiceAccountToken is false"
    )
    assert nodes["with-executor"].phase == "Succeeded"
