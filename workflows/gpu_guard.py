"""The GPU guard: which runs may hold a GPU pool at once, held only over the GPU-holding span
(deploy -> wait-ready -> points), on the span *template* so a UI submit of the template cannot
skip it (a Workflow-level `synchronization` is also what `templateReferencing: Strict` refuses).
Teardown is not in the span: it is the exit handler's and runs after the lock is released (Argo releases a
template's lock when its node is fulfilled), so the next run's deploy first waits for the lane's earlier DGDs
to be gone (infersweep/platform/operations.py wait_for_lane).

`params/cluster.yaml` `gpu_guard.scheduler` picks the machinery (typed in infersweep/cluster_settings.py):

* `kueue`, `kai`, `volcano`: the cluster's own GPU-quota queue admits the DGD's pods, exactly by
  `nvidia.com/gpu`; the span template then holds no Argo lock and `dgd_scheduling()` (infersweep/dgd/scheduling.py) gives the labels,
  annotations and schedulerName the DGD's pods need (each cited where it is set below). The operator creates
  the queue objects (Kueue LocalQueue -> ClusterQueue with an `nvidia.com/gpu` nominalQuota per GPU type;
  KAI `scheduling.run.ai/v2` Queue; Volcano `scheduling.volcano.sh/v1beta1` Queue) named `gpu_pools.<T>.queue`.
* `argo` (default): Argo semaphores only, in ConfigMap `infersweep-gpu-pools`.

Why lanes, and not "a semaphore of GPU units" (Argo v4.1.2 workflow/sync/, read at tag v4.1.2):
  - A semaphore counts holders, one per holder key (sync_manager.go getHolderKey: namespace/workflow/node);
    a template cannot take one semaphore twice (syncitems.go checkDuplicates refuses a duplicate item). So a
    run cannot take "8 units" of a 16-unit semaphore.
  - A template's several locks are taken all-or-nothing under one manager lock (sync_manager.go TryAcquire ->
    tryAcquireImpl: checkAcquire on every lock first, tryAcquire on all only if all are acquirable), so
    a template never holds some of its locks while waiting for the others. (That alone is not deadlock-free:
    see "the queue order" below, the per-run priorities that make it so.) Taking units through nested templates
    (one node per unit) would acquire one by one: two 16-GPU runs holding 8 each wait for each other forever.
  - Only the front of a lock's queue may acquire (semaphore.go checkAcquire: "isn't at the front"; the queue
    is ordered by workflow priority, then creation time), and a waiting run is queued on every lock it asks
    for (sync_manager.go prepAcquire). A run waiting for one lock therefore blocks later runs on its *other*
    locks too, which is why the padding locks below are private to a lane.
  With one lock per holder, any fixed set of locks per GPU count admits a set of runs iff, for every lock,
  the runs holding it number at most its limit. That cannot express sum(GPUs) <= pool exactly once a run
  can take the whole pool: admitting an 8 and a 16 together is only excluded by a lock both hold with
  limit 1, which then also excludes two 8s (tests/workflows/test_gpu_guard.py shows it on the rules). So the pool is
  split into *lanes*: lane `s` admits `n_s` runs of up to `s` GPUs, sum(s * n_s) <= pool GPUs, and a run of
  a size no lane holds takes every lane (allowed only when each lane holds one run). Default lanes are the
  buddy split 8+4+2+1 of a 16-GPU pool; `gpu_pools.<T>.lanes` declares others (H200: 4x1 + 2x2 + 2x4).
  A run reserves exactly its lane (or the pool), never more than it can use when its size is a lane size.

Every span holds `MAX_LANES` semaphores (a template's lock list is fixed): its lane(s), then padding
semaphores private to that lane (limit = the lane's runs, so they never make a run wait and never put it
in front of another lane's runs). Their keys reach the template as the `gpu-lock-N` workflow parameters.
"""

from __future__ import annotations

from hera.workflows import models as m

from infersweep.cluster_settings import MAX_LANES, ClusterSettings

# The admission itself (which lanes a run holds) is Hera-free, beside the DGD's scheduling step that needs it
# too (infersweep/dgd/lanes.py); the names stay reachable here, the guard's own vocabulary.
from infersweep.dgd.lanes import Admission, _pad_key, admission, check_fits_pool, lane_key, pool_of, recipe_admission  # noqa: F401
from infersweep.pipeline_params import GPU_POOLS_CONFIGMAP, LOCK_PARAMS
from infersweep.recipe import ResolvedRecipe

