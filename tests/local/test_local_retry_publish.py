"""A local `--retry` publishes beside the first attempt, under <run>-r1, never over it (issue 38 item 10:
docs/lifecycle.md promised `-r1`, but each local run starts an empty S3 server, so the retry's publish found
nothing there and the store folder's copy of the first attempt was overwritten)."""

from __future__ import annotations

from pathlib import Path

from infersweep.local.disk_store import keep_run, seed_from_disk
from infersweep.local.publish import published_attempt
from infersweep.local.standins.s3server import LocalS3
from infersweep.results.publish import publish_run
from infersweep.results.store import RunStore

BUCKET, BASE, RECIPE, RUN = "runs", "runs", "demo", "demo-20261203-000000"


def _attempt(folder: Path, c8: str) -> Path:
    (folder / "summary").mkdir(parents=True, exist_ok=True)
    (folder / "summary" / "results.md").write_text(f"| c4 | ok |\n| c8 | {c8} |\n")
    (folder / "run.json").write_text('{"context": {"run_id": "%s", "recipe": "%s"}}\n' % (RUN, RECIPE))
    return folder


def _publish(server: LocalS3, folder: Path, monkeypatch) -> None:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    publish_run(folder, BUCKET, f"{BASE}/{RECIPE}/{RUN}", retry_prefix=True)  # as the publish step does


def test_a_local_retry_publishes_under_r1_and_keeps_the_first_attempt(tmp_path, monkeypatch):
    store = tmp_path / "runs" / "store"
    run = _attempt(tmp_path / "run", c8="cancelled")
    with LocalS3(buckets=[BUCKET]) as first:  # the first attempt's run: its own S3 server, then gone
        _publish(first, run, monkeypatch)
        rid, keys = published_attempt(first.client(), BUCKET, f"{BASE}/{RECIPE}", RUN, set())
        assert rid == RUN and keys
        keep_run(first.client(), BUCKET, BASE, RECIPE, rid, store)
    kept = (store / RECIPE / RUN / "summary" / "results.md").read_bytes()

    _attempt(run, c8="ok")  # the retry measured c8
    with LocalS3(buckets=[BUCKET]) as second:
        seeded = seed_from_disk(second.client(), BUCKET, BASE, RECIPE, RUN, store)
        assert seeded
        _publish(second, run, monkeypatch)
        rid, keys = published_attempt(second.client(), BUCKET, f"{BASE}/{RECIPE}", RUN, seeded)
        assert rid == f"{RUN}-r1" and all(f"/{RUN}-r1/" in k for k in keys)
        keep_run(second.client(), BUCKET, BASE, RECIPE, rid, store)

    assert (store / RECIPE / RUN / "summary" / "results.md").read_bytes() == kept  # never over it
    assert b"| c8 | ok |" in (store / RECIPE / f"{RUN}-r1" / "summary" / "results.md").read_bytes()
    assert {RUN, f"{RUN}-r1"} <= set(RunStore(store).runs(RECIPE)["run_id"])


def test_an_experiments_treatments_are_kept_as_a_store_that_runs_lists(tmp_path, monkeypatch):
    """Issue 38 item 13: an experiment's treatments were not in the results store (`runs` did not list them)."""
    from infersweep.local.disk_store import keep_experiment

    exp, wf = "nemotron-rr-vs-kv", "nemotron-rr-vs-kv-20261203-000000"
    with LocalS3(buckets=[BUCKET]) as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        for t in ("rr", "kv"):  # as the experiment workflow's <t>-publish steps publish (workflows/experiment.py)
            publish_run(_attempt(tmp_path / t, c8="ok"), BUCKET, f"{BASE}/experiments/{exp}/{wf}/{t}")
        store = keep_experiment(server.client(), BUCKET, BASE, exp, tmp_path / "runs" / "store")
    assert store == tmp_path / "runs" / "store" / "experiments" / exp
    assert set(RunStore(store).runs()["run_id"]) == {"rr", "kv"}
