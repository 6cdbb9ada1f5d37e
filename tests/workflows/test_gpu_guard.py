"""The GPU guard (workflows/gpu_guard.py): held by the gpu-span template only, valid Argo, never over-admitting
a pool under Argo's own admission rules (workflow/sync/ of v4.1.2, modelled in gpu_guard.ArgoSemaphores and
cited there), the ConfigMap `infersweep install` prints matching every key a run names, the cluster
schedulers' labels on a DGD the CRD accepts, one error per cluster.yaml mistake, and the simulation's
accounting on a case computed by hand."""

from __future__ import annotations

import copy
import itertools
import random
import sys

import pytest
import yaml

from infersweep.cluster_settings import ClusterSettingsError, buddy_lanes, load_cluster_settings, parse_cluster_settings
from infersweep.paths import REPO_ROOT as REPO
from infersweep.recipe import RecipeError, all_recipe_paths, load_recipe
from infersweep.schemas import SchemaError, validate_argo, validate_document
from workflows import gpu_guard
from workflows.cluster import kubectl_manifests
from workflows.pipeline import pipeline_template
from workflows.render import render_recipe

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"  # 8 x H100


@pytest.fixture(scope="module")
def settings():
    return load_cluster_settings()


@pytest.fixture(scope="module")
def catalog():
    return [load_recipe(p) for p in all_recipe_paths()]


def _with(settings, **changes):
    return settings.changed(**changes)


RAW = yaml.safe_load((REPO / "params" / "cluster.yaml").read_text())


def _raw_with(**changes):
    return {**copy.deepcopy(RAW), **changes}


# ------------------------------------------------------------------ where the guard sits, and Argo validity


def test_only_the_gpu_span_holds_the_guard_and_it_validates_against_argo(settings):
    wt = pipeline_template("vllm", "agg", settings).to_dict()
    held = {t["name"]: t["synchronization"] for t in wt["spec"]["templates"] if "synchronization" in t}
    assert set(held) == {"gpu-span"} and "synchronization" not in wt["spec"]
    span = next(t for t in wt["spec"]["templates"] if t["name"] == "gpu-span")
    # deploy -> wait-ready -> the points; teardown is the exit handler's (so UI Retry can re-run failed points)
    assert [t["name"] for t in span["dag"]["tasks"]] == ["deploy", "wait-ready", "point"]
    keys = [s["configMapKeyRef"]["key"] for s in held["gpu-span"]["semaphores"]]
    assert keys == ["{{workflow.parameters.gpu-lock-%d}}" % i for i in range(1, 5)]
    for version in ("v4.1.2", "v3.7.18"):
        validate_argo(wt, version)
    # The strict validation catches a misspelt lock field on this template (Hera would drop it silently).
    bad = copy.deepcopy(wt)
    next(t for t in bad["spec"]["templates"] if t["name"] == "gpu-span")["synchronization"]["semaphore"] = held[
        "gpu-span"
    ]["semaphores"][0]
    with pytest.raises(SchemaError, match="synchronization.semaphore"):
        validate_argo(bad, "v4.1.2")


def test_a_submitted_run_carries_its_lane_keys_and_no_workflow_level_lock(settings):
    wf = render_recipe(load_recipe(RECIPE), settings).workflow
    assert "synchronization" not in wf["spec"]
    params = {p["name"]: p["value"] for p in wf["spec"]["arguments"]["parameters"]}
    assert [params[p] for p in gpu_guard.LOCK_PARAMS] == [
        "h100-8gpu",
        "h100-8gpu-pad2",
        "h100-8gpu-pad3",
        "h100-8gpu-pad4",
    ]


def test_the_template_alone_cannot_run_without_its_locks(settings):
    # A UI submit of the template must give the lock keys (no default: Argo refuses a workflow without a
    # value for a parameter), so the guard cannot be skipped by leaving them out.
    wt = pipeline_template("vllm", "agg", settings).to_dict()
    params = {p["name"]: p for p in wt["spec"]["arguments"]["parameters"]}
    for p in gpu_guard.LOCK_PARAMS:
        assert "value" not in params[p] and "default" not in params[p]


