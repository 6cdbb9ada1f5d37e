"""Step: publish a run's local result tree to S3 without losing or clobbering data, then index it.

The work is infersweep.results.publish.publish_run (publish_tree, manifest last, index entry): see there for
the guarantees. Credentials come only from the standard AWS chain.

CLI:  python -m steps.publish LOCAL_DIR --bucket B --prefix P [--retry-prefix] [--store-prefix S]
"""

from __future__ import annotations

from infersweep.results.publish import publish_run
from infersweep.step_declarations import PUBLISH
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    # S3 unreachable, throttled or failing server-side for every key: exit 75, which the step template
    # retries; a missing bucket or denied access 1, a key holding other bytes 2 (steps/runner.py).
    args = PUBLISH.parser().parse_args(argv)
    publish_run(
        args.local_dir, args.bucket, args.prefix, retry_prefix=args.retry_prefix, store_prefix=args.store_prefix
    )
    return 0


if __name__ == "__main__":
    main_of(main, PUBLISH)
