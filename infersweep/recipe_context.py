"""The context of a run as known at render time: what the recipe resolves to (hash, topology, images).

The pipeline passes it to the summarize step (`--context`), which puts it on every row of the results table;
a run summarized without one gets the context of the recipe of its name (`named_recipe_context`).
Rendering must not depend on results/, so this lives on the recipe side; infersweep/results/context.py
reads the rest of a run's context from its run directory.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infersweep.cluster_settings import ClusterSettings


# Workload fields added after recipes were first hashed, with their defaults: left at the default they
# are not hashed, so a recipe that does not use them keeps the hash its earlier runs and baselines carry.
# (max_requests_per_concurrency, ci95_target: the adaptive length's budget and target, added later, unset =
# today's fixed-length point; warmup_rounds: 1 is how every point warmed up before the field, so a recipe that
# sets 1 keeps its hash, while the new default, 4, measures differently and hashes differently; warmup_ramp_s:
# unset = every user starts at once, as before)
LATER_WORKLOAD_DEFAULTS = {
    "request_rate": None,
    "arrival": None,
    "max_requests_per_concurrency": None,
    "ci95_target": None,
    "warmup_rounds": 1,
    "warmup_ramp_s": None,
}
LATER_TRACE_DEFAULTS = {"fixed_schedule": False, "block_size": None}
# Engine facts added after recipes were first hashed (params/engines/*.yaml), at the value that changes nothing:
# a vLLM recipe keeps its hash; an SGLang one, whose workers now run with --enable-metrics, does not.
LATER_ENGINE_DEFAULTS = {"metrics_args": []}


# Defaults changed after recipes were first hashed: (new default, the value hashed for it). How often the
# nightly repeats each point (regression.repetitions, 1 -> 3 so that its verdicts have a noise estimate)
# changes nothing that is deployed; hashed at the old default, recipes left at it keep the hash their
# earlier runs, baselines and experiment treatments carry.
CHANGED_DEFAULTS = {("regression", "repetitions"): (3, 1)}


# Fields that change how often a deployment is measured, not what is deployed or measured, hashed at one
# value: a run with more repetitions is the same recipe, so `--resume --set regression.repetitions=5` adds
# repetitions to a run of 3, and `compare` takes runs of different counts (n says how sure each is).
NOT_HASHED = {("regression", "repetitions"): 1}


def _drop_later_defaults(recipe: dict) -> None:
    for (block, key), (new, hashed) in CHANGED_DEFAULTS.items():
        if (recipe.get(block) or {}).get(key) == new:
            recipe[block][key] = hashed
    for (block, key), hashed in NOT_HASHED.items():
        if key in (recipe.get(block) or {}):
            recipe[block][key] = hashed
    w = recipe.get("workload") or {}
    for key, default in LATER_WORKLOAD_DEFAULTS.items():
        if key in w and w[key] == default:
            del w[key]
    t = w.get("trace") or {}
    for key, default in LATER_TRACE_DEFAULTS.items():
        if key in t and t[key] == default:
            del t[key]


# SLO and baseline keys renamed to the results table's metric names (schema v3, infersweep.metrics): the hash keeps the
# spelling it was first computed with, so the rename alone changes no recipe's hash and runs measured before
# it (benchmarks/measured/) still carry their recipe's hash.
HASH_SPELLINGS = {
    "slo": {"output_throughput_p50_tok_s_per_user": "tok_s_user_min"},
    "baseline": {
        "output_throughput_tok_s_per_gpu": "output_tok_s_per_gpu",
        "output_throughput_p50_tok_s_per_user": "tok_s_per_user",
    },
}


def recipe_hash(resolved) -> str:
    """sha256 of everything the recipe resolves to (its fields and the shared facts it names).

    Canonical JSON, so two renders of the same recipe agree and any change to what was deployed changes it.
    """
    # provenance documents where a recipe comes from; it changes nothing that is deployed, so not the hash
    recipe = resolved.recipe.model_dump(mode="json", exclude={"provenance"})
    _drop_later_defaults(recipe)
    for section, spellings in HASH_SPELLINGS.items():
        if isinstance(recipe.get(section), dict):
            recipe[section] = {spellings.get(k, k): v for k, v in recipe[section].items()}
    doc = {
        "recipe": recipe,
        "model": resolved.model.model_dump(mode="json"),
        "engine": {
            k: v
            for k, v in resolved.engine.model_dump(mode="json").items()
            if k not in LATER_ENGINE_DEFAULTS or v != LATER_ENGINE_DEFAULTS[k]
        },
        "gpu_type": resolved.gpu_type.model_dump(mode="json"),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def topology_text(resolved) -> str:
    parts = []
    for role, w in resolved.recipe.topology.roles().items():
        parts.append(f"{w.replicas}x{role}(tp={w.tp})")
    return " + ".join(parts)


def recipe_context(resolved, settings: ClusterSettings | None = None) -> dict[str, Any]:
    """The context of a run of this recipe, as known at render time (for the summarize step's --context)."""
    r = resolved.recipe
    ctx = {
        "recipe": resolved.name,
        "recipe_hash": recipe_hash(resolved),
        "engine": r.engine,
        "engine_image": resolved.image,
        "model": resolved.model.id,
        "model_revision": resolved.model.revision,
        "topology": topology_text(resolved),
        "router": r.router,
        "gpu_type": r.gpu.type,
        "gpu_count": resolved.gpu_count,
        "slo": {k: v for k, v in r.slo.model_dump().items() if v is not None},
    }
    from infersweep.recipe.release import image_skew

    skew = image_skew(resolved)  # an image outside its release's operator window, said in the run's provenance
    if skew:
        ctx["engine_image_skew"] = skew
    if settings is not None:
        ctx["aiperf_image"] = settings.images.aiperf
        ctx["step_image"] = settings.images.steps
    return ctx


def named_recipe_context(name: str) -> dict[str, Any]:
    """The render-time context of the recipe of that name in params/, {} when there is none (a demo folder,
    a renamed recipe) or it cannot be loaded: the context enriches a run summary, it never fails one."""
    try:
        from infersweep.cluster_settings import load_cluster_settings
        from infersweep.recipe import all_recipe_paths, load_recipe
    except ImportError:
        return {}
    try:
        for path in all_recipe_paths():
            resolved = load_recipe(path)
            if resolved.name == name:
                try:
                    settings = load_cluster_settings()
                except Exception:  # a missing settings file must not fail a run summary
                    settings = None
                return recipe_context(resolved, settings)
    except Exception:  # an invalid recipe elsewhere in params/ must not fail the summary of this run
        return {}
    return {}
