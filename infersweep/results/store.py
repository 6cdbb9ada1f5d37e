"""RunStore: the published runs of an S3 prefix or a local folder with the same layout (see index.py).

    store = RunStore("s3://infersweep-results/runs")      # or RunStore("/data/runs")
    store.runs(recipe="nemotron-3-nano-fp8-vllm-agg-kv")   # one LIST (+ the small entries): a DataFrame
    run = store.load(run_id)                                # refuses a run without a manifest
    df = store.table([run_a, run_b])                        # their results tables, concatenated

"Complete" means the run's manifest.json exists (publish writes it last); load() refuses anything else, and
checks every file it reads against the sha256 the manifest records (infersweep.results.manifest: the same
checker and errors as verify_run).

A run whose prefix holds a run pointer (index.py: an experiment's treatment, stored once under experiments/)
is read from where the pointer says, by every method here: listing, locate, load, index, copy, promote. A
pointer to nothing is refused with one line (DanglingRunPointer).
"""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.errors import BadArgument, UserError
from infersweep.results import index as ix
from infersweep.results.legacy import upgrade_table
from infersweep.results.manifest import (
    MANIFEST_NAME,
    MANIFEST_SCHEMA,
    SHA_META,
    IncompleteRunError,
    RunIntegrityError,
    check_object,
    check_sha256_metadata,
    missing_object,
    parse_manifest,
)
from infersweep.results.run import METRICS_SKIPPED_FILE, RAW_FILE, RESULTS_FILE, SERVER_METRICS_FILE, Run, read_raw

# What the runs listing shows of each run's context (RunStore.runs), after its id, recipe and manifest.
RUN_CONTEXT_COLUMNS = (
    "recipe_hash",
    "engine",
    "topology",
    "router",
    "gpu_type",
    "gpu_count",
    "model_revision",
    "run_start",
    "run_end",
)


class RunNotFound(UserError, LookupError):
    """No run of that id under this store."""


class DanglingRunPointer(IncompleteRunError):
    """A run pointer names a prefix that holds no complete run (the experiment copy was deleted or moved)."""


class RunPointerConflict(UserError, RuntimeError):
    """A pointer would go where another run (or a pointer elsewhere) already is; nothing was written."""

    exit_code = 2


# ---------------------------------------------------------------- backends


class _DirBackend:
    def __init__(self, root: Path):
        self.root = Path(root)

    def url(self, key: str) -> str:
        return str(self.root / key)

    def list(self, prefix: str) -> list[str]:
        base = self.root / prefix
        folder = base if prefix.endswith("/") else base.parent
        if not folder.is_dir():
            return []
        keys = [p.relative_to(self.root).as_posix() for p in folder.rglob("*") if p.is_file()]
        return sorted(k for k in keys if k.startswith(prefix) and not k.endswith(".tmp"))

    def children(self, prefix: str) -> builtins.list[str]:  # `list` is the method above here
        folder = self.root / prefix
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []

    def get(self, key: str) -> bytes | None:
        try:
            return (self.root / key).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, key: str, body: bytes) -> None:
        path = self.root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(body)
        os.replace(tmp, path)  # readers see the old entry or the new one, never half of one


class _S3Backend:
    def __init__(self, bucket: str, s3=None):
        from infersweep.results.s3 import s3_client  # boto3 only when S3 is used

        self.bucket = bucket
        self.s3 = s3 or s3_client()

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def list(self, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(o["Key"] for o in page.get("Contents", []))
        return keys

    def children(self, prefix: str) -> builtins.list[str]:  # `list` is the method above here
        names: builtins.list[str] = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix, Delimiter="/"):
            names.extend(p["Prefix"][len(prefix) :].rstrip("/") for p in page.get("CommonPrefixes", []))
        return names

    def get(self, key: str) -> bytes | None:
        from botocore.exceptions import ClientError

        try:
            response = self.s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        # Objects written by other tools may lack the metadata; the manifest's sha256 still checks them.
        return check_sha256_metadata(
            response["Body"].read(), response.get("Metadata", {}).get(SHA_META), self.url(key), key, required=False
        )

    def put(self, key: str, body: bytes) -> None:
        self.s3.put_object(
            Bucket=self.bucket,
            Key=key,
            Body=body,
            ContentType="application/json",
            Metadata={SHA_META: hashlib.sha256(body).hexdigest()},
        )


# ---------------------------------------------------------------- the store


