"""A stand-in GPU for CI: `INFERSWEEP_FAKE_GPU=N` makes `--workers gpu` take its real path on a CPU machine.

Under the switch, local mode's GPU path runs as on a GPU host, end to end: GPU detection finds N GPUs of the
recipe's GPU type (params/gpus.yaml: its memory), the process plan assigns them (CUDA_VISIBLE_DEVICES, memory
fractions, GpuShortfall), each engine worker's command line and environment are rendered as they would run,
the discovery keeper and the owner check run, KV caches are reset through the workers' `clear_kv_blocks`
endpoint, the NVML sampler samples (a fake device here, see FakeNvml), start-up logs are parsed, and the
banners and provenance are written. Only the engine process is replaced: at the last moment, the rendered
`python -m dynamo.vllm|dynamo.sglang ...` becomes infersweep/local/gpu/fake_engine.py running Dynamo's mocker
(`python -m dynamo.mocker`, the same endpoints: `<namespace>.backend|prefill.generate`) with the engine flags
the mocker has an equivalent for (infersweep.local.dynamo.command_lines.mocker_argv); the rendered command is
kept in the deployment record and at the top of the worker's log as what would have run.

Nothing of it is a measurement: every row's source is `simulated (fake GPU: ...)` (infersweep.predict.source),
so validity, verdicts and comparisons treat it like a mocker run, and every banner says `fake GPU`.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path
from typing import Mapping, Sequence

from infersweep.local.gpu.workers import Gpu
from infersweep.platform.protocol import BadInput

FAKE_GPU_ENV = "INFERSWEEP_FAKE_GPU"  # N: this many fake GPUs of the recipe's GPU type
FAKE_GPU_TYPE_ENV = "INFERSWEEP_FAKE_GPU_TYPE"  # the GPU type (params/gpus.yaml key); local mode sets it for its steps
DEFAULT_TYPE = "H200"
FAKE_ENGINE = Path(__file__).with_name("fake_engine.py")
# The words every banner and row source starts with (infersweep.predict.source.FAKE_GPU).
WORDS = "fake GPU"


def fake_gpu_count(environ: Mapping[str, str] | None = None) -> int:
    """N from $INFERSWEEP_FAKE_GPU; 0 when unset or empty (real GPUs)."""
    env = os.environ if environ is None else environ
    raw = (env.get(FAKE_GPU_ENV) or "").strip()
    if not raw:
        return 0
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise BadInput(
            f"{FAKE_GPU_ENV}={raw!r}: give the number of fake GPUs as a whole number of at least 1 "
            f"(e.g. {FAKE_GPU_ENV}=1), or unset it to use this machine's real GPUs"
        )
    return n


def fake_gpu_type(environ: Mapping[str, str] | None = None, recipe_type: str | None = None) -> str:
    env = os.environ if environ is None else environ
    return recipe_type or env.get(FAKE_GPU_TYPE_ENV) or DEFAULT_TYPE


def fake_gpus(n: int, gpu_type: str) -> list[Gpu]:
    """N GPUs of `gpu_type` as nvidia-smi would list them, each named `(fake GPU)`; memory from params/gpus.yaml."""
    from infersweep.recipe.resolve import gpu_types

    types = gpu_types()
    if gpu_type not in types:
        raise BadInput(f"{FAKE_GPU_TYPE_ENV}={gpu_type!r}: not a GPU type of params/gpus.yaml ({', '.join(types)})")
    mib = int(types[gpu_type].memory_gib * 1024)
    return [Gpu(i, f"NVIDIA {gpu_type} ({WORDS})", mib) for i in range(n)]


def is_fake(gpus: Sequence) -> bool:
    return any(f"({WORDS})" in g.name for g in gpus)


def engine_launcher(role: str, rendered: Sequence[str], mocker: Sequence[str], *, python: str) -> list[str]:
    """What runs instead of the rendered engine command `rendered`: the fake engine launcher around `mocker` (Dynamo's
    mocker for that component, one simulated engine: infersweep.local.dynamo.command_lines.mocker_argv with
    num_workers=1)."""
    # -I: no script folder on sys.path, so nothing of infersweep/local/ (its dynamo/ room) shadows ai-dynamo's `dynamo`.
    component = "prefill" if role == "prefill" else "backend"  # the mocker's endpoint (dynamo/mocker/args.py)
    return [python, "-I", str(FAKE_ENGINE), "--component", component, "--rendered", shlex.join(rendered), "--", *mocker]


def measured_on_words(gpus: Sequence, used: int, versions: dict[str, str], engines: set[str], weights: str) -> str:
    """What ran, for MEASURED_ON_ENV: starts with `fake GPU` (infersweep.predict.source makes it a simulated source)."""
    names = sorted({g.name for g in gpus})
    stack = ", ".join(f"{k} {v}" for k, v in versions.items() if k != "ai-dynamo-runtime")
    return (
        f"{WORDS}: {used} of {len(gpus)}x {'/'.join(names)} ({FAKE_GPU_ENV}), "
        f"{'/'.join(sorted(engines)) or 'engine'} workers rendered as for a GPU and replaced by Dynamo's mocker"
        + (f", {stack}" if stack else "")
        + f", weights {weights} (not loaded)"
    )


class FakeNvml:
    """An NVML binding (the part of pynvml infersweep.local.gpu.telemetry reads) over N fake GPUs.

    Constant, clearly synthetic readings, so the sampler and the GPU columns run end to end: POWER_W watts
    (an idle H200 draws about this), an energy counter that integrates that power since nvmlInit, 0 % SM and
    memory utilisation, 0 MiB used. Every sample the sampler writes from it says `"fake": true`.
    """

    FAKE = True
    POWER_W = 100.0

    class NVMLError(Exception):
        pass

    class _Util:
        gpu = 0
        memory = 0

    class _Mem:
        used = 0

    def __init__(self, count: int) -> None:
        self.count = count
        self._t0 = time.monotonic()

    def nvmlInit(self) -> None:
        self._t0 = time.monotonic()

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        if not 0 <= i < self.count:
            raise self.NVMLError(f"fake GPU {i}: no such device")
        return i

    def nvmlDeviceGetPowerUsage(self, h: int) -> float:
        return self.POWER_W * 1000.0  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> float:
        return self.POWER_W * (time.monotonic() - self._t0) * 1000.0  # mJ

    def nvmlDeviceGetUtilizationRates(self, h: int):
        return self._Util()

    def nvmlDeviceGetMemoryInfo(self, h: int):
        return self._Mem()
