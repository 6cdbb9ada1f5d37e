"""Experiment specs (params/experiments/*.yaml): the treatments of a comparison, as validated recipes.

An experiment is either a `base` recipe plus `factors` (each a mapping of level label -> recipe patch),
expanded to the full design or to the rows listed in `design`, or an explicit `treatments` list (a catalog
recipe each, optionally patched). `set` patches every treatment; `question` fixes what is measured
(metrics, concurrencies, SLOs) so that every treatment measures the same points; `claim` is the one
comparison the experiment's verdict checks; `seed` records what the source document found, so a report can
say whether this run's direction agrees.

Patches deep-merge into the recipe (mappings merge, anything else replaces, `null` deletes the key), so a
factor level states only what it changes. Every treatment is then parsed and resolved with the recipe
loader (infersweep.recipe.parse_recipe): an experiment that would run an invalid deployment fails at load,
each mistake one `RecipeError` naming the file, the field and the fix.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from infersweep.metrics import canonical, direction, normalize_slo
from infersweep.params_files import Strict as _Strict  # the one strict base of data-file models
from infersweep.params_files import format_pydantic as _format_pydantic
from infersweep.params_files import read_yaml_mapping as _read_yaml_mapping
from infersweep.paths import params_dir
from infersweep.recipe import RecipeError, ResolvedRecipe, find_recipe, parse_recipe, recipe_data
from infersweep.recipe.merge import patch  # noqa: F401  (experiments patch recipes as --set does)
from infersweep.recipe.models import NAME_RE, require_name

MAX_RECIPE_NAME = 52  # infersweep.recipe.Recipe.name: a DNS label with room for the operator's suffixes
MAX_TREATMENTS = 64  # an experiment holds GPUs for all of them; more is a sweep, not a comparison
MAX_BLOCKS = 30  # ABBA blocks of a balanced order: one Workflow holds the GPUs through all of them


class Comparison(_Strict):
    """`treatment` is better than `baseline` on `metric` at `concurrency` by at least `better_by_pct` %."""

    metric: str
    concurrency: int = Field(gt=0)
    treatment: str
    baseline: str
    better_by_pct: float = Field(
        default=0.0, ge=0, le=1000, description="how much better, in % of the baseline (0: any improvement)"
    )

    @field_validator("metric")
    @classmethod
    def _has_direction(cls, v: str) -> str:
        try:
            v = canonical(v, warn=True)  # an old spelling: mapped, with a deprecation warning
            direction(v)  # the metric vocabulary knows which way is better; a claim needs that
        except ValueError as e:
            raise ValueError(str(e)) from None
        return v

    def text(self) -> str:
        by = f" by at least {self.better_by_pct:g} %" if self.better_by_pct else ""
        return f"{self.treatment} beats {self.baseline} on {self.metric} at c{self.concurrency}{by}"


class Question(_Strict):
    metrics: list[str] = Field(min_length=1, description="results columns the report compares")
    concurrency: list[int] | None = Field(default=None, description="overrides workload.concurrency in every treatment")
    slo: dict[str, float] | None = Field(default=None, description="overrides slo in every treatment")

    @field_validator("metrics")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        out = []
        for m in v:
            try:
                out.append(canonical(m, warn=True))
                direction(out[-1])
            except ValueError as e:
                raise ValueError(str(e)) from None
        return out

    @field_validator("slo")
    @classmethod
    def _slo_keys(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        try:
            return None if v is None else normalize_slo(v, "question.slo", warn=True)
        except ValueError as e:
            raise ValueError(str(e)) from None


class Seed(_Strict):
    source: str = Field(min_length=1, description="the document and section the finding comes from")
    found: str = Field(min_length=1, description="what the seed found, in its words")
    expect: list[Comparison] = Field(default=[], description="the finding's directions, checked by the report")


class ExplicitTreatment(_Strict):
    name: str
    recipe: str = Field(description="a catalog recipe name or a path")
    set: dict[str, Any] = {}


class ExperimentSpec(_Strict):
    name: str = Field(min_length=1, max_length=40)
    description: str = ""
    base: str | None = Field(default=None, description="catalog recipe name or path the factors patch")
    set: dict[str, Any] = Field(default={}, description="patch applied to every treatment")
    factors: dict[str, dict[str, dict[str, Any]]] = Field(
        default={}, description="factor -> level label -> recipe patch"
    )
    design: Literal["full"] | list[dict[str, str]] = "full"
    treatments: list[ExplicitTreatment] = []
    question: Question
    baseline: str | None = Field(default=None, description="treatment the deltas are against (default: the first)")
    claim: Comparison | None = None
    seed: Seed | None = None
    order: Literal["planned", "balanced"] = Field(
        default="planned",
        description="planned: each treatment once, in the cheapest order; balanced: the plan, "
        "then the plan reversed (rr, kv, kv, rr), so that what a treatment inherits from the one before it "
        "(a warm cache, a warm GPU) falls on both sides",
    )
    blocks: int = Field(
        default=1,
        ge=1,
        le=MAX_BLOCKS,
        description="with order: balanced, how many ABBA blocks run in sequence (rr, kv, kv-2, rr-2, rr-3, kv-3, "
        "kv-4, rr-4, ...): the claim is judged on the blocks' paired differences (infersweep.experiment.paired), "
        "so n is the number of blocks",
    )
    kv_cache: Literal["reset", "keep"] = Field(
        default="reset",
        description="between treatments that keep the workers: reset = empty every worker's KV "
        "cache first (the worker's clear_kv_blocks endpoint locally, a worker restart on a cluster); keep = start "
        "on the cache the treatment before left (the comparison is then order-confounded, and the report says so)",
    )

    @field_validator("name")
    @classmethod
    def _dns(cls, v: str) -> str:
        return require_name(v)


# The experiment report's folder beside the treatments' runs in the store (workflows/experiment.py
# publish-report): a treatment of that name would publish onto it.
REPORT_FOLDER = "report"


def run_name(treatment: str, block: int, order_pass: int) -> str:
    """The name of a treatment's run in a balanced order: block 1 keeps the names records already carry
    (rr, kv, kv-2, rr-2); block b's passes are suffixed 2b-1 and 2b (rr-3, kv-3, kv-4, rr-4), so every run
    of every block has a name of its own (its results folder, its publish prefix, its report line)."""
    k = 2 * (block - 1) + order_pass
    return treatment if k == 1 else f"{treatment}-{k}"


@dataclass
class Treatment:
    name: str
    recipe: ResolvedRecipe
    levels: dict[str, str] = field(default_factory=dict)  # factor -> level label (empty for explicit lists)


@dataclass
class Experiment:
    spec: ExperimentSpec
    path: Path
    treatments: list[Treatment]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def baseline(self) -> str:
        return self.spec.baseline or self.treatments[0].name

    def treatment(self, name: str) -> Treatment:
        return next(t for t in self.treatments if t.name == name)


def _recipe_source(ref: str, path: Path, where: str, pdir: Path) -> dict[str, Any]:
    """A recipe's fields (folder defaults merged) from a catalog name or a path relative to the experiment."""
    candidate = Path(ref)
    if not candidate.is_absolute():
        candidate = path.parent / ref
    if ref.endswith(".yaml") and candidate.is_file():
        return recipe_data(candidate, pdir)
    found = find_recipe(ref, pdir) if NAME_RE.match(ref) else None
    if found is None:
        raise RecipeError(
            f"{path}: {where}: no recipe {ref!r}; give a catalog name (`infersweep recipes`) or a .yaml path"
        )
    return recipe_data(found, pdir)


