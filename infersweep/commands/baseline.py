"""`infersweep baseline promote RUN [--store S] [--to S]`: make a published run its recipe's baseline, the run
the nightly regression check compares against (infersweep/results/promote.py). `infersweep baseline show
RECIPE` says which run it is."""

from __future__ import annotations

import argparse


def _default_dest(store: str) -> str:
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import RecipeError

    settings = load_cluster_settings()
    if store.startswith("s3://"):
        bucket = store[5:].split("/", 1)[0]
        return f"s3://{bucket}/{settings.nightly.baselines_prefix}"
    raise RecipeError(
        f"--store {store} is a folder: give --to (an s3://BUCKET/PREFIX or a folder) for the baselines; "
        f"the nightly runs read s3://{settings.s3.bucket}/{settings.nightly.baselines_prefix}/<recipe>/"
    )


def promote_cmd(a: argparse.Namespace) -> int:
    from infersweep.results.cli_common import default_store
    from infersweep.results.promote import current_baseline, promote
    from infersweep.results.store import RunStore

    store = a.store or default_store()
    dest = RunStore(a.to or _default_dest(store))
    source = RunStore(store)
    recipe, _ = source.locate(a.run)
    before = current_baseline(dest, recipe)
    record = promote(source, a.run, dest)
    was = f" (was {before['run_id']})" if before else " (it had none)"
    print(f"baseline of {record['recipe']} is now {record['run_id']}{was}: {record['location']}")
    if record["location"].startswith("s3://"):
        print(
            f"the regression check compares with it when run with --set baseline-prefix="
            f"{dest.base + '/' if dest.base else ''}{record['recipe']} (the nightly CronWorkflows do)"
        )
    else:  # the regression-check step reads S3; a folder baseline is for `infersweep regress`
        print(f"compare a run with it: infersweep regress RUN --baseline {record['location']}")
    return 0


def show_cmd(a: argparse.Namespace) -> int:
    from infersweep.results.cli_common import default_store
    from infersweep.results.promote import baseline_prefix, current_baseline
    from infersweep.results.store import RunStore

    dest = RunStore(a.to or _default_dest(a.store or default_store()))
    record = current_baseline(dest, a.recipe)
    if record is None:
        print(f"{a.recipe}: no baseline at {dest.backend.url(baseline_prefix(dest, a.recipe))}/")
        return 1
    print(f"{a.recipe}: {record['run_id']} (promoted {record['promoted_at']} from {record['source']})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_store_arg

    p = sub.add_parser("baseline", help="promote a run to its recipe's regression baseline, or show it")
    cmds = p.add_subparsers(dest="baseline_cmd", required=True, metavar="promote|show")
    pr = cmds.add_parser("promote", help="make RUN (RUN_ID or RECIPE/RUN_ID in --store) its recipe's baseline")
    pr.add_argument("run")
    sh = cmds.add_parser("show", help="which run is RECIPE's baseline")
    sh.add_argument("recipe")
    for q in (pr, sh):
        add_store_arg(q)
        q.add_argument(
            "--to",
            help="where baselines live (default s3://<the store's bucket>/<nightly.baselines_prefix> "
            "of params/cluster.yaml); a folder for a folder store",
        )
    pr.set_defaults(fn=promote_cmd)
    sh.set_defaults(fn=show_cmd)
