"""`infersweep render RECIPE --out DIR` / `render --all --out DIR`."""

from __future__ import annotations

import argparse

from infersweep.cli_util import add_dgd_api_arg, add_no_cache_arg, add_set_arg, parse_sets, writable_folder
from infersweep.recipe import RecipeError, all_recipe_paths, load_recipe


def run(a: argparse.Namespace) -> int:
    from infersweep.cluster_settings import load_cluster_settings
    from workflows.render import render_recipe

    if a.all == bool(a.recipe):
        raise RecipeError("infersweep render: give a RECIPE or --all (not both)")
    refs = all_recipe_paths() if a.all else [a.recipe]
    sets = parse_sets(a.set)
    out, settings = writable_folder(a.out), load_cluster_settings()
    for ref in refs:
        r = load_recipe(ref, overrides=sets.recipe)
        dest = out / r.name if a.all else out
        files = render_recipe(r, settings, dgd_api=a.dgd_api, overrides=sets.params, cache=not a.no_cache).write(dest)
        print(f"{r.name}: {len(files)} documents -> {dest}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("render", help="write the DGD, Workflow and WorkflowTemplates of a recipe")
    p.add_argument("recipe", nargs="?", help="recipe name or file")
    p.add_argument("--all", action="store_true", help="every recipe in params/recipes")
    p.add_argument("--out", required=True)
    add_set_arg(p)
    add_dgd_api_arg(p)
    add_no_cache_arg(p)
    p.set_defaults(fn=run)