class RunStore:
    def __init__(self, location: str | Path, s3=None):
        text = str(location)
        if text.startswith("s3://"):
            bucket, _, base = text[5:].partition("/")
            if not bucket:
                raise BadArgument(f"{location}: write s3://BUCKET/PREFIX")
            self.backend: Any = _S3Backend(bucket, s3)
            self.base = base.strip("/")
        else:
            self.backend = _DirBackend(Path(location))
            self.base = ""
        self.location = text
        self._stored: dict[tuple[str, str], str] = {}  # (recipe, run_id) -> the prefix its objects are under

    # -- listing

    def runs(self, recipe: str | None = None) -> pd.DataFrame:
        """The complete runs (of one recipe), newest first: one LIST of the index, then its small entries."""
        keys = [k for k in self.backend.list(ix.index_prefix(self.base, recipe)) if k.endswith(".json")]
        with ThreadPoolExecutor(max_workers=8) as pool:
            bodies = list(pool.map(self.backend.get, keys))
        rows = []
        for body in bodies:
            if body is None:
                continue  # deleted between LIST and GET
            entry = json.loads(body)
            ctx = entry.get("context") or {}
            rows.append(
                {
                    "run_id": entry["run_id"],
                    "recipe": entry["recipe"],
                    "manifest_created_at": entry.get("manifest_created_at"),
                    "measured_points": entry.get("measured_points"),
                    "points": entry.get("points"),
                    **{k: ctx.get(k) for k in RUN_CONTEXT_COLUMNS},
                }
            )
        cols = ["run_id", "recipe", "manifest_created_at", "measured_points", "points", *RUN_CONTEXT_COLUMNS]
        df = pd.DataFrame(rows, columns=cols)
        return df.sort_values("manifest_created_at", ascending=False, kind="stable").reset_index(drop=True)

    # -- loading

    def locate(self, run_ref: str) -> tuple[str, str]:
        """(recipe, run_id) of `RUN_ID` or `RECIPE/RUN_ID`."""
        if "/" in run_ref:
            recipe, run_id = run_ref.strip("/").rsplit("/", 1)
            if run_id in self.backend.children(self._prefix(recipe)):
                return recipe, run_id
            raise RunNotFound(f"no run {run_ref!r} in {self.location}")
        for key in self.backend.list(ix.index_prefix(self.base)):
            if key.endswith(f"/{run_ref}.json"):
                return key.rsplit("/", 2)[-2], run_ref
        # Not indexed: a run whose publish never finished, or one published before indexing.
        for recipe in self.recipes():
            if self.backend.children(self._prefix(recipe)).count(run_ref):
                return recipe, run_ref
        raise RunNotFound(
            f"no run {run_ref!r} in {self.location} (`infersweep runs --store {self.location}` lists the complete ones)"
        )

    def _prefix(self, *parts: str) -> str:
        return "/".join(p for p in (self.base, *parts) if p) + "/" if (self.base or parts) else ""

    def recipes(self) -> builtins.list[str]:
        """The recipes with runs (or run folders) in this store: its base's folders, less _index/ and
        experiments/ (an experiment's treatments are runs of their recipes through pointers)."""
        return [r for r in self.backend.children(self._prefix()) if r not in ix.NOT_RECIPES]

    def pointer(self, recipe: str, run_id: str) -> dict | None:
        """The run's pointer (index.py make_pointer), or None when the run's objects are under its own prefix."""
        key = ix.pointer_key(self.base, recipe, run_id)
        body = self.backend.get(key)
        if body is None:
            return None
        try:
            pointer = json.loads(body)
        except ValueError:
            pointer = None
        if not isinstance(pointer, dict) or pointer.get("schema") != ix.POINTER_SCHEMA:
            found = pointer.get("schema") if isinstance(pointer, dict) else "not a JSON object"
            raise RunIntegrityError(
                f"{self.backend.url(key)}: unknown run pointer schema {found!r} (this reader knows {ix.POINTER_SCHEMA})"
            )
        stored_at = str(pointer.get("stored_at") or "")
        # a prefix of this store, never one outside it (a store folder's pointer must not read other files)
        if not stored_at.strip("/") or stored_at.startswith("/") or ".." in stored_at.split("/"):
            raise RunIntegrityError(f"{self.backend.url(key)}: stored_at {stored_at!r} names no prefix of this store")
        return pointer

    def stored_prefix(self, recipe: str, run_id: str) -> str:
        """The key prefix that holds the run's objects: its own, or the one its pointer names."""
        if (recipe, run_id) not in self._stored:
            pointer = self.pointer(recipe, run_id)
            own = ix.run_prefix(self.base, recipe, run_id)
            self._stored[recipe, run_id] = self._join(pointer["stored_at"]) if pointer else own
        return self._stored[recipe, run_id]

    def _join(self, rel: str) -> str:
        return "/".join(p for p in (self.base, rel.strip("/")) if p)

    def manifest(self, recipe: str, run_id: str) -> tuple[dict, bytes]:
        prefix = self.stored_prefix(recipe, run_id)
        key = prefix + "/" + MANIFEST_NAME
        body = self.backend.get(key)
        if body is None and prefix != ix.run_prefix(self.base, recipe, run_id):
            raise DanglingRunPointer(
                f"run {recipe}/{run_id} is stored at {self.backend.url(prefix)}/ (its pointer "
                f"{self.backend.url(ix.pointer_key(self.base, recipe, run_id))} says so), but there is no "
                f"{MANIFEST_NAME} there: that copy was deleted, moved or never finished publishing. Publish the "
                f"run there again (`infersweep publish DIR --bucket B --prefix P`), or delete the pointer"
            )
        return parse_manifest(body, self.backend.url(key), f"{recipe}/{run_id}"), body

    def has_manifest(self, recipe: str, run_id: str) -> bool:
        """Whether the run is complete (its manifest is there, under its own prefix or where it points)."""
        try:
            return self.backend.get(self.stored_prefix(recipe, run_id) + "/" + MANIFEST_NAME) is not None
        except RunIntegrityError:
            return False

    def read(self, recipe: str, run_id: str, rel: str, manifest: dict) -> bytes | None:
        """A file of the run, checked against the manifest's sha256; None when the manifest does not list it."""
        key = self.stored_prefix(recipe, run_id) + "/" + rel
        listed = {ix.manifest_rel(manifest, o["key"], run_id): o for o in manifest.get("objects", [])}
        if rel not in listed:
            return None
        body = self.backend.get(key)
        if body is None:
            raise missing_object(self.backend.url(key))
        check_object(listed[rel], hashlib.sha256(body).hexdigest(), len(body), self.backend.url(key))
        return body

    def load(self, run_ref: str) -> Run:
        """The complete run `RUN_ID` (or `RECIPE/RUN_ID`). IncompleteRunError when it has no manifest."""
        recipe, run_id = self.locate(run_ref)
        manifest, _ = self.manifest(recipe, run_id)
        body = self.read(recipe, run_id, RESULTS_FILE, manifest)
        if body is None:
            raise IncompleteRunError(
                f"run {recipe}/{run_id}: its manifest lists no {RESULTS_FILE} "
                "(the summarize step did not run or failed)"
            )
        wide = pd.read_parquet(io.BytesIO(body))
        table = upgrade_table(wide, f"{recipe}/{run_id}/{RESULTS_FILE}")  # v1/v2 read under v3 names
        # The store's key is the run's identity: fill it where the summarize step did not know it.
        table["run_id"] = table["run_id"].replace("", None).fillna(run_id) if len(table) else table["run_id"]
        record = self.read(recipe, run_id, ix.RUN_RECORD, manifest)
        context = (json.loads(record).get("context") or {}) if record else {}
        context["run_id"] = context.get("run_id") or run_id
        metrics_body = self.read(recipe, run_id, SERVER_METRICS_FILE, manifest)
        skipped = self.read(recipe, run_id, METRICS_SKIPPED_FILE, manifest)
        raw = read_raw(self.read(recipe, run_id, RAW_FILE, manifest), wide)
        return Run(
            run_id=run_id,
            table=table,
            context=context,
            manifest=manifest,
            raw=raw,
            source=self.backend.url(self.stored_prefix(recipe, run_id)),
            server_metrics=pd.read_parquet(io.BytesIO(metrics_body)) if metrics_body else None,
            metrics_note=skipped.decode(errors="replace").strip() if skipped else "",
        )

    def table(self, run_refs: list[str]) -> pd.DataFrame:
        """The results tables of these runs, one DataFrame (every run must be complete)."""
        return pd.concat([self.load(r).table for r in run_refs], ignore_index=True)

    # -- indexing

    def index_run(self, recipe: str, run_id: str) -> str:
        """Write the run's index entry (after its manifest exists; IncompleteRunError otherwise)."""
        manifest, manifest_bytes = self.manifest(recipe, run_id)
        record = self.read(recipe, run_id, ix.RUN_RECORD, manifest)
        pointer = self.pointer(recipe, run_id)
        entry = ix.make_entry(
            self.base,
            recipe,
            run_id,
            manifest_bytes,
            json.loads(record) if record else None,
            stored_at=pointer["stored_at"] if pointer else None,
        )
        key = ix.entry_key(self.base, recipe, run_id)
        self.backend.put(key, json.dumps(entry, indent=1, sort_keys=True).encode())
        return key

    def reindex(self, recipe: str | None = None) -> list[str]:
        """Index every complete run that has no entry yet (e.g. its entry write failed). Returns the new keys."""
        indexed = {
            k.rsplit("/", 2)[-2] + "/" + k.rsplit("/", 1)[-1][:-5]
            for k in self.backend.list(ix.index_prefix(self.base))
            if k.endswith(".json")
        }
        written = []
        for rec in [recipe] if recipe else self.recipes():
            for run_id in self.backend.children(self._prefix(rec)):
                if f"{rec}/{run_id}" in indexed:
                    continue
                try:
                    written.append(self.index_run(rec, run_id))
                except RunIntegrityError:
                    continue  # not complete (or damaged): stays unlisted, which is the point
        return written

    def point_run(self, recipe: str, run_id: str, stored_at: str) -> str:
        """Make the complete run stored at `stored_at` (a prefix relative to this store's base, e.g.
        experiments/<experiment>/<workflow>/<treatment>) the run recipe/run_id of this store without a second
        copy: its pointer, then its index entry, so it is listed only once the pointer is there. A pointer
        already there with these bytes is kept (a retried publish); anything else there is a RunPointerConflict
        and nothing is written. Returns the index entry's key."""
        target = self._join(stored_at)
        manifest_key = f"{target}/{MANIFEST_NAME}"  # never a pointer to nothing: the run must be complete there
        parse_manifest(self.backend.get(manifest_key), self.backend.url(manifest_key), stored_at)
        own = ix.run_prefix(self.base, recipe, run_id)
        key = ix.pointer_key(self.base, recipe, run_id)
        body = json.dumps(ix.make_pointer(recipe, run_id, stored_at), indent=1, sort_keys=True).encode()
        there = self.backend.list(own + "/")
        if there and not (there == [key] and self.backend.get(key) == body):
            held = "a pointer to another copy" if there == [key] else f"{len(there)} object(s) of another run"
            raise RunPointerConflict(
                f"{self.backend.url(own)}/ already holds {held}: no pointer to {self.backend.url(target)}/ written"
            )
        if not there:
            self.backend.put(key, body)
        self._stored.pop((recipe, run_id), None)
        return self.index_run(recipe, run_id)

    def put_run(self, local_dir: Path, recipe: str, run_id: str, manifest_extra: dict | None = None) -> str:
        """Write a local run folder into this (folder) store as publish_tree does into S3: every file, then
        the manifest (same schema, sha256 of every file), then the index entry. Returns where it went."""
        import datetime as dt

        if not isinstance(self.backend, _DirBackend):
            raise ValueError(
                "put_run writes into a folder store; publish to S3 with infersweep.results.publish.publish_tree"
            )
        prefix = ix.run_prefix(self.base, recipe, run_id)
        objects = []
        for path in sorted(p for p in Path(local_dir).rglob("*") if p.is_file()):
            body = path.read_bytes()
            key = f"{prefix}/{path.relative_to(local_dir).as_posix()}"
            self.backend.put(key, body)
            objects.append({"key": key, "sha256": hashlib.sha256(body).hexdigest(), "size": len(body)})
        manifest = {
            "schema": MANIFEST_SCHEMA,
            "bucket": "",
            "prefix": prefix,
            "objects": objects,
            **(manifest_extra or {}),
            "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        self.backend.put(f"{prefix}/{MANIFEST_NAME}", json.dumps(manifest, indent=2, sort_keys=True).encode())
        self.index_run(recipe, run_id)
        return self.backend.url(prefix)

    def copy_run_to(self, other: "RunStore", run_ref: str) -> str:
        """Copy a complete run into another store, manifest last and index entry after it (nothing half-copied
        is ever listed there). Returns the run id."""
        recipe, run_id = self.locate(run_ref)
        manifest, manifest_bytes = self.manifest(recipe, run_id)
        dest_prefix = ix.run_prefix(other.base, recipe, run_id)
        for obj in manifest["objects"]:
            rel = ix.manifest_rel(manifest, obj["key"], run_id)
            body = self.read(recipe, run_id, rel, manifest)
            other.backend.put(f"{dest_prefix}/{rel}", body)
        other.backend.put(f"{dest_prefix}/{MANIFEST_NAME}", manifest_bytes)
        other.index_run(recipe, run_id)
        return run_id


def publish_index_entry(bucket: str, run_prefix_: str, s3=None) -> str:
    """(Moved here from results/index.py: index must not import store, which imports index.)

    Write the index entry of a run just published to s3://bucket/run_prefix_ (call after publish_tree).

    Refuses (IncompleteRunError) when the run has no manifest. Returns the entry's key.
    """
    base, recipe, run_id = ix.split_run_prefix(run_prefix_)
    store = RunStore(f"s3://{bucket}/{base}" if base else f"s3://{bucket}", s3=s3)
    return store.index_run(recipe, run_id)
