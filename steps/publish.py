"""Step: publish a run's local result tree to S3 without losing or clobbering data, then index it.

The work is infersweep.results.publish.publish_run (publish_tree, manifest last, index entry): see there for
the guarantees. Credentials come only from the standard AWS chain.

CLI:  python -m steps.publish LOCAL_DIR --bucket B --prefix P [--retry-prefix]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infersweep.results.publish import publish_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m steps.publish",
        description="Publish a run's local result tree to S3 (credentials from the AWS env/chain).",
    )
    parser.add_argument("local_dir", type=Path)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--retry-prefix", action="store_true",
                        help="when PREFIX already holds a complete run with other bytes (an Argo UI Retry of the "
                             "same workflow re-publishes), publish under PREFIX-rN instead, never over it")
    args = parser.parse_args(argv)
    return publish_run(args.local_dir, args.bucket, args.prefix, retry_prefix=args.retry_prefix)


if __name__ == "__main__":
    sys.exit(main())
