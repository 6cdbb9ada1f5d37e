"""What `run --local --workers gpu` adds to a local run: the GPUs, the model folder, the stack, telemetry.

- `config_only_model`: a word-level tokenizer covering the model's whole vocabulary (infersweep.local.dynamo.toy_model
  full_vocab) beside the model's real architecture config (params/model-configs/<org>--<name>.json), for
  `--weights dummy`: real kernels, memory and KV-cache size, random weights, no download. With `--weights cache` the folder must hold the weights already.
- `stack_versions` / `engine_stack`: vLLM or SGLang / ai-dynamo / torch as the workers' interpreters import
  them, for every row's provenance.
- `measured_on`: the words every table and report shows (infersweep.predict.source.MEASURED_ON_ENV).
- `gpu_workers` / `model_folder`: what `run --local` and `experiment run --local` hand the adapter.
- `start_gpu_side` / `write_gpu_record`: the NVML sampler and the words that say what ran; each worker's
  start-up phases after the run.
- `engine_ran` / `annotate_dgd`: the engine release and wheels that ran instead of the rendered image, for
  run.json (ENGINE_RAN_ENV, read by infersweep.results.context and .summarize), rendered/dgd.yaml and the banner.
- `check_fits`: the process plan (infersweep.local.gpu.workers) of the rendered DGD against the GPUs here,
  before any service or process starts: a shortfall is one error naming the GPUs missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from infersweep.local.gpu.workers import Gpu, GpuShortfall, GpuWorkers, detect_gpus, engine_pythons
from infersweep.paths import venv_python
from infersweep.predict.source import ENGINE_RAN_ENV

STACK_PACKAGES = ("vllm", "ai-dynamo", "ai-dynamo-runtime", "sglang", "torch")


def gpu_workers(
    gpu_python: str | None, weights: str, engine_cache: Path | None, cache_root: Path, gpu_type: str | None = None
) -> GpuWorkers:
    """The adapter's real-engine settings for this machine (refuses at once where no GPU is visible).
    `gpu_type`: the recipe's (params/gpus.yaml), the type of fake GPUs under $INFERSWEEP_FAKE_GPU
    (infersweep.local.gpu.fake_gpu), whose Dynamo processes run in the Dynamo interpreter unless one is given."""
    from infersweep.local.gpu.fake_gpu import fake_gpu_count, fake_gpu_type, fake_gpus
    from infersweep.local.toolchain import default_dynamo_python

    fake = fake_gpu_type(recipe_type=gpu_type) if fake_gpu_count() else None
    gpus = require_gpus(fake_gpus(fake_gpu_count(), fake) if fake else None)
    return GpuWorkers(
        # $INFERSWEEP_GPU_PYTHON or .venv-gpu (fake GPUs: .venv-dynamo, which runs the frontend and the mocker)
        python=gpu_python or (default_dynamo_python() if fake else venv_python("gpu")),
        weights=weights,
        engine_cache=str((engine_cache or cache_root / "engine-cache").resolve()),
        gpus=tuple(gpus),
        fake_gpu_type=fake,
    )


def stack_versions(python: str) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\nout = {}\n"
        f"for n in {STACK_PACKAGES!r}:\n    try: out[n] = m.version(n)\n    except Exception: pass\n"
        "print(json.dumps(out))"
    )
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
        return json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return {}


def driver_version() -> str | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    proc = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True)
    return proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else None


def measured_on(gpus: list[Gpu], used: int, versions: dict[str, str], weights: str, driver: str | None) -> str:
    names = sorted({g.name for g in gpus})
    stack = ", ".join(f"{k} {v}" for k, v in versions.items() if k != "ai-dynamo-runtime")
    w = "random weights (--load-format dummy)" if weights == "dummy" else "model weights from the cache"
    return (
        f"local GPU: {used} of {len(gpus)}x {'/'.join(names)}"
        + (f", driver {driver}" if driver else "")
        + (f", {stack}" if stack else "")
        + f", {w}"
    )


DID_NOT_RUN_ANNOTATION = "infersweep.io/image-did-not-run"
RAN_ANNOTATION = "infersweep.io/engine-ran"


def engine_ran(versions: dict[str, str], python: str, rendered_image: str | None) -> dict[str, Any]:
    """The engine release and wheels that ran, in the words run.json, the DGD and the banner use.

    Local GPU mode runs `python -m dynamo.<engine>` from the workers' interpreters (engine_stack), never the
    recipe's image: a run of ai-dynamo 1.3.1 + vLLM 0.23.0 must not say vllm-runtime:1.6.1 ran."""
    wheels = {k: v for k, v in versions.items() if k != "ai-dynamo-runtime"}
    release = f"dynamo {versions['ai-dynamo']}" if versions.get("ai-dynamo") else None
    stack = ", ".join(f"{k} {v}" for k, v in wheels.items()) or "versions unknown"
    ran = f"local python {python} ({stack})"
    return {
        "engine_release": release,
        "engine_wheels": wheels,
        "engine_python": python,
        "rendered_image": rendered_image,
        # the column keeps its meaning (the engine that served) and says the rendered image did not
        "engine_image": ran + (f"; rendered image {rendered_image} did not run" if rendered_image else ""),
    }


