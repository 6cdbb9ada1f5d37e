"""infersweep.results.publish (and the publish step) against a REAL S3-compatible server (moto_server via LocalS3).

No in-process mocks: every request goes over HTTP to a separate process.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from infersweep.local.standins.s3server import LocalS3
from infersweep.results.manifest import ChecksumError, IncompleteRunError
from infersweep.results.publish import PublishConflict, PublishError, publish_tree, read_object_verified, verify_run
from infersweep.results.s3 import s3_client
from tests.support.paths import REPO

BUCKET = "runs"


@pytest.fixture(scope="module")
def server():
    with LocalS3(buckets=[BUCKET]) as srv:
        yield srv


@pytest.fixture()
def s3(server, monkeypatch):
    # s3_client() must find everything in the standard env, as in the cluster.
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return s3_client()


@pytest.fixture()
def prefix(request):
    # One server for the module; each test writes under its own prefix.
    return f"{request.node.name}/{uuid.uuid4().hex[:8]}"


def make_tree(root: Path) -> Path:
    files = {
        "summary.json": b'{"ttft_ms": 12.5}\n',
        "nested/deeper/profile.csv": b"concurrency,tps\n1,10.0\n8,71.2\n",
        "raw/blob.bin": bytes(range(256)) * 1024 + b"\x00\xff" * 7,  # binary, NULs
        "logs/attempts/1.log": b"attempt 1 started\n",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def local_snapshot(root: Path) -> dict:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def remote_snapshot(s3, prefix: str) -> dict:
    out = {}
    for obj in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "/").get("Contents", []):
        out[obj["Key"]] = (obj["LastModified"], obj["ETag"])
    return out


def count_writes(s3) -> list[str]:
    """Record every write request the client sends (observation only)."""
    writes: list[str] = []
    for op in ("PutObject", "CreateMultipartUpload", "UploadPart", "CopyObject"):
        s3.meta.events.register(f"before-call.s3.{op}", lambda model, **_: writes.append(model.name))
    return writes


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- round trip ---------------------------------------------------------------


def test_round_trip(tmp_path, s3, prefix):
    tree = make_tree(tmp_path / "run")
    summary = publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3, manifest_extra={"run_id": "r-1"})
    assert summary["objects"] == summary["uploaded"] == 4
    assert summary["manifest_written"] is True

    manifest = json.loads(read_object_verified(BUCKET, f"{prefix}/manifest.json", s3=s3))
    assert manifest["schema"] == "infersweep.run-manifest/v1"
    assert manifest["run_id"] == "r-1" and manifest["created_at"]
    local = {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    assert {o["key"]: (o["sha256"], o["size"]) for o in manifest["objects"]} == {
        f"{prefix}/{rel}": (sha256(data), len(data)) for rel, data in local.items()
    }
    # sha256 travels as real object metadata (x-amz-meta-sha256 header).
    head = s3.head_object(Bucket=BUCKET, Key=f"{prefix}/raw/blob.bin")
    assert head["ResponseMetadata"]["HTTPHeaders"]["x-amz-meta-sha256"] == sha256(local["raw/blob.bin"])
    assert s3.head_object(Bucket=BUCKET, Key=f"{prefix}/summary.json")["ContentType"] == "application/json"
    assert read_object_verified(BUCKET, f"{prefix}/raw/blob.bin", s3=s3) == local["raw/blob.bin"]

    report = verify_run(BUCKET, prefix, s3=s3)
    assert report["ok"] and report["objects"] == 4 and report["unlisted_keys"] == []


def test_republish_identical_tree_is_a_no_op(tmp_path, s3, prefix):
    tree = make_tree(tmp_path / "run")
    publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)
    before = remote_snapshot(s3, prefix)
    writes = count_writes(s3)

    summary = publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)

    assert summary["skipped"] == 4 and summary["uploaded"] == 0
    assert summary["manifest_written"] is False
    assert writes == []  # not a single write request was sent
    assert remote_snapshot(s3, prefix) == before  # LastModified + ETag, manifest included


def test_changed_file_is_a_conflict_and_remote_is_untouched(tmp_path, s3, prefix):
    tree = make_tree(tmp_path / "run")
    publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)
    original = s3.get_object(Bucket=BUCKET, Key=f"{prefix}/summary.json")["Body"].read()
    before = remote_snapshot(s3, prefix)

    (tree / "summary.json").write_bytes(b'{"ttft_ms": 99}\n')
    (tree / "new.txt").write_text("would be new\n")
    with pytest.raises(PublishConflict) as info:
        publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)

    assert f"{prefix}/summary.json" in str(info.value)
    assert info.value.keys == [f"{prefix}/summary.json"]
    assert s3.get_object(Bucket=BUCKET, Key=f"{prefix}/summary.json")["Body"].read() == original
    # Conflicts are found before any upload: the new file did not go up either.
    assert remote_snapshot(s3, prefix) == before
    verify_run(BUCKET, prefix, s3=s3)


def test_attempts_folder_may_only_grow(tmp_path, s3, prefix):
    tree = make_tree(tmp_path / "run")
    publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)
    log = tree / "logs/attempts/1.log"

    log.write_bytes(log.read_bytes() + b"attempt 1 finished\n")  # appended: fine
    summary = publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)
    assert summary["replaced"] == 1 and summary["skipped"] == 3
    assert verify_run(BUCKET, prefix, s3=s3)["ok"]

    log.write_bytes(b"rewritten history\n")  # not an extension: would lose bytes
    with pytest.raises(PublishConflict, match="attempts/1.log"):
        publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)


# -- damage and interruption -----------------------------------------------------


def test_tampered_object_fails_verification(tmp_path, s3, prefix):
    tree = make_tree(tmp_path / "run")
    publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)
    key = f"{prefix}/nested/deeper/profile.csv"
    old_sha = s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]["sha256"]

    # Overwrite behind the publisher's back, keeping the old sha256 metadata.
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"concurrency,tps\n1,99.9\n", Metadata={"sha256": old_sha})

    with pytest.raises(ChecksumError) as info:
        verify_run(BUCKET, prefix, s3=s3)
    assert info.value.key == key and key in str(info.value)
    with pytest.raises(ChecksumError):
        read_object_verified(BUCKET, key, s3=s3)


KILL_BEFORE_MANIFEST = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from infersweep.results.publish import publish_tree, s3_client

    def die_before_manifest(params, **_):
        # The pod is killed right after the last object and before the manifest.
        if params["Key"].endswith("/manifest.json"):
            os.kill(os.getpid(), signal.SIGKILL)

    s3 = s3_client()
    s3.meta.events.register("before-parameter-build.s3.PutObject", die_before_manifest)
    publish_tree(Path(sys.argv[1]), bucket=sys.argv[2], prefix=sys.argv[3], s3=s3)
    """
)


