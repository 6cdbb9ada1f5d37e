"""A living worker's lost discovery entry is kept alive; a dead worker's entries still expire.

ai-dynamo 1.3.1's file store orphans an entry a worker registered (file.rs get_or_create_bucket replaces a
bucket's Directory; infersweep.local.dynamo.discovery_keeper): on the H200 three starts in a row lost one, so a
restart does not get a measurement. The first tests set mtimes on a real folder; the last runs a real Dynamo
frontend and mocker worker, whose own keep-alive and expiry are what the keeper works beside."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.dgd import deployable_dgd
from infersweep.local.dynamo import discovery_keeper
from infersweep.local.dynamo.deploy import deploy_local
from infersweep.local.dynamo.deployment import ADOPTIONS_FILE, DISCOVERY_KEEPER, load_local, teardown_local
from infersweep.local.dynamo.discovery_keeper import instance_id, keep_round, lost_entries
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.local.toolchain import default_dynamo_python
from infersweep.recipe import load_recipe

S = 1_000_000_000


def _entries(tmp_path: Path, ages_s: dict[str, float]) -> dict[str, int]:
    bucket = tmp_path / "v1" / "instances"
    bucket.mkdir(parents=True, exist_ok=True)
    now = time.time_ns()
    for name, age in ages_s.items():
        p = bucket / name
        p.write_text("{}")
        os.utime(p, ns=(now - int(age * S), now - int(age * S)))
    return now


def test_the_instance_id_is_the_last_segment_of_the_key():
    assert instance_id("v1/instances/dynamo%2Fbackend%2Fgenerate%2F997be62ba644b168") == "997be62ba644b168"
    assert instance_id("v1/mdc/plain-name") is None


def test_a_stale_entry_is_kept_only_while_a_sibling_moves_and_before_it_expired(tmp_path):
    now = _entries(
        tmp_path,
        {
            "dynamo%2Fbackend%2Fgenerate%2Faa": 1.0,  # its owner touched it a second ago: alive
            "dynamo%2Fbackend%2Fclear%5Fkv%5Fblocks%2Faa": 6.0,  # lost by that owner: keep it
            "dynamo%2Fbackend%2Fgenerate%2Fbb": 7.5,  # a dead process: nothing of it moves
            "dynamo%2Fbackend%2Fclear%5Fkv%5Fblocks%2Fbb": 8.0,
            "dynamo%2Fbackend%2Fgenerate%2Fcc": 0.5,
            "dynamo%2Fbackend%2Fclear%5Fkv%5Fblocks%2Fcc": 10.5,  # past the TTL: being deleted, too late
        },
    )
    mtimes = discovery_keeper.entry_mtimes(tmp_path)
    assert lost_entries(mtimes, now, {}) == ["v1/instances/dynamo%2Fbackend%2Fclear%5Fkv%5Fblocks%2Faa"]


def test_a_sibling_only_this_keeper_touched_is_no_sign_of_a_living_owner(tmp_path):
    now = _entries(tmp_path, {"dynamo%2Fbackend%2Fgenerate%2Fdd": 1.0, "dynamo%2Fbackend%2Fx%2Fdd": 6.0})
    mtimes = discovery_keeper.entry_mtimes(tmp_path)
    mine = {"v1/instances/dynamo%2Fbackend%2Fgenerate%2Fdd": mtimes["v1/instances/dynamo%2Fbackend%2Fgenerate%2Fdd"]}
    assert lost_entries(mtimes, now, mine) == []


def test_a_round_touches_the_lost_entry_and_records_its_adoption_once(tmp_path):
    _entries(tmp_path, {"dynamo%2Fbackend%2Fgenerate%2Fee": 0.2, "dynamo%2Fbackend%2Fclear%2Fee": 5.5})
    log = tmp_path / "adoptions.jsonl"
    touched_here: dict[str, int] = {}
    adopted: set[str] = set()
    lost = "v1/instances/dynamo%2Fbackend%2Fclear%2Fee"
    assert keep_round(tmp_path, touched_here, adopted, log) == [lost]
    assert time.time_ns() - (tmp_path / lost).stat().st_mtime_ns < S  # touched, as the owner would
    os.utime(tmp_path / lost, ns=(time.time_ns() - 6 * S,) * 2)  # stale again later
    assert keep_round(tmp_path, touched_here, adopted, log) == [lost]
    records = discovery_keeper.read_adoptions(log)
    assert [r["entry"] for r in records] == [lost] and records[0]["age_s"] >= 5.0


def test_an_adopted_entry_is_touched_every_pass_while_its_owner_lives_and_let_go_when_it_dies(tmp_path):
    # Once adopted, the entry is kept as fresh as one poll: a pass held up 5 s on a loaded machine (CI's 2 cores)
    # must not let it reach the TTL, as a keeper that waited for it to go stale again would.
    now = _entries(tmp_path, {"dynamo%2Fbackend%2Fgenerate%2Fff": 0.5, "dynamo%2Fbackend%2Fclear%2Fff": 1.0})
    mtimes = discovery_keeper.entry_mtimes(tmp_path)
    lost = "v1/instances/dynamo%2Fbackend%2Fclear%2Fff"
    assert lost_entries(mtimes, now, {}) == []  # 1 s old: its owner may yet touch it
    assert lost_entries(mtimes, now, {}, {lost}) == [lost]  # adopted earlier: kept at every pass
    # the owner dies: its generate entry stops moving, and the adopted one (last touched here) is let go with it
    now = _entries(tmp_path, {"dynamo%2Fbackend%2Fgenerate%2Fff": 6.0, "dynamo%2Fbackend%2Fclear%2Fff": 1.0})
    mtimes = discovery_keeper.entry_mtimes(tmp_path)
    assert lost_entries(mtimes, now, {lost: mtimes[lost]}, {lost}) == []


def test_the_keeper_never_touches_an_entry_before_its_owner_missed_a_keep_alive():
    assert discovery_keeper.STALE_S > discovery_keeper.KEEP_ALIVE_S
    assert discovery_keeper.STALE_S + discovery_keeper.POLL_S + 1.0 < discovery_keeper.TTL_S


# ---------------------------------------------------------------- a real frontend and mocker

needs_dynamo = pytest.mark.skipif(
    not Path(default_dynamo_python()).exists(), reason=f"no Dynamo interpreter at {default_dynamo_python()}"
)


def _keeper_evidence(state_dir: Path) -> str:
    """What a failure needs to be read: the store's entries with their ages, the keeper's log and adoptions."""
    now = time.time_ns()
    ages = {k: round((now - v) / 1e9, 1) for k, v in discovery_keeper.entry_mtimes(state_dir / "discovery").items()}
    logs = sorted((state_dir / "logs").glob(f"{DISCOVERY_KEEPER}*"))
    keeper_log = logs[0].read_text()[-2000:] if logs else "(no keeper log)"
    return f"entries (age s): {ages}\nadoptions: {discovery_keeper.read_adoptions(state_dir / ADOPTIONS_FILE)}\nkeeper log:\n{keeper_log}"


@needs_dynamo
@pytest.mark.e2e
def test_a_live_workers_lost_entry_outlives_the_ttl_and_goes_with_its_worker(tmp_path, capsys):
    state_dir = tmp_path / "state"
    dgd = deployable_dgd(load_recipe("demo-prefix-kv"), load_cluster_settings(), name="keeper")
    deploy_local(dgd, model_dir=tmp_path / "model", state_dir=state_dir, check_owners=True)
    try:
        wait_ready_local(state_dir, 120)
        bucket = state_dir / "discovery" / "v1" / "instances"
        real = next(p for p in bucket.iterdir() if "generate" in p.name)
        iid = instance_id(f"v1/instances/{real.name}")
        # What a replaced Directory leaves: an entry of the living worker that its keep-alive never touches.
        lost = bucket / f"dynamo%2Fbackend%2Flost%5Fendpoint%2F{iid}"
        shutil.copyfile(real, lost)
        time.sleep(discovery_keeper.TTL_S + 3)  # Dynamo's own expiry deletes an untouched entry at 10 s
        assert lost.exists(), _keeper_evidence(state_dir)
        adoptions = discovery_keeper.read_adoptions(state_dir / ADOPTIONS_FILE)
        assert [a["entry"] for a in adoptions] == [f"v1/instances/{lost.name}"]
        # The owner check now passes without a restart, and says what was kept.
        dep = load_local(state_dir)
        dep.owners_checked_at = 0.0
        dep.save()
        wait_ready_local(state_dir, 60)
        assert "kept alive by infersweep's keeper" in capsys.readouterr().out
        assert load_local(state_dir).restarts == []
        # The worker dies without cleaning up: its entries stop moving and expire, the lost one with them.
        worker = next(r for r in dep.processes if r["name"] not in (DISCOVERY_KEEPER, "Frontend"))
        os.killpg(worker["pgid"], signal.SIGKILL)
        deadline = time.monotonic() + 25
        while (lost.exists() or real.exists()) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not lost.exists() and not real.exists()
    finally:
        teardown_local(state_dir)
    assert json.loads((state_dir / "deployment.json").read_text())["name"] == "keeper"


def test_a_gpu_deployment_that_does_not_fit_starts_no_keeper_either(tmp_path, monkeypatch):
    # deploy_local refuses before starting anything when the workers do not fit the GPUs here; the keeper is a
    # process of the deployment and must not be left running after the refusal.
    import sys

    from infersweep.dgd.render import render_dgd
    from infersweep.local.dynamo import procs
    from infersweep.local.gpu import workers as gpu_workers
    from infersweep.local.gpu.workers import GpuShortfall, GpuWorkers

    monkeypatch.setattr(gpu_workers, "detect_gpus", lambda: [])
    dgd = render_dgd(load_recipe("qwen3-32b-bf16-vllm-h200-tp1"), name="nofit")
    state_dir = tmp_path / "state"
    with pytest.raises(GpuShortfall):
        deploy_local(dgd, model_dir=tmp_path / "model", state_dir=state_dir, gpu=GpuWorkers(python=sys.executable))
    assert not procs.alive(state_dir) and procs.read_records(state_dir) == []
