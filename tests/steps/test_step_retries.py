"""Transient failures are retried by exit code, real failures are not; every step has a deadline and resources.

Argo v4.1.2 workflow/controller/operator.go processNodeRetries: `retryPolicy: OnError` retries only a node
in phase Error (never a Failed pod, i.e. a non-zero exit), `Always` retries Failed and Error, and a
non-empty `expression` (evaluated over buildRetryStrategyLocalScope's lastRetry.exitCode/status) stops
retrying when false. The transient steps exit 75 on an API hiccup (steps/transient.py), so the rendered
expression retries exactly those, and the step's own clear errors (exit 1/2) fail at once.
"""

from __future__ import annotations

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from steps.transient import TRANSIENT_EXIT, is_transient
from tests.support.paths import REPO
from workflows.steps_library import STEPS, aiperf_resources


def _retried(expression: str, exit_code: str, status: str) -> bool:
    # The two forms the expression uses, evaluated as Argo's expr would for lastRetry.*.
    py = expression.replace("||", " or ").replace("asInt(lastRetry.exitCode)", str(int(exit_code)))
    return bool(eval(py.replace("lastRetry.status", repr(status))))


@pytest.fixture(scope="module")
def step_templates():
    argo, _ = install_set(load_cluster_settings())
    return {
        d["spec"]["templates"][0]["name"]: d["spec"]["templates"][0]
        for d in argo
        if d["kind"] == "WorkflowTemplate" and "entrypoint" not in d["spec"]
    }


def test_transient_steps_retry_exit_75_and_errors_only(step_templates):
    retried = {name for name, t in step_templates.items() if t.get("retryStrategy")}
    assert retried == {"ensure-pvc", "model-cache", "deploy", "publish", "teardown"}
    for name in retried:
        r = step_templates[name]["retryStrategy"]
        assert r["retryPolicy"] == "Always", f"{name}: OnError never retries a non-zero exit"
        assert _retried(r["expression"], "75", "Failed")  # an API hiccup
        assert _retried(r["expression"], "-1", "Error")  # pod evicted / node lost
        assert not _retried(r["expression"], "1", "Failed")  # refused DGD, bad PVC: fail at once
        assert not _retried(r["expression"], "2", "Failed")  # bad input
    assert "retryStrategy" not in step_templates["aiperf-point"], "a benchmark point is never silently re-run"


def test_every_step_has_a_deadline_and_resources(step_templates):
    for name, t in step_templates.items():
        assert int(t["activeDeadlineSeconds"]) > 0, name
        res = t["container"]["resources"]
        assert res["requests"]["cpu"] and res["requests"]["memory"] == res["limits"]["memory"], name
        assert t["archiveLocation"] == {"archiveLogs": True}, name


def test_aiperf_is_sized_from_the_concurrency():
    small, big, huge = aiperf_resources(1), aiperf_resources(64), aiperf_resources(1024)
    assert int(small["cpu"]) < int(big["cpu"]) and int(small["memory"][:-2]) < int(big["memory"][:-2])
    assert huge == aiperf_resources(32), "AIPerf caps its workers at 32: more cores would sit idle"


def test_classification_of_errors():
    from botocore.exceptions import ClientError, EndpointConnectionError
    from kubernetes.client.exceptions import ApiException

    assert is_transient(ApiException(status=503)) and is_transient(ApiException(status=429))
    assert not is_transient(ApiException(status=403)) and not is_transient(ApiException(status=422))
    assert is_transient(EndpointConnectionError(endpoint_url="http://s3"))
    assert is_transient(ClientError({"Error": {"Code": "SlowDown"}}, "PutObject"))
    assert not is_transient(
        ClientError({"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}}, "PutObject")
    )
    assert is_transient(ConnectionResetError()) and not is_transient(ValueError("bad flag"))


def test_a_step_exits_75_when_the_api_server_is_unreachable(tmp_path):
    import os
    import subprocess
    import sys

    repo = REPO
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: "
        "'http://127.0.0.1:9'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, "
        "context: {cluster: c, user: u}}]\n"
    )
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), PYTHONPATH=str(repo))
    env.pop("KUBERNETES_SERVICE_HOST", None)
    p = subprocess.run(
        [sys.executable, "-m", "steps.teardown", "--name", "x", "--namespace", "ns"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == TRANSIENT_EXIT and "transient" in p.stderr, (p.returncode, p.stderr[-500:])


def test_steps_list_matches_the_templates(step_templates):
    assert {s.name for s in STEPS} == set(step_templates) - {"reap"}
