"""A published run's manifest.json, and the one checker every reader of a published run uses.

    <run prefix>/manifest.json   {"schema": MANIFEST_SCHEMA, "bucket", "prefix", "created_at",
                                  "objects": [{"key", "sha256", "size"}, ...], ...extra}

Publishing (infersweep.results.publish.publish_tree into S3, RunStore.put_run into a folder) writes it
last, after every object it lists: its presence means "the run is complete". Readers (verify_run, RunStore)
check it here, with one family of errors: RunIntegrityError, as IncompleteRunError (no manifest, or a
listed object missing) or ChecksumError (bytes that differ from what was recorded).

No boto3 here: the folder store and the index read manifests without it.
"""

from __future__ import annotations

import hashlib
import json

from infersweep.errors import UserError

MANIFEST_NAME = "manifest.json"
MANIFEST_SCHEMA = "infersweep.run-manifest/v1"
SHA_META = "sha256"  # every published object's sha256, stored by S3 as the x-amz-meta-sha256 header


class RunIntegrityError(UserError, RuntimeError):
    """A published run cannot be trusted as it is (see the subclasses): the run given is refused, one line."""


class IncompleteRunError(RunIntegrityError):
    """The run has no manifest (its publish never finished) or lacks an object the manifest lists."""


class ChecksumError(RunIntegrityError):
    """Stored bytes do not match the sha256 (and size) recorded for them."""

    def __init__(self, message: str, key: str = ""):
        super().__init__(message)
        self.key = key


def parse_manifest(body: bytes | None, url: str, run: str) -> dict:
    """The manifest at `url` (of run `run`, for the message), read as `body` (None: there is none)."""
    if body is None:
        raise IncompleteRunError(
            f"run {run} is incomplete: no manifest at {url}. Its publish never finished (an interrupted or "
            "failing run); its files are not trusted as results. Finish it with "
            "`infersweep publish DIR --bucket B --prefix P` from the run's folder."
        )
    manifest = json.loads(body)
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        found = manifest.get("schema") if isinstance(manifest, dict) else type(manifest).__name__
        raise RunIntegrityError(f"{url}: unknown manifest schema {found!r} (this reader knows {MANIFEST_SCHEMA})")
    return manifest


def listed_objects(manifest: dict) -> list[dict]:
    """The manifest's object entries ({key, sha256, size}), in its order."""
    return list(manifest.get("objects") or [])


def missing_object(url: str) -> IncompleteRunError:
    return IncompleteRunError(f"{url} is listed in the run's manifest but missing")


def check_object(entry: dict, sha256: str, size: int, url: str) -> None:
    """ChecksumError unless an object's bytes (their sha256 and size) are the ones its manifest entry records."""
    if sha256 != entry["sha256"] or size != entry["size"]:
        raise ChecksumError(
            f"{url}: content sha256={sha256} size={size}, manifest says sha256={entry['sha256']} size={entry['size']}",
            key=entry["key"],
        )


def check_sha256_metadata(body: bytes, recorded: str | None, url: str, key: str = "", *, required: bool) -> bytes:
    """`body` when it matches the sha256 its object's metadata records; ChecksumError otherwise.

    `required`: an object without the metadata fails too (publish writes it on every object; a reader that
    also accepts objects written by other tools passes False)."""
    if not recorded and not required:
        return body
    actual = hashlib.sha256(body).hexdigest()
    if actual != recorded:
        raise ChecksumError(f"{url}: content sha256={actual}, metadata sha256={recorded or 'missing'}", key=key)
    return body