def _rows(spec: ExperimentSpec, path: Path) -> list[dict[str, str]]:
    """The design's rows (factor -> level), checked against the factors."""
    if spec.design == "full":
        names = list(spec.factors)
        return [
            dict(zip(names, combo, strict=True)) for combo in itertools.product(*(list(spec.factors[f]) for f in names))
        ]
    rows = []
    seen = set()
    for i, row in enumerate(spec.design):
        missing = [f for f in spec.factors if f not in row]
        extra = [f for f in row if f not in spec.factors]
        if extra:
            raise RecipeError(f"{path}: design.{i}: unknown factor {extra[0]!r}; factors are {list(spec.factors)}")
        if missing:
            raise RecipeError(
                f"{path}: design.{i}: no level for factor {missing[0]!r}; add {missing[0]}: "
                f"<one of {list(spec.factors[missing[0]])}>"
            )
        for f, level in row.items():
            if level not in spec.factors[f]:
                raise RecipeError(
                    f"{path}: design.{i}.{f}: unknown level {level!r}; use one of {list(spec.factors[f])}"
                )
        key = tuple(row[f] for f in spec.factors)
        if key in seen:
            raise RecipeError(f"{path}: design.{i}: the same row as an earlier one; list each treatment once")
        seen.add(key)
        rows.append(dict(row))
    return rows


