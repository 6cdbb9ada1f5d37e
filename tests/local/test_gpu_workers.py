"""The GPU adapter's process plan (infersweep.local.gpu.workers): which process gets which GPU, its flags and
environment, and the refusals, for rendered DGDs of real recipes. CPU only: nothing is started."""

from __future__ import annotations

import itertools
import json

import pytest

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.dgd_reader import read_components, served_model_name
from infersweep.local.gpu.workers import EngineLaunch, Gpu, GpuShortfall, parse_nvidia_smi, plan_workers
from infersweep.platform.protocol import BadInput
from infersweep.recipe import load_recipe

H200 = Gpu(0, "NVIDIA H200", 143771)


def plan(recipe: str, gpus, weights="dummy", patch=None):
    r = load_recipe(recipe)
    dgd = render_dgd(r, name="t")
    comps = read_components(dgd)
    if patch:
        patch(comps)
    ports = itertools.count(31000)
    return plan_workers(
        comps,
        gpus,
        EngineLaunch(python="/gpu/python", model_dir="/models/cfg", weights=weights),
        base_env={"DYN_FILE_KV": "/d"},
        free_port=lambda: next(ports),
        served_name_of=served_model_name,
    )


def test_two_workers_with_a_memory_fraction_share_one_gpu_each_on_its_own_kv_port():
    ws = plan("llama-3-1-8b-vllm-h200-2w-kv", [H200])
    assert [w.name for w in ws] == ["VllmWorker-0", "VllmWorker-1"]
    assert [w.env["CUDA_VISIBLE_DEVICES"] for w in ws] == ["0", "0"]
    assert [w.memory_fraction for w in ws] == [0.42, 0.42]
    ports = [json.loads(w.argv[w.argv.index("--kv-events-config") + 1])["endpoint"] for w in ws]
    assert len(set(ports)) == 2 and all(p.startswith("tcp://*:") for p in ports)
    assert ws[0].env["DYN_SYSTEM_PORT"] != ws[1].env["DYN_SYSTEM_PORT"]
    argv = ws[0].argv
    assert argv[:3] == ["/gpu/python", "-m", "dynamo.vllm"]
    assert argv[argv.index("--model") + 1] == "/models/cfg"  # the local folder, not the hub id
    assert argv[argv.index("--served-model-name") + 1] == "meta-llama/Llama-3.1-8B-Instruct"  # what clients ask for
    assert argv[argv.index("--load-format") + 1] == "dummy"
    assert argv.count("--kv-events-config") == 1 and argv.count("--model") == 1
    assert ws[0].env["DYN_FILE_KV"] == "/d"


def test_cached_weights_load_as_they_are():
    ws = plan("qwen3-32b-bf16-vllm-h200-tp1", [H200], weights="cache")
    assert "--load-format" not in ws[0].argv
    assert ws[0].gpus == [0] and ws[0].memory_fraction is None


def test_workers_without_a_memory_fraction_each_need_a_gpu_and_the_refusal_says_how_to_share():
    def drop_fraction(comps):
        for c in comps:
            if "--gpu-memory-utilization" in c.args:
                i = c.args.index("--gpu-memory-utilization")
                del c.args[i : i + 2]

    with pytest.raises(GpuShortfall) as e:
        plan("llama-3-1-8b-vllm-h200-2w-kv", [H200], patch=drop_fraction)
    msg = str(e.value)
    assert "VllmWorker[1] needs 1 GPU with the whole GPU" in msg and "this machine has 1" in msg
    assert "--gpu-memory-utilization" in msg
    ws = plan("llama-3-1-8b-vllm-h200-2w-kv", [H200, Gpu(1, "NVIDIA H200", 143771)], patch=drop_fraction)
    assert [w.gpus for w in ws] == [[0], [1]]


def test_tensor_parallel_replicas_get_that_many_gpus_or_a_refusal():
    def tp2(comps):
        for c in comps:
            if c.role != "frontend":
                c.args[c.args.index("--tensor-parallel-size") + 1] = "2"

    with pytest.raises(GpuShortfall, match=r"needs 2 GPUs"):
        plan("qwen3-32b-bf16-vllm-h200-tp1", [H200], patch=tp2)
    ws = plan("qwen3-32b-bf16-vllm-h200-tp1", [Gpu(i, "NVIDIA H200", 143771) for i in range(2)], patch=tp2)
    assert ws[0].env["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_a_fraction_too_large_to_pair_does_not_share():
    def big(comps):
        for c in comps:
            if "--gpu-memory-utilization" in c.args:
                c.args[c.args.index("--gpu-memory-utilization") + 1] = "0.6"

    with pytest.raises(GpuShortfall, match=r"VllmWorker\[1\] needs 1 GPU with a 0.6 memory fraction"):
        plan("llama-3-1-8b-vllm-h200-2w-kv", [H200], patch=big)


def test_mocker_components_and_bad_sizes_are_refused_by_name():
    def mocker(comps):
        comps[-1].module = "dynamo.mocker"

    with pytest.raises(BadInput, match="is a mocker"):
        plan("qwen3-32b-bf16-vllm-h200-tp1", [H200], patch=mocker)

    def bad_tp(comps):
        for c in comps:
            if c.role != "frontend":
                c.args[c.args.index("--tensor-parallel-size") + 1] = "two"

    with pytest.raises(BadInput, match="--tensor-parallel-size 'two' is not an integer"):
        plan("qwen3-32b-bf16-vllm-h200-tp1", [H200], patch=bad_tp)
    with pytest.raises(BadInput, match="--weights 'fp4'"):
        plan("qwen3-32b-bf16-vllm-h200-tp1", [H200], weights="fp4")


def test_no_gpu_here_is_one_clear_refusal():
    from infersweep.local.gpu.run import require_gpus

    with pytest.raises(GpuShortfall, match="no GPU is visible here"):
        require_gpus([])


def test_nvidia_smi_csv_is_read():
    assert parse_nvidia_smi("0, NVIDIA H200, 143771\n1, NVIDIA H200, 143771\n") == [
        Gpu(0, "NVIDIA H200", 143771),
        Gpu(1, "NVIDIA H200", 143771),
    ]
    assert parse_nvidia_smi("No devices were found\n") == []


def test_dummy_weights_need_the_architecture_config_and_say_where_it_goes(tmp_path):
    from infersweep.local.dynamo.toy_model import config_only_model
    from infersweep.recipe import RecipeError

    d = config_only_model("Qwen/Qwen3-32B", tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    assert cfg["num_hidden_layers"] == 64 and cfg["architectures"] == ["Qwen3ForCausalLM"]
    assert (d / "tokenizer.json").is_file()
    with pytest.raises(RecipeError, match=r"no architecture config for org/none .*org--none.json"):
        config_only_model("org/none", tmp_path)