def test_killed_before_manifest_is_incomplete_then_resumable(tmp_path, server, s3, prefix):
    tree = make_tree(tmp_path / "run")
    proc = subprocess.run(
        [sys.executable, "-c", KILL_BEFORE_MANIFEST, str(tree), BUCKET, prefix],
        cwd=REPO,
        env={**os.environ, **server.env()},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -9, proc.stderr.decode()
    assert len(remote_snapshot(s3, prefix)) == 4  # every object landed ...

    with pytest.raises(IncompleteRunError, match="is incomplete: no manifest"):
        verify_run(BUCKET, prefix, s3=s3)  # ... but the run is not complete

    summary = publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)  # the retry
    assert summary["skipped"] == 4 and summary["manifest_written"] is True
    assert verify_run(BUCKET, prefix, s3=s3)["ok"]


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_unreadable_file_uploads_nothing(tmp_path, s3, prefix):
    tree = make_tree(tmp_path / "run")
    # chmod 000 does not stop root (CI runs as root); reading /proc/self/mem
    # at offset 0 fails with EIO for anyone.
    (tree / "nested/broken.bin").symlink_to("/proc/self/mem")

    with pytest.raises(PublishError) as info:
        publish_tree(tree, bucket=BUCKET, prefix=prefix, s3=s3)

    assert "nested/broken.bin" in str(info.value)
    assert info.value.uploaded == []
    assert remote_snapshot(s3, prefix) == {}
    with pytest.raises(IncompleteRunError):
        verify_run(BUCKET, prefix, s3=s3)