def dgd_images(dgd: dict) -> list[str]:
    """The distinct container images a DGD's components name (v1alpha1 extraPodSpec.mainContainer.image or
    v1beta1 podTemplate containers)."""
    found: list[str] = []

    def walk(node: Any, key: str | None = None) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif key == "image" and isinstance(node, str) and node not in found:
            found.append(node)

    walk(dgd.get("spec", {}))
    return found


def annotate_dgd(dgd: dict, ran: dict[str, Any]) -> dict:
    """The DGD as rendered, with annotations saying its images did not run here and what did (rendered/dgd.yaml
    of a local GPU run is a record: it is not what the workers were started from)."""
    meta = dgd.setdefault("metadata", {})
    meta.setdefault("annotations", {}).update(
        {
            DID_NOT_RUN_ANNOTATION: ", ".join(dgd_images(dgd)) or "none",
            RAN_ANNOTATION: json.dumps(
                {k: ran[k] for k in ("engine_release", "engine_wheels", "engine_python")}, sort_keys=True
            ),
        }
    )
    return dgd


def require_gpus(gpus: list[Gpu] | None = None) -> list[Gpu]:
    gpus = detect_gpus() if gpus is None else gpus
    if not gpus:
        raise GpuShortfall(
            "--workers gpu: no GPU is visible here (nvidia-smi found none); run on a GPU host, or use --workers mocker "
            "(INFERSWEEP_FAKE_GPU=1 takes this path on a fake GPU with Dynamo's mocker, to test it: docs/gpu.md)"
        )
    return gpus


def workflow_dgd(workflow: dict) -> dict:
    """The DGD a recipe's Workflow deploys (its `dgd` parameter), {} when it has none."""
    import yaml

    # the Workflow's own arguments (a rendered DGD), not a file under params/
    arguments = {p["name"]: p.get("value") for p in workflow.get("spec", {}).get("arguments", {}).get("parameters", [])}
    return yaml.safe_load(arguments["dgd"]) if arguments.get("dgd") else {}


def engine_python_of(gpu: GpuWorkers, modules: set[str]) -> str:
    """The interpreter(s) the engine workers run (engine_pythons per module, else the GPU python)."""
    pythons = engine_pythons()
    return ", ".join(sorted({pythons.get(m, gpu.python) for m in modules} or {gpu.python}))


def engine_stack(gpu: GpuWorkers, modules: set[str]) -> dict[str, str]:
    """The versions of what runs: each engine's interpreter (infersweep.local.gpu.workers.engine_pythons), and
    of the two engines only the ones the workers run (a vLLM site and an SGLang site each have ai-dynamo)."""
    pythons = engine_pythons()
    versions: dict[str, str] = {}
    for python in sorted({pythons.get(m, gpu.python) for m in modules} or {gpu.python}):
        versions |= stack_versions(python)
    engines = {m.split(".", 1)[1] for m in modules}
    return {k: v for k, v in versions.items() if k not in ("vllm", "sglang") or not engines or k in engines}


