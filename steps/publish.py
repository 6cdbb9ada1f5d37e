"""Step: publish a run's local result tree to S3 without losing or clobbering data, then index it.

The work is infersweep.results.publish.publish_run (publish_tree, manifest last, index entry): see there for
the guarantees. Credentials come only from the standard AWS chain.

CLI:  python -m steps.publish LOCAL_DIR --bucket B --prefix P [--retry-prefix]
"""

from __future__ import annotations

import sys

from infersweep.results.publish import publish_run
from steps import transient
from infersweep.step_declarations import PUBLISH


def _transient_exit(exc: BaseException) -> int | None:
    # S3 unreachable, throttled or failing server-side: exit 75, which the step template retries
    # (steps/transient.py); a missing bucket or denied access stays 1.
    return transient.TRANSIENT_EXIT if transient.is_transient(exc) else None


def main(argv: list[str] | None = None) -> int:
    args = PUBLISH.parser().parse_args(argv)
    return publish_run(args.local_dir, args.bucket, args.prefix, retry_prefix=args.retry_prefix,
                       transient_exit=_transient_exit)


if __name__ == "__main__":
    sys.exit(transient.run(main, "publish"))
