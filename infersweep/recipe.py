"""Recipes as data: load a recipe file from params/, resolve the shared facts it names, validate it.

A recipe states only what is particular to one deployment (topology, router, workload, SLOs); the model,
engine and GPU type it names are looked up in params/models, params/engines and params/gpus.yaml so that a
fact lives once. Every mistake is reported as one `RecipeError` naming the file, the field and the fix,
before anything is rendered or touches a cluster.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infersweep.paths import params_dir

MAX_RECIPE_BYTES = 256 * 1024  # a recipe is a page of YAML; anything larger is a mistake or an attack
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class RecipeError(ValueError):
    """A recipe that cannot run. The message names the file, the field and the fix."""


class _Strict(BaseModel):
    # Unknown fields are mistakes (a typo would otherwise silently fall back to a default).
    model_config = ConfigDict(extra="forbid", frozen=True)


class Model(_Strict):
    id: str = Field(description="Hugging Face repository id")
    revision: str = Field(description="commit SHA (pinned) or branch/tag")
    precision: str
    size_gib: float = Field(gt=0)

    @property
    def pinned(self) -> bool:
        return bool(re.fullmatch(r"[0-9a-f]{40}", self.revision))


class Engine(_Strict):
    image: str
    module: str
    model_flag: str
    tp_flag: str
    working_dir: str
    prefill_args: list[str] = []
    decode_args: list[str] = []


class GpuType(_Strict):
    per_node: int = Field(gt=0)
    memory_gib: float = Field(gt=0)
    resource: str = "nvidia.com/gpu"


class Gpu(_Strict):
    type: str
    count: int = Field(gt=0, le=4096)


class Workers(_Strict):
    replicas: int = Field(ge=1, le=512)
    tp: int = Field(default=1, ge=1, le=64)
    nodes: int = Field(default=1, ge=1, le=64, description="nodes per replica (multinode TP)")

    @property
    def gpus_per_replica(self) -> int:
        return self.tp


class Topology(_Strict):
    workers: Workers | None = None
    prefill: Workers | None = None
    decode: Workers | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> "Topology":
        if self.workers and (self.prefill or self.decode):
            raise ValueError("give either `workers` (aggregated) or `prefill` + `decode` (disaggregated), not both")
        if not self.workers and not (self.prefill and self.decode):
            missing = "decode" if self.prefill else "prefill" if self.decode else "workers"
            raise ValueError(f"a disaggregated recipe needs both `prefill` and `decode`; add `{missing}`"
                             if missing != "workers" else "add `workers` (aggregated) or `prefill` + `decode`")
        return self

    @property
    def mode(self) -> Literal["agg", "disagg"]:
        return "agg" if self.workers else "disagg"

    def roles(self) -> dict[str, Workers]:
        if self.workers:
            return {"worker": self.workers}
        return {"prefill": self.prefill, "decode": self.decode}  # type: ignore[dict-item]


PositiveInt = Annotated[int, Field(gt=0)]


class Workload(_Strict):
    isl: int = Field(gt=0, le=1_048_576, description="input tokens per request")
    osl: int = Field(gt=0, le=262_144, description="output tokens per request")
    concurrency: list[PositiveInt] = Field(min_length=1, max_length=64)
    requests_per_concurrency: int = Field(default=10, gt=0, le=10_000)
    min_requests: int = Field(default=32, gt=0)
    warmup_requests: int = Field(default=8, ge=0)
    request_timeout_s: int = Field(default=1200, gt=0)
    max_error_rate: float = Field(default=0.0, ge=0, le=1, description="fraction of failed requests a point may have and still count")
    point_timeout_s: int = Field(default=3600, gt=0)

    @field_validator("concurrency")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            dup = sorted({c for c in v if v.count(c) > 1})
            raise ValueError(f"concurrency values repeat: {dup}; list each level once")
        return v

    def aiperf_workload(self) -> dict[str, Any]:
        """What the benchmark-point step sends (see steps.aiperf_point.WORKLOAD_FLAGS)."""
        return {"isl": self.isl, "osl": self.osl}

    def points(self) -> list[dict[str, int]]:
        """The sweep as data: one item per concurrency level, in the recipe's order."""
        return [{"concurrency": c, "requests": max(self.min_requests, c * self.requests_per_concurrency),
                 "warmup": min(self.warmup_requests, max(c, 1) * 4)} for c in self.concurrency]


class Slo(_Strict):
    ttft_p50_ms: float | None = Field(default=None, gt=0, description="TTFT p50 must stay below this")
    ttft_p99_ms: float | None = Field(default=None, gt=0)
    itl_p50_ms: float | None = Field(default=None, gt=0)
    tok_s_user_min: float | None = Field(default=None, gt=0, description="output tok/s per user must reach this")


class Recipe(_Strict):
    name: str = Field(min_length=1, max_length=52, description="DNS-1123 label: lowercase letters, digits, '-'")
    description: str = ""
    model: str
    engine: Literal["vllm", "sglang", "trtllm"]
    image: str | None = None
    gpu: Gpu
    topology: Topology
    router: Literal["kv", "round-robin", "random"] = "round-robin"
    engine_args: list[str] = []
    workload: Workload
    slo: Slo = Slo()

    @field_validator("name")
    @classmethod
    def _dns_name(cls, v: str) -> str:
        # The name becomes a DGD name, pod names and label values: it must be a DNS-1123 label and leave
        # room for the operator's suffixes (`-frontend`, `-decode-0`...), hence 52 and not 63.
        if not NAME_RE.match(v):
            raise ValueError("use lowercase letters, digits and '-', starting and ending with a letter or digit")
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-z0-9][a-z0-9._/:@-]*", v):
            raise ValueError("not a container image reference (registry/name:tag)")
        return v

    @field_validator("engine_args")
    @classmethod
    def _args(cls, v: list[str]) -> list[str]:
        for a in v:
            if "\n" in a or "\x00" in a:
                raise ValueError("an engine argument may not contain a newline or NUL")
        return v