CONFIGMAP = GPU_POOLS_CONFIGMAP
# The gpu-lock-N parameters (LOCK_PARAMS) are declared with the pipeline's others (infersweep/pipeline_params.py).


# ---------------------------------------------------------------------------------------------- rendering


def span_synchronization(settings: ClusterSettings) -> m.Synchronization | None:
    """The span template's locks: MAX_LANES semaphores keyed by the gpu-lock-N workflow parameters
    (Argo substitutes parameters into a template's synchronization before TryAcquire: operator.go
    executeTemplate -> common.ProcessArgs, then syncManager.TryAcquire(processedTmpl.Synchronization)).
    None when a cluster scheduler admits the pods instead."""
    if settings.guard.scheduler != "argo":
        return None
    return m.Synchronization(
        semaphores=[
            m.SemaphoreRef(
                config_map_key_ref=m.ConfigMapKeySelector(name=CONFIGMAP, key="{{workflow.parameters.%s}}" % p)
            )
            for p in LOCK_PARAMS
        ]
    )


def recipes_synchronization(recipes: list[ResolvedRecipe], settings: ClusterSettings) -> m.Synchronization | None:
    """The locks of a Workflow that holds GPUs for several recipes in turn (an experiment): the admission of
    the largest of them, as literal keys (one admission covers every smaller treatment's GPUs). None when a
    cluster scheduler admits the pods instead."""
    if settings.guard.scheduler != "argo" or not recipes:
        return None
    largest = max(recipes, key=lambda r: r.gpu_capacity)
    return m.Synchronization(
        semaphores=[
            m.SemaphoreRef(config_map_key_ref=m.ConfigMapKeySelector(name=CONFIGMAP, key=key))
            for key in recipe_admission(largest, settings).keys
        ]
    )


def guard_arguments(r: ResolvedRecipe, settings: ClusterSettings) -> dict[str, str]:
    """The gpu-lock-N workflow parameters of a recipe (the keys its span holds)."""
    if settings.guard.scheduler != "argo":
        return {p: "" for p in LOCK_PARAMS}  # unused: the span holds no Argo lock (span_synchronization is None)
    return dict(zip(LOCK_PARAMS, recipe_admission(r, settings).keys, strict=False))


# ------------------------------------------------------------------------------------- the queue order

# Argo orders each lock's queue by `spec.priority`, then creation time in whole seconds, and requests equal on
# both have no defined order (ArgoSemaphores above). A run waits on several locks (its lane(s) and its
# padding), and a whole-pool run on every lane: two runs equal on both can each be the front of a different
# lock of the other's and wait for each other forever (tests/workflows/test_gpu_guard.py shows it). So every run the
# project submits carries a distinct priority, which makes the order total and the same in every queue: the
# first of the waiting runs in that order is the front of every lock it waits for and acquires as soon as
# those locks' holders release (whose spans end: no span waits on a lock while holding one), then the next
# one, and so on; no cycle. Bands, highest first:
#   ad-hoc runs (`infersweep submit`, `infersweep experiment submit`): -1 .. -2^30, decreasing with the
#     submit time in milliseconds, so they queue first come, first served (wraps after 12.4 days: a run
#     waiting across the wrap is overtaken once; the order stays total);
#   nightly CronWorkflows: -2^30 - 1 - i for the i-th suite recipe, fixed at install: behind any waiting
#     ad-hoc run, and in suite order among themselves.
# A UI submit of a template without a priority has 0 and goes first; two of those in the same second are the
# one case left without a total order (give the form a priority, or submit through infersweep).
PRIORITY_BAND = 2**30
_last_priority: list[int] = []


def submit_priority(now_ms: int | None = None) -> int:
    """The `spec.priority` of a run submitted now: distinct from every earlier one of this process."""
    import time

    ms = int(time.time() * 1000) if now_ms is None else now_ms
    p = -1 - ms % PRIORITY_BAND
    if _last_priority and p >= _last_priority[0] and p - _last_priority[0] < PRIORITY_BAND // 2:
        p = _last_priority[0] - 1  # same millisecond (or a clock step back): stay below the previous run
        if p < -PRIORITY_BAND:
            p = -1
    _last_priority[:] = [p]
    return p


def nightly_priority(settings: ClusterSettings, recipe: str) -> int:
    """The `spec.workflowSpec.priority` of the nightly CronWorkflow of `recipe` (below every ad-hoc run)."""
    return -PRIORITY_BAND - 1 - list(settings.nightly.suite).index(recipe)


