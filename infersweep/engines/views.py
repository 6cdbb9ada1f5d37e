"""What an engine reads of a recipe, as shapes (typing.Protocol), so infersweep/engines imports nothing of
infersweep/recipe, not even for type checking: the recipe package calls the engines while it resolves a
recipe (recipe/resolved.py holds an `Engine`), and the engines sit below it. The recipe's own models
(recipe/models.py Workers, KvOffload, Speculative; recipe/facts.py Transport; recipe/resolved.py
ResolvedRecipe) have these attributes; a new rule that reads another adds it here."""

from __future__ import annotations

from typing import Literal, Protocol


class Workers(Protocol):
    """recipe/models.py Workers: one role's parallelism."""

    tp: int
    dp: int
    ep: int
    nodes: int

    @property
    def gpus_per_replica(self) -> int: ...


class KvOffload(Protocol):
    """recipe/models.py KvOffload."""

    cpu_gib: float | None
    hicache_ratio: float | None
    write_policy: str | None


class Speculative(Protocol):
    """recipe/models.py Speculative."""

    mode: Literal["none", "mtp", "eagle", "dflash", "dspark"]
    num_tokens: int
    engine_config: dict[str, str | int | float | bool]


class Transport(Protocol):
    """recipe/facts.py Transport."""

    nixl_backend: Literal["UCX", "LIBFABRIC"]


class _Recipe(Protocol):
    kv_offload: KvOffload | None
    speculative: Speculative | None


class _Model(Protocol):
    size_gib: float


class _GpuType(Protocol):
    memory_gib: float


class ResolvedRecipe(Protocol):
    """recipe/resolved.py ResolvedRecipe: the recipe with the facts it names."""

    recipe: _Recipe
    model: _Model
    gpu_type: _GpuType

    @property
    def transport(self) -> Transport | None: ...

    @property
    def draft_model(self) -> str | None: ...
