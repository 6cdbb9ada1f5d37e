"""What an engine reads of a recipe, as shapes (typing.Protocol), so infersweep/engines imports nothing of
infersweep/recipe, not even for type checking: the recipe package calls the engines while it resolves a
recipe (recipe/resolved.py holds an `Engine`), and the engines sit below it. The recipe's own models
(recipe/models.py Workers, KvOffload, Speculative; recipe/facts.py Transport; recipe/resolved.py
ResolvedRecipe) have these attributes; a new rule that reads another adds it here.
Every member is a read-only property: a Protocol's plain attribute is invariant (it could be assigned through the
view), so a recipe model whose field is a subtype (GpuType for _GpuType) would not satisfy it (mypy arg-type)."""

from __future__ import annotations

from typing import Literal, Protocol


class Workers(Protocol):
    """recipe/models.py Workers: one role's parallelism."""

    @property
    def tp(self) -> int: ...

    @property
    def dp(self) -> int: ...

    @property
    def ep(self) -> int: ...

    @property
    def nodes(self) -> int: ...

    @property
    def gpus_per_replica(self) -> int: ...


class KvOffload(Protocol):
    """recipe/models.py KvOffload."""

    @property
    def cpu_gib(self) -> float | None: ...

    @property
    def hicache_ratio(self) -> float | None: ...

    @property
    def write_policy(self) -> str | None: ...


class Speculative(Protocol):
    """recipe/models.py Speculative."""

    @property
    def mode(self) -> Literal["none", "mtp", "eagle", "dflash", "dspark"]: ...

    @property
    def num_tokens(self) -> int: ...

    @property
    def engine_config(self) -> dict[str, str | int | float | bool]: ...


class Transport(Protocol):
    """recipe/facts.py Transport."""

    @property
    def nixl_backend(self) -> Literal["UCX", "LIBFABRIC"]: ...


class _Recipe(Protocol):
    @property
    def kv_offload(self) -> KvOffload | None: ...

    @property
    def speculative(self) -> Speculative | None: ...


class _Model(Protocol):
    @property
    def size_gib(self) -> float: ...


class _GpuType(Protocol):
    @property
    def memory_gib(self) -> float: ...


class ResolvedRecipe(Protocol):
    """recipe/resolved.py ResolvedRecipe: the recipe with the facts it names."""

    @property
    def recipe(self) -> _Recipe: ...

    @property
    def model(self) -> _Model: ...

    @property
    def gpu_type(self) -> _GpuType: ...

    @property
    def transport(self) -> Transport | None: ...

    @property
    def draft_model(self) -> str | None: ...
