"""The run index: one small entry object per complete run, so "all runs of recipe X" is one LIST.

    <base>/<recipe>/<run-id>/...                  the run (published by infersweep.results.publish)
    <base>/<recipe>/<run-id>/manifest.json        written last by publish: the run is complete
    <base>/_index/<recipe>/<run-id>.json          the index entry, written only after the manifest
    <base>/<recipe>/<run-id>/run-pointer.json     instead of the run's objects: where in the store they are
    <base>/experiments/<experiment>/...           a cluster experiment's treatments (workflows/experiment.py)

A run pointer makes a run stored elsewhere in the store a run of its recipe without a second copy: an
experiment publishes each treatment once, under experiments/<experiment>/<workflow>/<treatment>, and points
<base>/<recipe>/<workflow>-<treatment> at it (infersweep.results.publish publish_pointer). Readers (RunStore)
follow it: the run lists, loads and compares as if its objects were under its own prefix. Its index entry says
where they are (`stored_at`). `experiments` is therefore no recipe: listings skip it.

Each run writes only its own entry key, so concurrent runs can never clobber each other's entries (there is
no shared index object to read-modify-write). An entry is written only once the run's manifest exists, and
it records the manifest's sha256: an interrupted run has no manifest, hence no entry, hence is never listed.
If an entry write fails after a successful publish, the run is complete but unlisted until
`RunStore.reindex()` (or `index_run`) writes it: nothing is lost, only not yet findable by the index.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

INDEX_DIR = "_index"
INDEX_SCHEMA = "infersweep.run-index/v1"
RUN_RECORD = "summary/run.json"
EXPERIMENTS_DIR = "experiments"
NOT_RECIPES = frozenset({INDEX_DIR, EXPERIMENTS_DIR})  # folders of a store's base that hold no recipe's runs
POINTER_NAME = "run-pointer.json"
POINTER_SCHEMA = "infersweep.run-pointer/v1"


def split_run_prefix(run_prefix: str) -> tuple[str, str, str]:
    """`<base>/<recipe>/<run-id>` -> (base, recipe, run_id). The pipeline publishes to exactly this shape."""
    parts = run_prefix.strip("/").split("/")
    if len(parts) < 3 or not all(parts[-2:]):
        raise ValueError(f"run prefix {run_prefix!r}: expected <base>/<recipe>/<run-id>")
    return "/".join(parts[:-2]), parts[-2], parts[-1]


def run_prefix(base: str, recipe: str, run_id: str) -> str:
    return "/".join(p for p in (base.strip("/"), recipe, run_id) if p)


def entry_key(base: str, recipe: str, run_id: str) -> str:
    return "/".join(p for p in (base.strip("/"), INDEX_DIR, recipe, f"{run_id}.json") if p)


def index_prefix(base: str, recipe: str | None = None) -> str:
    return "/".join(p for p in (base.strip("/"), INDEX_DIR, recipe or "") if p) + "/"


def pointer_key(base: str, recipe: str, run_id: str) -> str:
    return run_prefix(base, recipe, run_id) + "/" + POINTER_NAME


def make_pointer(recipe: str, run_id: str, stored_at: str) -> dict:
    """The pointer of run recipe/run_id to the run stored at `stored_at` (a prefix relative to the store's
    base, so the pointer still holds in a copy of the store, e.g. a local run's store folder). No timestamp: a
    retried publish writes the same bytes, which is how it knows the pointer is its own."""
    return {"schema": POINTER_SCHEMA, "recipe": recipe, "run_id": run_id, "stored_at": stored_at.strip("/")}


def manifest_rel(manifest: dict, key: str, run_id: str) -> str:
    """An object's path inside its run, from its manifest key: the key less the manifest's own prefix (a
    pointed-at run's keys hold no `/<run-id>/`), else what follows the run id."""
    prefix = str(manifest.get("prefix") or "").strip("/")
    if prefix and key.startswith(prefix + "/"):
        return key[len(prefix) + 1 :]
    return key.split(f"/{run_id}/", 1)[-1]


def make_entry(
    base: str,
    recipe: str,
    run_id: str,
    manifest_bytes: bytes,
    run_record: dict[str, Any] | None,
    stored_at: str | None = None,
) -> dict:
    manifest = json.loads(manifest_bytes)
    record = run_record or {}
    return {
        "schema": INDEX_SCHEMA,
        "run_id": run_id,
        "recipe": recipe,
        "run_prefix": run_prefix(base, recipe, run_id),
        "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(),
        "manifest_created_at": manifest.get("created_at"),
        "indexed_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "results_schema": record.get("schema_version"),
        "points": record.get("points"),
        "measured_points": record.get("measured_points"),
        "context": record.get("context") or {},
    } | ({"stored_at": stored_at} if stored_at else {})
