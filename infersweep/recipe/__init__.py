"""Recipes as data: load a recipe file from params/, resolve the shared facts it names, validate it.

A recipe states only what is particular to one deployment (topology, router, workload, SLOs); the model,
engine and GPU type it names are looked up in params/models, params/engines (+ infersweep/engines) and
params/gpus.yaml so that a fact lives once. Every mistake is reported as one `RecipeError` naming the file,
the field and the fix, before anything is rendered or touches a cluster.

Modules, one job each:
  models.py      the recipe's typed, strict model (topology, router, workload, SLOs)
  facts.py       the shared facts it names: model, GPU type with placement and fabric, transport
  tolerances.py  the regression block: how a nightly run is judged against its baseline
  release.py     engine releases: which Dynamo release a recipe renders for, and what that changes
  merge.py       the two ways recipe data is laid over recipe data, defined once
  overrides.py   `--set PATH=VALUE`: a change to the recipe (or a run setting), checked like the recipe
  resolved.py    ResolvedRecipe: a recipe with the facts it names, as rendering uses it
  resolve.py     lookups and cross-checks only the facts decide
  loading.py     files, folder defaults, presets, names
This package re-exports the names most of the code base uses (loading a recipe and its error); everything
else is imported from its module.
"""

from infersweep.params_files import RecipeError
from infersweep.recipe.loading import all_recipe_paths, find_recipe, load_recipe, parse_recipe, recipe_data
from infersweep.recipe.resolved import ResolvedRecipe

__all__ = [
    "RecipeError",
    "ResolvedRecipe",
    "all_recipe_paths",
    "find_recipe",
    "load_recipe",
    "parse_recipe",
    "recipe_data",
]
