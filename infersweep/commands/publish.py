"""`infersweep publish DIR --bucket B --prefix P`: publish a result folder (e.g. after an upload failed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run(a: argparse.Namespace) -> int:
    from infersweep.results.manifest import RunIntegrityError
    from infersweep.results.publish import PublishConflict, PublishError, publish_run  # boto3 only when publishing

    try:
        publish_run(Path(a.dir), a.bucket, a.prefix)
    except (PublishError, PublishConflict, RunIntegrityError, ValueError) as e:
        print(f"publish failed: {e}", file=sys.stderr)
        return getattr(e, "exit_code", 1)  # 2: a key holds other bytes; 1: anything else
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("publish", help="publish a local result folder to S3 (e.g. after an upload failed)")
    p.add_argument("dir")
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.set_defaults(fn=run)
