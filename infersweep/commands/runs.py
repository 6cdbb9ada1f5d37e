"""`infersweep runs [--store S] [--recipe R] [--status S] [--since DATE]`: the runs of a results store, newest
first (an S3 prefix, or a folder such as runs/store that local mode keeps)."""

from __future__ import annotations

import argparse
import datetime as dt

from infersweep.cli_util import table


def _day(text: str) -> str:
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a date as YYYY-MM-DD") from None


def run(a: argparse.Namespace) -> int:
    from infersweep.results.cli_common import check_store_folder, default_store, reading_store
    from infersweep.results.listing import list_runs
    from infersweep.results.store import RunStore

    location = a.store or default_store()
    check_store_folder(location)
    with reading_store(location):  # the S3 client's errors: one line, never botocore's traceback
        df = list_runs(RunStore(location), recipe=a.recipe, incomplete=a.all or a.status == "incomplete")
    if a.status:
        df = df[df["status"] == a.status]
    if a.since:
        df = df[df["date"].fillna("").astype(str) >= a.since]
    if a.until:  # the whole day: "2025-01-02T23:59:59" < "2025-01-02~"
        df = df[df["date"].fillna("").astype(str) < a.until + "~"]
    df = df.head(a.limit) if a.limit else df
    if df.empty:
        print(
            f"no runs in {location}" + (" matching the filters" if a.recipe or a.status or a.since or a.until else "")
        )
        return 0
    rows = [
        (
            r.run_id,
            r.recipe,
            r.status,
            f"{_int(r.measured_points)}/{_int(r.points)}",
            str(r.date or "-")[:19],
            r.engine or "-",
            _int(r.gpu_count),
        )
        for r in df.astype(object).fillna("").itertuples()
    ]
    print(table(["RUN", "RECIPE", "STATUS", "POINTS", "DATE", "ENGINE", "GPUS"], rows))
    print(f"\n{len(rows)} run(s) in {location}; a report: infersweep report RUN --store {location}")
    return 0


def _int(v) -> str:
    try:
        return str(int(v))
    except (TypeError, ValueError):
        return "-"


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_store_arg
    from infersweep.results.listing import STATUSES

    p = sub.add_parser("runs", help="the runs of a results store (S3 or a folder), newest first")
    add_store_arg(p)
    p.add_argument("--recipe", help="only this recipe's runs")
    p.add_argument(
        "--status",
        choices=STATUSES,
        help="complete (every point measured), partial, incomplete "
        "(no manifest: a publish cut short or a run still going)",
    )
    p.add_argument("--since", type=_day, metavar="YYYY-MM-DD", help="published on or after this day (UTC)")
    p.add_argument("--until", type=_day, metavar="YYYY-MM-DD", help="published on or before this day (UTC)")
    p.add_argument("--all", action="store_true", help="also list incomplete runs")
    p.add_argument("--limit", type=int, default=0, help="at most this many (newest first)")
    p.set_defaults(fn=run)
