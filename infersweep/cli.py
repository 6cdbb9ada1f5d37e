"""The laptop entry point: `infersweep recipes | validate | render | run --local | publish`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infersweep.recipe import RecipeError, all_recipe_paths, load_recipe


def _sets(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values or []:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise RecipeError(f"--set {v!r}: write it as key=value (a workflow parameter name, e.g. --set prometheus-url=http://prom:9090)")
        out[key] = val
    return out


def cmd_recipes(a: argparse.Namespace) -> int:
    if a.action == "show":
        if not a.name:
            raise RecipeError("infersweep recipes show NAME: give a recipe name (see `infersweep recipes`)")
        r = load_recipe(a.name)
        print(r.path.read_text() if r.path else r.recipe.model_dump_json(indent=2))
        return 0
    rows = []
    for p in all_recipe_paths():
        r = load_recipe(p)
        rows.append((r.name, r.model.id, r.recipe.engine, _topology(r), str(r.gpu_count), r.recipe.gpu.type))
    _table(["name", "model", "engine", "topology", "GPUs", "GPU type"], rows)
    return 0


def _topology(r) -> str:
    return " + ".join(f"{w.replicas}{role[0].upper() if role != 'worker' else 'x'} TP={w.tp}" + (f" x{w.nodes}n" if w.nodes > 1 else "")
                      for role, w in r.recipe.topology.roles().items()) + f" ({r.recipe.topology.mode}, {r.recipe.router})"


def _table(head: list[str], rows: list[tuple]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in [head, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())


def cmd_validate(a: argparse.Namespace) -> int:
    paths = [Path(p) for p in a.paths] if a.paths else all_recipe_paths()
    errors = 0
    for p in paths:
        try:
            r = load_recipe(p)
            from infersweep.platform_config import load_platform
            from infersweep.render import render_recipe

            render_recipe(r, load_platform())
            note = "" if r.model.pinned else f" (warning: model revision {r.model.revision!r} is not a commit SHA)"
            print(f"ok  {p}{note}")
        except (RecipeError, ValueError) as e:
            errors += 1
            print(f"ERR {e}", file=sys.stderr)
    return 1 if errors else 0


def cmd_render(a: argparse.Namespace) -> int:
    from infersweep.platform_config import load_platform
    from infersweep.render import render_recipe

    refs = all_recipe_paths() if a.all else [a.recipe]
    if not refs or refs == [None]:
        raise RecipeError("infersweep render: give a RECIPE or --all")
    out = Path(a.out)
    for ref in refs:
        r = load_recipe(ref)
        bundle = render_recipe(r, load_platform(), dgd_api=a.dgd_api, overrides=_sets(a.set))
        files = bundle.write(out / r.name if a.all else out)
        print(f"{r.name}: {len(files)} documents -> {out / r.name if a.all else out}")
    return 0


def cmd_run(a: argparse.Namespace) -> int:
    if not a.local:
        raise RecipeError("infersweep run: only --local runs here; to run on a cluster, render and submit the workflow")
    from infersweep.local.run import run_local

    res = run_local(a.recipe, out_root=Path(a.out), overrides=_sets(a.set), dgd_api=a.dgd_api)
    table = res.results_dir / "summary" / "results.md"
    if table.exists():
        print()
        print(table.read_text())
    print(f"run {res.run_id}: {res.phase} in {res.seconds:.1f} s" + (f" ({res.message})" if res.message else ""))
    print(f"results:  {res.results_dir}/summary/ (results.parquet, results.csv, pareto.png)")
    print(f"logs:     {res.run_dir}/nodes/")
    if res.s3_keys:
        print(f"published {len(res.s3_keys)} objects to the local S3 server under {res.s3_keys[0].rsplit('/', 3)[0]}/")
    return 0 if res.phase == "Succeeded" else 1


def cmd_publish(a: argparse.Namespace) -> int:
    from steps.publish import main as publish_main

    return publish_main([a.dir, "--bucket", a.bucket, "--prefix", a.prefix])


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="infersweep", description="Deploy LLM serving graphs with Dynamo and benchmark them, as Argo workflows.")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("recipes", help="list recipes, or show one")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("name", nargs="?")
    p.set_defaults(fn=cmd_recipes)

    p = sub.add_parser("validate", help="validate recipes and everything they render")
    p.add_argument("paths", nargs="*")
    p.set_defaults(fn=cmd_validate)

    for name, fn, hlp in (("render", cmd_render, "write the DGD, Workflow and WorkflowTemplates of a recipe"),
                          ("run", cmd_run, "run a recipe's rendered workflow")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("recipe", nargs="?" if name == "render" else None, help="recipe name or file")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a workflow parameter")
        p.add_argument("--dgd-api", choices=["v1beta1", "v1alpha1"], default="v1beta1")
        if name == "render":
            p.add_argument("--out", required=True)
            p.add_argument("--all", action="store_true", help="every recipe in params/recipes")
        else:
            p.add_argument("--local", action="store_true", help="run on this machine (Dynamo mocker + AIPerf + local S3)")
            p.add_argument("--out", default="runs", help="folder for local runs (default ./runs)")
        p.set_defaults(fn=fn)

    p = sub.add_parser("publish", help="publish a local result folder to S3 (e.g. after an upload failed)")
    p.add_argument("dir")
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.set_defaults(fn=cmd_publish)
    return ap


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        return a.fn(a)
    except (RecipeError, KeyError) as e:
        print(f"infersweep: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
