"""Load recipes from params/recipes: find a recipe by name, merge its folder defaults and workload preset
under it, validate it and resolve it.

A `_defaults.yaml` in a recipe's folder (or any parent folder under params/recipes) is deep-merged under
every recipe there, and `workload.preset: NAME` merges params/workloads/NAME.yaml under the recipe's workload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from infersweep.params_files import RecipeError, format_pydantic, read_yaml_mapping, shared_fact_file
from infersweep.paths import params_dir
from infersweep.recipe.merge import deep_merge
from infersweep.recipe.models import NAME_RE, Recipe
from infersweep.recipe.resolve import resolve
from infersweep.recipe.resolved import ResolvedRecipe

DEFAULTS_FILE = "_defaults.yaml"


def with_workload_preset(data: dict[str, Any], path: Path | str, pdir: Path) -> dict[str, Any]:
    w = data.get("workload")
    if not isinstance(w, dict) or "preset" not in w:
        return data
    f = shared_fact_file(pdir, "workload", w["preset"], path, "workload.preset")
    own = {k: v for k, v in w.items() if k != "preset"}
    return {**data, "workload": deep_merge(read_yaml_mapping(f), own)}


def parse_recipe(data: Any, path: Path | str = "<recipe>", pdir: Path | None = None) -> ResolvedRecipe:
    pdir = pdir or params_dir()
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: the top level must be a mapping of fields (got {type(data).__name__})")
    data = with_workload_preset(data, path, pdir)
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as e:
        raise RecipeError(format_pydantic(path, e, Recipe)) from None
    return resolve(recipe, path, pdir)


def folder_defaults(path: Path, pdir: Path | None = None) -> dict[str, Any]:
    """The `_defaults.yaml` files from params/recipes down to the recipe's folder, merged (nearer wins)."""
    root = ((pdir or params_dir()) / "recipes").resolve()
    folder = path.resolve().parent
    if folder != root and root not in folder.parents:
        return {}  # a recipe file outside the catalog stands alone
    chain = [folder, *[p for p in folder.parents if p == root or root in p.parents]]
    merged: dict[str, Any] = {}
    for d in reversed(chain):
        if (d / DEFAULTS_FILE).is_file():
            merged = deep_merge(merged, read_yaml_mapping(d / DEFAULTS_FILE))
    return merged


def recipe_data(path: Path, pdir: Path | None = None) -> dict[str, Any]:
    """A recipe file's fields with its folder defaults merged under them (what `recipes show` prints)."""
    own = read_yaml_mapping(path)
    merged = deep_merge(folder_defaults(path, pdir), own)
    return {k: merged[k] for k in own} | merged  # the recipe's own order first


def find_recipe(name: str, pdir: Path | None = None) -> Path | None:
    for p in all_recipe_paths(pdir):
        if p.stem == name:
            return p
    return None


def load_recipe(ref: str | Path, pdir: Path | None = None, overrides: dict[str, Any] | None = None) -> ResolvedRecipe:
    """Load a recipe by file path or by name (a file <name>.yaml anywhere under params/recipes).

    `overrides`: `--set` changes (dotted recipe path -> value, infersweep.recipe.overrides), applied to the
    recipe's fields before it is validated and resolved, so they are checked exactly as the file is."""
    pdir = pdir or params_dir()
    path = Path(ref)
    if not path.suffix and not path.exists():
        candidate = find_recipe(str(ref), pdir) if NAME_RE.match(str(ref)) else None
        if candidate is None:
            raise RecipeError(f"{ref}: no recipe file or recipe name; `infersweep recipes` lists the names")
        path = candidate
    data = recipe_data(path, pdir)
    if overrides:
        r = _with_overrides(data, overrides, path, pdir)
    else:
        r = parse_recipe(data, path, pdir)
    if _in_catalog(path, pdir) and path.stem != r.name:  # names are looked up by file name
        raise RecipeError(f"{path}: name: {r.name!r} differs from the file name; rename the file to {r.name}.yaml")
    return r


def _with_overrides(data: dict[str, Any], overrides: dict[str, Any], path: Path, pdir: Path) -> ResolvedRecipe:
    from infersweep.recipe.overrides import apply, describe

    try:
        r = parse_recipe(apply(data, overrides), path, pdir)
    except RecipeError as e:
        raise RecipeError(f"{e}\n(the recipe with --set {describe(overrides)}: fix the recipe or the --set)") from None
    r.overrides = dict(overrides)
    return r


def _in_catalog(path: Path, pdir: Path) -> bool:
    root = (pdir / "recipes").resolve()
    return root in path.resolve().parents


def all_recipe_paths(pdir: Path | None = None) -> list[Path]:
    pdir = pdir or params_dir()
    return sorted(p for p in (pdir / "recipes").rglob("*.yaml") if p.name != DEFAULTS_FILE)
