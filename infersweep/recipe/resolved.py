"""A recipe together with the shared facts it names (model, engine, GPU type), as rendering uses it."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from infersweep.engines.base import Engine
from infersweep.recipe.facts import GpuType, Model, Placement, Transport
from infersweep.recipe.models import Recipe


class ResolvedRecipe:
    """A validated recipe together with the shared facts it names; `engine` is its engine object (its data
    file's facts and its rules, infersweep/engines/<name>.py)."""

    def __init__(self, recipe: Recipe, model: Model, engine: Engine, gpu_type: GpuType, path: Path | None):
        self.recipe, self.model, self.engine, self.gpu_type, self.path = recipe, model, engine, gpu_type, path
        # `--set` changes applied to the file's fields (dotted path -> value; infersweep.recipe.overrides)
        self.overrides: dict = {}
        # The engine release `engine` is of: None = params/engines/<engine>.yaml as they are, until rendering
        # picks the release of its DGD apiVersion (infersweep.recipe.release.for_dgd_api); the params folder
        # it was resolved from, where that release is read.
        self.release: str | None = None
        self.params_dir: Path | None = None

    @property
    def name(self) -> str:
        return self.recipe.name

    @property
    def image(self) -> str:
        return self.recipe.image or self.engine.image

    @cached_property
    def gpu_count(self) -> int:
        """GPUs of the deployment as rendered (an autoscaled role at its min_replicas)."""
        return sum(w.replicas * w.gpus_per_replica for w in self.recipe.topology.roles().values())

    @cached_property
    def gpu_capacity(self) -> int:
        """GPUs the deployment may claim (an autoscaled role at its max_replicas)."""
        return sum(w.max_replicas * w.gpus_per_replica for w in self.recipe.topology.roles().values())

    @property
    def needs_fabric(self) -> bool:
        """Whether data moves between worker pods: KV from prefill to decode, or TP ranks across nodes."""
        roles = self.recipe.topology.roles().values()
        return self.recipe.topology.mode == "disagg" or any(w.nodes > 1 for w in roles)

    @property
    def transport(self) -> Transport | None:
        """The recipe's own transport, else its GPU pool's fabric when the recipe moves data between pods."""
        if self.recipe.transport is not None:
            return self.recipe.transport
        return self.gpu_type.fabric if self.needs_fabric else None

    @property
    def placement(self) -> Placement:
        """The recipe's placement over its GPU type's (a field the recipe sets wins)."""
        return (self.recipe.placement or Placement()).over(self.gpu_type.placement)

    @property
    def draft_model(self) -> str | None:
        spec = self.recipe.speculative
        if not spec or spec.mode in ("none", "mtp"):
            return None
        return spec.draft_model or self.model.draft_models.get(spec.mode)  # type: ignore[arg-type]