def start_gpu_side(
    run_dir: Path,
    gpu: GpuWorkers,
    gpu_count: str | None,
    state_dir: Path,
    modules: set[str] | None = None,
    versions: dict[str, str] | None = None,
    rendered_image: str | None = None,
):
    """The NVML sampler and the environment that tells the steps what ran (GPU, stack, weights); `modules`:
    the workers' engine modules (worker_modules), whose interpreters' versions are the stack (`versions` when
    the caller read them already); `rendered_image`: the DGD's image, which does not run here."""
    from infersweep.local.gpu.telemetry import NvmlSampler
    from infersweep.predict.source import MEASURED_ON_ENV
    from infersweep.results.gpu_telemetry import GPU_TELEMETRY_ENV

    versions = engine_stack(gpu, modules or set()) if versions is None else versions
    used = int(gpu_count or len(gpu.gpus))
    ran = engine_ran(versions, engine_python_of(gpu, modules or set()), rendered_image)
    if gpu.fake_gpu_type:
        from infersweep.local.gpu.fake_gpu import FakeNvml, measured_on_words

        engines = {m.split(".", 1)[1] for m in modules or set()}
        words = measured_on_words(list(gpu.gpus), used, versions, engines, gpu.weights)
        print(f"workers: {words}; NOT a measurement", flush=True)
    else:
        words = measured_on(list(gpu.gpus), used, versions, gpu.weights, driver_version())
        print(f"workers: real engines ({words})", flush=True)
    print(f"engine: {ran['engine_image']}", flush=True)
    samples = run_dir / "telemetry" / "gpu-samples.jsonl"
    (run_dir / "telemetry").mkdir(parents=True, exist_ok=True)
    (run_dir / "telemetry" / "stack.json").write_text(
        json.dumps(
            {
                "measured_on": words,
                "versions": versions,
                "engine_ran": ran,
                "gpus": [g.__dict__ for g in gpu.gpus],
                "weights": gpu.weights,
                "python": gpu.python,
                "engine_cache": gpu.engine_cache,
                "fake_gpu": bool(gpu.fake_gpu_type),
            },
            indent=1,
        )
        + "\n"
    )
    sampler = None
    try:
        sampler = NvmlSampler(
            samples, workers_dir=state_dir / "dgd", workers_out=run_dir / "telemetry" / "worker-metrics.jsonl"
        ).start(nvml=FakeNvml(len(gpu.gpus)) if gpu.fake_gpu_type else None)
    except Exception as e:  # no NVML binding: the run goes on without the GPU columns
        print(f"NVML telemetry off: {e}", file=sys.stderr)
    return sampler, {MEASURED_ON_ENV: words, GPU_TELEMETRY_ENV: str(samples), ENGINE_RAN_ENV: json.dumps(ran)}


def write_gpu_record(run_dir: Path, state_dir: Path) -> None:
    """telemetry/startup.json: each engine worker's time to ready split by phase (its own log lines)."""
    from infersweep.local.gpu.engine_startup import parse_startup, split_ready

    out = {}
    for dep_file in sorted((state_dir / "dgd").glob("*/deployment.json")):
        dep = json.loads(dep_file.read_text())
        ready_at = dep.get("ready_at")
        # Engine workers only: not the frontend, not the discovery keeper (infersweep.local.dynamo.discovery_keeper).
        workers = {w["name"] for c in dep.get("components", []) for w in c.get("workers", [])}
        for rec in dep.get("processes", []):
            log = Path(rec.get("log_path", ""))
            if not log.is_file() or rec.get("name") not in workers:
                continue
            phases = parse_startup(log.read_text(errors="replace"))
            ready_s = (ready_at - rec["started_at"]) if ready_at and rec.get("started_at") else None
            out[f"{dep_file.parent.name}/{rec['name']}"] = phases | split_ready(phases, ready_s)
    (run_dir / "telemetry").mkdir(parents=True, exist_ok=True)
    (run_dir / "telemetry" / "startup.json").write_text(json.dumps(out, indent=1) + "\n")
