"""The one way a recipe becomes the DGD a cluster is given: render, then the scheduling step.

Every caller that applies or judges a DGD goes through `deployable_dgd`: the pipeline's `dgd` argument
(workflows/pipeline.py recipe_run), each treatment of an experiment (workflows/experiment.py), the
experiment's restart classes (infersweep/experiment/restart.py: what the operator compares is what is
applied, queue labels included) and the benchmarks. So under Kueue, KAI or Volcano every DGD's pods carry
the queue's labels (infersweep/dgd/scheduling.py), and under the Argo guard every DGD carries the lane labels
its deploy waits on; no path renders a DGD that skips the guard.
"""

from __future__ import annotations

from typing import Any

from infersweep.cluster_settings import ClusterSettings
from infersweep.dgd.lanes import spare_gpus as lane_spare_gpus
from infersweep.dgd.render import default_surge_gpus, render_dgd
from infersweep.dgd.scheduling import apply_to_dgd
from infersweep.recipe import ResolvedRecipe


def deployable_dgd(
    r: ResolvedRecipe,
    settings: ClusterSettings,
    *,
    api_version: str = "v1beta1",
    name: str | None = None,
    held_for: ResolvedRecipe | None = None,
    exact_pool: bool | None = None,
) -> dict[str, Any]:
    """The DGD of `r` as it is applied: the model cache PVC and HF secret of `settings`, rollout surge sized
    to the GPUs the run holds, then the configured scheduler's labels/annotations/schedulerName on every pod
    (or the Argo guard's lane labels on the DGD).

    `held_for`: the recipe whose admission the run holds, default `r` (an experiment holds its largest
    treatment's for every treatment). `exact_pool`: True renders the workers' rollout without surge whatever
    `r`'s own spare GPUs are (an experiment makes one choice for all its treatments, since the rollout
    annotations are part of the pod template the worker hash covers); None sizes it from `r` alone."""
    spare = 0 if exact_pool else None if exact_pool is False else lane_spare_gpus(r, settings, held_for)
    dgd = render_dgd(
        r,
        api_version=api_version,
        name=name,
        pvc=settings.model_cache.pvc,
        spare_gpus=spare,
        release=settings.dynamo_release,
    )
    return apply_to_dgd(dgd, r, settings, held_for)


def pool_is_exact(recipes: list[ResolvedRecipe], settings: ClusterSettings) -> bool:
    """Whether the admission of the largest of `recipes` (what an experiment holds) leaves too few spare GPUs
    for the operator's default surge of any of them: then every treatment rolls without surge."""
    largest = max(recipes, key=lambda t: t.gpu_capacity)
    return any(default_surge_gpus(t) > lane_spare_gpus(t, settings, largest) for t in recipes)
