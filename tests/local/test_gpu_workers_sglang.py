"""`--workers gpu` with dynamo.sglang workers: the process plan (infersweep.local.gpu.workers) for rendered
SGLang DGDs -- GPUs (DP attention inside TP), memory-fraction sharing, the SGLang interpreter, local flags --
and every flag of the planned command line is one Dynamo 1.3.1's dynamo.sglang parser has. CPU only: nothing is
started here; the H200 twin's planned worker ran on the H200 (benchmarks/measured/h200-2026-12-02/
sglang-qwen3-32b-bf16-c16-c32)."""

from __future__ import annotations

import itertools
import json

import pytest

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.dgd_reader import read_components, served_model_name
from infersweep.local.gpu.workers import EngineLaunch, Gpu, GpuShortfall, engine_pythons, plan_workers
from infersweep.recipe import load_recipe
from infersweep.recipe.release import accepted, flag_name, release_flags

H200S = [Gpu(i, "NVIDIA H200", 143771) for i in range(16)]
SGLANG_PY = "/opt/infersweep/venv-site-sglang/bin/python"


def one_replica(comps):
    for c in comps:
        c.replicas = 1


def plan(recipe: str, gpus, patch=None, api="v1alpha1"):
    comps = read_components(render_dgd(load_recipe(recipe), api_version=api, name="t"))
    if patch:
        patch(comps)
    ports = itertools.count(31000)
    return plan_workers(
        comps,
        gpus,
        EngineLaunch(
            python="/gpu/vllm-python",
            model_dir="/models/cfg",
            weights="dummy",
            pythons=engine_pythons({"INFERSWEEP_GPU_PYTHON_SGLANG": SGLANG_PY}),
        ),
        base_env={},
        free_port=lambda: next(ports),
        served_name_of=served_model_name,
    )


def test_an_sglang_worker_runs_dynamo_sglang_in_its_own_interpreter_on_its_tp_gpus():
    (w,) = plan("qwen3-32b-fp8-sglang-agg", H200S[:2], patch=one_replica)
    assert w.argv[:3] == [SGLANG_PY, "-m", "dynamo.sglang"]
    assert w.gpus == [0, 1] and w.env["CUDA_VISIBLE_DEVICES"] == "0,1"
    a = w.argv
    assert a[a.index("--model-path") + 1] == "/models/cfg" and a.count("--model-path") == 1
    assert a[a.index("--served-model-name") + 1] == "Qwen/Qwen3-32B-FP8"
    assert a[a.index("--load-format") + 1] == "dummy" and a[a.index("--tp") + 1] == "2"


def _two_tp1(fraction: str | None):
    def patch(comps):
        for c in comps:
            if c.role == "worker":
                c.replicas = 2
                c.args[c.args.index("--tp") + 1] = "1"
                c.args += ["--mem-fraction-static", fraction] if fraction else []

    return patch


def test_the_h200_sglang_twin_runs_one_dynamo_sglang_worker_on_one_gpu_like_its_vllm_twin():
    """The recipe the fourth H200 session ran for SGLang: the same shape as the measured vLLM sweep, one worker
    on GPU 0 with random weights, in the SGLang site's interpreter."""
    (w,) = plan("qwen3-32b-bf16-sglang-h200-tp1", H200S[:1])
    (v,) = plan("qwen3-32b-bf16-vllm-h200-tp1", H200S[:1])
    assert w.argv[:3] == [SGLANG_PY, "-m", "dynamo.sglang"] and v.argv[2] == "dynamo.vllm"
    assert w.gpus == v.gpus == [0] and w.env["CUDA_VISIBLE_DEVICES"] == "0"
    a = w.argv
    assert a[a.index("--load-format") + 1] == "dummy" and a[a.index("--served-model-name") + 1] == "Qwen/Qwen3-32B"
    assert (
        load_recipe("qwen3-32b-bf16-sglang-h200-tp1").recipe.workload
        == load_recipe("qwen3-32b-bf16-vllm-h200-tp1").recipe.workload
    )


def test_sglang_workers_with_mem_fraction_static_share_a_gpu():
    ws = plan("qwen3-32b-fp8-sglang-agg", H200S[:1], patch=_two_tp1("0.42"))
    assert [(w.gpus, w.memory_fraction) for w in ws] == [([0], 0.42), ([0], 0.42)]
    with pytest.raises(GpuShortfall, match="SGLang --mem-fraction-static"):  # without it each owns its GPU
        plan("qwen3-32b-fp8-sglang-agg", H200S[:1], patch=_two_tp1(None))


