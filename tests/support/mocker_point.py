"""The aiperf-point step, as its container runs it, against a real Dynamo frontend + mocker on this machine: the
set-up the point step's e2e tests share (tests/aiperf/test_warmup.py, test_adaptive_e2e.py,
tests/predict/test_predict_mocker.py)."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.deploy import deploy_local
from infersweep.local.dynamo.deployment import LocalDeployment, teardown_local
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.local.toolchain import default_dynamo_python
from infersweep.paths import venv_python
from infersweep.recipe import load_recipe
from tests.support.paths import REPO

AIPERF_BIN = REPO / ".venv-aiperf" / "bin" / "aiperf"


@contextmanager
def mocker_deployment(tmp_path: Path, recipe: str, max_workers: int = 1) -> Iterator[LocalDeployment]:
    """`recipe`'s DGD deployed here with mocker workers, ready to serve; torn down on the way out. Skips the test
    without .venv-dynamo and .venv-aiperf."""
    if not Path(default_dynamo_python()).exists() or not AIPERF_BIN.exists():
        pytest.skip("needs .venv-dynamo and .venv-aiperf (scripts/setup.sh)")
    state = tmp_path / "dgd"
    dep = deploy_local(
        render_dgd(load_recipe(recipe)),
        model_dir=tmp_path / "model",
        state_dir=state,
        max_workers_per_component=max_workers,
    )
    try:
        wait_ready_local(state, timeout_s=180)
        yield dep
    finally:
        teardown_local(state)


def run_point_step(dep: LocalDeployment, *args: str, timeout_s: float) -> subprocess.CompletedProcess:
    """`python -m steps.aiperf_point` in the AIPerf env against `dep` (its URL, model and tokenizer folder), with
    real AIPerf and `args` (--concurrency, --requests, --out, ...)."""
    point = [
        *("--url", dep.frontend_url, "--model", dep.model_name, "--tokenizer", dep.model_dir),
        *("--aiperf", str(AIPERF_BIN), *args),
    ]
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"} | {"PYTHONPATH": str(REPO)}
    return subprocess.run(
        [venv_python("aiperf"), "-m", "steps.aiperf_point", *point],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def c4_point(tmp_path: Path, out: Path, *args: str) -> dict:
    """One c4 point of the point step on the README recipe's mocker (ignore_eos, so every request runs its full
    OSL): its result.json, asserted ok. `args` give the rest (--requests, --warmup, --isl/--osl or --workload)."""
    with mocker_deployment(tmp_path, "nemotron-3-nano-fp8-vllm-agg-kv") as dep:
        proc = run_point_step(
            dep,
            *("--concurrency", "4", *args, "--out", str(out), "--timeout-s", "300"),
            *("--extra-inputs", "ignore_eos:true"),
            timeout_s=420,
        )
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "ok", (result["reason"], proc.stderr[-2000:])
    return result


def record_metadata(out: Path) -> list[dict]:
    """The `metadata` of every request AIPerf recorded under OUT/aiperf (warm-up and measured)."""
    return [json.loads(line)["metadata"] for line in (out / "aiperf" / "profile_export.jsonl").read_text().splitlines()]


def peak_in_flight(metas: list[dict]) -> int:
    """The most requests in flight at once over these records."""
    events = sorted([(m["request_start_ns"], 1) for m in metas] + [(m["request_end_ns"], -1) for m in metas])
    in_flight = most = 0
    for _, step in events:
        in_flight += step
        most = max(most, in_flight)
    return most
