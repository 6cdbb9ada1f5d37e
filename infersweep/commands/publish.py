"""`infersweep publish DIR --bucket B --prefix P [--store-prefix S]`: publish a result folder (e.g. after an
upload failed); with --store-prefix, as an experiment's publish step does (a pointer, not a second copy)."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(a: argparse.Namespace) -> int:
    from infersweep.results.publish import publish_run  # boto3 only when publishing

    # A failure is a UserError of its own exit code (infersweep/cli.py prints it): PublishError 1 (S3
    # unreachable, an upload failed; the local copy is intact), PublishConflict 2 (a key holds other bytes),
    # BadArgument 2 (no such folder, nothing in it).
    publish_run(Path(a.dir), a.bucket, a.prefix, store_prefix=a.store_prefix)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("publish", help="publish a local result folder to S3 (e.g. after an upload failed)")
    p.add_argument("dir")
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument(
        "--store-prefix",
        default="",
        metavar="BASE/RECIPE/RUN_ID",
        help="also make it that run of the results store at BASE by a pointer to PREFIX (an experiment's "
        "treatment: PREFIX under BASE/experiments/), not a second copy",
    )
    p.set_defaults(fn=run)
