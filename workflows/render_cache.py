"""Rendered bundles kept on disk, so `render`/`validate`/`submit` of a recipe rendered before skip Hera.

Why: importing hera.workflows is ~1.1-1.5 s of a ~1.8 s one-recipe render (its generated Argo models are
~330 pydantic classes built at import); the rendering itself is ~0.1 s. A bundle is a pure function of its
inputs, so a bundle rendered (and schema-validated) once is kept as JSON, named by the sha256 of
everything it was made from:

  * the resolved recipe, field by field (excluded fields too), its file's path and bytes, and the recipe
    fields `--set` changed (infersweep.recipe.overrides);
  * every file under the params folder (the recipe's shared facts, cluster.yaml, local.yaml, ... : all
    of it, not a guess at which ones a renderer reads);
  * the cluster settings (ClusterSettings, field by field), dgd_api, namespace, the run parameters `--set` gave and the workflow name;
  * the code that renders: every .py file of infersweep/, workflows/ and steps/;
  * the schemas it was validated against (schemas._schemas_digest: their files + the schemas/ code + jsonschema);
  * the versions of Python, hera, pydantic, pydantic-core, PyYAML and jsonschema.

Any change to any of them is a new key, so a stale entry is never read. Only a bundle that passed
validation is written, atomically (a reader sees the old file or the whole new one); an unreadable or
corrupt entry is ignored and rendered again. Entries live in $INFERSWEEP_CACHE_DIR/render, else
$XDG_CACHE_HOME/infersweep/render, else ~/.cache/infersweep/render, one folder per code + library state
(folders of older code are removed). (`--set` is checked against infersweep/pipeline_params.py, which needs
no Hera.) INFERSWEEP_CACHE_DIR=off or INFERSWEEP_RENDER_CACHE=off turns it off,
as does the commands' --no-cache. Library callers (tests, golden files) get it only when they ask.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from infersweep.paths import params_dir

FORMAT = "1"  # bump when an entry's layout changes
KEEP_STATES = 4  # code + library states kept side by side (several checkouts may share one cache)
CODE_PACKAGES = ("infersweep", "workflows", "steps")
LIBRARIES = ("hera", "pydantic", "pydantic_core", "pyyaml", "jsonschema")
DOCUMENT_KEYS = ("dgd", "workflow", "templates", "scaled_objects")


def enabled() -> bool:
    return (
        os.environ.get("INFERSWEEP_RENDER_CACHE", "").lower() not in ("off", "0", "no", "false")
        and cache_root() is not None
    )


def cache_root() -> Path | None:
    """$INFERSWEEP_CACHE_DIR/render (``off`` disables), else $XDG_CACHE_HOME/infersweep/render, else
    ~/.cache/infersweep/render: beside the prepared schemas (infersweep/schemas/core.py cache_dir)."""
    env = os.environ.get("INFERSWEEP_CACHE_DIR")
    if env:
        return None if env.lower() in ("off", "0", "none") else Path(env) / "render"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "infersweep" / "render"


# ----------------------------------------------------------------------------------------------
# The key


def canonical(obj: Any) -> Any:
    """A JSON value that differs whenever obj differs: pydantic models field by field (excluded fields
    too, in declaration order, with the model's class), dicts in their order (the order can be rendered),
    1 and 1.0 and True kept apart by JSON itself."""
    fields = getattr(type(obj), "model_fields", None)
    if isinstance(fields, dict):
        out = {"__model__": f"{type(obj).__module__}.{type(obj).__qualname__}"}
        out |= {name: canonical(getattr(obj, name)) for name in fields}
        extra = getattr(obj, "model_extra", None)
        if extra:
            out["__extra__"] = canonical(extra)
        return out
    if isinstance(obj, dict):
        return {"__dict__": [[canonical(k), canonical(v)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return {"__float__": repr(obj)}  # NaN and inf too
    if isinstance(obj, (set, frozenset)):
        return {"__set__": sorted(json.dumps(canonical(v), sort_keys=True) for v in obj)}
    if isinstance(obj, Path):
        return {"__path__": str(obj)}
    return {"__repr__": f"{type(obj).__module__}.{type(obj).__qualname__}:{obj!r}"}


def _tree_digest(h: "hashlib._Hash", root: Path, pattern: str) -> None:
    for p in sorted(root.rglob(pattern)):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(b"\0" + str(p.relative_to(root)).encode() + b"\0")
            h.update(p.read_bytes())


@functools.lru_cache(maxsize=1)
def _libraries() -> tuple[str, ...]:
    """name-version of each library, from the .dist-info folder names beside them (one directory listing;
    importlib.metadata takes ~70 ms for the five), else from importlib.metadata."""
    found: dict[str, str] = {}
    dirs = set()
    for mod in ("hera", "pydantic", "pydantic_core", "yaml", "jsonschema"):
        spec = importlib.util.find_spec(mod)
        for loc in (spec.submodule_search_locations or []) if spec else []:
            dirs.add(str(Path(loc).parent))
    for d in sorted(dirs):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            m = re.fullmatch(r"([A-Za-z0-9_.]+)-([^-]+)\.dist-info", name)
            if m and m.group(1).lower().replace(".", "_") in LIBRARIES:
                found.setdefault(m.group(1).lower().replace(".", "_"), name)  # not the folder: one venv has many paths
    if set(found) != set(LIBRARIES):
        from importlib.metadata import PackageNotFoundError, version

        for lib in set(LIBRARIES) - set(found):
            try:
                found[lib] = f"{lib}-{version(lib)}"
            except PackageNotFoundError:
                found[lib] = f"{lib}-absent"
    return tuple(found[lib] for lib in LIBRARIES)


@functools.lru_cache(maxsize=1)
def code_state() -> str:
    """The rendering code and the libraries under it: the name of the folder entries live in."""
    h = hashlib.sha256(f"{FORMAT}\0{sys.version}\0{sys.implementation.cache_tag}".encode())
    for lib in _libraries():
        h.update(b"\0" + lib.encode())
    for pkg in CODE_PACKAGES:
        spec = importlib.util.find_spec(pkg)
        for loc in (spec.submodule_search_locations or []) if spec else []:
            h.update(f"\0{pkg}".encode())
            _tree_digest(h, Path(loc), "*.py")
    return h.hexdigest()[:24]


def _params_digest(pdir: Path) -> str:
    h = hashlib.sha256(str(pdir.resolve()).encode())
    if pdir.is_dir():
        _tree_digest(h, pdir, "*")
    return h.hexdigest()


def bundle_key(
    r: Any,
    settings: Any,
    *,
    dgd_api: str,
    namespace: str | None,
    overrides: dict[str, str] | None,
    workflow_name: str | None,
) -> str:
    from infersweep.schemas import _schemas_digest, reference_dir

    path = getattr(r, "path", None)
    recipe_file = Path(path) if path else None
    parts = {
        "recipe": canonical([r.recipe, r.model, r.engine, r.gpu_type]),
        "recipe_path": str(recipe_file.resolve()) if recipe_file else None,
        "recipe_bytes": hashlib.sha256(recipe_file.read_bytes()).hexdigest()
        if recipe_file and recipe_file.is_file()
        else None,
        # the recipe-field `--set`s (already in "recipe" through the fields they change; named here too)
        "recipe_overrides": canonical(getattr(r, "overrides", None) or {}),
        "params": _params_digest(params_dir()),
        "settings": canonical(settings),
        "dgd_api": dgd_api,
        "namespace": namespace,
        "overrides": canonical(overrides),
        "workflow_name": workflow_name,
        "schemas": [str(reference_dir()), _schemas_digest(str(reference_dir()))],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


# ----------------------------------------------------------------------------------------------
# Entries


def _entry(key: str) -> Path | None:
    root = cache_root()
    return None if root is None else root / code_state() / f"{key}.json"


def load(key: str) -> dict[str, Any] | None:
    """The documents rendered for key, or None (no entry, or one that is unreadable or not whole)."""
    path = _entry(key)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and data.get("key") == key and isinstance(data.get("documents"), dict)):
        return None
    docs = data["documents"]
    if not (
        isinstance(docs.get("dgd"), dict)
        and isinstance(docs.get("workflow"), dict)
        and all(
            isinstance(docs.get(k), list) and all(isinstance(d, dict) for d in docs[k])
            for k in ("templates", "scaled_objects")
        )
    ):
        return None
    return docs


def store(key: str, documents: dict[str, Any]) -> bool:
    """Keep validated documents under key; False when they cannot be kept exactly as JSON (then the next
    render renders them again) or the cache cannot be written. Never raises for the cache's sake."""
    path = _entry(key)
    if path is None:
        return False
    docs = {k: documents[k] for k in DOCUMENT_KEYS}
    try:
        text = json.dumps({"key": key, "documents": docs}, allow_nan=False)
    except (TypeError, ValueError):  # a YAML date, a NaN: JSON cannot hold it
        return False
    if json.loads(text)["documents"] != docs:  # an int key, a tuple: JSON would not give it back as it was
        return False
    return _write_atomic(path, text)


def _write_atomic(path: Path, text: str) -> bool:
    try:
        fresh = not path.parent.is_dir()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        if fresh:
            _prune(path.parent)
    except OSError:
        return False
    return True


def _prune(current: Path) -> None:
    """Keep the KEEP_STATES most recently created code states: older code's entries are never read again."""
    try:
        states = sorted(
            (d for d in current.parent.iterdir() if d.is_dir() and d != current),
            key=lambda d: d.stat().st_mtime,
            reverse=True,
        )
        for old in states[KEEP_STATES - 1 :]:
            for f in old.iterdir():
                f.unlink(missing_ok=True)
            old.rmdir()
    except OSError:
        pass  # another process pruned it first, or a read-only cache: harmless
