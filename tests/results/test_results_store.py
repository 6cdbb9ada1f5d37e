"""RunStore and the run index against a REAL S3-compatible server (moto_server via LocalS3), with runs
published by the real infersweep.results.publish: complete runs are listed and loaded; a run whose publish was
interrupted (no manifest) is never listed and never loaded; concurrent runs never clobber the index."""

from __future__ import annotations

import hashlib
import json
import threading
import uuid

import pandas as pd
import pytest

import infersweep.results.publish as publish
from infersweep.local.standins.s3server import LocalS3
from infersweep.results.manifest import ChecksumError, IncompleteRunError, RunIntegrityError
from infersweep.results.store import RunNotFound, RunStore, publish_index_entry
from infersweep.results.table import SCHEMA_VERSION
from tests.support.run_folders import make_run_folder, summarize

BUCKET = "results"
RECIPE = "demo-prefix-kv"


@pytest.fixture(scope="module")
def server():
    with LocalS3(buckets=[BUCKET]) as srv:
        yield srv


@pytest.fixture()
def s3(server):
    return server.client()


@pytest.fixture()
def base():
    return f"runs-{uuid.uuid4().hex[:8]}"  # each test its own store prefix


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory, aiperf_ref):
    run = make_run_folder(tmp_path_factory.mktemp("store"), aiperf_ref)
    summarize(run)
    return run


def publish_run(s3, base: str, run_id: str, folder, recipe: str = RECIPE) -> str:
    prefix = f"{base}/{recipe}/{run_id}"
    publish.publish_tree(folder, bucket=BUCKET, prefix=prefix, s3=s3)
    publish_index_entry(BUCKET, prefix, s3=s3)
    return prefix


def interrupted_publish(s3, base: str, run_id: str, folder, monkeypatch) -> None:
    """The real publish, failing where an interruption would: after the objects, before the manifest."""

    def boom(*args, **kwargs):
        raise ConnectionError("connection reset while writing the manifest")

    monkeypatch.setattr(publish, "_write_manifest", boom)
    with pytest.raises(publish.PublishError):
        publish.publish_tree(folder, bucket=BUCKET, prefix=f"{base}/{RECIPE}/{run_id}", s3=s3)
    monkeypatch.undo()


def test_a_published_run_is_listed_and_loads_with_its_context(s3, base, run_folder):
    publish_run(s3, base, "wf-aaa", run_folder)
    store = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    runs = store.runs(recipe=RECIPE)
    assert list(runs["run_id"]) == ["wf-aaa"]
    assert runs.iloc[0]["measured_points"] == 2 and runs.iloc[0]["gpu_count"] == 2
    run = store.load("wf-aaa")
    assert list(run.table["concurrency"]) == [4, 8, 16]
    assert (run.table["run_id"] == "wf-aaa").all()  # filled from the store key
    assert run.context["recipe"] == RECIPE
    assert store.table(["wf-aaa", f"{RECIPE}/wf-aaa"]).shape[0] == 6
    # the raw AIPerf statistics travel with the run, checked against the manifest like the table
    assert run.raw is not None and set(run.raw["concurrency"]) == {4, 8}
    assert "summary/results_raw.parquet" in {o["key"].split("/wf-aaa/", 1)[-1] for o in run.manifest["objects"]}


def test_an_interrupted_run_is_never_listed_nor_loaded(s3, base, run_folder, monkeypatch):
    publish_run(s3, base, "wf-good", run_folder)
    interrupted_publish(s3, base, "wf-cut", run_folder, monkeypatch)
    # Its results parquet IS in the bucket: only the missing manifest says it is not complete.
    assert s3.head_object(Bucket=BUCKET, Key=f"{base}/{RECIPE}/wf-cut/summary/results.parquet")
    store = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    assert list(store.runs()["run_id"]) == ["wf-good"]
    with pytest.raises(IncompleteRunError, match="wf-cut is incomplete: no manifest"):
        store.load("wf-cut")
    with pytest.raises(IncompleteRunError):
        publish_index_entry(BUCKET, f"{base}/{RECIPE}/wf-cut", s3=s3)
    assert store.reindex() == []  # a repair pass does not index it either
    assert list(store.runs()["run_id"]) == ["wf-good"]
    # Finishing the publish (the command the error message gives) makes it complete and listable.
    publish_run(s3, base, "wf-cut", run_folder)
    assert sorted(store.runs()["run_id"]) == ["wf-cut", "wf-good"]