def _check_shape(spec: ExperimentSpec, path: Path) -> None:
    if spec.treatments and (spec.factors or spec.base):
        raise RecipeError(f"{path}: treatments: give either `base` + `factors` or a `treatments` list, not both")
    if not spec.treatments:
        if not spec.base:
            raise RecipeError(f"{path}: base: a factorial experiment needs a base recipe; add base: <recipe name>")
        if not spec.factors:
            raise RecipeError(f"{path}: factors: add at least one factor with two levels (or use `treatments`)")
        for f, levels in spec.factors.items():
            if not NAME_RE.match(f):
                raise RecipeError(f"{path}: factors.{f}: a factor name is lowercase letters, digits and '-'")
            if len(levels) < 2:
                raise RecipeError(f"{path}: factors.{f}: a factor needs at least two levels to compare; add one")
            for label in levels:
                if not NAME_RE.match(label):
                    raise RecipeError(
                        f"{path}: factors.{f}.{label}: a level label becomes part of a recipe name; "
                        "use lowercase letters, digits and '-'"
                    )
    elif spec.design != "full":
        raise RecipeError(f"{path}: design: a design lists factor levels; remove it from a `treatments` experiment")
    if spec.blocks > 1 and spec.order != "balanced":
        raise RecipeError(
            f"{path}: blocks: {spec.blocks} ABBA blocks need `order: balanced` (order is {spec.order!r}); "
            "add order: balanced or remove blocks"
        )


def _question_patch(spec: ExperimentSpec) -> dict[str, Any]:
    over: dict[str, Any] = {}
    if spec.question.concurrency is not None:
        over["workload"] = {"concurrency": spec.question.concurrency}
    if spec.question.slo is not None:
        over["slo"] = spec.question.slo
    return over


def _build(name: str, data: dict[str, Any], spec: ExperimentSpec, path: Path, where: str, pdir: Path) -> ResolvedRecipe:
    recipe_name = f"{spec.name}-{name}"
    if len(recipe_name) > MAX_RECIPE_NAME:
        raise RecipeError(
            f"{path}: {where}: the treatment's recipe name {recipe_name!r} is {len(recipe_name)} "
            f"characters, over {MAX_RECIPE_NAME}; shorten the experiment name or the level labels"
        )
    data = patch(patch(data, spec.set), _question_patch(spec))
    data = {**data, "name": recipe_name}
    data.pop("baseline", None)  # a catalog recipe's published point need not be in the experiment's sweep
    return parse_recipe(data, f"{path} ({where})", pdir)


def _check_references(spec: ExperimentSpec, names: list[str], conc: dict[str, list[int]], path: Path) -> None:
    if spec.baseline is not None and spec.baseline not in names:
        raise RecipeError(f"{path}: baseline: no treatment {spec.baseline!r}; use one of {names}")
    checks = [("claim", spec.claim)] if spec.claim else []
    checks += [(f"seed.expect.{i}", c) for i, c in enumerate(spec.seed.expect if spec.seed else [])]
    for where, c in checks:
        for role in ("treatment", "baseline"):
            if getattr(c, role) not in names:
                raise RecipeError(f"{path}: {where}.{role}: no treatment {getattr(c, role)!r}; use one of {names}")
        for t in (c.treatment, c.baseline):
            if c.concurrency not in conc[t]:
                raise RecipeError(
                    f"{path}: {where}.concurrency: treatment {t!r} does not measure c{c.concurrency} "
                    f"(it measures {conc[t]}); add it to question.concurrency"
                )
        if c.treatment == c.baseline:
            raise RecipeError(f"{path}: {where}: compares {c.treatment!r} with itself; name two treatments")


