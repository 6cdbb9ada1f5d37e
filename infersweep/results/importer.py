"""Bring existing AIPerf artifact folders into the results store, as a run of a recipe.

Teams keep one AIPerf artifact folder per concurrency (`--artifact-dir runs/c16`, ...). `import_run` finds
them under a folder, reads each one with the same reader the pipeline uses (infersweep.aiperf, any
AIPerf 0.10-0.13), lays them out as a run folder (`points/c<N>[-r<K>]/aiperf/` + `result.json`), summarises
it as the pipeline's summarize step does (same table, validity verdicts, report), and publishes it to the
store (S3 or a local folder) with a manifest and an index entry, so `compare` and `regress` treat it like
any other run. The context says `source: imported`, the AIPerf version each point was written by, and
where the folders came from.

Concurrency of a folder: the profiling phase of AIPerf's input_config (0.10-0.13), else `--concurrency`
in its run_info.cli_command, else a folder name like `c16` / `concurrency_16`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from infersweep.aiperf import RECORDS_FILE, SUMMARY_FILE, read_point
from infersweep.recipe_context import recipe_context
from infersweep.results import index as ix
from infersweep.results.store import RunNotFound, RunStore
from infersweep.results.summarize import summarize

ARTIFACT_MARKERS = (SUMMARY_FILE, RECORDS_FILE)


class ImportError_(ValueError):
    """Bad input to import: one clear message naming the folder and the fix."""


def find_artifact_dirs(root: Path, max_depth: int = 4) -> list[Path]:
    """Folders under root (root included) holding an AIPerf summary or per-request export."""
    root = Path(root)
    if not root.is_dir():
        raise ImportError_(f"{root}: not a folder")
    found = []
    for path in sorted(root.rglob("*")):
        if path.name in ARTIFACT_MARKERS and len(path.relative_to(root).parts) <= max_depth + 1:
            if path.parent not in found and "attempts" not in path.relative_to(root).parts:
                found.append(path.parent)
    return found


def _summary(art: Path) -> dict:
    try:
        data = json.loads((art / SUMMARY_FILE).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _profiling_phase(summary: dict) -> dict:
    for phase in ((summary.get("input_config") or {}).get("phases")) or []:
        if isinstance(phase, dict) and (phase.get("kind") or phase.get("name")) == "profiling":
            return phase
    return {}


def _from_inputs(art: Path, key: str) -> Any:
    """A value of the first dataset in inputs.json/summary input_config (random_seed)."""
    cfg = _summary(art).get("input_config") or {}
    for ds in cfg.get("datasets") or []:
        if isinstance(ds, dict) and key in ds:
            return ds[key]
    run_info = _summary(art).get("run_info") or {}
    return run_info.get(key)


def detect_concurrency(art: Path) -> tuple[int, str]:
    """(concurrency, where it was found) of one artifact folder; ImportError_ when nowhere."""
    summary = _summary(art)
    c = _profiling_phase(summary).get("concurrency")
    if isinstance(c, int) and c > 0:
        return c, "input_config"
    cli = (summary.get("run_info") or {}).get("cli_command") or ""
    m = re.search(r"--concurrency['\"]?\s+['\"]?(\d+)", cli)
    if m:
        return int(m.group(1)), "run_info.cli_command"
    m = re.search(r"(?:^|[^a-z])(?:c|conc|concurrency)[-_]?(\d+)$", art.name, re.IGNORECASE)
    if m:
        return int(m.group(1)), "folder name"
    raise ImportError_(
        f"{art}: cannot tell its concurrency (no profiling phase concurrency in "
        f"{SUMMARY_FILE}, no --concurrency in run_info.cli_command, folder not named like c16); "
        "rename the folder c<N> and import again"
    )


def stage_run(root: Path, run_dir: Path) -> list[dict]:
    """Lay the artifact folders under root out as run_dir/points/c<N>[-r<K>]/; return the result dicts."""
    arts = find_artifact_dirs(root)
    if not arts:
        raise ImportError_(f"{root}: no AIPerf artifact folder (none holds {SUMMARY_FILE} or {RECORDS_FILE})")
    points = []
    for art in arts:
        conc, found_in = detect_concurrency(art)
        result = read_point(art)
        points.append((result.get("start_time") or "", conc, found_in, art, result))
    points.sort(key=lambda p: (p[0], p[1]))  # the order they ran in: the cache saw earlier points first
    reps: dict[int, int] = {}
    seen_seeds: dict[Any, int] = {}
    out = []
    for _, conc, found_in, art, result in points:
        rep = reps.get(conc, 0)
        reps[conc] = rep + 1
        seed = _from_inputs(art, "random_seed")
        if seed is None:
            cache_state = "unknown"
        elif seed in seen_seeds:
            # Same seed, same synthetic prompts: the prefix cache may still hold them from that point.
            cache_state = f"warm-from-c{seen_seeds[seed]}-same-seed"
        else:
            cache_state = "fresh-prompts"
        if seed is not None:
            seen_seeds.setdefault(seed, conc)
        name = f"c{conc}" if rep == 0 else f"c{conc}-r{rep}"
        point = run_dir / "points" / name
        shutil.copytree(art, point / "aiperf")
        result.update(
            concurrency=conc,
            repetition=rep,
            seed=seed,
            seed_policy="imported (as the team ran it)",
            cache_state=cache_state,
            source="imported",
            source_dir=str(art),
            concurrency_from=found_in,
        )
        (point / "result.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        out.append(result)
    return out


def default_run_id(root: Path) -> str:
    """imported-<hash of the artifact files>: importing the same folders twice gives the same id."""
    h = hashlib.sha256()
    for art in find_artifact_dirs(root):
        for f in sorted(art.rglob("*")):
            if f.is_file():
                h.update(f.relative_to(root).as_posix().encode())
                h.update(hashlib.sha256(f.read_bytes()).digest())
    return "imported-" + h.hexdigest()[:12]


def import_run(
    root: Path, recipe_name: str, store: str, run_id: str | None = None, s3=None, keep: Path | None = None
) -> dict[str, Any]:
    """Import the AIPerf folders under root as run `run_id` of `recipe_name` into `store`. Returns a summary."""
    resolved = _resolve_recipe(recipe_name)
    run_id = run_id or default_run_id(root)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}", run_id):
        raise ImportError_(f"--run-id {run_id!r}: letters, digits, '.', '_', '-' only")
    with tempfile.TemporaryDirectory(prefix="infersweep-import-") as tmp:
        run_dir = Path(keep) if keep else Path(tmp) / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        results = stage_run(Path(root), run_dir)
        ctx = recipe_context(resolved) | {"run_id": run_id, "source": "imported", "context_source": "import"}
        slo = ctx.get("slo") or {}
        df = summarize(run_dir, resolved.gpu_count, slo, resolved.name, ctx)
        where = _publish(run_dir, resolved.name, run_id, store, s3)
    return {
        "run_id": run_id,
        "recipe": resolved.name,
        "points": len(df),
        "where": where,
        "aiperf_versions": sorted({r.get("aiperf_version") or "unknown" for r in results}),
        "valid_points": int(df["valid"].fillna(False).astype(bool).sum()),
        "table": df,
    }


def _resolve_recipe(name: str):
    from infersweep.recipe import all_recipe_paths, load_recipe

    names = []
    for path in all_recipe_paths():
        resolved = load_recipe(path)
        if resolved.name == name:
            return resolved
        names.append(resolved.name)
    raise ImportError_(
        f"--recipe {name!r}: no such recipe in params/recipes/ (`infersweep recipes` lists "
        f"{len(names)}); the imported run is filed under a recipe so compare can find it"
    )


def _publish(run_dir: Path, recipe: str, run_id: str, store: str, s3=None) -> str:
    target = RunStore(store, s3=s3)
    try:
        target.locate(f"{recipe}/{run_id}")
        raise ImportError_(
            f"{store}: run {recipe}/{run_id} already exists (imported before?); "
            "give another --run-id to import it again"
        )
    except RunNotFound:
        pass
    if store.startswith("s3://"):
        from infersweep.results.publish import publish_tree  # boto3 only for an S3 store

        bucket = store[5:].partition("/")[0]
        prefix = ix.run_prefix(target.base, recipe, run_id)
        publish_tree(run_dir, bucket=bucket, prefix=prefix, s3=target.backend.s3, manifest_extra={"source": "imported"})
        target.index_run(recipe, run_id)
        return f"s3://{bucket}/{prefix}"
    return target.put_run(run_dir, recipe, run_id, manifest_extra={"source": "imported"})
