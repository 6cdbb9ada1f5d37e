"""`infersweep recipes [list|show NAME]`: the catalog as a table, or one recipe (folder defaults merged)."""

from __future__ import annotations

import argparse

import yaml

from infersweep.catalog import gpus_text
from infersweep.cli_util import table
from infersweep.recipe import RecipeError, ResolvedRecipe, all_recipe_paths, load_recipe, recipe_data


def topology_text(r: ResolvedRecipe) -> str:
    parts = []
    for role, w in r.recipe.topology.roles().items():
        count = f"{w.autoscaling.min_replicas}-{w.autoscaling.max_replicas}" if w.autoscaling else str(w.replicas)
        who = f"{count} worker{'' if count in (1, '1') else 's'}" if role == "worker" else f"{count}{role[0].upper()}"
        par = f"TP={w.tp}" + (f" DP={w.dp}" if w.dp > 1 else "") + (f" EP={w.ep}" if w.ep > 1 else "")
        parts.append(f"{who} x {par}" + (f" over {w.nodes} nodes" if w.nodes > 1 else ""))
    extras = [r.recipe.topology.mode, r.recipe.router]
    if r.recipe.speculative and r.recipe.speculative.mode != "none":
        extras.append(r.recipe.speculative.mode)
    if r.recipe.kv_offload:
        extras.append("cpu-kv")
    return " + ".join(parts) + f" ({', '.join(extras)})"


def run(a: argparse.Namespace) -> int:
    if a.action == "show":
        if not a.name:
            raise RecipeError("infersweep recipes show NAME: give a recipe name (see `infersweep recipes`)")
        r = load_recipe(a.name)
        prov = r.recipe.provenance
        if prov:  # where the recipe comes from, first: what a reviewer compares it with
            print(f"# follows: {prov.follows}")
            for topic, why in prov.differences.items():
                print(f"# differs ({topic}): {why}")
        if r.path:
            print(f"# {r.path} (with its folder's _defaults.yaml merged)")
            print(yaml.safe_dump(recipe_data(r.path), sort_keys=False, width=120), end="")
        else:
            print(r.recipe.model_dump_json(indent=2))
        return 0
    if a.markdown:
        from infersweep.catalog import catalog_markdown, catalog_path, write_catalog

        if a.write:
            changed = write_catalog()
            print(f"{catalog_path()} {'rewritten' if changed else 'already current'}")
        else:
            print(catalog_markdown(), end="")
        return 0
    rows = []
    for p in all_recipe_paths():
        r = load_recipe(p)
        rows.append((r.name, r.model.id, r.recipe.engine, topology_text(r), gpus_text(r), r.recipe.gpu.type))
    print(table(["name", "model", "engine", "topology", "GPUs", "GPU type"], rows))
    print(f"{len(rows)} recipes")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recipes", help="list recipes, or show one")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("name", nargs="?")
    p.add_argument(
        "--markdown", action="store_true", help="the catalog (docs/catalog.md) as Markdown, one table per folder"
    )
    p.add_argument("--write", action="store_true", help="with --markdown: rewrite docs/catalog.md")
    p.set_defaults(fn=run)
