"""A fresh deployment whose discovery entries have no owner is restarted before anything is measured.

On the H200 (ai-dynamo 1.3.1) two of three worker starts lost an endpoint instance 10 s after registering:
its file in the discovery store was touched by no process, so Dynamo's expiry deleted it while the worker
ran (benchmarks/measured/h200-2026-12-01; infersweep.local.dynamo.discovery_owners). The first tests read mtimes
on a real folder; the others run a real Dynamo frontend and mocker worker, whose own keep-alive is what the
check relies on, and plant an entry nobody owns, as a replaced `Directory` leaves one."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.dgd import deployable_dgd
from infersweep.local.dynamo import discovery_owners, reconfigure
from infersweep.local.dynamo.adapter import LocalPlatform
from infersweep.local.dynamo.deploy import deploy_local
from infersweep.local.dynamo.deployment import LocalDeploymentError, load_local, teardown_local
from infersweep.local.dynamo.discovery_owners import entry_mtimes, unowned_entries
from infersweep.local.dynamo.reconfigure import DGD_FILE
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.local.toolchain import default_dynamo_python
from infersweep.recipe import load_recipe


def _touching(paths: list[Path]):
    """A sleep during which these files are kept alive, as their owner's keep-alive thread would."""

    def sleep(_seconds: float) -> None:
        for p in paths:
            os.utime(p, ns=(time.time_ns(), time.time_ns()))

    return sleep


def test_an_entry_nobody_touches_is_unowned_and_a_touched_one_is_not(tmp_path):
    bucket = tmp_path / "v1" / "instances"
    bucket.mkdir(parents=True)
    owned, orphan, gone = (
        bucket / "dynamo%2Fbackend%2Fgenerate%2Fa1",
        bucket / "dynamo%2Fbackend%2Fgenerate%2Fb2",
        bucket / "x",
    )
    for p in (owned, orphan, gone):
        p.write_text("{}")
    old = time.time_ns() - 2_000_000_000
    for p in (owned, orphan, gone):
        os.utime(p, ns=(old, old))
    (bucket / ".tmp_00ff").write_text("half")  # an atomic write in flight is no entry

    def sleep(seconds: float) -> None:
        _touching([owned])(seconds)
        gone.unlink()  # expired (or unregistered) during the window
        (bucket / "new").write_text("{}")  # written during the window: not judged yet

    assert unowned_entries(tmp_path, sleep=sleep) == ["v1/instances/dynamo%2Fbackend%2Fgenerate%2Fb2", "v1/instances/x"]
    assert ".tmp_00ff" not in " ".join(entry_mtimes(tmp_path))


def test_what_a_stopped_process_left_behind_is_not_held_against_the_new_ones(tmp_path):
    # A frontend swapped for another (an experiment's treatment) may leave its entries behind when it is
    # killed; they expire by themselves. Only entries touched since the new processes started are judged.
    bucket = tmp_path / "v1" / "instances"
    bucket.mkdir(parents=True)
    stale, fresh = bucket / "old-frontend", bucket / "new-orphan"
    stale.write_text("{}")
    old = time.time_ns() - 5_000_000_000
    os.utime(stale, ns=(old, old))
    started = time.time() - 1.0
    fresh.write_text("{}")
    assert unowned_entries(tmp_path, since=started, sleep=lambda s: None) == ["v1/instances/new-orphan"]


def test_the_window_outlasts_two_keep_alives_and_ends_before_the_ttl():
    # file.rs: keep-alive every max(TTL / 3, 1 s); an entry is deleted once older than the TTL.
    assert discovery_owners.WINDOW_S >= 2 * discovery_owners.KEEP_ALIVE_S
    assert discovery_owners.WINDOW_S + 1.0 < discovery_owners.TTL_S


# ---------------------------------------------------------------- a real frontend and mocker

needs_dynamo = pytest.mark.skipif(
    not Path(default_dynamo_python()).exists(), reason=f"no Dynamo interpreter at {default_dynamo_python()}"
)


