"""Local mode gives a point step with a budget the steadiness thresholds of the validity profile its steps select
(infersweep.local.scale.step_steadiness_here): on the mocker and on fake GPUs the `local` profile, on real engines
`local-gpu`, as the summarize step of the same run picks them from the environment local mode gives it."""

from __future__ import annotations

import pytest

from infersweep.aiperf.flags import STEADY_KEYS
from infersweep.local.dynamo.adapter import step_env
from infersweep.local.gpu.fake_gpu import FAKE_GPU_ENV
from infersweep.local.gpu.workers import GpuWorkers
from infersweep.local.profile import load_local_profile
from infersweep.local.scale import scaled_arguments, step_steadiness_here
from infersweep.recipe import load_recipe
from infersweep.validity_thresholds import load_thresholds

BUDGET = {"workload.max_requests_per_concurrency": 24}


@pytest.mark.parametrize(
    ("gpu", "profile"),
    [
        (None, "local"),
        (GpuWorkers(python="/gpu/python", fake_gpu_type="H200", gpus=(object(),)), "local"),
        (GpuWorkers(python="/gpu/python"), "local-gpu"),
    ],
    ids=["mocker", "fake-gpu", "gpu"],
)
def test_the_step_gets_the_thresholds_of_the_profile_its_run_is_judged_by(tmp_path, monkeypatch, gpu, profile):
    monkeypatch.delenv(FAKE_GPU_ENV, raising=False)
    w = load_recipe("demo-prefix-rr", overrides=BUDGET).recipe.workload
    sent = step_steadiness_here(w, gpu)
    judged = load_thresholds(env=step_env(state_dir=tmp_path, model_dir=tmp_path, max_workers=1, gpu=gpu))
    assert judged["profile"] == profile
    assert sent == {k: judged[block][name] for k, (block, name) in STEADY_KEYS.items()}
    assert not step_steadiness_here(load_recipe("demo-prefix-rr").recipe.workload, gpu)  # no budget: nothing


def test_a_local_experiments_treatment_with_a_budget_carries_them():
    r = load_recipe("demo-prefix-rr", overrides=BUDGET)
    args = scaled_arguments(r, load_local_profile())
    assert '"steady_max_ttft_drift":0.5' in args["workload"]
    assert "steady_" not in scaled_arguments(load_recipe("demo-prefix-rr"), load_local_profile())["workload"]


def test_a_local_slo_search_probe_with_a_budget_carries_them(tmp_path):
    # slo-search --local's probes run the same point step: with a budget they extend until steady, judged as
    # the probe's row is judged (the `local` profile on the mocker)
    from infersweep.local.slo_search import SloSearchOptions, _probe_side

    o = SloSearchOptions(out=tmp_path, lo=1, hi=8)
    side = _probe_side(load_recipe("demo-prefix-rr", overrides=BUDGET), o, load_local_profile(), {}, tmp_path)
    assert side.workload["steady_max_ttft_drift"] == 0.5 and "max_requests_factor" in side.workload
    plain = _probe_side(load_recipe("demo-prefix-rr"), o, load_local_profile(), {}, tmp_path)
    assert not any(k.startswith("steady_") for k in plain.workload)
