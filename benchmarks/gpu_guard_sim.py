"""GPU guard, before and after: a discrete-event simulation of the catalog and of the nightly suite on the
GPU pools of params/cluster.yaml.

Each run: download (model cache) -> deploy + load -> per point (warm-up + measuring) -> teardown ->
bookkeeping (scrape, summarize, publish). Every run is submitted at t = 0 (all of the catalog at once; the
nightly suite's CronWorkflows fire together). Schemes:

* before   today's guard: one slot of the pool's semaphore per Workflow (slot = the pool's largest catalog
           recipe, limit = pool // slot), held for the whole run (workflow-level synchronization);
* lanes    workflows/gpu_guard.py as rendered: the gpu-span's lane semaphores, held from deploy to
           teardown, admitted with Argo's queue semantics (gpu_guard.ArgoSemaphores: all-or-nothing, only
           the front of each lock's queue acquires);
* exact    reference, Kueue-style quota: a run is admitted when its GPUs fit the pool's free quota
           (BestEffortFIFO: the oldest run that fits goes first), held from deploy to teardown.

Accounting (GPU-hours): held = GPUs the guard reserves x time held; deployed = the run's GPUs x (deploy
.. teardown), what the deployment occupies whatever the guard; measuring = GPUs x measuring time;
held-but-idle from locking = held - deployed (reserved GPUs no deployment uses: a slot larger than the
run, a lock held through the download and the bookkeeping); queued-while-free = GPU-hours a pool had free
while a queued run's GPUs would have fit them (what a guard coarser than the GPU count costs in waiting);
longest wait = the longest a run queued for the guard (a span-level lock waits inside a running Workflow,
so the Workflow's activeDeadlineSeconds must cover it).

    .venv/bin/python benchmarks/gpu_guard_sim.py [--download-min 20 --deploy-min 10 --warmup-min 1
        --point-min 5 --teardown-min 1 --bookkeeping-min 5]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infersweep.cluster_settings import ClusterSettings

import argparse
import heapq
from dataclasses import dataclass, field

from _common import Figure, report, table

from workflows import gpu_guard


@dataclass(frozen=True)
class Phases:
    """Phase durations in minutes."""

    download: float = 20.0
    deploy: float = 10.0  # apply DGD + pods scheduled + weights loaded + ready
    warmup: float = 1.0  # per point
    point: float = 5.0  # measuring, per point
    teardown: float = 1.0
    bookkeeping: float = 5.0  # scrape + summarize + publish + regression check


@dataclass(frozen=True)
class Run:
    name: str
    pool: str
    gpus: int
    points: int


@dataclass
class Outcome:
    makespan: float = 0.0
    held: float = 0.0  # GPU-minutes
    deployed: float = 0.0
    measuring: float = 0.0
    queued_free: float = 0.0
    max_wait: float = 0.0  # longest time a run waited for the guard (minutes)
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)  # run -> (span start, span end)
    stuck: list[str] = field(default_factory=list)  # runs still waiting when nothing is left to happen: deadlocked

    @property
    def idle_from_locking(self) -> float:
        return self.held - self.deployed

    @property
    def idle_fraction(self) -> float:
        return self.idle_from_locking / self.held if self.held else 0.0


class Before:
    """Today's workflow-level slot semaphore, modelled with Argo's semantics."""

    whole_run = True

    def __init__(self, pools: dict[str, int], runs: list[Run], slots: dict[str, int] | None = None):
        # Today's rule (the old workflows/cluster.py slot_gpus): the largest catalog recipe of the pool.
        self.slot = slots or {p: max([r.gpus for r in runs if r.pool == p] or [g]) for p, g in pools.items()}
        self.sem = gpu_guard.ArgoSemaphores({p: max(1, g // self.slot[p]) for p, g in pools.items()})

    def reserved(self, run: Run) -> int:
        return self.slot[run.pool]

    def request(self, run: Run) -> None:
        self.sem.request(run.name, (run.pool,))

    def admit(self) -> list[str]:
        return self.sem.admit()

    def release(self, run: Run) -> None:
        self.sem.release(run.name)


def scrambled_ties(seed: int = 0):
    """A tie order per lock that differs between locks (as two container/heaps holding different requests
    may order equal items): the front among equals is the one with the least hash of (seed, lock, run)."""
    import hashlib

    return lambda key, holders: min(holders, key=lambda h: hashlib.sha256(f"{seed}/{key}/{h}".encode()).digest())


def submit_priorities(runs: list[Run]) -> dict[str, int]:
    """The priorities `infersweep submit` stamps on runs submitted in this order within one millisecond
    (gpu_guard.submit_priority: each below the previous one)."""
    gpu_guard._last_priority.clear()
    return {r.name: gpu_guard.submit_priority(now_ms=0) for r in runs}


class Lanes:
    """workflows/gpu_guard.py's lane semaphores, as the span holds them. Every run is created in the same
    second (all submitted at once), so Argo orders each lock's queue by priority alone: `priorities` None
    is every run at priority 0 (before the guard stamped them), with each lock's ties in its own order
    (`tie_break`, default scrambled_ties)."""

    whole_run = False

    def __init__(
        self, settings: ClusterSettings, runs: list[Run], priorities: dict[str, int] | None = None, tie_break=None
    ):
        cfg = settings.guard
        self.adm = {r.name: gpu_guard.admission(cfg.pools[r.pool], r.gpus, r.name) for r in runs}
        self.sem = gpu_guard.ArgoSemaphores(gpu_guard.limits(settings), tie_break or scrambled_ties())
        self.priorities = submit_priorities(runs) if priorities is None else priorities

    def reserved(self, run: Run) -> int:
        return self.adm[run.name].reserved

    def request(self, run: Run) -> None:
        self.sem.request(run.name, self.adm[run.name].keys, priority=self.priorities.get(run.name, 0), created=0)

    def admit(self) -> list[str]:
        return self.sem.admit()

    def release(self, run: Run) -> None:
        self.sem.release(run.name)


class Exact:
    """Kueue-style GPU quota per pool, BestEffortFIFO (the oldest queued run that fits is admitted)."""

    whole_run = False

    def __init__(self, pools: dict[str, int], runs: list[Run]):
        self.free = dict(pools)
        self.by_name = {r.name: r for r in runs}
        self.queue: list[str] = []

    def reserved(self, run: Run) -> int:
        return run.gpus

    def request(self, run: Run) -> None:
        self.queue.append(run.name)

    def admit(self) -> list[str]:
        out = []
        for name in list(self.queue):
            r = self.by_name[name]
            if r.gpus <= self.free[r.pool]:
                self.free[r.pool] -= r.gpus
                self.queue.remove(name)
                out.append(name)
        return out

    def release(self, run: Run) -> None:
        self.free[run.pool] += run.gpus


def simulate(runs: list[Run], pools: dict[str, int], scheme, ph: Phases) -> Outcome:
    """Event-driven: a run requests the guard at t=0 (whole-run scheme) or after its download, holds it
    until its teardown ends (or its bookkeeping ends, whole-run scheme), and is measured meanwhile."""
    by_name = {r.name: r for r in runs}
    span = {r.name: ph.deploy + r.points * (ph.warmup + ph.point) + ph.teardown for r in runs}
    out = Outcome()
    events: list[tuple[float, int, str, str]] = []  # (time, seq, kind, run)
    seq = 0

    def push(t: float, kind: str, name: str) -> None:
        nonlocal seq
        heapq.heappush(events, (t, seq, kind, name))
        seq += 1

    for r in runs:  # submission order = creation order = Argo's queue order at equal priority
        push(0.0 if scheme.whole_run else ph.download, "request", r.name)
    waiting: set[str] = set()
    asked: dict[str, float] = {}
    deployed_gpus = {p: 0 for p in pools}
    t_prev = 0.0
    while events:
        t, _, kind, name = heapq.heappop(events)
        # queued-while-free over [t_prev, t): free GPUs of a pool while some queued run of it would fit them
        for p, g in pools.items():
            free = g - deployed_gpus[p]
            if any(by_name[w].pool == p and by_name[w].gpus <= free for w in waiting):
                out.queued_free += free * (t - t_prev)
        t_prev = t
        r = by_name[name]
        if kind == "request":
            scheme.request(r)
            waiting.add(name)
            asked[name] = t
        elif kind == "span_end":
            deployed_gpus[r.pool] -= r.gpus
            if not scheme.whole_run:
                scheme.release(r)
            push(t + ph.bookkeeping, "done", name)
        elif kind == "done":
            if scheme.whole_run:
                scheme.release(r)
            out.makespan = max(out.makespan, t)
        for admitted in scheme.admit():
            a = by_name[admitted]
            waiting.discard(admitted)
            out.max_wait = max(out.max_wait, t - asked[admitted])
            start = t + (ph.download if scheme.whole_run else 0.0)  # whole-run: the lock is taken before the download
            out.spans[admitted] = (start, start + span[admitted])
            held_for = (
                (ph.download if scheme.whole_run else 0.0)
                + span[admitted]
                + (ph.bookkeeping if scheme.whole_run else 0.0)
            )
            out.held += scheme.reserved(a) * held_for
            out.deployed += a.gpus * span[admitted]
            out.measuring += a.gpus * a.points * ph.point
            push(start, "span_start", admitted)
            push(start + span[admitted], "span_end", admitted)
        if kind == "span_start":
            deployed_gpus[r.pool] += r.gpus
    out.stuck = sorted(waiting)
    return out


def catalog_runs() -> list[Run]:
    from infersweep.recipe import all_recipe_paths, load_recipe

    rs = [load_recipe(p) for p in all_recipe_paths()]
    return [Run(r.name, r.recipe.gpu.type, r.gpu_capacity, len(r.recipe.workload.points())) for r in rs]


def scenarios(settings: ClusterSettings) -> dict[str, list[Run]]:
    catalog = catalog_runs()
    suite = set(settings.nightly.suite)
    return {"catalog": catalog, "nightly": [r for r in catalog if r.name in suite]}


def compare(runs: list[Run], settings: ClusterSettings, ph: Phases) -> dict[str, Outcome]:
    pools = {p: v.gpus for p, v in settings.gpu_pools.items()}
    slots = {p: max([r.gpus for r in catalog_runs() if r.pool == p] or [g]) for p, g in pools.items()}
    return {
        "before": simulate(runs, pools, Before(pools, runs, slots), ph),
        "lanes": simulate(runs, pools, Lanes(settings, runs), ph),
        "lanes, no priorities": simulate(runs, pools, Lanes(settings, runs, priorities={}), ph),
        "exact": simulate(runs, pools, Exact(pools, runs), ph),
    }


def main(argv: list[str] | None = None) -> list[Figure]:
    from infersweep.cluster_settings import load_cluster_settings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    d = Phases()
    for f in ("download", "deploy", "warmup", "point", "teardown", "bookkeeping"):
        ap.add_argument(f"--{f}-min", type=float, default=getattr(d, f), help=f"{f} minutes (default {getattr(d, f)})")
    a = ap.parse_args(argv)
    ph = Phases(*(getattr(a, f"{f}_min") for f in ("download", "deploy", "warmup", "point", "teardown", "bookkeeping")))
    settings = load_cluster_settings()
    rows, figs = [], []
    for scen, runs in scenarios(settings).items():
        for scheme, o in compare(runs, settings, ph).items():
            rows.append(
                [
                    scen,
                    scheme,
                    len(runs),
                    f"{o.makespan / 60:.1f}",
                    f"{o.held / 60:.0f}",
                    f"{o.deployed / 60:.0f}",
                    f"{o.measuring / 60:.0f}",
                    f"{100 * o.idle_fraction:.1f} %",
                    f"{o.queued_free / 60:.0f}",
                    f"{o.max_wait / 60:.1f}",
                    str(len(o.stuck)),
                ]
            )
            bound = "< 10" if scheme == "lanes" else ""
            figs.append(
                Figure(
                    "gpu_guard_sim",
                    f"{scen}/{scheme}: held-but-idle from locking",
                    round(100 * o.idle_fraction, 1),
                    "% of held",
                    bound,
                    f"makespan {o.makespan / 60:.1f} h, held {o.held / 60:.0f} GPU-h, "
                    f"measuring {o.measuring / 60:.0f} GPU-h, queued-while-free {o.queued_free / 60:.0f} GPU-h",
                )
            )
            if scheme.startswith("lanes"):
                figs.append(
                    Figure(
                        "gpu_guard_sim",
                        f"{scen}/{scheme}: runs deadlocked",
                        len(o.stuck),
                        "runs",
                        "<= 0" if scheme == "lanes" else "",
                        ", ".join(o.stuck[:4]),
                    )
                )
    print(f"phases (min): {ph}")
    print(
        table(
            rows,
            [
                "scenario",
                "scheme",
                "runs",
                "makespan h",
                "held GPU-h",
                "deployed GPU-h",
                "measuring GPU-h",
                "held-but-idle (locking)",
                "queued-while-free GPU-h",
                "longest wait h",
                "deadlocked runs",
            ],
        )
    )
    return report("gpu_guard_sim", figs)


if __name__ == "__main__":
    main()
