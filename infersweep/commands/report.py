"""`infersweep report RUN [--out DIR]`: the self-contained HTML report of a run (+ its PNGs)."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(a: argparse.Namespace) -> int:
    from infersweep.results.cli_common import load_run
    from infersweep.results.report import write_report

    r = load_run(a.run, a.store)
    from infersweep.cli_util import writable_folder

    out = writable_folder(a.out if a.out else Path("reports") / r.run_id)
    path = write_report(r, out, a.title)
    print(f"report: {path} (PNGs beside it: {', '.join(sorted(p.name for p in out.glob('*.png')))})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_store_arg

    p = sub.add_parser("report", help="write a run's self-contained HTML report and PNGs")
    p.add_argument("run", help="run folder (runs/<id>), or RUN_ID / RECIPE/RUN_ID in --store")
    p.add_argument("--out", help="output folder (default reports/<run-id>)")
    p.add_argument("--title", help="report title (default: the recipe name)")
    add_store_arg(p)
    p.set_defaults(fn=run)
