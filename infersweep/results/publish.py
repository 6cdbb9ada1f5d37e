"""Publish a run's local result tree to S3 without losing or clobbering data.

Used by the publish step (steps/publish.py, in the cluster's step image: boto3 + the infersweep package),
`infersweep publish` and `infersweep import`.

Guarantees:
  * Every object carries its sha256 in metadata (x-amz-meta-sha256).
  * An existing key is never overwritten with different bytes
    (PublishConflict). Identical bytes are skipped, so a retried step is a
    no-op. The one exception is an `attempts/` folder, which only grows:
    there a remote object may be replaced by a local file that *extends* it
    (the remote bytes are a prefix of the local ones), so nothing is lost.
  * `<prefix>/manifest.json` (infersweep.results.manifest) is written last, only after every object is in
    place: its presence is the "run complete" marker. An interrupted publish
    leaves no manifest and is simply run again.
  * Nothing local is ever modified or deleted; on failure the error says what
    made it and the command that finishes the job later.

Credentials come only from the standard AWS chain (env, config files, IRSA,
instance profile): no function here takes keys as arguments, so they can never
end up in workflow parameters or logs.

CLI:  python -m steps.publish LOCAL_DIR --bucket B --prefix P [--store-prefix S]   (or `infersweep publish`):
publish_run. With --store-prefix (an experiment's treatment, published under experiments/), the run is also
made a run of its recipe at S = <base>/<recipe>/<run-id> by a pointer (publish_pointer), not a second copy.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import mimetypes
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from botocore.exceptions import ClientError

from infersweep.errors import BadArgument, UserError
from infersweep.results import index as ix
from infersweep.results.manifest import (
    MANIFEST_NAME,
    MANIFEST_SCHEMA,
    SHA_META,
    ChecksumError,
    check_object,
    check_sha256_metadata,
    listed_objects,
    missing_object,
    parse_manifest,
)
from infersweep.results.s3 import (
    MAX_WORKERS,
    TRANSFER_CONFIG,
    head_or_none,
    is_missing,
    list_keys,
    run_parallel,
    s3_client,
)
from infersweep.results.store import RunPointerConflict, RunStore, publish_index_entry

APPEND_ONLY_DIR = "attempts"
CHUNK = 1024 * 1024


# Types mimetypes does not know (or guesses badly) for files a run writes.
EXTRA_CONTENT_TYPES = {
    ".jsonl": "application/x-ndjson",
    ".log": "text/plain",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".parquet": "application/vnd.apache.parquet",
}


class PublishError(UserError, RuntimeError):
    """S3 unreachable or an upload failed (credentials, endpoint, bucket: the user's to fix); the local copy is
    intact. Exit 1, or 75 (retried) when every one of
    its `causes` is transient (steps/runner.py)."""

    exit_code = 1

    def __init__(self, message: str, *, uploaded=(), not_uploaded=(), command: str = "", causes=()):
        super().__init__(message)
        self.uploaded = list(uploaded)
        self.not_uploaded = list(not_uploaded)
        self.command = command
        self.causes = list(causes)  # the S3 client's exceptions, per key: a step tells transient from not


class PublishConflict(UserError, RuntimeError):
    """A key already holds different bytes; it was left untouched (exit 2: a rerun cannot fix it)."""

    exit_code = 2

    def __init__(self, message: str, keys=()):
        super().__init__(message)
        self.keys = list(keys)


# -- publish ----------------------------------------------------------------


@dataclass
class _File:
    path: Path
    rel: str  # posix path relative to local_dir
    key: str
    size: int = 0
    mtime_ns: int = 0
    sha256: str = ""
    action: str = ""  # "upload" | "skip" | "replace" | "conflict"
    note: str = ""


def publish_tree(
    local_dir: Path,
    *,
    bucket: str,
    prefix: str,
    s3=None,
    manifest_extra: dict | None = None,
    max_workers: int = MAX_WORKERS,
) -> dict:
    """Upload every file under local_dir to s3://bucket/prefix/<rel path>.

    Returns a summary dict. Raises PublishConflict (nothing uploaded) when a
    key holds different bytes, PublishError when S3 or a local read fails.
    """
    started = time.monotonic()
    local_dir = Path(local_dir).absolute()  # the resume command must work from any cwd
    prefix = prefix.strip("/")
    if not prefix:
        raise BadArgument("--prefix must not be empty: a run needs its own prefix")
    manifest_extra = dict(manifest_extra or {})
    reserved = {"schema", "bucket", "prefix", "objects", "created_at"} & manifest_extra.keys()
    if reserved:
        raise ValueError(f"manifest_extra must not set {sorted(reserved)}")
    files = _list_files(local_dir, prefix)
    s3 = s3 or s3_client()
    command = publish_command(local_dir, bucket, prefix)

    # Phase 1: hash + HEAD every file. Decide everything before writing
    # anything, so a conflict or unreadable file leaves S3 untouched.
    try:
        # One LIST instead of a HEAD per file: a new run's prefix is empty, so nothing needs a HEAD.
        existing: set[str] | None = set(list_keys(s3, bucket, prefix + "/"))
    except Exception:
        existing = None  # HEAD each file instead; its errors are reported per file below
    _, errors, _ = run_parallel(lambda f: _plan(s3, bucket, f, existing), files, max_workers, key=lambda f: f.key)
    if errors:
        raise _publish_error("checking", bucket, prefix, local_dir, command, files, errors, uploaded=[])
    conflicts = [f for f in files if f.action == "conflict"]
    if conflicts:
        lines = "\n".join(f"  s3://{bucket}/{f.key}: {f.note}" for f in conflicts)
        raise PublishConflict(
            f"refusing to overwrite {len(conflicts)} existing object(s) holding different bytes "
            f"(nothing was uploaded):\n{lines}\n"
            "Publish to a new prefix, or delete the remote object(s) deliberately first.",
            keys=[f.key for f in conflicts],
        )

    # Phase 2: upload what is missing (or an extended attempts/ file).
    to_send = [f for f in files if f.action in ("upload", "replace")]
    done, errors, _ = run_parallel(lambda f: _upload(s3, bucket, f), to_send, max_workers, key=lambda f: f.key)
    if errors:
        raise _publish_error("uploading", bucket, prefix, local_dir, command, files, errors, uploaded=done)

    # Phase 3: the manifest, last. Its presence means "complete".
    try:
        manifest_written = _write_manifest(s3, bucket, prefix, files, manifest_extra)
    except ChecksumError:
        raise  # the existing manifest is damaged: needs a human, not a retry
    except Exception as exc:
        raise _publish_error(
            "writing the manifest",
            bucket,
            prefix,
            local_dir,
            command,
            files,
            {f"{prefix}/{MANIFEST_NAME}": exc},
            uploaded=[f.key for f in to_send],
        ) from exc

    return {
        "bucket": bucket,
        "prefix": prefix,
        "objects": len(files),
        "bytes": sum(f.size for f in files),
        "uploaded": sum(f.action == "upload" for f in files),
        "replaced": sum(f.action == "replace" for f in files),
        "skipped": sum(f.action == "skip" for f in files),
        "uploaded_bytes": sum(f.size for f in to_send),
        "manifest_key": f"{prefix}/{MANIFEST_NAME}",
        "manifest_written": manifest_written,
        "seconds": round(time.monotonic() - started, 3),
    }


def publish_command(local_dir: Path, bucket: str, prefix: str) -> str:
    """The command that publishes (or finishes publishing) this run later."""
    return "infersweep publish {} --bucket {} --prefix {}".format(
        shlex.quote(str(local_dir)), shlex.quote(bucket), shlex.quote(prefix)
    )


def _list_files(local_dir: Path, prefix: str) -> list[_File]:
    if not local_dir.is_dir():
        raise BadArgument(f"{local_dir}: not a directory; give the run's result folder")
    files = []
    # os.walk does not follow directory symlinks (no loops, no escaping the
    # tree); symlinks to files are published with the target's bytes.
    for root, dirs, names in os.walk(local_dir):
        dirs.sort()
        for name in sorted(names):
            path = Path(root, name)
            if not path.is_file():
                continue  # FIFOs, sockets, dangling links: no content to keep
            rel = path.relative_to(local_dir).as_posix()
            files.append(_File(path=path, rel=rel, key=f"{prefix}/{rel}"))
    if not files:
        raise BadArgument(f"{local_dir}: no files to publish under it")
    if any(f.rel == MANIFEST_NAME for f in files):
        raise BadArgument(f"{local_dir}/{MANIFEST_NAME} would collide with the run manifest; rename it")
    return files


def _plan(s3, bucket: str, f: _File, existing: set[str] | None = None) -> None:
    stat = f.path.stat()
    f.size, f.mtime_ns = stat.st_size, stat.st_mtime_ns
    f.sha256 = _sha256_file(f.path)
    head = head_or_none(s3, bucket, f.key) if existing is None or f.key in existing else None
    if head is None:
        f.action = "upload"
        return
    remote_sha = head.get("Metadata", {}).get(SHA_META, "")
    remote_size = head["ContentLength"]
    if remote_sha == f.sha256 and remote_size == f.size:
        f.action = "skip"
    elif (
        _is_append_only(f.rel)
        and remote_sha
        and remote_size <= f.size
        and (_sha256_file(f.path, limit=remote_size) == remote_sha)
    ):
        # The local file only grew since the last publish: replacing the
        # object keeps every byte it held.
        f.action = "replace"
    else:
        f.action = "conflict"
        f.note = f"remote sha256={remote_sha or 'missing'} size={remote_size}, local sha256={f.sha256} size={f.size}"


def _upload(s3, bucket: str, f: _File) -> None:
    _check_unchanged(f)
    content_type = _content_type(f.path)
    s3.upload_file(
        str(f.path),
        bucket,
        f.key,
        ExtraArgs={"Metadata": {SHA_META: f.sha256}, "ContentType": content_type},
        Config=TRANSFER_CONFIG,
    )
    # A file still being written would leave an object whose bytes do not
    # match its recorded sha256; fail loudly instead.
    _check_unchanged(f)


def _check_unchanged(f: _File) -> None:
    stat = f.path.stat()
    if (stat.st_size, stat.st_mtime_ns) != (f.size, f.mtime_ns):
        raise RuntimeError(f"{f.path} changed while being published; is a process still writing it?")


def _is_append_only(rel: str) -> bool:
    return APPEND_ONLY_DIR in rel.split("/")[:-1]


def _write_manifest(s3, bucket: str, prefix: str, files: list[_File], extra: dict) -> bool:
    """Write prefix/manifest.json; return False if an identical one exists.

    Objects listed by an earlier manifest under this prefix (e.g. published
    from another pod) stay listed, so the manifest only ever grows.
    """
    key = f"{prefix}/{MANIFEST_NAME}"
    objects = {}
    old = None
    if head_or_none(s3, bucket, key) is not None:
        old = json.loads(read_object_verified(bucket, key, s3=s3))
        objects = {o["key"]: o for o in old.get("objects", [])}
    objects.update({f.key: {"key": f.key, "sha256": f.sha256, "size": f.size} for f in files})
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "bucket": bucket,
        "prefix": prefix,
        "objects": [objects[k] for k in sorted(objects)],
        **extra,
    }
    if old is not None and {k: v for k, v in old.items() if k != "created_at"} == manifest:
        return False  # a retried step: leave the existing manifest alone
    manifest["created_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    body = json.dumps(manifest, indent=2, sort_keys=True).encode()
    s3.put_object(
        Bucket=bucket,
        Key=key,
        Body=body,
        ContentType="application/json",
        Metadata={SHA_META: hashlib.sha256(body).hexdigest()},
    )
    return True


def _publish_error(stage, bucket, prefix, local_dir, command, files, errors, uploaded) -> PublishError:
    uploaded_keys = sorted(uploaded)
    skipped = [f.key for f in files if f.action == "skip"]
    present = set(uploaded_keys) | set(skipped)
    missing = sorted(f.key for f in files if f.key not in present)
    first_key, first_exc = next(iter(errors.items()))
    message = (
        f"publish to s3://{bucket}/{prefix} failed while {stage}: {first_key}: {first_exc}\n"
        f"uploaded now: {len(uploaded_keys)}{_some(uploaded_keys)}\n"
        f"already present (skipped): {len(skipped)}\n"
        f"NOT uploaded: {len(missing)}{_some(missing)}\n"
        f"No manifest was written, so the run counts as incomplete. "
        f"The local copy at {local_dir} is intact (nothing local is changed or deleted).\n"
        f"To publish it later: {command}"
    )
    return PublishError(
        message, uploaded=uploaded_keys, not_uploaded=missing, command=command, causes=list(errors.values())
    )


def _some(keys: list[str], limit: int = 10) -> str:
    if not keys:
        return ""
    more = f" ... (+{len(keys) - limit} more)" if len(keys) > limit else ""
    return " (" + ", ".join(keys[:limit]) + more + ")"


# -- verify -----------------------------------------------------------------


def verify_run(bucket: str, prefix: str, s3=None, max_workers: int = MAX_WORKERS) -> dict:
    """Check a published run end to end: manifest present, every object intact (the one checker of
    infersweep.results.manifest; IncompleteRunError or ChecksumError otherwise).

    A prefix that holds a run pointer instead (index.py: an experiment's treatment as a run of its recipe) is
    verified where the pointer says, as every reader of the store follows it: the summary's `stored_at` is the
    prefix its bytes are under (`prefix` itself for a run stored there) and `pointer` the pointer's key. A
    pointer to no complete run is DanglingRunPointer, the store's one line."""
    started = time.monotonic()
    s3 = s3 or s3_client()
    prefix = prefix.strip("/")
    stored, pointer = prefix, None
    body = _manifest_body(s3, bucket, prefix)
    if body is None and (pointed := _pointed_prefix(s3, bucket, prefix)):
        stored, pointer = pointed
        body = _manifest_body(s3, bucket, stored)
    manifest_key = f"{stored}/{MANIFEST_NAME}"
    manifest = parse_manifest(body, f"s3://{bucket}/{manifest_key}", prefix)
    objects = listed_objects(manifest)
    _, errors, _ = run_parallel(lambda o: _verify_object(s3, bucket, o), objects, max_workers, key=lambda o: o["key"])
    if errors:
        # Report the first key in manifest order, so the message is stable.
        key = next(o["key"] for o in objects if o["key"] in errors)
        raise errors[key]
    listed = {o["key"] for o in objects} | {manifest_key}
    unlisted = [k for k in list_keys(s3, bucket, stored + "/") if k not in listed]
    return {
        "bucket": bucket,
        "prefix": prefix,
        "stored_at": stored,  # where the run's bytes are: under prefix, or where its pointer says
        "pointer": pointer,
        "ok": True,
        "objects": len(objects),
        "bytes": sum(o["size"] for o in objects),
        "unlisted_keys": unlisted,  # e.g. left by an interrupted later publish
        "created_at": manifest.get("created_at"),
        "seconds": round(time.monotonic() - started, 3),
    }


def _manifest_body(s3, bucket: str, prefix: str) -> bytes | None:
    """prefix/manifest.json, checked against its sha256 metadata; None when there is none."""
    try:
        return read_object_verified(bucket, f"{prefix}/{MANIFEST_NAME}", s3=s3)
    except ClientError as exc:
        if not is_missing(exc):
            raise
        return None


def _pointed_prefix(s3, bucket: str, prefix: str) -> tuple[str, str] | None:
    """(the prefix a run pointer at `prefix` names, the pointer's key), read and checked by RunStore as every
    reader does; None when there is no pointer there. DanglingRunPointer when no complete run is there."""
    parts = prefix.rsplit("/", 2)  # a pointer is at [<base>/]<recipe>/<run-id> only
    if len(parts) < 2 or head_or_none(s3, bucket, f"{prefix}/{ix.POINTER_NAME}") is None:
        return None
    base, recipe, run_id = parts if len(parts) == 3 else ["", *parts]
    store = RunStore(f"s3://{bucket}/{base}" if base else f"s3://{bucket}", s3=s3)
    store.manifest(recipe, run_id)  # the pointer's checks, and DanglingRunPointer when its copy is gone
    return store.stored_prefix(recipe, run_id), ix.pointer_key(base, recipe, run_id)


def _verify_object(s3, bucket: str, entry: dict) -> None:
    url = f"s3://{bucket}/{entry['key']}"
    try:
        response = s3.get_object(Bucket=bucket, Key=entry["key"])
    except ClientError as exc:
        if is_missing(exc):
            raise missing_object(url) from exc
        raise
    digest, size = hashlib.sha256(), 0
    for chunk in response["Body"].iter_chunks(CHUNK):  # streamed, not held in memory
        digest.update(chunk)
        size += len(chunk)
    check_object(entry, digest.hexdigest(), size, url)


def read_object_verified(bucket: str, key: str, s3=None) -> bytes:
    """Read a (small) object and check it against its sha256 metadata (ChecksumError)."""
    s3 = s3 or s3_client()
    response = s3.get_object(Bucket=bucket, Key=key)
    return check_sha256_metadata(
        response["Body"].read(), response.get("Metadata", {}).get(SHA_META), f"s3://{bucket}/{key}", key, required=True
    )


# -- helpers ----------------------------------------------------------------


def _sha256_file(path: Path, limit: int | None = None) -> str:
    digest = hashlib.sha256()
    remaining = limit
    with open(path, "rb") as fh:
        while remaining is None or remaining > 0:
            chunk = fh.read(CHUNK if remaining is None else min(CHUNK, remaining))
            if not chunk:
                break
            digest.update(chunk)
            if remaining is not None:
                remaining -= len(chunk)
    return digest.hexdigest()


def _content_type(path: Path) -> str:
    extra = EXTRA_CONTENT_TYPES.get(path.suffix.lower())
    if extra:
        return extra
    guessed, encoding = mimetypes.guess_type(path.name)
    if encoding:
        # Never set Content-Encoding: HTTP clients would transparently
        # decompress on download and the sha256 would no longer match.
        return {"gzip": "application/gzip", "bzip2": "application/x-bzip2", "xz": "application/x-xz"}.get(
            encoding, "application/octet-stream"
        )
    return guessed or "application/octet-stream"


# -- the publish step and `infersweep publish` --------------------------------


def free_retry_prefix(bucket: str, prefix: str, s3=None) -> str:
    """`<prefix>-rN` for the first N whose prefix has no manifest (the naming `run --local --resume` uses):
    a retried run keeps the first attempt's published results and adds its own beside them."""
    s3 = s3 or s3_client()
    prefix = prefix.strip("/")
    for n in range(1, 1000):
        candidate = f"{prefix}-r{n}"
        if f"{candidate}/{MANIFEST_NAME}" not in set(list_keys(s3, bucket, candidate + "/")):
            return candidate
    raise PublishError(f"{prefix}: 999 retries already published")


def _pointer_place(store_prefix: str, stored_prefix: str) -> tuple[str, str, str, str]:
    """(base, recipe, run_id, the run's prefix relative to base) of a pointer at `store_prefix` to the run at
    `stored_prefix`; BadArgument when the run is not under that store's base (a pointer names it from there)."""
    try:
        base, recipe, run_id = ix.split_run_prefix(store_prefix)
    except ValueError as e:
        raise BadArgument(f"--store-prefix {store_prefix}: {e}") from None
    stored_prefix = stored_prefix.strip("/")
    if not stored_prefix.startswith(f"{base}/" if base else ""):
        raise BadArgument(
            f"--store-prefix {store_prefix}: the run is published at {stored_prefix}, outside that store's base "
            f"{base!r}; give a store prefix <base>/<recipe>/<run-id> whose base holds {stored_prefix}"
        )
    return base, recipe, run_id, stored_prefix[len(base) + 1 :] if base else stored_prefix


def publish_pointer(bucket: str, store_prefix: str, stored_prefix: str, *, retry_prefix: bool = False, s3=None) -> str:
    """Make the complete run published at s3://bucket/stored_prefix the run <base>/<recipe>/<run-id> =
    `store_prefix` of the results store at <base>: a pointer there and an index entry (RunStore.point_run),
    no second copy of its objects. The pointed-at run must be under the same base (the pointer names it
    relative to the base). With `retry_prefix`, a `store_prefix` that holds something else (the pointer of an
    earlier attempt, which went to another prefix) makes this one `store_prefix-rN`, as publish_run does.
    Returns the run prefix the pointer went to."""
    base, recipe, run_id, stored_at = _pointer_place(store_prefix, stored_prefix)
    store = RunStore(f"s3://{bucket}/{base}" if base else f"s3://{bucket}", s3=s3)
    for candidate in [run_id] + [f"{run_id}-r{n}" for n in range(1, 1000)]:
        try:
            store.point_run(recipe, candidate, stored_at)
        except RunPointerConflict:
            if not retry_prefix:
                raise
            continue
        return ix.run_prefix(base, recipe, candidate)
    raise PublishError(f"{store_prefix}: 999 retries already published")


def publish_run(
    local_dir: Path, bucket: str, prefix: str, *, retry_prefix: bool = False, store_prefix: str = ""
) -> dict:
    """Publish a run folder and index it, saying what happened; the work of `python -m steps.publish`.

    Returns publish_tree's summary (an index entry that could not be written is reported, not fatal:
    `RunStore.reindex()` lists the run later). Raises what publish_tree raises: PublishConflict when a key
    holds other bytes (exit 2), PublishError when S3 or a local read failed, with the S3 client's errors in
    `causes` (the step runner, steps/runner.py, exits 75 when every one of them is transient, so Argo retries
    it, else 1), ValueError for a folder that cannot be published. With `retry_prefix`, a PREFIX that
    already holds an earlier attempt of the run (an Argo UI Retry of the same workflow re-publishes) makes
    this attempt go to PREFIX-rN instead, never over it. With `store_prefix`, the published run is also the
    run `store_prefix` of the results store, by a pointer (publish_pointer); a pointer that cannot be written
    fails the publish (a retried step writes it: nothing else would).
    """
    if store_prefix:
        _pointer_place(store_prefix, prefix)  # a store prefix that cannot hold the pointer: refused before uploading
    try:
        summary = publish_tree(local_dir, bucket=bucket, prefix=prefix)
    except PublishConflict:
        if not retry_prefix:
            raise
        prefix = free_retry_prefix(bucket, prefix)
        print(
            f"publish: {prefix.rsplit('-r', 1)[0]} already holds an earlier attempt of this run; "
            f"publishing this attempt under {prefix}",
            file=sys.stderr,
        )
        summary = publish_tree(local_dir, bucket=bucket, prefix=prefix)
    print(
        f"published s3://{summary['bucket']}/{summary['prefix']}: {summary['objects']} objects, "
        f"{summary['bytes']} bytes, {summary['uploaded'] + summary['replaced']} uploaded, "
        f"{summary['skipped']} skipped, manifest {'written' if summary['manifest_written'] else 'unchanged'}, "
        f"{summary['seconds']:.2f} s"
    )
    try:
        # Listed only now that the manifest is there: the index never shows a half-written run.
        print(f"indexed as s3://{bucket}/{publish_index_entry(bucket, prefix)}")
    except Exception as exc:  # the run itself is published and complete; `RunStore.reindex()` can list it later
        print(f"publish: run published, but its index entry was not written: {exc}", file=sys.stderr)
    if store_prefix:
        pointed = publish_pointer(bucket, store_prefix, prefix, retry_prefix=retry_prefix)
        print(f"a run of its recipe as s3://{bucket}/{pointed}: a pointer to s3://{bucket}/{prefix}, not a copy")
    return summary