def test_dp_attention_ranks_share_the_tp_groups_gpus():
    """Qwen3.6 4P+4D at TP=2 DP=2 EP=2 with DP attention is 16 GPUs (the recipe's gpu.count), not 32."""
    ws = plan("qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload", H200S)
    assert [len(w.gpus) for w in ws] == [2] * 8
    assert sorted(g for w in ws for g in w.gpus) == list(range(16))


def test_each_sglang_prefill_worker_gets_its_own_bootstrap_port():
    ws = plan("qwen3-32b-fp8-sglang-disagg-2p1d", H200S[:8])
    prefill = [w for w in ws if w.role == "prefill"]
    ports = [w.argv[w.argv.index("--disaggregation-bootstrap-port") + 1] for w in prefill]
    assert len(prefill) == 2 and len(set(ports)) == 2 and "12345" not in ports
    assert all(w.argv.count("--disaggregation-bootstrap-port") == 1 for w in prefill)


def test_kv_events_stay_on_and_move_to_a_port_of_each_worker():
    ws = [w for w in plan("qwen3-32b-fp8-sglang-disagg-6p2d-kv", H200S) if w.role == "prefill"]
    cfgs = [json.loads(w.argv[w.argv.index("--kv-events-config") + 1]) for w in ws]
    assert all(c["publisher"] == "zmq" for c in cfgs) and len({c["endpoint"] for c in cfgs}) == len(ws)


def test_without_an_sglang_interpreter_the_default_one_runs_it():
    assert engine_pythons({"INFERSWEEP_GPU_PYTHON": "/x", "INFERSWEEP_GPU_PYTHON_SGLANG": ""}) == {}
    comps = read_components(render_dgd(load_recipe("qwen3-32b-fp8-sglang-agg"), name="t"))
    one_replica(comps)
    (w,) = plan_workers(
        comps,
        H200S[:2],
        EngineLaunch(python="/gpu/python", model_dir="/m", weights="cache"),
        base_env={},
        free_port=lambda: 1,
        served_name_of=served_model_name,
    )
    assert w.argv[0] == "/gpu/python"


@pytest.mark.parametrize(
    "recipe",
    [
        "qwen3-32b-fp8-sglang-disagg-6p2d-kv",
        "qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload",
        "llama-3-1-8b-vllm-h200-2w-kv",
        "qwen3-32b-bf16-sglang-h200-tp1",
    ],
)
def test_every_planned_flag_is_one_dynamo_1_3_1s_parser_has(recipe):
    """The GPU host runs ai-dynamo 1.3.1: the command lines local mode builds (its own --load-format,
    --served-model-name, bootstrap and KV-events ports on top of the rendered flags) parse there, per the
    flag lists generated from 1.3.1's parsers (params/engines/releases/dynamo-1.3.1.flags.yaml)."""
    flags = release_flags("dynamo-1.3.1")
    for w in plan(recipe, H200S):
        module = w.argv[2]
        names = [flag_name(t, module) for t in w.argv[3:]]
        assert [n for n in names if n and not accepted(n, flags[module])] == [], w.name


def test_the_banner_names_the_stack_that_runs_the_workers(monkeypatch):
    """An SGLang run names SGLang and its interpreter's ai-dynamo/torch, not the vLLM site's vLLM."""
    import infersweep.local.gpu.run as gpu_run
    from infersweep.local.dynamo.gpu_fit import worker_modules
    from infersweep.local.gpu.workers import GpuWorkers

    stacks = {
        "/gpu/vllm-python": {"vllm": "0.23.0", "ai-dynamo": "1.3.1", "torch": "2.11.0+cu130"},
        SGLANG_PY: {"sglang": "0.5.14", "ai-dynamo": "1.3.1", "torch": "2.11.0+cu130"},
    }
    monkeypatch.setattr(gpu_run, "stack_versions", lambda python: stacks[python])
    monkeypatch.setenv("INFERSWEEP_GPU_PYTHON_SGLANG", SGLANG_PY)
    gpu = GpuWorkers(python="/gpu/vllm-python")
    dgd = render_dgd(load_recipe("qwen3-32b-fp8-sglang-agg"), name="t")
    assert worker_modules(dgd) == {"dynamo.sglang"}
    assert gpu_run.engine_stack(gpu, {"dynamo.sglang"}) == stacks[SGLANG_PY]
    assert gpu_run.engine_stack(gpu, {"dynamo.vllm"}) == stacks["/gpu/vllm-python"]
    words = gpu_run.measured_on(H200S[:1], 1, gpu_run.engine_stack(gpu, {"dynamo.sglang"}), "dummy", None)
    assert "sglang 0.5.14" in words and "vllm" not in words
