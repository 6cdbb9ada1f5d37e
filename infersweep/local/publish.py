"""The publish phase of a local run: which run id an attempt published under, and what it published kept as a
store folder on disk before the local S3 server goes (infersweep.local.disk_store).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infersweep.cluster_settings import ClusterSettings
from infersweep.local.disk_store import STORE_DIR, keep_run, seed_from_disk


def published_attempt(s3c: Any, bucket: str, base: str, run_id: str, seeded: set[str]) -> tuple[str, list[str]]:
    """(the run id this attempt published under, its keys): `run_id`, or `run_id-rN` when a retry met the
    first attempt there (infersweep.results.publish publish_run); keys put back by seed_from_disk are not
    this attempt's."""
    try:
        paginator = s3c.get_paginator("list_objects_v2")
        listed = [
            o["Key"]
            for page in paginator.paginate(Bucket=bucket, Prefix=f"{base}/{run_id}")
            for o in page.get("Contents", [])
        ]
    except Exception:  # S3 went away during the run: the results are on disk, the CLI says how to publish
        return run_id, []
    ids = {run_id} | {f"{run_id}-r{n}" for n in range(1, 1000)}
    by_id: dict[str, list[str]] = {}
    for key in listed:
        rid = key[len(base) + 1 :].split("/", 1)[0]
        if rid in ids:
            by_id.setdefault(rid, []).append(key)
    fresh = {rid: keys for rid, keys in by_id.items() if any(k not in seeded for k in keys)}
    if not fresh:
        return run_id, by_id.get(run_id, [])
    # the attempt's own prefix: the highest -rN it wrote into (a retry of a retry goes to the next N)
    rid = max(fresh, key=lambda x: 0 if x == run_id else int(x.rsplit("-r", 1)[1]))
    return rid, fresh[rid]


def seed_earlier_attempt(s3c: Any, settings: ClusterSettings, recipe: str, run_id: str, run_dir: Path) -> set[str]:
    """A `--retry`: the first attempt's results put back into the fresh S3 server from the store folder, so the
    retry publishes beside them; the keys put."""
    return seed_from_disk(s3c, settings.s3.bucket, settings.s3.prefix, recipe, run_id, run_dir.parent / STORE_DIR)


def keep_published(
    s3c: Any, settings: ClusterSettings, recipe: str, run_id: str, run_dir: Path, seeded: set[str]
) -> tuple[str, list[str], Path | None]:
    """(the run id the attempt published under, its keys, the store folder they are kept in on disk or None).
    The S3 server is about to go: what the run published stays readable as a store folder on disk."""
    published_id, keys = published_attempt(s3c, settings.s3.bucket, f"{settings.s3.prefix}/{recipe}", run_id, seeded)
    store = (
        keep_run(s3c, settings.s3.bucket, settings.s3.prefix, recipe, published_id, run_dir.parent / STORE_DIR)
        if keys
        else None
    )
    return published_id, keys, store
