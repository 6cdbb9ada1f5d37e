"""`infersweep publish DIR --bucket B --prefix P`: publish a result folder (e.g. after an upload failed)."""

from __future__ import annotations

import argparse


def run(a: argparse.Namespace) -> int:
    from steps.publish import main as publish_main

    return publish_main([a.dir, "--bucket", a.bucket, "--prefix", a.prefix])


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("publish", help="publish a local result folder to S3 (e.g. after an upload failed)")
    p.add_argument("dir")
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.set_defaults(fn=run)
