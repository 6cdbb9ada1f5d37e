"""`infersweep import DIR --recipe R [--run-id ID] [--store S]`: existing AIPerf artifact folders (one per
concurrency, any AIPerf 0.10-0.13) into the results store as a run of recipe R (infersweep.results.importer)."""

from __future__ import annotations

import argparse


def run(a: argparse.Namespace) -> int:
    from pathlib import Path

    from infersweep.recipe import RecipeError
    from infersweep.results.cli_common import default_store
    from infersweep.results.importer import ImportError_, import_run

    try:
        out = import_run(Path(a.dir), a.recipe, a.store or default_store(), a.run_id)
    except ImportError_ as e:
        raise RecipeError(str(e)) from None
    import pandas as pd

    df = out["table"]
    print(
        f"imported {out['points']} point(s) of {out['recipe']} as run {out['run_id']} "
        f"(AIPerf {', '.join(out['aiperf_versions'])}; {out['valid_points']} valid) into {out['where']}"
    )
    for _, r in df.iterrows():
        valid = r["valid"]
        verdict = (
            "valid: NA (not judged)"
            if valid is None or valid is pd.NA
            else "valid"
            if bool(valid)
            else f"invalid: {r['validity_reasons']}"
        )
        print(f"  c{r['concurrency']} r{r['repetition']}: {r['status']}; {verdict}")
    print(f"compare it: infersweep compare {out['run_id']} <other run> --store {a.store or default_store()}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_store_arg, clean_errors

    p = sub.add_parser(
        "import", help="bring existing AIPerf artifact folders (one per concurrency) into the results store"
    )
    p.add_argument("dir", help="a folder holding AIPerf artifact folders (or one of them)")
    p.add_argument("--recipe", required=True, help="the recipe these runs measured (files the run under it)")
    p.add_argument("--run-id", default=None, help="the run's id (default: imported-<hash of the files>)")
    add_store_arg(p)
    p.set_defaults(fn=clean_errors(run))