def test_install_configmap_names_every_key_every_catalog_run_takes(settings, catalog):
    cm = next(d for d in kubectl_manifests(settings, catalog) if d["metadata"]["name"] == gpu_guard.CONFIGMAP)
    validate_document(cm)
    for r in catalog:
        adm = gpu_guard.recipe_admission(r, settings)
        assert len(adm.keys) == len(set(adm.keys)) == len(gpu_guard.LOCK_PARAMS)  # Argo refuses duplicates
        for k in adm.keys:
            assert int(cm["data"][k]) >= 1, (r.name, k)


# --------------------------------------------------------------------------------------- admission safety


def _pool_gpus(settings):
    return {g: v.gpus for g, v in settings.gpu_pools.items()}


@pytest.mark.parametrize("seed", range(40))
def test_argo_admission_never_over_admits_a_pool(settings, catalog, seed):
    """Random arrivals, departures and sizes (catalog sizes and any size the pool holds) through the rendered
    keys and Argo's semaphore rules: at every moment each pool's admitted runs fit, by GPUs and by reservation."""
    rng = random.Random(seed)
    cfg = settings.guard
    sem = gpu_guard.ArgoSemaphores(gpu_guard.limits(settings))
    catalog_sizes = [(r.recipe.gpu.type, r.gpu_capacity) for r in catalog]
    running: dict[str, gpu_guard.Admission] = {}
    pending: dict[str, gpu_guard.Admission] = {}
    for step in range(300):
        if running and rng.random() < 0.45:
            name = rng.choice(sorted(running))
            sem.release(name)
            del running[name]
        else:
            if rng.random() < 0.5:
                gpu, size = rng.choice(catalog_sizes)
            else:
                gpu = rng.choice(sorted(cfg.pools))
                size = rng.randint(1, cfg.pools[gpu].gpus)
            try:
                adm = gpu_guard.admission(cfg.pools[gpu], size)
            except RecipeError:
                continue  # refused at submit, before any lock
            name = f"run-{step}"
            sem.request(name, adm.keys)
            pending[name] = adm
        for name in sem.admit():
            running[name] = pending.pop(name)
        for gpu, pool in cfg.pools.items():
            mine = [a for a in running.values() if a.gpu_type == gpu]
            assert sum(a.reserved for a in mine) <= pool.gpus, (gpu, mine)
            assert sum(a.gpus for a in mine) <= pool.gpus


def test_lanes_admit_what_fits_together_and_queue_the_rest(settings):
    cfg = settings.guard
    sem = gpu_guard.ArgoSemaphores(gpu_guard.limits(settings))
    h100 = cfg.pools["H100"]
    runs = {"one": 1, "two": 2, "four": 4, "eight": 8, "eight-b": 8, "sixteen": 16, "one-b": 1}
    for name, g in runs.items():
        sem.request(name, gpu_guard.admission(h100, g).keys)
    # 1 + 2 + 4 + 8 = 15 of 16 GPUs run together; a second 8 and a 16 wait. The 1-GPU run queued last
    # waits too: the 16 is ahead of it in the 1-GPU lane's queue (Argo admits only the front of a queue).
    assert sem.admit() == ["one", "two", "four", "eight"]
    sem.release("eight")
    assert sem.admit() == ["eight-b"]
    for n in ("one", "two", "four", "eight-b"):
        sem.release(n)
    assert sem.admit() == ["sixteen"]
    sem.release("sixteen")
    assert sem.admit() == ["one-b"]


def test_a_waiting_run_does_not_block_other_lanes_through_its_padding(settings):
    """Padding keys are private to a lane: a run waiting for the busy 8-GPU lane is at the front of its own
    padding queues only, so a later 2-GPU run starts. With padding shared by all lanes it would not
    (semaphore.go checkAcquire admits only the front of a lock's queue) — shown with a shared variant."""
    cfg = settings.guard
    h100 = cfg.pools["H100"]
    first, second, small = (gpu_guard.admission(h100, g) for g in (8, 8, 2))
    sem = gpu_guard.ArgoSemaphores(gpu_guard.limits(settings))
    for name, adm in (("a", first), ("b", second), ("c", small)):
        sem.request(name, adm.keys)
    assert sem.admit() == ["a", "c"]

    shared = lambda adm: adm.lane_keys + tuple(f"pad{i}" for i in range(len(adm.lane_keys) + 1, 5))
    limits = {**gpu_guard.limits(settings), **{f"pad{i}": 100 for i in range(2, 5)}}
    sem = gpu_guard.ArgoSemaphores(limits)
    for name, adm in (("a", first), ("b", second), ("c", small)):
        sem.request(name, shared(adm))
    assert sem.admit() == ["a"], "a shared padding lock puts the waiting 8-GPU run in front of the 2-GPU one"


