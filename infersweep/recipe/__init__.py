"""Recipes as data: load a recipe file from params/, resolve the shared facts it names, validate it.

A recipe states only what is particular to one deployment (topology, router, workload, SLOs); the model,
engine and GPU type it names are looked up in params/models, params/engines (+ infersweep/engines) and
params/gpus.yaml so that a fact lives once. Every mistake is reported as one `RecipeError` naming the file,
the field and the fix, before anything is rendered or touches a cluster.

Modules, one job each: `models` (the recipe's typed model), `facts` (model, GPU type, placement, transport),
`tolerances` (the regression block), `resolved` (ResolvedRecipe), `resolve` (lookups and cross-checks),
`loading` (files, folder defaults, presets, names). This package re-exports the names most of the code
base uses (loading a recipe and its error); everything else is imported from its module.
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