def load_experiment(ref: str | Path, pdir: Path | None = None) -> Experiment:
    """Load, expand and validate an experiment: every treatment a resolved recipe, or one RecipeError."""
    pdir = pdir or params_dir()
    path = Path(ref)
    if not path.suffix and not path.exists():
        path = pdir / "experiments" / f"{ref}.yaml"
        if not path.is_file():
            known = sorted(p.stem for p in (pdir / "experiments").glob("*.yaml"))
            raise RecipeError(f"{ref}: no experiment file or name; use one of {known}")
    raw = _read_yaml_mapping(path)
    try:
        spec = ExperimentSpec.model_validate(raw)
    except ValidationError as e:
        raise RecipeError(_format_pydantic(path, e, ExperimentSpec)) from None
    experiments_dir = (pdir / "experiments").resolve()
    if path.resolve().parent == experiments_dir and path.stem != spec.name:  # names are looked up by file name
        raise RecipeError(
            f"{path}: name: {spec.name!r} differs from the file name; rename the file to {spec.name}.yaml"
        )
    _check_shape(spec, path)
    treatments: list[Treatment] = []
    if spec.treatments:
        for i, t in enumerate(spec.treatments):
            if not NAME_RE.match(t.name):
                raise RecipeError(f"{path}: treatments.{i}.name: use lowercase letters, digits and '-'")
            data = patch(_recipe_source(t.recipe, path, f"treatments.{i}.recipe", pdir), t.set)
            treatments.append(Treatment(t.name, _build(t.name, data, spec, path, f"treatments.{i} {t.name}", pdir)))
    else:
        base = _recipe_source(spec.base, path, "base", pdir)  # type: ignore[arg-type]
        for row in _rows(spec, path):
            data = base
            for f, level in row.items():
                data = patch(data, spec.factors[f][level])
            name = "-".join(row.values())
            where = "treatment " + ", ".join(f"{f}={lv}" for f, lv in row.items())
            treatments.append(Treatment(name, _build(name, data, spec, path, where, pdir), row))
    names = [t.name for t in treatments]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RecipeError(f"{path}: treatments: the name {dup[0]!r} is used twice; give each treatment its own name")
    if REPORT_FOLDER in names:
        raise RecipeError(
            f"{path}: treatments: {REPORT_FOLDER!r} is where the experiment's report is published, beside the "
            f"treatments' runs (experiments/<experiment>/<workflow>/{REPORT_FOLDER}); rename that treatment"
        )
    if len(treatments) > MAX_TREATMENTS:
        raise RecipeError(
            f"{path}: design: {len(treatments)} treatments, over {MAX_TREATMENTS}; list a fractional design"
        )
    if len(treatments) < 2:
        raise RecipeError(f"{path}: design: one treatment compares nothing; give at least two")
    if spec.order == "balanced":
        runs = [(b, p) for b in range(1, spec.blocks + 1) for p in (1, 2)][1:]  # every run but the first
        clash = sorted(set(names) & {run_name(n, b, p) for n in names for b, p in runs})
        if clash:
            raise RecipeError(
                f"{path}: treatments: {clash[0]!r} is also the name of a repeat in the balanced order "
                "(<treatment>-<run>); rename that treatment"
            )
    _check_references(spec, names, {t.name: list(t.recipe.recipe.workload.concurrency) for t in treatments}, path)
    return Experiment(spec, path, treatments)


def all_experiment_paths(pdir: Path | None = None) -> list[Path]:
    return sorted(((pdir or params_dir()) / "experiments").glob("*.yaml"))