def test_no_fixed_lock_set_per_size_is_exact_once_a_run_can_take_the_whole_pool():
    """Why lanes (gpu_guard's docstring): with one lock per holder, every scheme that gives 8-GPU runs one
    fixed set of locks and 16-GPU runs another (up to 3 locks, limits 1..3) either admits an 8 beside a 16
    on 16 GPUs or never admits two 8s. Exhaustive over all such schemes."""
    locks = range(3)
    subsets = [frozenset(c) for n in range(1, 4) for c in itertools.combinations(locks, n)]
    exact = 0
    for limits in itertools.product((1, 2, 3), repeat=3):
        for a8, a16 in itertools.product(subsets, subsets):

            def admits(n8, n16, a8=a8, a16=a16, limits=limits):
                return all(n8 * (lk in a8) + n16 * (lk in a16) <= limits[lk] for lk in locks)

            if admits(2, 0) and admits(0, 1) and not admits(1, 1):
                exact += 1
    assert exact == 0


def test_a_whole_pool_run_needs_single_run_lanes_and_a_too_big_run_is_refused_with_the_fix(settings):
    p = _with(settings, gpu_pools={**settings.gpu_pools, "H100": {"gpus": 16, "lanes": {8: 1, 4: 2}}})
    r = load_recipe(RECIPE)  # 8 GPUs: fits the 8-GPU lane
    gpu_guard.check_fits_pool(r, p)
    big = next(x for x in (load_recipe(q) for q in all_recipe_paths()) if x.gpu_capacity == 16)
    with pytest.raises(RecipeError, match="add a lane of 16 GPUs"):
        gpu_guard.check_fits_pool(big, p)
    p = _with(settings, gpu_pools={**settings.gpu_pools, "H100": {"gpus": 4}})
    with pytest.raises(RecipeError, match="the pool has 4; raise gpu_pools.H100.gpus"):
        gpu_guard.check_fits_pool(r, p)
    with pytest.raises(RecipeError, match="no GPU pool for H100"):
        gpu_guard.check_fits_pool(r, _with(settings, gpu_pools={"B200": {"gpus": 8}}))


def test_default_lanes_are_the_buddy_split():
    assert buddy_lanes(16) == {1: 1, 2: 1, 4: 1, 8: 1}
    assert buddy_lanes(8) == {1: 1, 2: 1, 4: 1}
    assert buddy_lanes(12) == {1: 1, 2: 1, 4: 1} and buddy_lanes(1) == {}


# --------------------------------------------------------------------------- cluster schedulers' machinery