def test_concurrent_runs_of_one_recipe_do_not_clobber_the_index(s3, base, run_folder):
    ids = [f"wf-{i}" for i in range(6)]
    threads = [threading.Thread(target=publish_run, args=(s3, base, i, run_folder)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(RunStore(f"s3://{BUCKET}/{base}", s3=s3).runs(RECIPE)["run_id"]) == ids


def test_runs_of_other_recipes_are_not_listed_under_a_recipe(s3, base, run_folder):
    publish_run(s3, base, "wf-x", run_folder, recipe=RECIPE)
    publish_run(s3, base, "wf-y", run_folder, recipe="demo-prefix-rr")
    store = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    assert list(store.runs("demo-prefix-rr")["run_id"]) == ["wf-y"]
    assert sorted(store.runs()["run_id"]) == ["wf-x", "wf-y"]


def test_a_tampered_results_file_is_refused(s3, base, run_folder):
    prefix = publish_run(s3, base, "wf-t", run_folder)
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/summary/results.parquet", Body=b"not the measured table")
    with pytest.raises(ChecksumError, match="results.parquet"):
        RunStore(f"s3://{BUCKET}/{base}", s3=s3).load("wf-t")


def test_verify_run_and_the_store_judge_a_run_with_one_checker(s3, base, run_folder):
    """One manifest checker (infersweep.results.manifest): the publish step's verify_run and RunStore.load
    refuse the same damage with the same error class and the same words."""
    prefix = publish_run(s3, base, "wf-one", run_folder)
    key = f"{prefix}/summary/results.parquet"
    body = b"other bytes, with a matching sha256 header: only the manifest can tell"
    s3.put_object(Bucket=BUCKET, Key=key, Body=body, Metadata={"sha256": hashlib.sha256(body).hexdigest()})
    with pytest.raises(ChecksumError) as by_verify:
        publish.verify_run(BUCKET, prefix, s3=s3)
    with pytest.raises(ChecksumError) as by_store:
        RunStore(f"s3://{BUCKET}/{base}", s3=s3).load("wf-one")
    assert str(by_verify.value) == str(by_store.value) and by_store.value.key == key
    assert isinstance(by_store.value, RunIntegrityError)

    s3.delete_object(Bucket=BUCKET, Key=f"{prefix}/manifest.json")
    with pytest.raises(IncompleteRunError, match="is incomplete: no manifest"):
        publish.verify_run(BUCKET, prefix, s3=s3)
    with pytest.raises(IncompleteRunError, match="is incomplete: no manifest"):
        RunStore(f"s3://{BUCKET}/{base}", s3=s3).load(f"{RECIPE}/wf-one")


def test_unknown_run_is_a_clear_error(s3, base):
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        RunStore(f"s3://{BUCKET}/{base}", s3=s3).load("nope")


def test_a_local_folder_store_copied_from_s3_behaves_alike(s3, base, run_folder, tmp_path):
    publish_run(s3, base, "wf-l", run_folder)
    local = RunStore(tmp_path / "store")
    RunStore(f"s3://{BUCKET}/{base}", s3=s3).copy_run_to(local, "wf-l")
    assert list(local.runs()["run_id"]) == ["wf-l"]
    pd.testing.assert_frame_equal(local.load("wf-l").table, RunStore(f"s3://{BUCKET}/{base}", s3=s3).load("wf-l").table)
    (tmp_path / "store" / RECIPE / "wf-l" / "manifest.json").unlink()  # as if the copy was cut before it
    with pytest.raises(IncompleteRunError):
        local.load("wf-l")


def test_index_entries_are_plain_json_one_per_run(s3, base, run_folder):
    publish_run(s3, base, "wf-j", run_folder)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{base}/_index/").get("Contents", [])]
    assert keys == [f"{base}/_index/{RECIPE}/wf-j.json"]
    entry = json.loads(s3.get_object(Bucket=BUCKET, Key=keys[0])["Body"].read())
    manifest = s3.get_object(Bucket=BUCKET, Key=f"{base}/{RECIPE}/wf-j/manifest.json")["Body"].read()
    import hashlib

    assert entry["manifest_sha256"] == hashlib.sha256(manifest).hexdigest()
    assert entry["context"]["recipe"] == RECIPE and entry["results_schema"] == SCHEMA_VERSION
