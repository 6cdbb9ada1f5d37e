"""Step: put the model at its pinned revision on the cache PVC, once.

- skipped when that revision is already complete on the PVC (a marker written after the download);
- two runs that start at once serialise on a lock file on the PVC, so neither sees half a download;
- the source is the Hugging Face hub (token from the environment, i.e. a Secret) or, for local runs and
  air-gapped clusters, a folder (`--source file:///path`).
Outputs the model folder (the tokenizer AIPerf reads) and the resolved commit.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import time
from pathlib import Path

from steps import transient
from steps.output_params import write_param
from workflows.step_declarations import MODEL_CACHE_STEP


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
            path, commit = _copy_folder(Path(source[len("file://"):]), model_id, revision, cache)
        elif source == "hf":
            path, commit = _download_hub(model_id, revision, cache)
        else:
            raise ValueError(f"--source {source!r}: use 'hf' or file:///path")
        info = {"model_id": model_id, "revision": revision, "commit": commit, "path": str(path),
                "bytes": sum(f.stat().st_size for f in path.rglob("*") if f.is_file())}
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps(info))  # written last: its presence means "complete"
    return {**info, "cached": False, "seconds": round(time.monotonic() - t0, 3)}


def main(argv: list[str] | None = None) -> int:
    a = MODEL_CACHE_STEP.parser().parse_args(argv)
    try:
        info = ensure_model(a.model_id, a.revision, Path(a.cache_dir), a.source)
        if a.draft_model:
            # Workers run with HF_HUB_OFFLINE=1: a draft the cache lacks would fail the deployment later,
            # with GPUs held. A file:// source stands for the whole model family (local mode).
            draft = ensure_model(a.draft_model, a.draft_revision, Path(a.cache_dir), a.source)
            print(f"draft {a.draft_model}@{a.draft_revision}: {'already cached' if draft['cached'] else 'cached'} "
                  f"-> {draft['path']}")
    except Exception as e:
        print(f"model-cache: {a.model_id}@{a.revision}: {e}", file=sys.stderr)
        # a dropped connection or a 5xx from the hub: exit 75 so Argo retries (steps/transient.py)
        return transient.TRANSIENT_EXIT if transient.is_transient(e) else 1
    write_param(a.model_dir_param, info["path"])
    write_param(a.commit_param, info["commit"])
    if a.commit_file:
        Path(a.commit_file).parent.mkdir(parents=True, exist_ok=True)
        Path(a.commit_file).write_text(info["commit"] + "\n")
    verb = "already cached" if info["cached"] else f"downloaded {info['bytes']} bytes"
    print(f"{a.model_id}@{a.revision} ({info['commit']}): {verb} in {info['seconds']} s -> {info['path']}")
    return 0


if __name__ == "__main__":
    os.umask(0o002)  # other runs' pods (other UIDs in the same group) must be able to read the cache
    raise SystemExit(transient.run(main, "model-cache"))