@pytest.mark.parametrize("scheduler", ["kueue", "kai", "volcano"])
def test_cluster_scheduler_labels_the_dgd_pods_and_drops_the_argo_lock(settings, catalog, scheduler):
    p = _with(settings, gpu_guard={"scheduler": scheduler})
    b = render_recipe(load_recipe(RECIPE), p)  # validates the DGD against the Dynamo CRD
    pods = [c["podTemplate"] for c in b.dgd["spec"]["components"]]
    if scheduler == "kueue":
        total = 1 + 8  # frontend + 8 workers: the pod group is admitted all at once
        for t in pods:
            assert t["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "infersweep-h100"
            assert t["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == b.dgd["metadata"]["name"]
            assert t["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == str(total)
            assert t["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-serving"] == "true"
    elif scheduler == "kai":
        assert b.dgd["metadata"]["annotations"]["nvidia.com/kai-scheduler-queue"] == "infersweep-h100"
        assert all(
            t["spec"]["schedulerName"] == "kai-scheduler"
            and t["metadata"]["labels"]["kai.scheduler/queue"] == "infersweep-h100"
            for t in pods
        )
    else:
        assert all(
            t["spec"]["schedulerName"] == "volcano"
            and t["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "infersweep-h100"
            for t in pods
        )
    wt = pipeline_template("vllm", "agg", p).to_dict()
    assert not any("synchronization" in t for t in wt["spec"]["templates"])
    assert gpu_guard.CONFIGMAP not in {d["metadata"]["name"] for d in kubectl_manifests(p, catalog)}


def test_argo_guard_leaves_the_dgd_alone(settings):
    b = render_recipe(load_recipe(RECIPE), settings)
    # No queue labels or scheduler: the pod templates carry at most the rollout annotations (surge 0 on an
    # exactly-sized pool, workflows/pipeline.spare_gpus), which are not the guard's.
    for c in b.dgd["spec"]["components"]:
        meta = c["podTemplate"].get("metadata", {})
        assert set(meta) <= {"annotations"} and "schedulerName" not in c["podTemplate"]["spec"]
        assert all(k.startswith("nvidia.com/deployment-rolling-update") for k in meta.get("annotations", {}))


# ------------------------------------------------------------------------------------ cluster.yaml errors

GPU_TYPES = {"H100", "H200", "B200", "GB200"}


@pytest.mark.parametrize(
    "section, error",
    [
        (
            {"gpu_guard": {"scheduler": "slurm"}},
            "gpu_guard.scheduler: must be one of argo, kueue, kai, volcano; argo = Argo semaphores",
        ),
        ({"gpu_guard": {"scheduler": "argo", "queue": "x"}}, "gpu_guard.queue: unknown field"),
        ({"gpu_pools": {"H100": {"gpus": 0}}}, "gpu_pools.H100.gpus: must be a positive integer"),
        ({"gpu_pools": {"H100": {"gpus": "16"}}}, "gpu_pools.H100.gpus: must be a positive integer"),
        ({"gpu_pools": {"H100": {"gpus": 16, "slot_gpus": 8}}}, "gpu_pools.H100.slot_gpus: unknown field"),
        ({"gpu_pools": {"A100": {"gpus": 8}}}, "gpu_pools.A100: unknown GPU type"),
        (
            {"gpu_pools": {"H100": {"gpus": 16, "lanes": {8: 2, 4: 1}}}},
            "gpu_pools.H100.lanes: lanes take 20 GPUs (1 x 4 + 2 x 8) but the pool has 16",
        ),
        (
            {"gpu_pools": {"H100": {"gpus": 16, "lanes": {32: 1}}}},
            "gpu_pools.H100.lanes.32: a lane size must be an integer from 1 to the pool's 16 GPUs",
        ),
        ({"gpu_pools": {"H100": {"gpus": 16, "lanes": {4: 0}}}}, "gpu_pools.H100.lanes.4: must be a positive integer"),
        ({"gpu_pools": {"H100": {"gpus": 16, "lanes": [1, 2]}}}, "gpu_pools.H100.lanes: must map a run size"),
        (
            {"gpu_pools": {"H100": {"gpus": 64, "lanes": {1: 1, 2: 1, 4: 1, 8: 1, 16: 1}}}},
            "gpu_pools.H100.lanes: 5 lane sizes but the span template holds at most 4",
        ),
        (
            {"gpu_pools": {"H100": {"gpus": 16, "queue": "GPU_Queue"}}},
            "gpu_pools.H100.queue: must be a Kubernetes name",
        ),
        ({"gpu_pools": {}}, "gpu_pools: must map each GPU type"),
    ],
)
def test_each_gpu_guard_mistake_is_one_line_naming_the_field(section, error):
    with pytest.raises(ClusterSettingsError) as e:
        parse_cluster_settings(_raw_with(**section), gpu_types=GPU_TYPES)
    lines = str(e.value).splitlines()
    assert len(lines) == 1 and error in lines[0], lines


def test_several_mistakes_are_all_reported():
    bad = _raw_with(
        gpu_guard={"scheduler": "x"}, gpu_pools={"H100": {"gpus": -1}, "B200": {"gpus": 8, "lanes": {16: 1}}}
    )
    with pytest.raises(ClusterSettingsError) as e:
        parse_cluster_settings(bad, gpu_types=GPU_TYPES)
    assert len(str(e.value).splitlines()) == 3


def test_the_shipped_settings_file_parses(settings):
    cfg = settings.guard
    assert cfg.scheduler == "argo" and cfg.pools["H100"].whole_pool_runs and not cfg.pools["H200"].whole_pool_runs
    raw = yaml.safe_load((REPO / "params" / "cluster.yaml").read_text())
    assert set(raw["gpu_pools"]) == set(cfg.pools)


# ------------------------------------------------------------------------------ the simulation's accounting


def _sim():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import gpu_guard_sim

    return gpu_guard_sim


def test_simulation_accounting_matches_a_case_computed_by_hand(settings):
    """Two 8-GPU runs of 2 points on a 16-GPU H100 pool; download 10, deploy 5, warm-up 1, point 4,
    teardown 1, bookkeeping 3 minutes: span = 5 + 2 x (1 + 4) + 1 = 16, whole run = 10 + 16 + 3 = 29.
    before (slot 16 = the pool's largest catalog recipe, limit 1): run 1 holds 16 GPUs for 29 min, run 2 for the next
      29: makespan 58, held 2 x 16 x 29 = 928, deployed 2 x 8 x 16 = 256, measuring 2 x 8 x 8 = 128,
      idle from locking 672; run 2 waits 0..29 while its 8 GPUs would fit the free ones (below).
    lanes (one 8-GPU lane): both download 0..10; run 1 spans 10..26, run 2 26..42, done at 45; held =
      deployed = 256; run 2 waits 10..26 with 8 GPUs free: queued-while-free 8 x 16 = 128.
    exact: both span 10..26, done at 29; held 256; nothing waits."""
    sim = _sim()
    ph = sim.Phases(download=10, deploy=5, warmup=1, point=4, teardown=1, bookkeeping=3)
    runs = [sim.Run("a", "H100", 8, 2), sim.Run("b", "H100", 8, 2)]
    pools = {"H100": 16}
    before = sim.simulate(runs, pools, sim.Before(pools, runs, {"H100": 16}), ph)
    assert (before.makespan, before.held, before.deployed, before.measuring) == (58, 928, 256, 128)
    assert before.idle_from_locking == 672
    # b queued 0..29: pool has 16 free GPUs during a's download (0..10) and bookkeeping (26..29), 8 during
    # a's span (10..26): 16 x 10 + 8 x 16 + 16 x 3 = 336.
    assert before.queued_free == 336 and before.max_wait == 29
    one_pool = settings.changed(gpu_pools={"H100": {"gpus": 16}})
    lanes = sim.simulate(runs, pools, sim.Lanes(one_pool, runs), ph)
    assert (lanes.makespan, lanes.held, lanes.deployed, lanes.queued_free) == (45, 256, 256, 128)
    assert lanes.spans == {"a": (10, 26), "b": (26, 42)} and lanes.max_wait == 16
    exact = sim.simulate(runs, pools, sim.Exact(pools, runs), ph)
    assert (exact.makespan, exact.held, exact.queued_free, exact.max_wait) == (29, 256, 0, 0)
    assert exact.spans == {"a": (10, 26), "b": (10, 26)}


def test_a_submit_cannot_set_its_own_locks(settings):
    with pytest.raises(RecipeError, match="gpu-lock-1: the GPU guard's locks follow from the recipe's GPU count"):
        render_recipe(load_recipe(RECIPE), settings, overrides={"gpu-lock-1": "h100-1gpu"})


# ------------------------------------------------------------------- the queue order: no deadlock (issue 20)
# Argo v4.1.2: each lock's queue is a heap ordered by spec.priority, then creationTimestamp in whole seconds
# (workflow/sync/multi_throttler.go priorityQueue.Less); only the front acquires (semaphore.go checkAcquire);
# equal requests have no defined order, and two locks' heaps may order them differently (ArgoSemaphores
# tie_break; benchmarks/gpu_guard_sim.scrambled_ties).


def test_two_whole_pool_runs_of_one_second_and_priority_can_wait_for_each_other_forever(settings):
    h100 = settings.guard.pools["H100"]
    whole = gpu_guard.admission(h100, 16)
    assert len(whole.lane_keys) > 1
    eight = gpu_guard.lane_key("H100", 8)
    sem = gpu_guard.ArgoSemaphores(
        gpu_guard.limits(settings), tie_break=lambda key, hs: ("a" if key == eight else "b") if len(hs) > 1 else hs[0]
    )
    sem.request("a", whole.keys, priority=0, created=100)
    sem.request("b", whole.keys, priority=0, created=100)
    assert sem.admit() == [] and not sem.drains()  # a heads the 8-GPU lane, b the others: nobody holds, nobody starts
    # Distinct priorities (what infersweep stamps): one order on every lock, whatever the ties would be.
    sem = gpu_guard.ArgoSemaphores(gpu_guard.limits(settings), tie_break=sem.tie_break)
    sem.request("a", whole.keys, priority=-2, created=100)
    sem.request("b", whole.keys, priority=-1, created=100)
    assert sem.admit() == ["b"] and sem.drains()


def test_every_submitted_run_and_nightly_gets_its_own_priority(settings):
    from workflows.cron import nightly_crons

    gpu_guard._last_priority.clear()
    same_ms = [gpu_guard.submit_priority(now_ms=5) for _ in range(50)]
    later = [gpu_guard.submit_priority(now_ms=5 + i) for i in range(1, 50)]
    ps = same_ms + later
    assert len(set(ps)) == len(ps) and ps == sorted(ps, reverse=True)  # first submitted, first in every queue
    assert all(-gpu_guard.PRIORITY_BAND <= p <= -1 for p in ps)
    nightly = [c["spec"]["workflowSpec"]["priority"] for c in nightly_crons(settings, load_recipe)]
    assert len(set(nightly)) == len(nightly) and max(nightly) < -gpu_guard.PRIORITY_BAND  # behind ad-hoc runs
    assert all(-(2**31) <= p for p in nightly)  # int32


def test_submit_stamps_a_distinct_priority_on_each_run(settings, monkeypatch):
    import argparse

    from infersweep.commands import submit

    sent = []

    class Server:
        cfg = argparse.Namespace(namespace="infersweep")

        def create_workflow(self, doc):
            sent.append(doc)
            return {"metadata": {"name": f"wf-{len(sent)}"}}

        def ui_link(self, name):
            return name

        def list_templates(self, selector):  # submit reads the install's --dgd-api from them
            return []

    monkeypatch.setattr("infersweep.commands.submit.server_from_args", lambda a: Server())
    # the templates-installed check is tests/cli/test_submit_auth.py's; here the cluster has this checkout's
    monkeypatch.setattr("infersweep.commands.submit.check_installed", lambda server, expected: None)
    a = argparse.Namespace(recipe=RECIPE, set=[], dgd_api="v1beta1", no_cache=True, watch=False, poll_s=1)
    assert submit.run(a) == 0 and submit.run(a) == 0
    p = [d["spec"]["priority"] for d in sent]
    assert p[0] > p[1] and all(isinstance(x, int) for x in p)


def _bursts(settings, catalog, seed, stamped):
    """Random bursts of runs created in one second (catalog sizes, whole-pool runs included), random ends;
    False as soon as the waiting runs could never all start (ArgoSemaphores.drains)."""
    rng = random.Random(seed)
    cfg = settings.guard
    sizes = [(r.recipe.gpu.type, r.gpu_capacity) for r in catalog] + [("H100", 16)] * 8
    sem = gpu_guard.ArgoSemaphores(gpu_guard.limits(settings), tie_break=_sim().scrambled_ties(seed))
    gpu_guard._last_priority.clear()
    running: list[str] = []
    n = 0
    for second in range(60):
        for _ in range(rng.randint(0, 4)):
            gpu, size = rng.choice(sizes)
            n += 1
            prio = gpu_guard.submit_priority(now_ms=second * 1000) if stamped else 0
            sem.request(f"run-{n}", gpu_guard.admission(cfg.pools[gpu], size).keys, priority=prio, created=second)
        while running and rng.random() < 0.5:
            sem.release(running.pop(rng.randrange(len(running))))
        running += sem.admit()
        if not sem.drains():
            return False
    return True


@pytest.mark.parametrize("seed", range(20))
def test_the_guard_never_deadlocks_with_the_stamped_priorities(settings, catalog, seed):
    assert _bursts(settings, catalog, seed, stamped=True)


def test_the_same_bursts_at_one_priority_deadlock(settings, catalog):
    assert not all(_bursts(settings, catalog, seed, stamped=False) for seed in range(20))


def test_simulation_the_catalog_submitted_at_once_deadlocks_without_priorities_and_completes_with_them(settings):
    sim = _sim()
    runs = sim.catalog_runs()
    pools = {p: v.gpus for p, v in settings.gpu_pools.items()}
    ph = sim.Phases()
    for seed in range(3):
        ok = sim.simulate(runs, pools, sim.Lanes(settings, runs, tie_break=sim.scrambled_ties(seed)), ph)
        assert ok.stuck == [] and set(ok.spans) == {r.name for r in runs}
        bad = sim.simulate(
            runs, pools, sim.Lanes(settings, runs, priorities={}, tie_break=sim.scrambled_ties(seed)), ph
        )
        assert bad.stuck, seed
