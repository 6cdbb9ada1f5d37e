"""Resolve a validated recipe: look up the shared facts it names and check what only they decide.

GPU arithmetic (the engine's DP rule, TP against the node, nodes, autoscaling), weights against GPU memory,
and the options only some engines have (each engine's own invariants: infersweep/engines/<name>.py).
Every mistake is one RecipeError naming the file, the field and the fix.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from infersweep.engines.base import Engine
from infersweep.engines.registry import load_engine
from infersweep.params_files import RecipeError, format_pydantic, load_model_file, read_yaml_mapping, shared_fact_file
from infersweep.paths import params_dir
from infersweep.recipe.facts import GpuType, Model
from infersweep.recipe.models import SPEC_MODES_WITH_DRAFT, Recipe
from infersweep.recipe.resolved import ResolvedRecipe


def gpu_types(pdir: Path | None = None) -> dict[str, GpuType]:
    pdir = pdir or params_dir()
    raw = read_yaml_mapping(pdir / "gpus.yaml")
    try:
        return {k: GpuType.model_validate(v) for k, v in raw.items()}
    except ValidationError as e:
        raise RecipeError(format_pydantic(pdir / "gpus.yaml", e)) from None


def role_field(role: str) -> str:
    return f"topology.{'workers' if role == 'worker' else role}"


def _with_engine_rule(recipe: Recipe, engine: Engine) -> Recipe:
    """The recipe with each role counting its GPUs by the engine's DP rule (Workers.dp_adds_gpus)."""
    topo = recipe.topology
    roles = {
        ("workers" if role == "worker" else role): w.model_copy(update={"dp_adds_gpus": engine.dp_adds_gpus})
        for role, w in topo.roles().items()
    }
    return recipe.model_copy(update={"topology": topo.model_copy(update=roles)})


def _check_parallelism(recipe: Recipe, engine: Engine, gt: GpuType, path: Path | str) -> None:
    """GPU arithmetic per role: the engine's DP/EP rule, TP against the node size."""
    for role, w in recipe.topology.roles().items():
        field = role_field(role)
        problem = engine.parallelism_problem(w)
        if problem:
            raise RecipeError(f"{path}: {field}.{problem[0]}: {problem[1]}")
        gpus = w.gpus_per_replica
        if gpus > gt.per_node * w.nodes:
            what = f"TP={w.tp}" + (f" x DP={w.dp}" if w.dp_adds_gpus and w.dp > 1 else "")
            raise RecipeError(
                f"{path}: {field}.tp: {what} needs {gpus} GPUs, larger than {w.nodes} node(s) of "
                f"{gt.per_node} {recipe.gpu.type}; set nodes: {-(-gpus // gt.per_node)} or lower tp"
            )
        if w.nodes > 1 and gpus % w.nodes:
            raise RecipeError(
                f"{path}: {field}.nodes: {gpus} GPUs per replica do not split evenly over {w.nodes} nodes"
            )
        if w.nodes > 1 and gpus // w.nodes > gt.per_node:
            raise RecipeError(
                f"{path}: {field}.nodes: {gpus // w.nodes} GPUs per node exceed {gt.per_node}; raise nodes"
            )
        a = w.autoscaling
        if a and w.replicas != a.min_replicas:
            raise RecipeError(
                f"{path}: {field}.replicas: an autoscaled role starts at autoscaling.min_replicas; "
                f"set replicas: {a.min_replicas}"
            )


