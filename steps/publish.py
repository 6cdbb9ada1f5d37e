"""Step: publish a run's local result tree to S3 without losing or clobbering data, then index it.

The work is infersweep.results.publish.publish_run (publish_tree, manifest last, index entry): see there for
the guarantees. Credentials come only from the standard AWS chain.

CLI:  python -m steps.publish LOCAL_DIR --bucket B --prefix P [--retry-prefix]
"""

from __future__ import annotations

import sys

from infersweep.results.publish import publish_run
from workflows.step_declarations import PUBLISH


def main(argv: list[str] | None = None) -> int:
    args = PUBLISH.parser().parse_args(argv)
    return publish_run(args.local_dir, args.bucket, args.prefix, retry_prefix=args.retry_prefix)


if __name__ == "__main__":
    sys.exit(main())
