"""The model cache: a model at its pinned revision on the cache PVC, put there once (the model-cache step,
steps/model_cache.py, is `cache_models` behind its argument parsing).

- skipped when that revision is already complete on the PVC (a marker written after the download);
- two runs that start at once serialise on a lock file on the PVC, so neither sees half a download;
- the source is the Hugging Face hub (token from the environment, i.e. a Secret) or, for local runs and
  air-gapped clusters, a folder (`--source file:///path`).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from infersweep.step_interface import write_output_param


class ModelNotCached(Exception):
    """The model (or its draft) could not be put into the cache; the download's own error is the cause
    (steps/transient.py reads it: a dropped connection or a hub 5xx is retried)."""


def _slug(model_id: str) -> str:
    return model_id.replace("/", "--")


def marker_path(cache: Path, model_id: str, revision: str) -> Path:
    return cache / "infersweep-complete" / _slug(model_id) / f"{revision}.json"


def _download_hub(model_id: str, revision: str, cache: Path) -> tuple[Path, str]:
    from huggingface_hub import snapshot_download  # only needed in a cluster

    # HF_TOKEN comes from the Secret mounted as env; it is never an argument or a parameter.
    path = Path(snapshot_download(repo_id=model_id, revision=revision, cache_dir=str(cache / "hub")))
    return path, path.name  # the snapshot folder is named by the resolved commit


def _copy_folder(src: Path, model_id: str, revision: str, cache: Path) -> tuple[Path, str]:
    if not src.is_dir():
        raise FileNotFoundError(f"model source {src} is not a folder")
    dest = cache / "models" / _slug(model_id) / revision
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)  # atomic: a reader sees the whole folder or none
    return dest, revision


def ensure_model(model_id: str, revision: str, cache: Path, source: str = "hf") -> dict:
    """The model's folder in the cache: {model_id, revision, commit, path, bytes, cached, seconds}."""
    cache.mkdir(parents=True, exist_ok=True)
    marker = marker_path(cache, model_id, revision)
    lock_path = cache / ".locks" / f"{_slug(model_id)}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent run waits here, then finds the marker
        if marker.exists():
            info = json.loads(marker.read_text())
            if Path(info["path"]).is_dir():
                return {**info, "cached": True, "seconds": round(time.monotonic() - t0, 3)}
        if source.startswith("file://"):
            path, commit = _copy_folder(Path(source[len("file://") :]), model_id, revision, cache)
        elif source == "hf":
            path, commit = _download_hub(model_id, revision, cache)
        else:
            raise ValueError(f"--source {source!r}: use 'hf' or file:///path")
        info = {
            "model_id": model_id,
            "revision": revision,
            "commit": commit,
            "path": str(path),
            "bytes": sum(f.stat().st_size for f in path.rglob("*") if f.is_file()),
        }
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps(info))  # written last: its presence means "complete"
    return {**info, "cached": False, "seconds": round(time.monotonic() - t0, 3)}


@dataclass(frozen=True)
class CacheOutputs:
    """Where the model-cache step writes what it resolved ('' or None = not written): the model's folder and
    commit as output parameters, and the commit again for the exit handler's summarize."""

    model_dir_param: str | None = None
    commit_param: str | None = None
    commit_file: str | None = None

    def write(self, info: dict) -> None:
        write_output_param(self.model_dir_param, info["path"])
        write_output_param(self.commit_param, info["commit"])
        if self.commit_file:
            Path(self.commit_file).parent.mkdir(parents=True, exist_ok=True)
            Path(self.commit_file).write_text(info["commit"] + "\n")


def cache_models(
    model_id: str,
    revision: str,
    cache: Path,
    source: str = "hf",
    *,
    draft_model: str = "",
    draft_revision: str = "",
    outputs: CacheOutputs = CacheOutputs(),
) -> dict:
    """The model-cache step's work: the model and its speculative-decoding draft (if any) into the cache,
    then the model's folder and resolved commit written where `outputs` says. Prints the step's progress
    lines; returns the model's info.

    A failure to cache either raises ModelNotCached, its message naming the run's model@revision.
    """
    try:
        info = ensure_model(model_id, revision, cache, source)
        if draft_model:
            # Workers run with HF_HUB_OFFLINE=1: a draft the cache lacks would fail the deployment later,
            # with GPUs held. A file:// source stands for the whole model family (local mode).
            draft = ensure_model(draft_model, draft_revision, cache, source)
            print(
                f"draft {draft_model}@{draft_revision}: {'already cached' if draft['cached'] else 'cached'} "
                f"-> {draft['path']}"
            )
    except Exception as e:
        raise ModelNotCached(f"{model_id}@{revision}: {e}") from e
    outputs.write(info)
    verb = "already cached" if info["cached"] else f"downloaded {info['bytes']} bytes"
    print(f"{model_id}@{revision} ({info['commit']}): {verb} in {info['seconds']} s -> {info['path']}")
    return info