class ResolvedRecipe:
    """A validated recipe together with the shared facts it names."""

    def __init__(self, recipe: Recipe, model: Model, engine: Engine, gpu_type: GpuType, path: Path | None):
        self.recipe, self.model, self.engine, self.gpu_type, self.path = recipe, model, engine, gpu_type, path

    @property
    def name(self) -> str:
        return self.recipe.name

    @property
    def image(self) -> str:
        return self.recipe.image or self.engine.image

    @cached_property
    def gpu_count(self) -> int:
        return sum(w.replicas * w.gpus_per_replica for w in self.recipe.topology.roles().values())


def _format_pydantic(path: Path | str, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            msg = "unknown field; remove it or fix its spelling"
        elif e["type"] == "missing":
            msg = "required field is missing; add it"
        elif e["type"] == "literal_error":
            msg = f"{e['msg'].replace('Input should be', 'must be one of')} (got {e['input']!r})"
        else:
            msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"{path}: {loc}: {msg}")
    return "\n".join(lines)


def _read_yaml_mapping(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise RecipeError(f"{path}: no such file")
    if path.stat().st_size > MAX_RECIPE_BYTES:
        raise RecipeError(f"{path}: file is {path.stat().st_size} bytes; a recipe is at most {MAX_RECIPE_BYTES} bytes")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: not valid YAML: {e}") from None
    except UnicodeDecodeError:
        raise RecipeError(f"{path}: not UTF-8 text") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: the top level must be a mapping of fields (got {type(data).__name__})")
    return data


def _load_shared(kind: str, name: str, model_cls: type[BaseModel], recipe_path: Path | str, field: str, pdir: Path):
    if not NAME_RE.match(name):
        raise RecipeError(f"{recipe_path}: {field}: {name!r} is not a valid {kind} name")
    f = pdir / f"{kind}s" / f"{name}.yaml"
    if not f.is_file():
        known = sorted(p.stem for p in (pdir / f"{kind}s").glob("*.yaml"))
        raise RecipeError(f"{recipe_path}: {field}: unknown {kind} {name!r}; use one of {known} "
                          f"or add params/{kind}s/{name}.yaml")
    try:
        return model_cls.model_validate(_read_yaml_mapping(f))
    except ValidationError as e:
        raise RecipeError(_format_pydantic(f, e)) from None


def gpu_types(pdir: Path | None = None) -> dict[str, GpuType]:
    pdir = pdir or params_dir()
    raw = _read_yaml_mapping(pdir / "gpus.yaml")
    try:
        return {k: GpuType.model_validate(v) for k, v in raw.items()}
    except ValidationError as e:
        raise RecipeError(_format_pydantic(pdir / "gpus.yaml", e)) from None


def resolve(recipe: Recipe, path: Path | str = "<recipe>", pdir: Path | None = None) -> ResolvedRecipe:
    pdir = pdir or params_dir()
    model = _load_shared("model", recipe.model, Model, path, "model", pdir)
    engine = _load_shared("engine", recipe.engine, Engine, path, "engine", pdir)
    gpus = gpu_types(pdir)
    if recipe.gpu.type not in gpus:
        raise RecipeError(f"{path}: gpu.type: unknown GPU type {recipe.gpu.type!r}; use one of {sorted(gpus)} "
                          "or add it to params/gpus.yaml")
    gt = gpus[recipe.gpu.type]
    for role, w in recipe.topology.roles().items():
        field = f"topology.{'workers' if role == 'worker' else role}"
        if w.tp > gt.per_node * w.nodes:
            raise RecipeError(f"{path}: {field}.tp: TP={w.tp} is larger than {w.nodes} node(s) of "
                              f"{gt.per_node} {recipe.gpu.type}; set nodes: {-(-w.tp // gt.per_node)} or lower tp")
        if w.nodes > 1 and w.tp % w.nodes:
            raise RecipeError(f"{path}: {field}.nodes: TP={w.tp} does not split evenly over {w.nodes} nodes")
    resolved = ResolvedRecipe(recipe, model, engine, gt, Path(path) if isinstance(path, (str, Path)) else None)
    if resolved.gpu_count != recipe.gpu.count:
        parts = " + ".join(f"{w.replicas} {r} x TP={w.tp}" for r, w in recipe.topology.roles().items())
        raise RecipeError(f"{path}: gpu.count: the topology uses {resolved.gpu_count} GPUs ({parts}) but gpu.count "
                          f"is {recipe.gpu.count}; make them agree")
    return resolved


def parse_recipe(data: Any, path: Path | str = "<recipe>", pdir: Path | None = None) -> ResolvedRecipe:
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: the top level must be a mapping of fields (got {type(data).__name__})")
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as e:
        raise RecipeError(_format_pydantic(path, e)) from None
    return resolve(recipe, path, pdir)


def load_recipe(ref: str | Path, pdir: Path | None = None) -> ResolvedRecipe:
    """Load a recipe by file path or by name (a file params/recipes/<name>.yaml)."""
    pdir = pdir or params_dir()
    path = Path(ref)
    if not path.suffix and not path.exists():
        candidate = pdir / "recipes" / f"{ref}.yaml"
        if not candidate.exists():
            raise RecipeError(f"{ref}: no recipe file or recipe name; `infersweep recipes` lists the names")
        path = candidate
    return parse_recipe(_read_yaml_mapping(path), path, pdir)


def all_recipe_paths(pdir: Path | None = None) -> list[Path]:
    pdir = pdir or params_dir()
    return sorted((pdir / "recipes").rglob("*.yaml"))