def test_unreachable_s3_fails_fast_with_resume_command(tmp_path, monkeypatch):
    tree = make_tree(tmp_path / "run")
    before = local_snapshot(tree)
    with LocalS3(buckets=[BUCKET]) as dead:
        env = dead.env()
    for name, value in env.items():  # endpoint of a server that is gone
        monkeypatch.setenv(name, value)

    started = time.monotonic()
    with pytest.raises(PublishError) as info:
        publish_tree(tree, bucket=BUCKET, prefix="run-42", s3=s3_client())
    elapsed = time.monotonic() - started

    assert elapsed < 10, f"took {elapsed:.1f}s to notice S3 is down"
    message = str(info.value)
    assert f"infersweep publish {tree} --bucket {BUCKET} --prefix run-42" in message
    assert f"local copy at {tree} is intact" in message
    assert info.value.uploaded == [] and len(info.value.not_uploaded) == 4
    assert local_snapshot(tree) == before


def test_unreachable_s3_exits_75_so_the_step_is_retried(tmp_path):
    """The publish template retries exit 75 only (steps/transient.py: `retryPolicy: Always` with
    `asInt(lastRetry.exitCode) == 75`); S3 being unreachable is what a rerun outlives, so the step must say 75,
    not 1. A bucket that does not exist stays 1 (test_cli_summary_and_failure)."""
    tree = make_tree(tmp_path / "run")
    with LocalS3(buckets=[BUCKET]) as dead:
        env = {**os.environ, **dead.env()}
    cmd = [sys.executable, "-m", "steps.publish", str(tree), "--bucket", BUCKET, "--prefix", "run-42"]
    gone = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert gone.returncode == 75, gone.stderr
    assert f"local copy at {tree} is intact" in gone.stderr


# -- CLI ----------------------------------------------------------------------------


def test_cli_summary_and_failure(tmp_path, server, s3, prefix):
    tree = make_tree(tmp_path / "run")
    env = {**os.environ, **server.env()}
    cmd = [sys.executable, "-m", "steps.publish", str(tree), "--bucket", BUCKET, "--prefix", prefix]

    ok = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert len(ok.stdout.strip().splitlines()) == 1
    assert "4 objects" in ok.stdout and "0 skipped" in ok.stdout

    cmd[cmd.index("--bucket") + 1] = "no-such-bucket"
    bad = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1, bad.stderr  # NoSuchBucket: not a failure a retry outlives
    assert "infersweep publish" in bad.stderr and "--bucket no-such-bucket" in bad.stderr


# -- LocalS3 itself --------------------------------------------------------------------


def test_local_s3_leaves_no_process_behind():
    with pytest.raises(RuntimeError, match="boom"):
        with LocalS3(buckets=["scratch"]) as srv:
            pid, port = srv.pid, srv.port
            assert srv.running
            assert [b["Name"] for b in srv.client().list_buckets()["Buckets"]] == ["scratch"]
            raise RuntimeError("boom")  # the body fails: the server must still stop

    assert not srv.running
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # neither the server nor anything in its group is left
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    srv.stop()  # idempotent


def test_a_retried_run_publishes_beside_the_first_attempt_never_over_it(tmp_path, server, s3, prefix):
    """An Argo UI Retry re-runs the exit handler's publish with the same `{{workflow.name}}` prefix and a
    summary that now holds the re-measured points: with --retry-prefix (what the pipeline passes) it goes to
    PREFIX-r1, PREFIX-r2, ... and the first attempt's published results stay byte for byte."""
    tree = make_tree(tmp_path / "run")
    env = {**os.environ, **server.env()}
    cmd = [sys.executable, "-m", "steps.publish", str(tree), "--bucket", BUCKET, "--prefix", prefix, "--retry-prefix"]
    assert subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=60).returncode == 0
    first = remote_snapshot(s3, prefix)
    for n in (1, 2):
        (tree / "summary.json").write_text(f'{{"ttft_ms": 12.5, "retry": {n}}}\n')
        p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert f"publishing this attempt under {prefix}-r{n}" in p.stderr
        assert verify_run(BUCKET, f"{prefix}-r{n}", s3=s3)["objects"] == 4
    assert remote_snapshot(s3, prefix) == first
    # without the flag the conflict is still refused, as before
    p = subprocess.run(cmd[:-1], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "refusing to overwrite" in p.stderr
