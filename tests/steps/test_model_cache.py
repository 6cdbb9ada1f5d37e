"""Two model-cache steps that start at once on the same cache (the PVC two runs share) do not corrupt it:
one copies, the other waits on the lock and then skips. Real step processes (`python -m steps.model_cache`),
a real folder as the model source, the real file lock."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from infersweep.model_cache import ensure_model, marker_path
from infersweep.paths import REPO_ROOT

MODEL, REV = "org/toy-model", "0123456789abcdef0123456789abcdef01234567"


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _step(cache: Path, src: Path, out: Path) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "steps.model_cache",
            "--model-id",
            MODEL,
            "--revision",
            REV,
            "--cache-dir",
            str(cache),
            "--source",
            f"file://{src}",
            "--model-dir-param",
            str(out / "model-dir"),
            "--commit-param",
            str(out / "commit"),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_two_concurrent_runs_one_copies_the_other_skips_and_the_cache_is_whole(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    # Big enough that the copy takes a measurable time, so the second step really overlaps the first.
    for i in range(4):
        (src / f"model-{i:05d}.safetensors").write_bytes(os.urandom(16 * 1024 * 1024))
    (src / "sub" / "tokenizer.json").write_text('{"version": "1.0"}')
    cache = tmp_path / "pvc"

    # Hold the lock while both start, so they surely overlap: both must wait, neither may touch the cache.
    lock_file = cache / ".locks" / "org--toy-model.lock"
    lock_file.parent.mkdir(parents=True)
    with open(lock_file, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        procs = [_step(cache, src, tmp_path / f"out{i}") for i in range(2)]
        time.sleep(1.0)
        assert [p.poll() for p in procs] == [None, None], "a step went ahead while the lock was held"
        assert not (cache / "models").exists()
        t0 = time.monotonic()
    outs = [p.communicate(timeout=120)[0] for p in procs]
    wall = time.monotonic() - t0
    assert [p.returncode for p in procs] == [0, 0], outs

    downloaded = [o for o in outs if "downloaded" in o]
    cached = [o for o in outs if "already cached" in o]
    assert len(downloaded) == 1 and len(cached) == 1, outs
    dirs = {(tmp_path / f"out{i}" / "model-dir").read_text() for i in range(2)}
    assert len(dirs) == 1, "both runs must be given the same folder"
    model_dir = Path(dirs.pop())
    assert _tree_digest(model_dir) == _tree_digest(src)
    assert marker_path(cache, MODEL, REV).exists()
    assert not list(cache.rglob("*.partial")), "no half-copied folder is left behind"
    print(
        f"\nmodel-cache: 64 MiB copied once, second run skipped; both done {wall:.2f} s after the lock was free; "
        f"{downloaded[0].strip().splitlines()[-1]}; {cached[0].strip().splitlines()[-1]}"
    )

    # A third run (the next night) finds the marker at once.
    t1 = time.monotonic()
    third = _step(cache, src, tmp_path / "out3")
    assert third.wait(timeout=60) == 0 and "already cached" in third.stdout.read()
    print(f"model-cache: a later run skipped in {time.monotonic() - t1:.2f} s (process start included)")


def test_draft_model_is_cached_beside_the_model(tmp_path):
    """Spec-decode workers run offline: the step must put the draft on the PVC too, and skip it when warm."""
    from steps import model_cache

    src = tmp_path / "src"
    src.mkdir()
    (src / "config.json").write_text("{}")
    cache = tmp_path / "cache"
    args = [
        "--model-id",
        "org/main-model",
        "--revision",
        "r1",
        "--cache-dir",
        str(cache),
        "--source",
        f"file://{src}",
        "--draft-model",
        "org/draft-model",
    ]
    assert model_cache.main(args) == 0
    assert marker_path(cache, "org/draft-model", "main").exists()
    assert (cache / "models" / "org--draft-model" / "main" / "config.json").exists()
    assert ensure_model("org/draft-model", "main", cache, f"file://{src}")["cached"] is True


def test_a_failed_download_exits_75_only_when_a_rerun_can_fix_it(tmp_path, monkeypatch, capsys):
    """Argo retries exit 75 only (steps/transient.py): a dropped connection to the hub is retried, a model
    source that is not there fails at once; either way the message names the run's model@revision, also when
    it is the draft that failed, and no output parameter is written."""
    from infersweep import model_cache as cache_lib
    from infersweep.step_declarations import MODEL_CACHE_STEP
    from steps import model_cache
    from steps.runner import run
    from steps.transient import TRANSIENT_EXIT

    fetched = tmp_path / "snapshot"
    fetched.mkdir()

    def hub(model_id, revision, cache):  # the main model arrives, the draft's connection drops
        if model_id == "org/draft":
            raise ConnectionResetError("connection reset by peer")
        return fetched, "c0ffee"

    monkeypatch.setattr(cache_lib, "_download_hub", hub)
    out = tmp_path / "out"
    args = [
        "--model-id",
        "org/m",
        "--revision",
        "r1",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--model-dir-param",
        str(out / "model-dir"),
        "--commit-param",
        str(out / "commit"),
    ]
    missing = tmp_path / "no-such-folder"

    def step(argv):  # what the container runs: main through the one step runner (steps/runner.py)
        return run(lambda: model_cache.main(argv), MODEL_CACHE_STEP)

    assert step(args + ["--source", f"file://{missing}"]) == 1
    assert capsys.readouterr().err == f"model-cache: org/m@r1: model source {missing} is not a folder\n"
    assert not out.exists()
    assert step(args + ["--draft-model", "org/draft"]) == TRANSIENT_EXIT
    assert capsys.readouterr().err == "model-cache (transient: Argo retries it): org/m@r1: connection reset by peer\n"
    assert not out.exists()
    assert step(args) == 0 and (out / "commit").read_text() == "c0ffee"
