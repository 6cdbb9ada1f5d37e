"""GPU time of a plan on a cluster, from per-phase durations (a model, not a measurement).

Every phase holds the GPUs of the deployment that exists during it (a transition between two treatments
holds the larger of the two). Phases, per restart class (infersweep.experiment.restart):

- FULL: tear the old DGD down, schedule pods and start containers, load the weights from the cache PVC,
  engine warm-up (CUDA graphs, torch.compile; SGLang's is the longest: the seed notes its start-up "even
  with a shared model-cache"). One workflow per recipe pays this for every treatment.
- WORKER: every worker restarts at once (the experiment sets maxUnavailable 100 %: a 25 % rolling update
  would pay the load + warm-up four times in a row); no scheduling of new pods' images, frontend stays.
- SCALE: scaling down deletes pods; scaling up starts only the added pods (schedule, load, warm-up).
- FRONTEND: the frontend pod is replaced; the workers keep running (and keep their GPUs) meanwhile.
- LOAD: nothing but the next sweep.

Model load time is `load_fixed_s + size_gib / load_gib_s` per pod, in parallel across pods.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from infersweep.experiment.plan import Plan
from infersweep.experiment.restart import RestartClass
from infersweep.recipe import ResolvedRecipe


@dataclass
class Durations:
    schedule_s: float = 60.0  # pod scheduled, image present on the node (pre-pulled), container started
    load_fixed_s: float = 20.0
    load_gib_s: float = 1.0  # weights from the cache PVC (network storage)
    # engine name -> warm-up seconds, over each engine's own estimate (Engine.warmup_s, infersweep/engines/)
    warmup_s: dict[str, float] = field(default_factory=dict)
    teardown_s: float = 45.0  # graceful termination of the workers, GPUs released
    frontend_s: float = 20.0  # a CPU pod: start and register with discovery
    scale_down_s: float = 15.0
    point_s: float = 300.0  # one concurrency point, AIPerf's fixed start-up included
    ready_check_s: float = 10.0  # wait-ready: /v1/models and one completion


def startup_s(r: ResolvedRecipe, d: Durations) -> float:
    """Load + warm-up of one worker pod of `r` (all pods in parallel)."""
    return d.load_fixed_s + r.model.size_gib / d.load_gib_s + d.warmup_s.get(r.recipe.engine, r.engine.warmup_s)


def transition_s(cls: RestartClass, prev: ResolvedRecipe | None, nxt: ResolvedRecipe, d: Durations) -> float:
    """Seconds from the end of one sweep to the start of the next (a FULL's teardown of the old DGD is
    counted by the caller, at the old deployment's GPUs)."""
    if cls is RestartClass.FULL:
        return d.schedule_s + startup_s(nxt, d) + d.ready_check_s
    if cls is RestartClass.WORKER:
        return d.teardown_s + startup_s(nxt, d) + d.ready_check_s
    if cls is RestartClass.SCALE:
        assert prev is not None
        grow = nxt.gpu_count > prev.gpu_count or any(
            w.replicas > prev.recipe.topology.roles()[role].replicas for role, w in nxt.recipe.topology.roles().items()
        )
        return (d.schedule_s + startup_s(nxt, d) if grow else d.scale_down_s) + d.ready_check_s
    if cls is RestartClass.FRONTEND:
        return d.frontend_s + d.ready_check_s
    return 0.0


def sweep_s(r: ResolvedRecipe, d: Durations) -> float:
    return len(r.recipe.workload.concurrency) * d.point_s


@dataclass
class Cost:
    gpu_hours: float
    wall_hours: float
    setup_gpu_hours: float  # GPU-hours spent not measuring (deploys, restarts, swaps, teardown)


def plan_cost(plan: Plan, d: Durations) -> Cost:
    gpu_s = wall = setup = 0.0
    prev: ResolvedRecipe | None = None
    for step in plan.steps:
        r = step.treatment.recipe
        t = transition_s(step.transition.cls, prev, r, d)
        full = step.transition.cls is RestartClass.FULL
        held = max(r.gpu_count, prev.gpu_count if prev and not full else 0)
        if full and prev is not None:  # the old DGD's teardown holds the old GPUs
            setup += d.teardown_s * prev.gpu_count
            gpu_s += d.teardown_s * prev.gpu_count
            wall += d.teardown_s
        setup += t * held
        gpu_s += t * held + sweep_s(r, d) * r.gpu_count
        wall += t + sweep_s(r, d)
        prev = r
    last = plan.steps[-1].treatment.recipe
    gpu_s += d.teardown_s * last.gpu_count
    setup += d.teardown_s * last.gpu_count
    wall += d.teardown_s
    return Cost(gpu_s / 3600, wall / 3600, setup / 3600)


def naive_cost(plan: Plan, d: Durations) -> Cost:
    """One workflow per recipe: each treatment deployed, swept and torn down on its own."""
    gpu_s = wall = setup = 0.0
    for step in plan.steps:
        r = step.treatment.recipe
        t = transition_s(RestartClass.FULL, None, r, d) + d.teardown_s
        setup += t * r.gpu_count
        gpu_s += (t + sweep_s(r, d)) * r.gpu_count
        wall += t + sweep_s(r, d)
    return Cost(gpu_s / 3600, wall / 3600, setup / 3600)
