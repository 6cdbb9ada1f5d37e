"""The S3 client every reader and writer of results uses: one place for its timeouts, retries and pool size.

Used by infersweep.results.publish, RunStore and infersweep.results.baseline (the regression-check step).
"""

from __future__ import annotations

import os
from pathlib import Path

from boto3.s3.transfer import TransferConfig
from botocore.config import Config

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
