"""`infersweep validate [PATHS]`: recipes and every document they render."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infersweep.cli_util import add_no_cache_arg, add_set_arg, parse_sets
from infersweep.recipe import RecipeError, all_recipe_paths, load_recipe


def run(a: argparse.Namespace) -> int:
    from infersweep.cluster_settings import load_cluster_settings
    from workflows.render import render_recipe

    sets = parse_sets(a.set)  # a malformed --set is one error for the call, not one per recipe
    paths = [Path(p) for p in a.paths] if a.paths else all_recipe_paths()
    errors = 0
    unpinned: dict[str, set[str]] = {}  # model -> its revisions that are not commit SHAs
    for p in paths:
        try:
            r = load_recipe(p, overrides=sets.recipe)
            render_recipe(r, load_cluster_settings(), overrides=sets.params, cache=not a.no_cache)
            if not r.model.pinned:
                unpinned.setdefault(r.model.id, set()).add(str(r.model.revision))
            print(f"ok  {p}")
        except (RecipeError, ValueError) as e:
            errors += 1
            print(f"ERR {e}", file=sys.stderr)
    if unpinned:
        # One line for all of them (it was one per recipe: 51 alike on the catalogue), naming the models.
        models = ", ".join(f"{m}@{'/'.join(sorted(v))}" for m, v in sorted(unpinned.items()))
        print(
            f"warning: {len(unpinned)} model(s) at a revision that is not a commit SHA ({models}): the "
            "model-cache step records the commit it resolved; pin `revision:` in params/models/ to rerun the same"
        )
    print(f"{len(paths) - errors} valid, {errors} invalid")
    return 1 if errors else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="validate recipes and everything they render")
    p.add_argument("paths", nargs="*")
    add_set_arg(p)
    add_no_cache_arg(p)
    p.set_defaults(fn=run)
