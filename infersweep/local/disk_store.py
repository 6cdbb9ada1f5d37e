"""The local results store on disk: what a local run published into its (in-memory, throw-away) S3 server,
kept as files in a RunStore folder after the server is gone.

    runs/store/<recipe>/<run-id>/...            the run, as under s3://<bucket>/<prefix>/ (results.publish)
    runs/store/_index/<recipe>/<run-id>.json    its index entry (results.index)
    runs/store/experiments/<experiment>/...     a local experiment's treatments, each once (keep_experiment)
    runs/store/<recipe>/<workflow>-<treatment>/run-pointer.json   each of them as a run of its recipe

The folder has the layout RunStore reads (infersweep/results/store.py _DirBackend: keys relative to the
folder), so `infersweep runs --store runs/store`, `report RUN --store runs/store`, `compare`, `regress` and
`baseline promote` work on it after the run. Files go in the order publish writes them: every object, then
manifest.json, then the index entry, so a copy cut short is never listed as complete.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from infersweep.results import index as ix
from infersweep.results.manifest import MANIFEST_NAME
from infersweep.results.s3 import list_keys
from infersweep.results.store import RunStore

STORE_DIR = "store"


def _order(key: str) -> int:
    if f"/{ix.INDEX_DIR}/" in f"/{key}":
        return 2
    return 1 if key.endswith("/" + MANIFEST_NAME) else 0


def keep_on_disk(s3: Any, bucket: str, prefix: str, recipe: str, run_id: str, store_dir: Path) -> int:
    """Copy the run's objects and its index entry from s3://bucket/prefix/ into store_dir; return how many."""
    base = prefix.strip("/")
    wanted = [ix.run_prefix(base, recipe, run_id) + "/", ix.entry_key(base, recipe, run_id)]
    keys = [key for want in wanted for key in list_keys(s3, bucket, want)]
    store = RunStore(store_dir)
    for key in sorted(keys, key=_order):
        store.backend.put(key[len(base) + 1 :] if base else key, _get(s3, bucket, key))
    return len(keys)


def keep_run(s3: Any, bucket: str, prefix: str, recipe: str, run_id: str, store_dir: Path) -> Path | None:
    """keep_on_disk, never failing the run: a full disk is said on stderr (the run folder has the results)."""
    try:
        return store_dir if keep_on_disk(s3, bucket, prefix, recipe, run_id, store_dir) else None
    except Exception as e:  # noqa: BLE001 (S3 gone, disk full: the run's verdict stands, its folder is there)
        print(
            f"infersweep: the results store {store_dir} was not updated ({type(e).__name__}: {e}); "
            f"the run's results are in its folder",
            file=sys.stderr,
        )
        return None


def seed_from_disk(s3: Any, bucket: str, prefix: str, recipe: str, run_id: str, store_dir: Path) -> set[str]:
    """keep_on_disk backwards: put a run the store folder kept back into a fresh local S3 server; the keys put.

    A local `--retry` continues the same workflow, whose first attempt published under its name; the S3
    server that held it is gone, so without this the retry's publish step finds the prefix empty and writes
    over what the store folder kept. With it, publish meets the first attempt as a cluster's does, and goes to
    `<run>-rN` (infersweep.results.publish publish_run --retry-prefix; docs/lifecycle.md: never over it)."""
    import hashlib

    from infersweep.results.manifest import SHA_META

    root = Path(store_dir)
    base = prefix.strip("/")
    wanted = [ix.run_prefix("", recipe, run_id), ix.entry_key("", recipe, run_id)]
    files = [f for f in sorted((root / wanted[0]).rglob("*")) if f.is_file()] if (root / wanted[0]).is_dir() else []
    files += [root / wanted[1]] if (root / wanted[1]).is_file() else []
    put: set[str] = set()
    for f in sorted(files, key=lambda f: _order(str(f.relative_to(root)))):
        key = "/".join(p for p in (base, str(f.relative_to(root))) if p)
        body = f.read_bytes()
        s3.put_object(Bucket=bucket, Key=key, Body=body, Metadata={SHA_META: hashlib.sha256(body).hexdigest()})
        put.add(key)
    return put


def keep_experiment(s3: Any, bucket: str, prefix: str, experiment: str, store_dir: Path) -> Path | None:
    """An experiment's published treatments (workflows/experiment.py publishes each once, under
    <prefix>/experiments/<experiment>/<workflow>/<treatment>, indexed there, and points
    <prefix>/<recipe>/<workflow>-<treatment> at it) kept on disk: the copy as store_dir/experiments/<experiment>
    (`infersweep runs --store` of it lists the treatments as runs), and the pointers with their index entries in
    store_dir itself, so `infersweep runs --store store_dir` lists each treatment as a run of its recipe, read
    from that one copy. None when nothing was published or the copy failed (said on stderr; the run folder has
    the results)."""
    root = prefix.strip("/")
    stored_at = f"{ix.EXPERIMENTS_DIR}/{experiment}"
    base = "/".join(p for p in (root, stored_at) if p)
    out = Path(store_dir) / stored_at
    try:
        keys = list_keys(s3, bucket, base + "/")
        if not keys:
            return None
        copy = RunStore(out)
        for key in sorted(keys, key=_order):  # objects, then manifests, then index entries: never half listed
            copy.backend.put(key[len(base) + 1 :], _get(s3, bucket, key))
        # after the copy they point at: a pointer, then its index entry (listed only once it can be read)
        store = RunStore(store_dir)
        for key in _pointers_into(s3, bucket, root, stored_at + "/"):
            store.backend.put(key[len(root) + 1 :] if root else key, _get(s3, bucket, key))
        return out
    except Exception as e:  # noqa: BLE001 (S3 gone, disk full: the experiment's verdict stands)
        print(f"infersweep: the results store {out} was not updated ({type(e).__name__}: {e})", file=sys.stderr)
        return None


def _get(s3: Any, bucket: str, key: str) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def _pointers_into(s3: Any, bucket: str, root: str, stored_under: str) -> list[str]:
    """The keys of the runs of the store at `root` that point under `stored_under` (relative to root): each
    pointer, then its index entry (an entry records where its run is stored: index.py make_entry)."""
    keys: list[str] = []
    for key in [k for k in list_keys(s3, bucket, ix.index_prefix(root)) if k.endswith(".json")]:
        entry = json.loads(_get(s3, bucket, key))
        if str(entry.get("stored_at") or "").startswith(stored_under):
            keys += [ix.pointer_key(root, entry["recipe"], entry["run_id"]), key]
    return keys
