"""Provenance that names what ran (issue 32, item 7).

Local GPU mode starts `python -m dynamo.vllm` from the GPU host's interpreter (ai-dynamo 1.3.1 + vLLM 0.23.0 on
the H200), never the recipe's image; before, run.json's engine_image and rendered/dgd.yaml named
vllm-runtime:1.6.1 as if it had run. Here a fake interpreter reports the versions, as the GPU python would.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import yaml

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.gpu_fit import worker_modules
from infersweep.local.gpu import run as gpu_run
from infersweep.local.gpu.workers import Gpu, GpuWorkers
from infersweep.predict.source import ENGINE_RAN_ENV
from infersweep.recipe import load_recipe
from infersweep.results.context import build_context

RECIPE = "qwen3-32b-bf16-vllm-h200-tp1"
VERSIONS = {"vllm": "0.23.0", "ai-dynamo": "1.3.1", "ai-dynamo-runtime": "1.3.1", "torch": "2.9.0+cu129"}


def fake_python(tmp_path: Path) -> str:
    """An interpreter that answers stack_versions' question the way the GPU host's did."""
    path = tmp_path / "gpu-python"
    path.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(VERSIONS))})\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _gpu(tmp_path: Path, monkeypatch) -> GpuWorkers:
    for name in ("INFERSWEEP_GPU_PYTHON_VLLM", "INFERSWEEP_GPU_PYTHON_SGLANG"):
        monkeypatch.delenv(name, raising=False)
    return GpuWorkers(python=fake_python(tmp_path), gpus=(Gpu(0, "NVIDIA H200", 143771),))


def test_run_json_and_the_banner_name_the_wheels_that_ran_not_the_rendered_image(
    tmp_path, monkeypatch, capsys, aiperf_ref
):
    gpu = _gpu(tmp_path, monkeypatch)
    dgd = render_dgd(load_recipe(RECIPE), name="t")
    image = ", ".join(gpu_run.dgd_images(dgd))
    assert "vllm-runtime:1.6.1" in image  # what the recipe renders for a cluster
    monkeypatch.setattr(gpu_run, "driver_version", lambda: None)
    sampler, env = gpu_run.start_gpu_side(
        tmp_path / "run", gpu, "1", tmp_path / "state", modules=worker_modules(dgd), rendered_image=image
    )
    if sampler is not None:
        sampler.stop()
    banner = capsys.readouterr().out
    assert "ai-dynamo 1.3.1" in banner and "vllm 0.23.0" in banner and f"rendered image {image} did not run" in banner

    stack = json.loads((tmp_path / "run" / "telemetry" / "stack.json").read_text())
    assert stack["engine_ran"]["engine_release"] == "dynamo 1.3.1"

    # the summarize step of that run (it gets the GPU side's environment), on a real AIPerf point
    from tests.support.run_folders import make_run_folder, summarize

    monkeypatch.setenv(ENGINE_RAN_ENV, env[ENGINE_RAN_ENV])
    run = make_run_folder(tmp_path / "s", aiperf_ref, failed=False)
    df = summarize(run, extra=["--context", json.dumps({"engine_image": image, "recipe_hash": "h"})])
    record = json.loads((run / "summary" / "run.json").read_text())
    ran_words = f"local python {gpu.python} (vllm 0.23.0, ai-dynamo 1.3.1, torch 2.9.0+cu129)"
    assert record["context"]["engine_image"] == f"{ran_words}; rendered image {image} did not run"
    assert set(df["engine_image"]) == {record["context"]["engine_image"]}
    assert record["engine_ran"] == {
        "engine_release": "dynamo 1.3.1",
        "engine_wheels": {"vllm": "0.23.0", "ai-dynamo": "1.3.1", "torch": "2.9.0+cu129"},
        "engine_python": gpu.python,
        "rendered_image": image,
    }


def test_a_deployment_that_ran_its_images_keeps_the_rendered_image(tmp_path, monkeypatch):
    monkeypatch.delenv(ENGINE_RAN_ENV, raising=False)
    ctx = build_context(
        tmp_path, given={"engine_image": "img:1", "recipe_hash": "h"}, title="x", gpu_count=1, slo={}, points=[]
    )
    assert ctx["engine_image"] == "img:1"


def test_the_rendered_dgd_of_a_gpu_run_says_its_image_did_not_run_and_what_did(tmp_path, monkeypatch):
    gpu = _gpu(tmp_path, monkeypatch)
    dgd = render_dgd(load_recipe(RECIPE), name="t")
    modules = worker_modules(dgd)
    ran = gpu_run.engine_ran(gpu_run.engine_stack(gpu, modules), gpu_run.engine_python_of(gpu, modules), None)
    gpu_run.annotate_dgd(dgd, ran)
    notes = yaml.safe_load(yaml.safe_dump(dgd))["metadata"]["annotations"]
    assert "vllm-runtime:1.6.1" in notes[gpu_run.DID_NOT_RUN_ANNOTATION]
    assert json.loads(notes[gpu_run.RAN_ANNOTATION]) == {
        "engine_release": "dynamo 1.3.1",
        "engine_wheels": {"vllm": "0.23.0", "ai-dynamo": "1.3.1", "torch": "2.9.0+cu129"},
        "engine_python": gpu.python,
    }
