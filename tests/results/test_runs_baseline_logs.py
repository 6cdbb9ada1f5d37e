"""`infersweep runs`, `infersweep baseline promote|show` and `infersweep logs`, against the real local S3
server (moto_server, LocalS3) with runs published by the real publish step, and the Argo Server stand-in
(tests/support/argo_server_standin.py) serving archived logs as the Argo Server does."""

from __future__ import annotations

import json
import sys
import uuid

import pytest

from infersweep.cli import main
from infersweep.local.standins.s3server import LocalS3
from infersweep.results.baseline import check_against_baseline
from tests.results.test_results_store import BUCKET, RECIPE, publish_run
from tests.support.argo_server_standin import NS, ArgoServerStandIn
from tests.support.run_folders import make_run_folder, summarize

ARTIFACTS = "artifacts"


@pytest.fixture(scope="module")
def server():
    with LocalS3(buckets=[BUCKET, ARTIFACTS]) as srv:
        yield srv


@pytest.fixture()
def s3env(server, monkeypatch):
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    return server.client()


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory, aiperf_ref):
    run = make_run_folder(tmp_path_factory.mktemp("store"), aiperf_ref)
    summarize(run)
    return run


def test_runs_lists_the_store_with_filters(s3env, run_folder, capsys):
    base = f"runs-{uuid.uuid4().hex[:8]}"
    publish_run(s3env, base, "run-a", run_folder)
    publish_run(s3env, base, "run-b", run_folder, recipe="other-recipe")
    s3env.put_object(Bucket=BUCKET, Key=f"{base}/{RECIPE}/run-cut/summary/results.csv", Body=b"x")  # no manifest
    store = f"s3://{BUCKET}/{base}"
    assert main(["runs", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "run-a" in out and "run-b" in out and "run-cut" not in out and "2 run(s)" in out
    assert main(["runs", "--store", store, "--recipe", RECIPE]) == 0
    out = capsys.readouterr().out
    assert "run-a" in out and "run-b" not in out
    assert main(["runs", "--store", store, "--all"]) == 0
    assert "run-cut" in (out := capsys.readouterr().out) and "incomplete" in out
    assert main(["runs", "--store", store, "--since", "2999-01-01"]) == 0
    assert "no runs in" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["runs", "--since", "yesterday"])
    assert "YYYY-MM-DD" in capsys.readouterr().err


def test_baseline_promote_is_what_the_regression_check_reads(s3env, run_folder, capsys):
    base, baselines = f"runs-{uuid.uuid4().hex[:8]}", f"baselines-{uuid.uuid4().hex[:8]}"
    publish_run(s3env, base, "run-a", run_folder)
    publish_run(s3env, base, "run-b", run_folder)
    store, dest = f"s3://{BUCKET}/{base}", f"s3://{BUCKET}/{baselines}"
    assert main(["baseline", "show", RECIPE, "--store", store, "--to", dest]) == 1
    assert main(["baseline", "promote", "run-a", "--store", store, "--to", dest]) == 0
    out = capsys.readouterr().out
    assert f"baseline of {RECIPE} is now run-a (it had none)" in out and f"baseline-prefix={baselines}/{RECIPE}" in out
    # the regression-check step's own reader finds it and judges against it (this fixture's points are too
    # short to judge, hence inconclusive; with no baseline it would say no-baseline)
    report = run_folder.parent / "regression.txt"
    assert check_against_baseline(run_folder, BUCKET, f"{baselines}/{RECIPE}", None, report) == "inconclusive"
    assert "left out  baseline: left out demo-prefix-kv concurrency 4" in report.read_text()
    # a leftover of the previous baseline that the new one lacks is gone; the record names the new run
    s3env.put_object(Bucket=BUCKET, Key=f"{baselines}/{RECIPE}/stale.txt", Body=b"old")
    assert main(["baseline", "promote", f"{RECIPE}/run-b", "--store", store, "--to", dest]) == 0
    assert "now run-b (was run-a)" in capsys.readouterr().out
    keys = [o["Key"] for o in s3env.list_objects_v2(Bucket=BUCKET, Prefix=f"{baselines}/{RECIPE}/")["Contents"]]
    assert f"{baselines}/{RECIPE}/stale.txt" not in keys and f"{baselines}/{RECIPE}/summary/results.parquet" in keys
    record = json.loads(s3env.get_object(Bucket=BUCKET, Key=f"{baselines}/{RECIPE}/baseline.json")["Body"].read())
    assert record["run_id"] == "run-b" and record["source"] == f"s3://{BUCKET}/{base}/{RECIPE}/run-b/"
    assert main(["baseline", "show", RECIPE, "--store", store, "--to", dest]) == 0
    assert "run-b" in capsys.readouterr().out
    assert main(["baseline", "promote", "no-such-run", "--store", store, "--to", dest]) == 2
    assert "no run 'no-such-run'" in capsys.readouterr().err


def test_baseline_promote_from_a_folder_store_wants_a_destination(tmp_path, capsys):
    assert main(["baseline", "promote", "x", "--store", str(tmp_path)]) == 2
    assert "give --to" in capsys.readouterr().err


def test_logs_of_a_local_run(tmp_path, capsys):
    from infersweep.local.executor import StepServices, execute
    from tests.local.test_local_argo import STEP, build

    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "fakestep.py").write_text(STEP)
    execute(
        build(tmp_path),
        [],
        StepServices(
            cache_root=tmp_path / "cache",
            pythons={"local/step": sys.executable},
            env={"PATH": "/usr/bin:/bin"},
            code_root=tmp_path / "code",
            s3_client=None,
            configmaps={},
            on_event=lambda kind, node: None,
        ),
        run_id="t",
        run_dir=tmp_path / "run",
        status_file=tmp_path / "run" / "status.json",
    )
    assert main(["logs", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "STEP" in out and "a " in out and "main.log" in out
    assert main(["logs", str(tmp_path / "run"), "a"]) == 0
    out = capsys.readouterr().out
    assert "==> a (Succeeded)" in out and "-m fakestep --name a" in out
    assert main(["logs", str(tmp_path / "run"), "nope"]) == 2
    assert "no step 'nope'" in capsys.readouterr().err


def _serve_artifact_files(stand_in: ArgoServerStandIn, s3) -> None:
    """/artifact-files/{ns}/workflows/{name}/{nodeId}/outputs/{artifact}, as server/artifacts/artifact_server.go
    GetArtifactFile: the node's output artifact, read from the artifact repository (here the real local S3);
    500 when the node has no such artifact (getArtifactAndDriver's error), 401 without the token."""
    base = stand_in.httpd.RequestHandlerClass

    class WithArtifacts(base):
        def do_GET(self):
            if not self.path.startswith("/artifact-files/"):
                return super().do_GET()
            if self.headers.get("Authorization") != "Bearer test-token":
                return self._error(401, 16, "Unauthorized")
            _, _, ns, kind, name, node_id, direction, art = self.path.split("/")[:8]
            wf = stand_in.store.get(("workflows", ns, name))
            node = ((wf or {}).get("status") or {}).get("nodes", {}).get(node_id) or {}
            found = [a for a in (node.get("outputs") or {}).get("artifacts") or [] if a["name"] == art]
            if kind != "workflows" or direction != "outputs" or not found:
                return self._error(500, 13, "artifact not found")
            body = s3.get_object(Bucket=ARTIFACTS, Key=found[0]["s3"]["key"])["Body"].read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    stand_in.httpd.RequestHandlerClass = WithArtifacts


def test_logs_of_a_cluster_run_come_from_argos_log_archive(argo, server, capsys):
    s3 = server.client()
    _serve_artifact_files(argo, s3)
    assert main(["install"]) == 0 and main(["submit", "nemotron-3-nano-fp8-vllm-agg-kv"]) == 0
    capsys.readouterr()
    (wf,) = argo.objects("workflows")
    name = wf["metadata"]["name"]
    key = f"{NS}/{name}/{name}-deploy-123/main.log"  # the artifact repository's keyFormat + main.log
    s3.put_object(Bucket=ARTIFACTS, Key=key, Body=b"applying DGD...\nDGD ready after 41 s\n")
    wf["status"] = {
        "phase": "Running",
        "nodes": {
            f"{name}-1": {
                "id": f"{name}-1",
                "name": f"{name}.deploy",
                "displayName": "deploy",
                "type": "Pod",
                "templateName": "deploy",
                "phase": "Succeeded",
                "outputs": {"artifacts": [{"name": "main-logs", "s3": {"key": key}}]},
            },
            f"{name}-2": {
                "id": f"{name}-2",
                "name": f"{name}.wait-ready",
                "displayName": "wait-ready",
                "type": "Pod",
                "templateName": "wait-ready",
                "phase": "Running",
            },
        },
    }
    assert main(["logs", name]) == 0
    out = capsys.readouterr().out
    assert "deploy" in out and "archived" in out and "wait-ready" in out
    assert main(["logs", name, "deploy"]) == 0
    assert "DGD ready after 41 s" in capsys.readouterr().out
    assert main(["logs", name, "wait-ready"]) == 0
    assert "no archived log yet" in capsys.readouterr().out
