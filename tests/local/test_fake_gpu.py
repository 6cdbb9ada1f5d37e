"""INFERSWEEP_FAKE_GPU=N (infersweep.local.gpu.fake_gpu): the GPU path's detection, plan, refusals, command translation,
fake NVML and the words a user sees, without starting anything. The runs end to end are in test_fake_gpu_e2e.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.deploy import fake_engine_argv
from infersweep.local.dynamo.dgd_reader import read_components
from infersweep.local.dynamo.gpu_fit import check_fits
from infersweep.local.gpu.fake_gpu import FAKE_GPU_ENV, FakeNvml, fake_gpu_count, fake_gpus
from infersweep.local.gpu.run import gpu_workers
from infersweep.local.gpu.workers import GpuShortfall
from infersweep.local.toolchain import default_dynamo_python
from infersweep.platform.protocol import BadInput
from infersweep.predict.source import banner, check_same_source, is_simulated, result_source, source_class
from infersweep.recipe import RecipeError, load_recipe


def test_the_switch_gives_n_gpus_of_the_recipes_type_named_fake(monkeypatch, tmp_path):
    monkeypatch.setenv(FAKE_GPU_ENV, "2")
    gpu = gpu_workers(None, "dummy", None, tmp_path, gpu_type="H100")
    assert gpu.fake_gpu_type == "H100" and gpu.python.endswith(".venv-dynamo/bin/python")
    assert [g.index for g in gpu.gpus] == [0, 1]
    assert all(g.name == "NVIDIA H100 (fake GPU)" and g.memory_mib == 80 * 1024 for g in gpu.gpus)
    # the steps' deploys find the same GPUs from the environment the run gives them
    from infersweep.local.dynamo.adapter import gpu_workers_from_env, step_env

    env = step_env(state_dir=tmp_path, model_dir=tmp_path, max_workers=2, gpu=gpu)
    assert gpu_workers_from_env(env).fake_gpu_type == "H100" and env[FAKE_GPU_ENV] == "2"
    monkeypatch.delenv(FAKE_GPU_ENV)
    assert fake_gpu_count() == 0


@pytest.mark.parametrize("raw", ["0", "x", "-1", "1.5"])
def test_a_bad_count_is_one_error_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv(FAKE_GPU_ENV, raw)
    with pytest.raises(BadInput, match=f"{FAKE_GPU_ENV}='{raw}'.*whole number of at least 1"):
        gpu_workers(None, "dummy", None, Path("/nowhere"), gpu_type="H200")


def test_the_plan_refuses_on_fake_gpus_as_on_real_ones(tmp_path):
    gpus = fake_gpus(1, "H200")
    # two workers at 0.42 of the memory share one GPU; a whole-GPU worker pair does not fit on one
    fits = check_fits(
        render_dgd(load_recipe("llama-3-1-8b-vllm-h200-2w-kv"), name="t"),
        gpus,
        python="/p",
        model_dir=tmp_path,
        weights="dummy",
    )
    assert fits == 1
    r = load_recipe("qwen3-32b-bf16-vllm-h200-tp1", overrides={"topology.workers.replicas": 2, "gpu.count": 2})
    with pytest.raises(GpuShortfall, match=r"this machine has 1 \(0: NVIDIA H200 \(fake GPU\)\)"):
        check_fits(render_dgd(r, name="t"), gpus, python="/p", model_dir=tmp_path, weights="dummy")


@pytest.mark.parametrize(
    "recipe, engine",
    [("llama-3-1-8b-vllm-h200-2w-kv", "vllm"), ("qwen3-32b-bf16-sglang-h200-tp1", "sglang")],
)
def test_the_engine_command_becomes_the_mocker_at_the_last_moment_keeping_what_would_run(recipe, engine):
    comp = next(c for c in read_components(render_dgd(load_recipe(recipe), name="t")) if c.role != "frontend")
    rendered = ["/gpu/python", "-m", f"dynamo.{engine}", *comp.args]
    argv = fake_engine_argv(comp, rendered, Path("/m"), None)
    python = default_dynamo_python()
    assert argv[:3] == [python, "-I", argv[2]] and argv[2].endswith("infersweep/local/gpu/fake_engine.py")
    assert argv[argv.index("--rendered") + 1].startswith(f"/gpu/python -m dynamo.{engine} ")
    mocker = argv[argv.index("--") + 1 :]
    assert mocker[:3] == [python, "-m", "dynamo.mocker"]
    assert mocker[mocker.index("--engine-type") + 1] == engine and mocker[mocker.index("--num-workers") + 1] == "1"
    assert mocker[mocker.index("--model-path") + 1] == "/m"
    if engine == "vllm":  # the simulated KV cache keeps the recipe's size (the KV-vs-RR study depends on it)
        assert mocker[mocker.index("--num-gpu-blocks-override") + 1] == "4096"


def test_the_fake_nvml_feeds_the_sampler_flagged_samples(tmp_path):
    from infersweep.local.gpu.telemetry import NvmlSampler

    out = tmp_path / "samples.jsonl"
    s = NvmlSampler(out, period_s=0.05).start(nvml=FakeNvml(2))
    time.sleep(0.4)
    s.stop()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["gpu"] for r in rows} == {0, 1} and all(r["fake"] is True for r in rows)
    assert all(r["power_w"] == FakeNvml.POWER_W for r in rows)
    energy = [r["energy_j"] for r in rows if r["gpu"] == 0]
    assert energy == sorted(energy) and energy[-1] > energy[0]  # a counter, as NVML's


def test_a_fake_gpu_row_is_simulated_and_says_fake_gpu():
    words = "fake GPU: 1 of 1x NVIDIA H200 (fake GPU) (INFERSWEEP_FAKE_GPU), vllm workers rendered ..."
    src = result_source({"INFERSWEEP_MEASURED_ON": words})
    assert src == f"simulated ({words})" and is_simulated(src)
    assert "fake GPU" in banner(src) and "NOT a measurement" in banner(src)
    assert source_class(src) == "fake GPU"
    real = result_source({"INFERSWEEP_MEASURED_ON": "local GPU: 1 of 1x NVIDIA H200"})
    assert not is_simulated(real)
    with pytest.raises(RecipeError, match="different sources"):
        check_same_source({"a": {"source": src}, "b": {"source": real}}, allow_mix=False)
