"""An experiment's treatment is uploaded once, under experiments/, and is a run of its recipe through a run
pointer (infersweep/results/index.py): `runs`, `report`, `compare` and `baseline promote` read it as if it were
under <base>/<recipe>/<run-id>, in S3 (a REAL S3-compatible server, moto_server via LocalS3) and in the local
store folder a local experiment keeps (infersweep.local.disk_store). Stores the previous version filled (each
treatment uploaded twice) still list each run once."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from infersweep.cli import main
from infersweep.local.disk_store import keep_experiment
from infersweep.local.standins.s3server import LocalS3
from infersweep.results.manifest import MANIFEST_NAME, ChecksumError, RunIntegrityError
from infersweep.results.promote import promote
from infersweep.results.publish import publish_run, verify_run
from infersweep.results.store import DanglingRunPointer, RunPointerConflict, RunStore
from tests.support.run_folders import make_run_folder, summarize

BUCKET = "results"
RECIPE = "demo-prefix-kv"
EXP, WF = "demo-rr-vs-kv", "demo-rr-vs-kv-x7k2p"


@pytest.fixture(scope="module")
def server():
    with LocalS3(buckets=[BUCKET]) as srv:
        yield srv


@pytest.fixture()
def s3(server, monkeypatch):
    for name, value in server.env().items():  # publish_run and the CLI take the standard AWS chain
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("INFERSWEEP_STORE", raising=False)
    return server.client()


@pytest.fixture()
def base():
    return f"runs-{uuid.uuid4().hex[:8]}"  # each test its own store prefix


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory, aiperf_ref):
    run = make_run_folder(tmp_path_factory.mktemp("pointer"), aiperf_ref)
    summarize(run)
    return run


def publish_treatment(base: str, treatment: str, folder: Path, recipe: str = RECIPE) -> None:
    """What a treatment's publish task does (workflows/experiment.py, steps/publish.py)."""
    publish_run(
        folder,
        BUCKET,
        f"{base}/experiments/{EXP}/{WF}/{treatment}",
        retry_prefix=True,
        store_prefix=f"{base}/{recipe}/{WF}-{treatment}",
    )


def stored(s3, base: str) -> dict[str, int]:
    """Every object under the store's base: key -> size."""
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=base + "/")
    return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}


