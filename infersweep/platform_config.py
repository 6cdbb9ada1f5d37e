"""params/platform.yaml: the images, namespace, cache PVC and bucket a cluster uses, and the GPU guard
(`gpu_guard` + `gpu_pools`), whose section is typed and checked here: one line per mistake, naming the field
and the fix, before anything is rendered (see workflows/gpu_guard.py for what the values mean)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from infersweep.paths import params_dir

SCHEDULERS = ("argo", "kueue", "kai", "volcano")
# The span template holds this many locks (workflows/gpu_guard.py): a pool may have at most this many lanes.
MAX_LANES = 4
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_POOL_FIELDS = {"gpus", "lanes", "queue"}


class PlatformError(ValueError):
    """params/platform.yaml is wrong; the message has one line per mistake."""


@dataclass(frozen=True)
class GpuPool:
    gpu_type: str
    gpus: int
    lanes: dict[int, int]          # lane size (GPUs per run) -> runs of that size at once
    whole_pool_runs: bool          # a run may take every lane (only when each lane holds one run)
    queue: str                     # Kueue LocalQueue / KAI queue / Volcano queue of this pool


@dataclass(frozen=True)
class GpuGuardConfig:
    scheduler: str
    pools: dict[str, GpuPool] = field(default_factory=dict)


def buddy_lanes(gpus: int) -> dict[int, int]:
    """Default lanes of a pool: one run of each power of two below the pool size (8, 4, 2, 1 on 16 GPUs:
    together 15 <= 16), and a run of the whole pool takes all of them."""
    lanes, size = {}, 1
    while size < gpus and size + sum(lanes) <= gpus:
        lanes[size] = 1
        size *= 2
    return lanes


def parse_gpu_guard(platform: dict[str, Any], gpu_types: set[str] | None = None,
                    where: str = "params/platform.yaml") -> GpuGuardConfig:
    """The typed `gpu_guard` + `gpu_pools` sections; PlatformError with every mistake, one per line."""
    errors: list[str] = []
    guard = platform.get("gpu_guard") or {}
    if not isinstance(guard, dict):
        errors.append(f"{where}: gpu_guard: must be a mapping like {{scheduler: argo}}")
        guard = {}
    for k in sorted(set(guard) - {"scheduler"}):
        errors.append(f"{where}: gpu_guard.{k}: unknown field; the only field is `scheduler`")
    scheduler = guard.get("scheduler", "argo")
    if scheduler not in SCHEDULERS:
        errors.append(f"{where}: gpu_guard.scheduler: must be one of {', '.join(SCHEDULERS)} (got {scheduler!r}); "
                      "argo = Argo semaphores only, the others = that scheduler's queues")
    pools_raw = platform.get("gpu_pools")
    if not isinstance(pools_raw, dict) or not pools_raw:
        errors.append(f"{where}: gpu_pools: must map each GPU type to {{gpus: N}} (N = GPUs the benchmarks may use)")
        pools_raw = {}
    pools: dict[str, GpuPool] = {}
    for gpu, raw in pools_raw.items():
        f = f"{where}: gpu_pools.{gpu}"
        if gpu_types is not None and gpu not in gpu_types:
            errors.append(f"{f}: unknown GPU type; use one of {sorted(gpu_types)} or add it to params/gpus.yaml")
        if not isinstance(raw, dict):
            errors.append(f"{f}: must be a mapping like {{gpus: 16}}")
            continue
        for k in sorted(set(raw) - _POOL_FIELDS):
            errors.append(f"{f}.{k}: unknown field; use gpus, lanes or queue")
        gpus = raw.get("gpus")
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            errors.append(f"{f}.gpus: must be a positive integer, the GPUs of that type the benchmarks may use (got {gpus!r})")
            continue
        lanes_raw = raw.get("lanes")
        lanes: dict[int, int] = {}
        if lanes_raw is None:
            lanes = buddy_lanes(gpus)
        elif not isinstance(lanes_raw, dict) or not lanes_raw:
            errors.append(f"{f}.lanes: must map a run size in GPUs to how many such runs share the pool, e.g. {{1: 4, 2: 2, 4: 2}}")
        else:
            for size, n in lanes_raw.items():
                if isinstance(size, str) and size.isdigit():
                    size = int(size)  # a platform dict that went through JSON (render's cache key) has string keys
                bad_size = isinstance(size, bool) or not isinstance(size, int) or size < 1 or size > gpus
                bad_n = isinstance(n, bool) or not isinstance(n, int) or n < 1
                if bad_size:
                    errors.append(f"{f}.lanes.{size}: a lane size must be an integer from 1 to the pool's {gpus} GPUs")
                if bad_n:
                    errors.append(f"{f}.lanes.{size}: must be a positive integer, the runs of that size at once (got {n!r})")
                if not bad_size and not bad_n:
                    lanes[size] = n
            used = sum(s * n for s, n in lanes.items())
            if used > gpus:
                errors.append(f"{f}.lanes: lanes take {used} GPUs ({' + '.join(f'{n} x {s}' for s, n in sorted(lanes.items()))}) "
                              f"but the pool has {gpus}; lower them so that the sum of size x runs is at most {gpus}")
        if len(lanes) > MAX_LANES:
            errors.append(f"{f}.lanes: {len(lanes)} lane sizes but the span template holds at most {MAX_LANES} locks; "
                          "merge sizes (a run takes the smallest lane that holds it)")
        queue = raw.get("queue", f"infersweep-{gpu.lower()}")
        if not isinstance(queue, str) or not _DNS_LABEL.match(queue):
            errors.append(f"{f}.queue: must be a Kubernetes name (lowercase letters, digits, '-'; got {queue!r})")
        pools[gpu] = GpuPool(gpu, gpus, dict(sorted(lanes.items())),
                             whole_pool_runs=all(n == 1 for n in lanes.values()), queue=str(queue))
    if errors:
        raise PlatformError("\n".join(errors))
    return GpuGuardConfig(scheduler=scheduler, pools=pools)


@lru_cache(maxsize=1)
def load_platform() -> dict[str, Any]:
    platform = yaml.safe_load((params_dir() / "platform.yaml").read_text())
    gpu_types = set(yaml.safe_load((params_dir() / "gpus.yaml").read_text()))
    parse_gpu_guard(platform, gpu_types, where=str(params_dir() / "platform.yaml"))  # refuse a bad file up front
    return platform
