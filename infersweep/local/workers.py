"""Which workers a local run starts: Dynamo's mocker (simulated, the default) or real engines on this machine's
GPUs (`--workers gpu`, with its weights, interpreter and compile cache), as one value the drivers share.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infersweep.local.gpu.workers import GpuWorkers
from infersweep.recipe import RecipeError

WORKER_KINDS = ("mocker", "gpu")


@dataclass(frozen=True)
class LocalWorkers:
    kind: str = "mocker"  # mocker | gpu
    weights: str = "dummy"  # gpu: random weights of the real architecture (dummy) | the weights in the cache
    gpu_python: str | None = None  # gpu: the interpreter with ai-dynamo and the engine (default: .venv-gpu)
    engine_cache: Path | None = None  # gpu: compile caches kept between runs (default <cache_root>/engine-cache)

    def __post_init__(self) -> None:
        if self.kind not in WORKER_KINDS:
            raise RecipeError(f"--workers {self.kind!r}: choose mocker (simulated, the default) or gpu (real engines)")

    @classmethod
    def take(cls, fields: dict[str, Any]) -> "LocalWorkers":
        """The workers the CLI's words name (`workers`: a kind or a LocalWorkers; `weights`, `gpu_python`,
        `engine_cache`), taken out of a driver's keyword arguments."""
        kind = fields.pop("workers", "mocker")
        words = {k: fields.pop(k) for k in ("weights", "gpu_python", "engine_cache") if k in fields}
        return kind if isinstance(kind, LocalWorkers) else cls(kind, **words)

    @property
    def gpu(self) -> bool:
        return self.kind == "gpu"

    def start_settings(self, cache_root: Path, gpu_type: str | None) -> GpuWorkers | None:
        """The adapter's real-engine settings on this machine (None: mocker workers). Refuses at once where no
        GPU is visible (infersweep.local.gpu.run.gpu_workers)."""
        if not self.gpu:
            return None
        from infersweep.local.gpu.run import gpu_workers

        return gpu_workers(self.gpu_python, self.weights, self.engine_cache, Path(cache_root), gpu_type=gpu_type)