def _deploy(tmp_path: Path, *, check_owners: bool) -> tuple[Path, LocalPlatform]:
    state_dir = tmp_path / "state" / "dgd" / "owners"  # where LocalPlatform keeps a DGD of that name
    state_dir.mkdir(parents=True)
    # A catalog recipe's DGD as the pipeline renders it (aggregated, KV router): one mocker process locally.
    dgd = deployable_dgd(load_recipe("demo-prefix-kv"), load_cluster_settings(), name="owners")
    deploy_local(dgd, model_dir=tmp_path / "model", state_dir=state_dir, check_owners=check_owners)
    (state_dir / DGD_FILE).write_text(json.dumps(dgd))  # what apply_local keeps: the DGD to restart
    return state_dir, LocalPlatform(tmp_path / "state", model_dir=tmp_path / "model")


def _plant_unowned(state_dir: Path, key: str) -> None:
    """A second copy of the worker's generate instance under another key, written once and never touched:
    what a registration through a replaced Directory leaves behind."""
    bucket = state_dir / "discovery" / "v1" / "instances"
    real = next(p for p in bucket.iterdir() if "generate" in p.name and not p.name.endswith(key))
    shutil.copyfile(real, bucket / key)


@needs_dynamo
@pytest.mark.e2e
def test_a_live_dynamo_deployment_owns_every_entry_and_a_planted_one_gets_it_restarted(tmp_path, capsys, monkeypatch):
    state_dir, platform = _deploy(tmp_path, check_owners=False)
    try:
        wait_ready_local(state_dir, 120)
        entries = entry_mtimes(state_dir / "discovery")
        assert any(k.startswith("v1/instances/") for k in entries), entries
        # Dynamo's own keep-alive touches every entry its processes wrote: none is unowned.
        assert unowned_entries(state_dir / "discovery") == []

        first = load_local(state_dir)
        first.check_owners, first.owners_checked_at = True, 0.0
        first.save()
        key = "dynamo%2Fbackend%2Fgenerate%2F00000000000000ff"
        _plant_unowned(state_dir, key)
        monkeypatch.setattr(discovery_owners, "WINDOW_S", 4.5)  # > one keep-alive (3.3 s): owners still move
        platform.wait_ready("owners", "default", "unused", 120)

        out = capsys.readouterr().out
        assert "kept alive by no process" in out and key in out and "restarting owners (1 of 2" in out
        again = load_local(state_dir)
        assert {r["pid"] for r in again.processes}.isdisjoint({r["pid"] for r in first.processes})
        assert len(again.restarts) >= 1 and key in again.restarts[0]["why"]
        assert again.restarts[0]["started_at"] == first.created_at
        kept = [Path(p) for p in again.restarts[0]["logs"]]
        assert kept and all(p.name.endswith(".attempt1.log") and p.stat().st_size > 0 for p in kept)
        assert not (state_dir / "discovery" / "v1" / "instances" / key).exists()
        assert again.owners_checked_at > 0  # the new start was checked and passed
    finally:
        teardown_local(state_dir)


@needs_dynamo
@pytest.mark.e2e
def test_a_deployment_that_keeps_losing_owners_fails_the_deploy_step_naming_the_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(reconfigure, "RESTARTS_FOR_UNOWNED_ENTRIES", 1)
    monkeypatch.setattr(discovery_owners, "WINDOW_S", 4.5)
    state_dir, platform = _deploy(tmp_path, check_owners=True)
    key = "dynamo%2Fbackend%2Fgenerate%2F00000000000000fe"
    real_check = discovery_owners.unowned_entries

    def every_start_leaves_one(discovery_dir, **kw):
        # Each start, once it serves, gets an entry nobody owns just before the (real) check looks.
        _plant_unowned(state_dir, key)
        return real_check(discovery_dir, **kw)

    monkeypatch.setattr(discovery_owners, "unowned_entries", every_start_leaves_one)
    try:
        with pytest.raises(LocalDeploymentError) as e:
            platform.wait_ready("owners", "default", "unused", 120)
        assert key in str(e.value) and "still so after 1 restart(s)" in str(e.value)
        assert len(load_local(state_dir).restarts) == 1
    finally:
        teardown_local(state_dir)