def _check_features(r: ResolvedRecipe, path: Path | str) -> None:
    """Options that only some engines have (the engine's own checks), and what they need."""
    recipe, engine = r.recipe, r.engine

    def fail(problem: tuple[str, str] | None) -> None:
        if problem:
            raise RecipeError(f"{path}: {problem[0]}: {problem[1]}")

    if recipe.kv_offload:
        fail(engine.offload_problem(recipe.kv_offload))
    spec = recipe.speculative
    if spec and spec.mode != "none":
        methods = engine.speculative.methods if engine.speculative else {}
        if spec.mode not in methods:
            raise RecipeError(
                f"{path}: speculative.mode: {recipe.engine} has no {spec.mode!r} decoding here; use one of "
                f"{sorted(methods) + ['none']} or add it to params/engines/{recipe.engine}.yaml"
            )
        if spec.mode in SPEC_MODES_WITH_DRAFT and not r.draft_model:
            raise RecipeError(
                f"{path}: speculative.draft_model: {spec.mode} needs a draft model; set "
                f"speculative.draft_model or draft_models.{spec.mode} in params/models/{recipe.model}.yaml"
            )
        fail(engine.speculative_problem(spec))
        if spec.mode == "mtp" and spec.draft_model:
            raise RecipeError(
                f"{path}: speculative.draft_model: MTP drafts with the model's own heads; remove draft_model"
            )
    for role, w in recipe.topology.roles().items():
        a = w.autoscaling
        if a and a.target_per_replica is None:
            raise RecipeError(
                f"{path}: {role_field(role)}.autoscaling.target_per_replica: KEDA scales on a target "
                "per replica (the seed's 16 active requests per worker); add it"
            )
        if a and not a.metric.startswith("dynamo_frontend_"):
            raise RecipeError(
                f"{path}: {role_field(role)}.autoscaling.metric: the ScaledObject queries this DGD's "
                f"frontend; use a dynamo_frontend_* metric (got {a.metric!r})"
            )
    t = recipe.transport
    if t:
        fail(engine.transport_problem(t))
    if t and t.nixl_backend != "UCX" and recipe.topology.mode == "agg":
        raise RecipeError(
            f"{path}: transport.nixl_backend: an aggregated recipe moves no KV between workers; remove it"
        )
    b = recipe.baseline
    if b and b.concurrency not in recipe.workload.concurrency:
        raise RecipeError(
            f"{path}: baseline.concurrency: {b.concurrency} is not in workload.concurrency; add it so "
            "the sweep measures the published point"
        )


def resolve(recipe: Recipe, path: Path | str = "<recipe>", pdir: Path | None = None) -> ResolvedRecipe:
    pdir = pdir or params_dir()
    model = load_model_file(shared_fact_file(pdir, "model", recipe.model, path, "model"), Model)
    engine = load_engine(recipe.engine, pdir, path, "engine")
    recipe = _with_engine_rule(recipe, engine)
    gpus = gpu_types(pdir)
    if recipe.gpu.type not in gpus:
        raise RecipeError(
            f"{path}: gpu.type: unknown GPU type {recipe.gpu.type!r}; use one of {sorted(gpus)} "
            "or add it to params/gpus.yaml"
        )
    gt = gpus[recipe.gpu.type]
    _check_parallelism(recipe, engine, gt, path)
    resolved = ResolvedRecipe(recipe, model, engine, gt, Path(path) if isinstance(path, (str, Path)) else None)
    resolved.params_dir = pdir
    if resolved.gpu_capacity != recipe.gpu.count:
        parts = " + ".join(
            f"{w.max_replicas} {r} x {w.gpus_per_replica} GPU" for r, w in recipe.topology.roles().items()
        )
        scaled = " at max replicas" if resolved.gpu_capacity != resolved.gpu_count else ""
        raise RecipeError(
            f"{path}: gpu.count: the topology uses {resolved.gpu_capacity} GPUs{scaled} ({parts}) but "
            f"gpu.count is {recipe.gpu.count}; make them agree"
        )
    for role, w in recipe.topology.roles().items():
        # Weights alone must fit the replica's GPUs (the KV cache needs room on top).
        if model.size_gib > 0.9 * w.gpus_per_replica * gt.memory_gib:
            raise RecipeError(
                f"{path}: {role_field(role)}.tp: {model.id} needs {model.size_gib:g} GiB of weights but "
                f"{w.gpus_per_replica} {recipe.gpu.type} hold {w.gpus_per_replica * gt.memory_gib:g} GiB; raise tp"
            )
    _check_features(resolved, path)
    return resolved
