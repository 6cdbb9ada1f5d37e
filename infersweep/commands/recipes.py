"""`infersweep recipes [list|show NAME]`: the catalog as a table, or one recipe."""

from __future__ import annotations

import argparse

from infersweep.cli_util import table
from infersweep.recipe import RecipeError, ResolvedRecipe, all_recipe_paths, load_recipe


def topology_text(r: ResolvedRecipe) -> str:
    parts = []
    for role, w in r.recipe.topology.roles().items():
        who = f"{w.replicas} workers" if role == "worker" else f"{w.replicas}{role[0].upper()}"
        parts.append(f"{who} x TP={w.tp}" + (f" over {w.nodes} nodes" if w.nodes > 1 else ""))
    return " + ".join(parts) + f" ({r.recipe.topology.mode}, {r.recipe.router})"


def run(a: argparse.Namespace) -> int:
    if a.action == "show":
        if not a.name:
            raise RecipeError("infersweep recipes show NAME: give a recipe name (see `infersweep recipes`)")
        r = load_recipe(a.name)
        print(r.path.read_text() if r.path else r.recipe.model_dump_json(indent=2))
        return 0
    rows = []
    for p in all_recipe_paths():
        r = load_recipe(p)
        rows.append((r.name, r.model.id, r.recipe.engine, topology_text(r), str(r.gpu_count), r.recipe.gpu.type))
    print(table(["name", "model", "engine", "topology", "GPUs", "GPU type"], rows))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recipes", help="list recipes, or show one")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("name", nargs="?")
    p.set_defaults(fn=run)
