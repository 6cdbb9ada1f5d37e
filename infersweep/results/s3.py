"""The S3 client every reader and writer of results uses: one place for its timeouts, retries and pool size.

Used by infersweep.results.publish, RunStore and infersweep.results.baseline (the regression-check step); with
the object primitives publish and verify share (HEAD that says absent, listing, a fail-fast pool).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from infersweep.errors import UserError

MAX_WORKERS = 8  # files uploaded/verified at once

# Multipart above 64 MiB, 16 MiB parts: few parts for typical result files,
# and a failed part is retried on its own instead of the whole file.
TRANSFER_CONFIG = TransferConfig(
    multipart_threshold=64 * 1024 * 1024,
    multipart_chunksize=16 * 1024 * 1024,
    max_concurrency=4,
)


def s3_client(endpoint_url: str | None = None, *, connect_timeout: float = 3, read_timeout: float = 20):
    """A boto3 S3 client that fails in seconds when S3 is unreachable.

    The endpoint comes from the argument, else AWS_ENDPOINT_URL_S3, else
    AWS_ENDPOINT_URL (unset => real AWS). Credentials and region come from the
    standard AWS chain only.
    """
    endpoint_url = endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
    config = Config(
        # 3 attempts with the standard backoff: a refused connection gives up
        # after ~3 s, a black-holed one after ~3 x connect_timeout.
        retries={"total_max_attempts": 3, "mode": "standard"},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        # Room for MAX_WORKERS files x TransferConfig.max_concurrency parts.
        max_pool_connections=MAX_WORKERS * TRANSFER_CONFIG.max_request_concurrency,
        # MinIO / moto / Ceph endpoints usually have no per-bucket DNS names.
        s3={"addressing_style": "path"} if endpoint_url else None,
    )
    import boto3

    return boto3.client("s3", endpoint_url=endpoint_url, config=config)


class UnsafeKey(UserError, ValueError):
    """An S3 key that would land outside the destination folder: the store given holds it, refused."""


def contained(dest: Path, rel: str) -> Path:
    """dest/rel, refusing a key that climbs out of dest (`..`, an absolute part, a NUL): whoever can write to
    the bucket must not choose which local file a download overwrites."""
    parts = rel.split("/")
    if not rel or "\0" in rel or rel.startswith("/") or any(p in ("..",) for p in parts):
        raise UnsafeKey(f"S3 key part {rel[:120]!r} would leave {dest}; refused")
    target = (dest / rel).resolve()
    if not target.is_relative_to(dest.resolve()):
        raise UnsafeKey(f"S3 key part {rel[:120]!r} resolves outside {dest}; refused")
    return target


def download_prefix(bucket: str, prefix: str, dest: Path) -> int:
    """Download every object under s3://bucket/prefix/ into dest (keys relative to the prefix); return how many."""
    s3 = s3_client()  # fails in seconds when S3 is unreachable
    n = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(prefix.rstrip("/")) + 1 :]
            if not rel or rel.endswith("/"):
                continue  # a "folder" marker object
            target = contained(dest, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, obj["Key"], str(target))
            n += 1
    return n


def run_parallel(fn, items, max_workers: int, key):
    """Run fn over items in a bounded pool; stop starting new work on the first error.

    Returns (keys done, {key: exception}, keys never started). Failing fast
    matters when S3 is down: otherwise every file would wait out its own
    retries, and a large tree would take minutes to report the outage.
    """
    failed = threading.Event()
    done, errors, skipped = [], {}, []
    lock = threading.Lock()

    def task(item):
        name = key(item)
        if failed.is_set():
            with lock:
                skipped.append(name)
            return
        try:
            fn(item)
        except Exception as exc:  # collected and reported by the caller
            failed.set()
            with lock:
                errors[name] = exc
        else:
            with lock:
                done.append(name)

    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        list(pool.map(task, items))
    return done, errors, skipped


def head_or_none(s3, bucket: str, key: str) -> dict | None:
    try:
        return s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if is_missing(exc):
            return None
        if exc.response.get("Error", {}).get("Code") in ("403", "AccessDenied"):
            # Without s3:ListBucket, S3 answers 403 (not 404) for a missing
            # key, and we cannot tell "absent" from "forbidden".
            raise PermissionError(
                f"HEAD s3://{bucket}/{key} forbidden; publishing needs s3:GetObject, "
                "s3:PutObject and s3:ListBucket on the bucket"
            ) from exc
        raise


def is_missing(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")


def list_keys(s3, bucket: str, prefix: str) -> list[str]:
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.extend(o["Key"] for o in page.get("Contents", []))
    return keys
