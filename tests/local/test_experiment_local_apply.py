"""A DGD applied over a running local deployment changes what the operator would change: the experiment's
router switch replaces only the frontend (same URL, same worker processes), an engine-argument change
restarts the workers and keeps the frontend. Real Dynamo frontend + mocker processes; no mocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersweep.dgd.render import render_dgd
from infersweep.experiment.plan import make_plan
from infersweep.experiment.restart import RestartClass
from infersweep.experiment.spec import load_experiment, patch
from infersweep.local.dynamo import procs
from infersweep.local.dynamo.deployment import teardown_local
from infersweep.local.dynamo.reconfigure import apply_local
from infersweep.local.dynamo.toy_model import build_toy_model
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.local.toolchain import default_dynamo_python
from infersweep.recipe import parse_recipe

pytestmark = pytest.mark.e2e

if not Path(default_dynamo_python()).exists():
    pytest.skip(f"no Dynamo interpreter at {default_dynamo_python()}", allow_module_level=True)


def pids(state: Path) -> dict[str, int]:
    return {r["name"]: r["pid"] for r in procs.alive(state)}


def test_router_switch_keeps_workers_and_engine_args_restart_them(tmp_path):
    model = build_toy_model(tmp_path / "model") or tmp_path / "model"
    state = tmp_path / "dgd"
    plan = make_plan(load_experiment("nemotron-rr-vs-kv"))
    rr, kv = (s.treatment.recipe for s in plan.steps)
    d_rr, d_kv = (render_dgd(r, name="exp-0") for r in (rr, kv))
    try:
        dep, cls = apply_local(d_rr, model_dir=model, state_dir=state)
        assert cls is None and dep.router_mode == "round-robin"
        wait_ready_local(state, timeout_s=120)
        before = pids(state)
        assert set(before) == {"Frontend", "VllmWorker"}

        dep2, cls = apply_local(d_kv, model_dir=model, state_dir=state)
        assert cls is RestartClass.FRONTEND
        wait_ready_local(state, timeout_s=120)
        after = pids(state)
        assert after["VllmWorker"] == before["VllmWorker"]  # the workers kept running
        assert after["Frontend"] != before["Frontend"] and dep2.router_mode == "kv"
        assert dep2.frontend_url == dep.frontend_url  # the Service address does not move
        frontend_args = next(r["argv"] for r in procs.alive(state) if r["name"] == "Frontend")
        assert frontend_args[frontend_args.index("--router-mode") + 1] == "kv"

        assert apply_local(d_kv, model_dir=model, state_dir=state)[1] is RestartClass.LOAD
        assert pids(state) == after

        changed = parse_recipe(
            {
                **patch(kv.recipe.model_dump(exclude_none=True), {"engine_args": ["--gpu-memory-utilization", "0.80"]}),
                "name": "x",
            }
        )
        _, cls = apply_local(render_dgd(changed, name="exp-0"), model_dir=model, state_dir=state)
        assert cls is RestartClass.WORKER
        wait_ready_local(state, timeout_s=120)
        last = pids(state)
        assert last["Frontend"] == after["Frontend"] and last["VllmWorker"] != after["VllmWorker"]
    finally:
        teardown_local(state)
    assert procs.alive(state) == []