def folder_bytes(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def test_a_treatment_is_uploaded_once_and_listed_and_read_as_a_run_of_its_recipe(s3, base, run_folder, capsys):
    publish_treatment(base, "kv", run_folder)
    objects = stored(s3, base)
    n_files, n_bytes = folder_bytes(run_folder)
    # the run's files are in the bucket once: under the experiment, and nowhere else
    run_files = {k: v for k, v in objects.items() if k.rsplit("/", 1)[-1] not in (MANIFEST_NAME, "run-pointer.json")}
    run_files = {k: v for k, v in run_files.items() if "/_index/" not in k}
    assert (len(run_files), sum(run_files.values())) == (n_files, n_bytes)
    assert all(k.startswith(f"{base}/experiments/{EXP}/{WF}/kv/") for k in run_files)
    assert [k for k in objects if k.startswith(f"{base}/{RECIPE}/")] == [f"{base}/{RECIPE}/{WF}-kv/run-pointer.json"]

    store = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    assert list(store.runs(RECIPE)["run_id"]) == [f"{WF}-kv"]
    for ref in (f"{WF}-kv", f"{RECIPE}/{WF}-kv"):
        run = store.load(ref)
        assert list(run.table["concurrency"]) == [4, 8, 16] and run.raw is not None
        assert run.source == f"s3://{BUCKET}/{base}/experiments/{EXP}/{WF}/kv"  # where its bytes are
    # the CLI, as a user runs it
    publish_treatment(base, "rr", run_folder)
    capsys.readouterr()
    location = f"s3://{BUCKET}/{base}"
    assert main(["runs", "--store", location, "--all"]) == 0
    out = capsys.readouterr().out
    assert f"{WF}-kv" in out and f"{WF}-rr" in out and "2 run(s)" in out, out
    assert "incomplete" not in out, out  # experiments/ is no recipe with an unfinished run
    assert main(["compare", f"{WF}-rr", f"{WF}-kv", "--store", location]) == 0
    assert main(["report", f"{WF}-kv", "--store", location, "--out", str(run_folder.parent / "report")]) == 0


def test_a_pointed_run_promotes_to_a_baseline_with_its_files_in_place(s3, base, run_folder):
    publish_treatment(base, "kv", run_folder)
    source = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    dest = RunStore(f"s3://{BUCKET}/{base}-baselines", s3=s3)
    record = promote(source, f"{WF}-kv", dest)
    assert record["source"] == f"s3://{BUCKET}/{base}/experiments/{EXP}/{WF}/kv/"
    keys = set(stored(s3, f"{base}-baselines"))
    assert f"{base}-baselines/{RECIPE}/summary/results.parquet" in keys


def test_a_dangling_pointer_is_one_line_naming_the_run_and_what_is_missing(s3, base, run_folder, capsys):
    publish_treatment(base, "kv", run_folder)
    s3.delete_object(Bucket=BUCKET, Key=f"{base}/experiments/{EXP}/{WF}/kv/{MANIFEST_NAME}")  # the copy is gone
    store = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    with pytest.raises(DanglingRunPointer, match=rf"run {RECIPE}/{WF}-kv is stored at .*experiments/{EXP}/{WF}/kv/"):
        store.load(f"{WF}-kv")
    capsys.readouterr()
    assert main(["report", f"{WF}-kv", "--store", f"s3://{BUCKET}/{base}"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{RECIPE}/{WF}-kv" in err and f"experiments/{EXP}/{WF}/kv/" in err and "no manifest.json" in err, err


def test_verify_run_on_a_pointed_run_verifies_the_experiment_copy_and_says_where_it_is(s3, base, run_folder):
    """verify_run follows the pointer as every reader does: the run of its recipe is checked object by object
    where its bytes are, not refused for having no manifest under its own prefix."""
    publish_treatment(base, "kv", run_folder)
    here = f"{base}/experiments/{EXP}/{WF}/kv"
    report = verify_run(BUCKET, f"{base}/{RECIPE}/{WF}-kv", s3=s3)
    assert report["ok"] and report["stored_at"] == here, report
    assert report["pointer"] == f"{base}/{RECIPE}/{WF}-kv/run-pointer.json"
    assert (report["objects"], report["bytes"]) == folder_bytes(run_folder)
    assert report["unlisted_keys"] == []
    assert verify_run(BUCKET, here, s3=s3)["stored_at"] == here  # the copy itself: no pointer
    # damage in the experiment copy is found through the pointer, naming the damaged object
    key = f"{here}/summary/results.parquet"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"not the published bytes")
    with pytest.raises(ChecksumError, match=rf"s3://{BUCKET}/{key}: content sha256="):
        verify_run(BUCKET, f"{base}/{RECIPE}/{WF}-kv", s3=s3)


def test_verify_run_on_a_dangling_pointer_names_the_run_and_the_missing_copy(s3, base, run_folder):
    publish_treatment(base, "kv", run_folder)
    s3.delete_object(Bucket=BUCKET, Key=f"{base}/experiments/{EXP}/{WF}/kv/{MANIFEST_NAME}")
    with pytest.raises(DanglingRunPointer, match=rf"run {RECIPE}/{WF}-kv is stored at .*experiments/{EXP}/{WF}/kv/"):
        verify_run(BUCKET, f"{base}/{RECIPE}/{WF}-kv", s3=s3)


def test_a_pointer_is_never_written_to_nothing_nor_over_another_run(s3, base, run_folder):
    store = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    with pytest.raises(Exception, match="no manifest"):
        store.point_run(RECIPE, f"{WF}-kv", f"experiments/{EXP}/{WF}/kv")  # nothing published there
    assert stored(s3, base) == {}
    publish_run(run_folder, BUCKET, f"{base}/{RECIPE}/{WF}-kv")  # a run of its own there
    publish_run(run_folder, BUCKET, f"{base}/experiments/{EXP}/{WF}/kv")
    with pytest.raises(RunPointerConflict, match="already holds"):
        store.point_run(RECIPE, f"{WF}-kv", f"experiments/{EXP}/{WF}/kv")


def test_a_retried_treatment_points_beside_the_first_attempt(s3, base, run_folder, tmp_path):
    publish_treatment(base, "kv", run_folder)
    publish_treatment(base, "kv", run_folder)  # an Argo retry of the same step: the same bytes, nothing new
    second = make_run_folder(tmp_path, Path(__file__).parents[1] / "fixtures" / "aiperf" / "0.13.0", failed=False)
    summarize(second)
    publish_treatment(base, "kv", second)  # a retried workflow: other bytes, beside the first attempt
    store = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    assert sorted(store.runs(RECIPE)["run_id"]) == [f"{WF}-kv", f"{WF}-kv-r1"]
    assert list(store.load(f"{WF}-kv-r1").table["concurrency"]) == [4, 8]
    assert store.load(f"{WF}-kv-r1").source.endswith(f"experiments/{EXP}/{WF}/kv-r1")


def test_a_store_the_previous_version_filled_lists_each_run_once(s3, base, run_folder, capsys):
    """The previous experiment template uploaded each treatment twice: under experiments/ and as a run of its
    recipe. Such a store, with a newer experiment's pointed treatment beside it, lists every run once."""
    publish_run(run_folder, BUCKET, f"{base}/experiments/{EXP}/old-wf/kv", retry_prefix=True)
    publish_run(run_folder, BUCKET, f"{base}/{RECIPE}/old-wf-kv", retry_prefix=True)
    publish_treatment(base, "kv", run_folder)
    store = RunStore(f"s3://{BUCKET}/{base}", s3=s3)
    assert sorted(store.runs()["run_id"]) == sorted(["old-wf-kv", f"{WF}-kv"])
    assert store.reindex() == []  # experiments/ holds no recipe's runs to index
    assert list(store.load("old-wf-kv").table["concurrency"]) == [4, 8, 16]
    capsys.readouterr()
    assert main(["runs", "--store", f"s3://{BUCKET}/{base}", "--all"]) == 0
    out = capsys.readouterr().out
    assert "2 run(s)" in out and out.count("old-wf-kv") == 1 and "incomplete" not in out, out


def test_a_local_experiments_store_folder_lists_its_treatments_as_runs_of_their_recipes(
    s3, base, run_folder, tmp_path, capsys
):
    for treatment in ("rr", "kv"):
        publish_treatment(base, treatment, run_folder)
    folder = tmp_path / "runs" / "store"
    kept = keep_experiment(s3, BUCKET, base, EXP, folder)
    assert kept == folder / "experiments" / EXP
    # on disk once: the pointers are all that is under the recipe's folder
    assert sorted(p.relative_to(folder).as_posix() for p in (folder / RECIPE).rglob("*") if p.is_file()) == [
        f"{RECIPE}/{WF}-kv/run-pointer.json",
        f"{RECIPE}/{WF}-rr/run-pointer.json",
    ]
    n_files, n_bytes = folder_bytes(run_folder)
    copies = [p for p in folder.rglob("results.parquet")]
    assert len(copies) == 2  # one per treatment, not two
    assert folder_bytes(kept)[1] > 2 * n_bytes
    assert folder_bytes(folder)[1] - folder_bytes(kept)[1] < n_bytes / 10  # pointers and entries: small
    capsys.readouterr()
    assert main(["runs", "--store", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"{WF}-kv" in out and f"{WF}-rr" in out and RECIPE in out, out
    assert main(["compare", f"{WF}-rr", f"{WF}-kv", "--store", str(folder)]) == 0
    assert RunStore(folder).load(f"{WF}-kv").source == str(folder / "experiments" / EXP / WF / "kv")


def test_infersweep_publish_finishes_a_treatments_publish_with_its_pointer(s3, base, run_folder, capsys):
    """`infersweep publish --store-prefix`: what a user runs when a treatment's publish step gave up."""
    here = f"{base}/experiments/{EXP}/{WF}/kv"
    argv = ["publish", str(run_folder), "--bucket", BUCKET, "--prefix", here]
    assert main([*argv, "--store-prefix", f"other-{base}/{RECIPE}/{WF}-kv"]) == 2  # not under that store's base
    assert "outside that store's base" in capsys.readouterr().err
    assert stored(s3, base) == {}  # refused before anything was uploaded
    assert main([*argv, "--store-prefix", f"{base}/{RECIPE}/{WF}-kv"]) == 0
    assert f"a pointer to s3://{BUCKET}/{here}, not a copy" in capsys.readouterr().out
    assert list(RunStore(f"s3://{BUCKET}/{base}", s3=s3).runs(RECIPE)["run_id"]) == [f"{WF}-kv"]


def test_a_pointer_never_reads_outside_its_store_folder(tmp_path):
    store = RunStore(tmp_path / "store")
    store.backend.put(
        f"{RECIPE}/{WF}-kv/run-pointer.json", b'{"schema": "infersweep.run-pointer/v1", "stored_at": "../x"}'
    )
    with pytest.raises(RunIntegrityError, match="names no prefix of this store"):
        store.load(f"{RECIPE}/{WF}-kv")