def configmap_data(settings: ClusterSettings) -> dict[str, str]:
    """Semaphore limits: each lane's runs, and each lane's padding keys with the same limit (a whole-pool
    run's padding: 1), so padding never makes a run wait."""
    data: dict[str, str] = {}
    for gpu, pool in sorted(settings.guard.pools.items()):
        owners = [(f"{s}gpu", n, 1) for s, n in pool.lanes.items()]
        if pool.whole_pool_runs:
            owners.append(("all", 1, len(pool.lanes)))
        for s, n in pool.lanes.items():
            data[lane_key(gpu, s)] = str(n)
        for owner, n, held in owners:
            for i in range(held + 1, MAX_LANES + 1):
                data[_pad_key(gpu, owner, i)] = str(n)
    return data


# ------------------------------------------------------------------------------- Argo's semantics, modelled


class ArgoSemaphores:
    """Argo v4.1.2's admission of template-level semaphores, for the property tests and the simulation
    (the controller cannot run here; this encodes workflow/sync/ as read):
    - a request is queued on every lock it names (sync_manager.go prepAcquire -> addToQueue) with the
      Workflow's `spec.priority` (0 when unset) and its creationTimestamp (whole seconds, metav1.Time);
    - each lock has its own queue, a container/heap ordered by priority (higher first), then creation time
      (multi_throttler.go priorityQueue.Less); requests equal on both are in no defined order, and two
      locks' heaps, holding different requests, can order them differently: `tie_break(lock, holders)`
      picks the front among equals (default: request order, one order for every lock);
    - a request acquires only when, for every lock, it is at the front of that lock's queue and the lock
      has a free slot (semaphore.go checkAcquire: "isn't at the front"), and then takes all of them at once
      (sync_manager.go tryAcquireImpl);
    - release frees the slots (semaphore.go release)."""

    def __init__(self, limits: dict[str, int], tie_break=None):
        self.limits = dict(limits)
        self.holders: dict[str, set[str]] = {k: set() for k in limits}
        self.queue: list[tuple[str, tuple[str, ...]]] = []
        self.order: dict[str, tuple[int, int]] = {}  # holder -> (priority, creation second)
        self.tie_break = tie_break or (lambda key, holders: holders[0])
        self._seq = 0

    def request(self, holder: str, keys: tuple[str, ...], priority: int = 0, created: int | None = None) -> None:
        """`created`: the creation second; default: a new second per request (no ties)."""
        missing = [k for k in keys if k not in self.limits]
        if missing:  # semaphore.go newInternalSemaphore: no limit -> the node errors
            raise KeyError(f"ConfigMap {CONFIGMAP} has no key {missing[0]}")
        if len(set(keys)) != len(keys):  # syncitems.go checkDuplicates
            raise ValueError("duplicate synchronization item found")
        self._seq += 1
        self.order[holder] = (priority, self._seq if created is None else created)
        self.queue.append((holder, keys))

    def _front(self, key: str) -> str | None:
        waiting = [h for h, ks in self.queue if key in ks]
        if not waiting:
            return None
        top = min((-self.order[h][0], self.order[h][1]) for h in waiting)
        return self.tie_break(key, [h for h in waiting if (-self.order[h][0], self.order[h][1]) == top])

    def admit(self) -> list[str]:
        """Every queued request that can acquire now (repeated until none can), in queue order."""
        admitted: list[str] = []
        progress = True
        while progress:
            progress = False
            for holder, keys in list(self.queue):
                if all(self._front(k) == holder and len(self.holders[k]) < self.limits[k] for k in keys):
                    for k in keys:
                        self.holders[k].add(holder)
                    self.queue.remove((holder, keys))
                    admitted.append(holder)
                    progress = True
        return admitted

    def release(self, holder: str) -> None:
        for hs in self.holders.values():
            hs.discard(holder)

    def drains(self) -> bool:
        """Whether every queued request is eventually admitted when each holder releases after a while
        (and each admitted run ends): False is a deadlock, requests that wait forever. Leaves self as is."""
        import copy

        sim = copy.deepcopy(self)
        while True:
            for h in {h for hs in sim.holders.values() for h in hs}:
                sim.release(h)
            admitted = sim.admit()
            if not sim.queue:
                return True
            if not admitted:
                return False


def limits(settings: ClusterSettings) -> dict[str, int]:
    return {k: int(v) for k, v in configmap_data(settings).items()}
