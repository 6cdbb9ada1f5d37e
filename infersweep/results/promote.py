"""Promote a published run to its recipe's baseline: what the regression-check step compares against.

The regression check (infersweep/results/baseline.py check_against_baseline) downloads everything under
s3://<bucket>/<baseline-prefix>/ and reads it as a run folder (summary/results.parquet inside); the nightly
CronWorkflows pass baseline-prefix = <nightly.baselines_prefix>/<recipe> (workflows/cron.py). So a baseline
is a copy of one run's published files at <baselines>/<recipe>/, plus baseline.json saying which run it is.

Order, so a reader never sees a baseline that is half one run and half another as complete: every file of the
new run is written (checked against its manifest's sha256 as it is read), then baseline.json, then the files
of the previous baseline that the new one does not have are deleted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from infersweep.results.index import manifest_rel
from infersweep.results.store import RunStore, _DirBackend, _S3Backend

BASELINE_RECORD = "baseline.json"


def _delete(store: RunStore, key: str) -> None:
    backend = store.backend
    if isinstance(backend, _S3Backend):
        backend.s3.delete_object(Bucket=backend.bucket, Key=key)
    elif isinstance(backend, _DirBackend):
        (Path(backend.root) / key).unlink(missing_ok=True)


def baseline_prefix(dest: RunStore, recipe: str) -> str:
    return "/".join(p for p in (dest.base, recipe) if p)


def promote(source: RunStore, run_ref: str, dest: RunStore) -> dict:
    """Make the complete run `run_ref` of `source` the baseline of its recipe under `dest`; returns the record."""
    recipe, run_id = source.locate(run_ref)
    manifest, manifest_bytes = source.manifest(recipe, run_id)  # IncompleteRunError without one
    prefix = baseline_prefix(dest, recipe)
    before = set(dest.backend.list(prefix + "/"))
    written = set()
    for obj in manifest["objects"]:
        rel = manifest_rel(manifest, obj["key"], run_id)  # a pointed-at run's keys hold no /<run-id>/
        body = source.read(recipe, run_id, rel, manifest)  # checked against the manifest
        dest.backend.put(f"{prefix}/{rel}", body)
        written.add(f"{prefix}/{rel}")
    dest.backend.put(f"{prefix}/manifest.json", manifest_bytes)
    record = {
        "recipe": recipe,
        "run_id": run_id,
        "source": source.backend.url(source.stored_prefix(recipe, run_id) + "/"),
        "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(),
        "promoted_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    dest.backend.put(f"{prefix}/{BASELINE_RECORD}", json.dumps(record, indent=1, sort_keys=True).encode())
    written |= {f"{prefix}/manifest.json", f"{prefix}/{BASELINE_RECORD}"}
    for stale in sorted(before - written):
        _delete(dest, stale)
    record["location"] = dest.backend.url(prefix) + "/"
    return record


def current_baseline(dest: RunStore, recipe: str) -> dict | None:
    body = dest.backend.get(f"{baseline_prefix(dest, recipe)}/{BASELINE_RECORD}")
    return json.loads(body) if body else None
