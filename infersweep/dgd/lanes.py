"""Which lane(s) of its GPU pool a run of N GPUs holds: the GPU guard's admission, without Argo or Hera.

Why lanes and how a run's lane is chosen is explained once, in workflows/gpu_guard.py (which renders the
Argo semaphores from these admissions). The DGD needs the admission too: its lane labels (the deploy step
waits on them, infersweep/dgd/scheduling.py) and the GPUs it may surge into while its workers roll
(`spare_gpus`, infersweep/dgd/render.py rollout_annotations).
"""

from __future__ import annotations

from dataclasses import dataclass

from infersweep.cluster_settings import MAX_LANES, ClusterSettings, GpuGuardConfig, GpuPool
from infersweep.recipe import RecipeError, ResolvedRecipe


def lane_key(gpu_type: str, size: int) -> str:
    return f"{gpu_type.lower()}-{size}gpu"  # ConfigMap data keys: [-._a-zA-Z0-9]


def _pad_key(gpu_type: str, owner: str, i: int) -> str:
    return f"{gpu_type.lower()}-{owner}-pad{i}"


@dataclass(frozen=True)
class Admission:
    """What one run of `gpus` GPUs holds in its pool."""

    gpu_type: str
    gpus: int
    lanes: tuple[int, ...]  # lane sizes held (all of them for a whole-pool run)
    reserved: int  # GPUs no other run may use meanwhile
    keys: tuple[str, ...]  # the span's semaphore keys, MAX_LANES of them

    @property
    def lane_keys(self) -> tuple[str, ...]:
        return tuple(lane_key(self.gpu_type, s) for s in self.lanes)


def admission(pool: GpuPool, gpus: int, recipe: str = "run") -> Admission:
    """The smallest lane that holds the run, else the whole pool (every lane); RecipeError if neither."""
    fits = [s for s in pool.lanes if s >= gpus]
    lanes: tuple[int, ...]
    if fits:
        lanes, reserved, owner = (min(fits),), min(fits), f"{min(fits)}gpu"
    elif gpus <= pool.gpus and pool.whole_pool_runs:
        lanes, reserved, owner = tuple(pool.lanes), pool.gpus, "all"
    elif gpus <= pool.gpus:
        raise RecipeError(
            f"recipe {recipe}: needs {gpus} {pool.gpu_type} GPUs; no lane of gpu_pools.{pool.gpu_type}.lanes "
            f"{pool.lanes} holds that many, and a run can take the whole pool only when every lane "
            f"holds one run; add a lane of {gpus} GPUs in params/cluster.yaml"
        )
    else:
        raise RecipeError(
            f"recipe {recipe}: needs {gpus} {pool.gpu_type} GPUs, the pool has {pool.gpus}; "
            f"raise gpu_pools.{pool.gpu_type}.gpus in params/cluster.yaml"
        )
    keys = [lane_key(pool.gpu_type, s) for s in lanes]
    keys += [_pad_key(pool.gpu_type, owner, i) for i in range(len(keys) + 1, MAX_LANES + 1)]
    return Admission(pool.gpu_type, gpus, lanes, reserved, tuple(keys))


def pool_of(r: ResolvedRecipe, cfg: GpuGuardConfig) -> GpuPool:
    pool = cfg.pools.get(r.recipe.gpu.type)
    if pool is None:
        raise RecipeError(
            f"recipe {r.name}: no GPU pool for {r.recipe.gpu.type} in params/cluster.yaml gpu_pools; "
            f"add `{r.recipe.gpu.type}: {{gpus: N}}` (N = GPUs of that type the benchmarks may use)"
        )
    return pool


def recipe_admission(r: ResolvedRecipe, settings: ClusterSettings) -> Admission:
    # gpu_capacity: an autoscaled role may grow to max_replicas while the span holds the pool.
    return admission(pool_of(r, settings.guard), r.gpu_capacity, r.name)


def check_fits_pool(r: ResolvedRecipe, settings: ClusterSettings) -> None:
    """Refuse (before any cluster call) a recipe its pool can never hold."""
    cfg = settings.guard
    pool = pool_of(r, cfg)
    if cfg.scheduler == "argo":
        admission(pool, r.gpu_capacity, r.name)
    elif r.gpu_capacity > pool.gpus:
        raise RecipeError(
            f"recipe {r.name}: needs {r.gpu_capacity} {pool.gpu_type} GPUs, the pool has {pool.gpus}; "
            f"raise gpu_pools.{pool.gpu_type}.gpus in params/cluster.yaml"
        )


def spare_gpus(r: ResolvedRecipe, settings: ClusterSettings, held_for: ResolvedRecipe | None = None) -> int:
    """GPUs the run may use beyond its own while its workers roll: under the Argo guard, what its admission
    reserves (the lane or pool of `held_for`, default `r`: recipe_admission) minus what it uses; a cluster
    scheduler (Kueue, KAI, Volcano) admits the DGD's pods, no spare (0)."""
    if settings.guard.scheduler != "argo":
        return 0
    return max(0, recipe_admission(held_for or r, settings).reserved - r.gpu_capacity)
