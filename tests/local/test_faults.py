"""Faults survived, nothing lost: real faults injected into local runs, then a resumed run.

Each test runs the recipe's rendered workflow (run_local) with a small sweep and makes one thing really
go wrong while it runs:
- a mocker worker is SIGKILLed while a point is being measured;
- the S3 server is stopped just as the publish step starts;
- the AIPerf point step gets SIGTERM mid-point (as Argo stops a pod): it turns it into SIGINT for AIPerf;
- the disk of the run folder fills up mid-sweep (a 48 MiB tmpfs mounted for the test and filled by a
  file beside the run folder; the test is skipped where mounting is not allowed).
Then: the points measured before the fault are kept (and published, or kept locally with the command
that finishes the job), the failed point is marked failed with its reason, and `run_local(resume=...)`
(`infersweep run --local --resume RUN_DIR`) measures only what is missing, never redoes or overwrites a
good point, and publishes under its own prefix without touching what the first attempt published.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.dynamo import procs
from infersweep.local.run import ARTIFACT_BUCKET, run_local
from infersweep.local.standins.s3server import LocalS3
from infersweep.paths import params_dir
from infersweep.results.manifest import IncompleteRunError
from infersweep.results.publish import verify_run
from tests.support.run_failure import why_failed

pytestmark = pytest.mark.e2e
RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
SETTINGS = load_cluster_settings()
BUCKET, PREFIX = SETTINGS.s3.bucket, SETTINGS.s3.prefix
C1 = {"concurrency": 1, "requests": 8, "warmup": 0}


def points(*pts) -> dict[str, str]:
    return {"points": json.dumps(list(pts), separators=(",", ":"))}


def point_dir(run_dir: Path, c: int) -> Path:
    return run_dir / "volumes" / "workdir" / "run" / "points" / f"c{c}"


def result(run_dir: Path, c: int) -> dict:
    return json.loads((point_dir(run_dir, c) / "result.json").read_text())


def sha(f: Path) -> str:
    return hashlib.sha256(f.read_bytes()).hexdigest()


def when_profiling(out_root: Path, c: int, then, delay_s: float = 4.0, timeout_s: float = 240) -> threading.Thread:
    """Call then(run_dir) `delay_s` after AIPerf of point cN starts profiling (some requests are done)."""

    def watch():
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for run_dir in out_root.glob("*"):
                log = point_dir(run_dir, c) / "aiperf.log"
                if log.exists() and "AIPerf System is PROFILING" in log.read_text(errors="replace"):
                    time.sleep(delay_s)
                    then(run_dir)
                    return
            time.sleep(0.2)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def published(s3: LocalS3, run_id: str) -> dict:
    return verify_run(BUCKET, f"{PREFIX}/{RECIPE}/{run_id}", s3=s3.client())


def manifest_keys(s3: LocalS3, run_id: str) -> set[str]:
    body = s3.client().get_object(Bucket=BUCKET, Key=f"{PREFIX}/{RECIPE}/{run_id}/manifest.json")["Body"].read()
    return {o["key"].split(run_id + "/", 1)[1] for o in json.loads(body)["objects"]}


def assert_resumed(first, again, s3: LocalS3 | None, kept: int, redone: int, first_attempt_left: bool = True) -> None:
    """The resumed run kept point c`kept` untouched, measured c`redone`, and published everything."""
    assert again.run_dir == first.run_dir and again.run_id != first.run_id
    assert again.phase == "Succeeded", why_failed(again)
    assert result(again.run_dir, kept)["attempt"] == 1, "the good point was measured again"
    # node folders keep the last 120 characters of the node name: match on the resumed run's "-rN" tail
    tail = again.run_id.rsplit("-", 1)[1]
    logs = "".join(p.read_text() for p in (again.run_dir / "nodes").glob(f"*-{tail}.gpu-span.point*/main.log"))
    assert "already holds a good point" in logs
    r = result(again.run_dir, redone)
    assert r["status"] == "ok"
    if first_attempt_left:
        assert r["attempt"] >= 2
        assert (point_dir(again.run_dir, redone) / "attempts" / "1" / "result.json").is_file(), (
            "the failed attempt was not kept"
        )
    df = pd.read_parquet(again.results_dir / "summary" / "results.parquet")
    assert set(df["concurrency"]) >= {kept, redone} and (df["status"] == "ok").all()
    if s3 is not None:
        assert published(s3, again.run_id)["ok"]
        want = {f"points/c{kept}/result.json", f"points/c{redone}/result.json"}
        if first_attempt_left:
            want.add(f"points/c{redone}/attempts/1/result.json")
        assert want <= manifest_keys(s3, again.run_id)


@pytest.fixture
def s3():
    with LocalS3(buckets=[BUCKET, ARTIFACT_BUCKET]) as server:
        yield server


def _run(tmp_path, s3, pts, **kw):
    return run_local(
        RECIPE, out_root=tmp_path / "runs", cache_root=tmp_path / "cache", s3=s3, overrides=points(*pts), **kw
    )


def test_mocker_worker_killed_mid_point(tmp_path, s3):
    killed = []

    def kill_worker(run_dir):
        for d in (run_dir / "state" / "dgd").iterdir():
            for rec in procs.read_records(d):
                if "dynamo.mocker" in " ".join(rec["argv"]):
                    os.killpg(rec["pgid"], signal.SIGKILL)
                    killed.append(rec["pid"])

    when_profiling(tmp_path / "runs", 2, kill_worker)
    first = _run(tmp_path, s3, [C1, {"concurrency": 2, "requests": 200, "warmup": 0}])
    assert killed, "the mocker was never killed"
    # The point step marks it partial (exit 0, requests failed above the allowed error rate) or failed;
    # either way it is not counted as a good point, and its reason says why.
    assert result(first.run_dir, 1)["status"] == "ok"
    r2 = result(first.run_dir, 2)
    assert r2["status"] in ("failed", "partial") and r2["reason"], r2
    if r2["status"] == "failed":
        assert "fail" in r2["reason"].lower()
    # What was measured is published, the failed point with its reason, under a manifest.
    assert published(s3, first.run_id)["ok"]
    assert {"points/c1/result.json", "points/c2/result.json", "summary/results.parquet"} <= manifest_keys(
        s3, first.run_id
    )
    c1_sha = sha(point_dir(first.run_dir, 1) / "result.json")
    before = {
        k: o["ETag"]
        for k, o in (
            (o["Key"], o)
            for o in s3.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/{RECIPE}/{first.run_id}/")["Contents"]
        )
    }

    again = _run(tmp_path, s3, [C1, {"concurrency": 2, "requests": 16, "warmup": 0}], resume=first.run_dir)
    assert_resumed(first, again, s3, kept=1, redone=2)
    assert sha(point_dir(again.run_dir, 1) / "result.json") == c1_sha
    after = {
        o["Key"]: o["ETag"]
        for o in s3.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/{RECIPE}/{first.run_id}/")["Contents"]
    }
    assert after == before, "the resumed run changed what the first attempt had published"


def test_s3_unreachable_during_publish(tmp_path, s3, monkeypatch):
    # The same retryStrategy as a cluster's, with a 1 s backoff instead of params/cluster.yaml's 10 s: the three
    # retries of the unreachable publish otherwise wait 10 + 20 + 40 s (70 of this test's 86 s).
    params = tmp_path / "params"
    shutil.copytree(params_dir(), params)
    cluster = params / "cluster.yaml"
    text = cluster.read_text()
    assert "backoff: 10s" in text
    cluster.write_text(text.replace("backoff: 10s", "backoff: 1s", 1))
    monkeypatch.setenv("INFERSWEEP_PARAMS", str(params))
    seen = {}

    def on_event(kind, node):
        seen[node.name] = node  # publish runs in the exit handler, outside the root's children
        if kind == "start" and node.name.endswith(".publish"):
            s3.stop()

    first = _run(tmp_path, s3, [C1], on_event=on_event)
    assert first.phase == "Failed"
    # publish has a retryStrategy, so its node is a Retry node over pods publish(0), ...; Argo's node message
    # is the exit code (operator.go), so what the step says is in the pod's log, as `argo logs` shows it.
    publish = next(n for name, n in seen.items() if name.endswith(".publish"))
    assert publish.phase == "Failed"
    pod = next(n for name, n in seen.items() if re.search(r"\.publish\(\d+\)$", name))
    log = pod.log.read_text()
    # The step says nothing is lost and gives the command that finishes the job.
    assert "infersweep publish" in log, log[-2000:]
    assert "The local copy at" in log and "is intact" in log
    # The run's end names the failed step and what it said (infersweep run --local prints these lines).
    assert first.failed_steps and all(line.startswith("publish(") for line in first.failed_steps), first.failed_steps
    last = first.failed_steps[-1]
    assert "exit code 75" in last and "To publish it later: infersweep publish" in last and "(log: " in last, last
    assert result(first.run_dir, 1)["status"] == "ok"
    assert (first.results_dir / "summary" / "results.parquet").exists()

    # Later, with S3 back (a new server here: moto keeps nothing), the printed command publishes all of it.
    command = log[log.index("To publish it later: ") + len("To publish it later: ") :].splitlines()[0]
    argv = command.split()
    assert argv[:2] == ["infersweep", "publish"]
    with LocalS3(buckets=[BUCKET]) as back:
        p = subprocess.run(
            [str(Path(sys.executable).parent / "infersweep"), *argv[1:]],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, **back.env()),
        )
        assert p.returncode == 0, p.stderr
        report = verify_run(BUCKET, f"{PREFIX}/{RECIPE}/{first.run_id}", s3=back.client())
        assert report["ok"] and report["objects"] >= 5


def test_aiperf_sigterm_mid_point_keeps_the_partial_summary(tmp_path, s3):
    sent = []

    def term_point_step(run_dir):
        for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "steps.aiperf_point" in cmd and f"{run_dir}/volumes/workdir/run/points/c2" in cmd:
                os.kill(pid, signal.SIGTERM)  # what the kubelet sends the step container
                sent.append(pid)

    when_profiling(tmp_path / "runs", 2, term_point_step, delay_s=5)
    first = _run(tmp_path, s3, [C1, {"concurrency": 2, "requests": 400, "warmup": 0}])
    assert sent, "SIGTERM was never sent"
    r2 = result(first.run_dir, 2)
    assert r2["stopped_by"] == "SIGTERM" and "stopped by SIGTERM" in r2["reason"], r2
    # AIPerf got SIGINT and wrote its summary of the requests done so far (AIPerf calls that
    # "cancelled"; a point with no summary at all would be "failed").
    assert r2["status"] in ("partial", "cancelled"), r2
    assert (point_dir(first.run_dir, 2) / "aiperf" / "profile_export_aiperf.json").exists()
    assert 0 < r2["requests_ok"] < 400
    assert result(first.run_dir, 1)["status"] == "ok"
    assert published(s3, first.run_id)["ok"]
    df = pd.read_parquet(first.results_dir / "summary" / "results.parquet")
    assert dict(zip(df["concurrency"], df["status"], strict=True)) == {1: "ok", 2: r2["status"]}

    again = _run(tmp_path, s3, [C1, {"concurrency": 2, "requests": 16, "warmup": 0}], resume=first.run_dir)
    assert_resumed(first, again, s3, kept=1, redone=2)
    kept_partial = json.loads((point_dir(again.run_dir, 2) / "attempts" / "1" / "result.json").read_text())
    assert kept_partial["status"] == r2["status"] and kept_partial["requests_ok"] == r2["requests_ok"]


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {p.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_disk_full_mid_sweep(tmp_path, s3, small_disk):
    filler = small_disk / "filler"  # beside the run folder, so it is never part of the results

    def fill(kind, node):
        if kind == "start" and "point(1:" in node.name:
            with open(filler, "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * (1 << 20))
                        f.flush()
                except OSError:
                    pass  # ENOSPC: the disk is full now

    first = run_local(
        RECIPE,
        out_root=small_disk / "runs",
        cache_root=tmp_path / "cache",
        s3=s3,
        overrides=points(C1, {"concurrency": 2, "requests": 16, "warmup": 0}),
        on_event=fill,
    )
    assert filler.exists()
    # Failed or Error: a pod whose outputs cannot be written on the full disk is an Error node (the
    # executor's "wait: Error ..."), and a DAG with an errored leaf is Error (dag.go assessDAGPhase); either
    # way the run is not Succeeded and says why.
    assert first.phase in ("Failed", "Error"), first.phase
    assert result(first.run_dir, 1)["status"] == "ok", "the point measured before the disk filled was damaged"

    def walk(n):
        yield n
        for c in n.children:
            yield from walk(c)

    # c2 (its pod, or its retry wrapper) did not succeed, with a reason
    c2 = [n for n in walk(first.root) if "point(1:" in n.name]
    assert c2 and all(n.phase in ("Failed", "Error") and n.message for n in c2), [
        (n.name, n.phase, n.message) for n in c2
    ]
    with pytest.raises(IncompleteRunError):  # nothing half-published that looks complete
        published(s3, first.run_id)

    filler.unlink()  # the operator frees space, then resumes
    again = run_local(
        RECIPE,
        out_root=small_disk / "runs",
        cache_root=tmp_path / "cache",
        s3=s3,
        overrides=points(C1, {"concurrency": 2, "requests": 16, "warmup": 0}),
        resume=first.run_dir,
    )
    # With no room, the failed attempt may have left no result.json of its own to keep.
    assert_resumed(first, again, s3, kept=1, redone=2, first_attempt_left=False)
