"""Bring existing AIPerf artifact folders into the results store, as a run of a recipe.

Teams keep AIPerf artifact folders as AIPerf writes them: one folder per concurrency (`--artifact-dir
runs/c16`, any AIPerf 0.10-0.13), a 0.13 sweep (`--concurrency 2,4`) or multi-run tree (`--num-profile-runs 3`).
`import_run` finds the runs under a folder (infersweep.results.import_layout: a 0.13 run's phases/ are part of
it, a multi-run tree's trials are repetitions of their point), reads each one with the same reader the pipeline uses (infersweep.aiperf, any
AIPerf 0.10-0.13), lays them out as a run folder (`points/c<N>[-r<K>]/aiperf/` + `result.json`), summarises
it as the pipeline's summarize step does (same table, validity verdicts, report), and publishes it to the
store (S3 or a local folder) with a manifest and an index entry, so `compare` and `regress` treat it like
any other run. The context says `source: imported`, the AIPerf version each point was written by, the
workload AIPerf ran and what is known of the deployment (infersweep.results.import_context), and AIPerf's
own confidence intervals where it computed them (infersweep.results.import_aggregate).

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

from infersweep.aiperf import SUMMARY_FILE, read_point
from infersweep.errors import UserError
from infersweep.recipe_context import recipe_context
from infersweep.results import index as ix
from infersweep.results.import_aggregate import read_aggregate, side_by_side
from infersweep.results.import_context import (
    UNKNOWN,
    ProvenanceError,
    provenance,
    read_summary,
    reuse_of,
    workload_of,
)
from infersweep.results.import_layout import RUN_MARKERS, Layout, LayoutError, find_runs
from infersweep.results.store import RunNotFound, RunStore
from infersweep.results.summarize import summarize

ARTIFACT_MARKERS = RUN_MARKERS


class ArtifactImportError(UserError, ValueError):
    """Bad input to import: one clear message naming the folder and the fix."""


def find_artifact_dirs(root: Path) -> list[Path]:
    """The AIPerf run folders under root (infersweep.results.import_layout: never a run's phases/)."""
    try:
        return [r.folder for r in find_runs(root).runs]
    except LayoutError as e:
        raise ArtifactImportError(str(e)) from None


def _profiling_phase(summary: dict) -> dict:
    for phase in ((summary.get("input_config") or {}).get("phases")) or []:
        if isinstance(phase, dict) and (phase.get("kind") or phase.get("name")) == "profiling":
            return phase
    return {}


def _from_inputs(art: Path, key: str) -> Any:
    """A value of the first dataset in the summary's input_config (random_seed), else of its run_info."""
    summary = read_summary(art)
    for ds in (summary.get("input_config") or {}).get("datasets") or []:
        if isinstance(ds, dict) and key in ds:
            return ds[key]
    return (summary.get("run_info") or {}).get(key)


def detect_concurrency(art: Path, name: str | None = None) -> tuple[int, str]:
    """(concurrency, where it was found) of one artifact folder; ArtifactImportError when nowhere. `name`: the folder
    name to read it from last (a multi-run trial's variation, `concurrency_4`, rather than `trial_0002`)."""
    summary = read_summary(art)
    c = _profiling_phase(summary).get("concurrency")
    if isinstance(c, int) and c > 0:
        return c, "input_config"
    cli = (summary.get("run_info") or {}).get("cli_command") or ""
    m = re.search(r"--concurrency['\"]?\s+['\"]?(\d+)", cli)
    if m:
        return int(m.group(1)), "run_info.cli_command"
    m = re.search(r"(?:^|[^a-z])(?:c|conc|concurrency)[-_]?(\d+)$", name or art.name, re.IGNORECASE)
    if m:
        return int(m.group(1)), "folder name"
    raise ArtifactImportError(
        f"{art}: cannot tell its concurrency (no profiling phase concurrency in "
        f"{SUMMARY_FILE}, no --concurrency in run_info.cli_command, folder not named like c16); "
        "rename the folder c<N> and import again"
    )


def one_workload(folders_summaries: list[tuple[Path, dict]]) -> dict[str, Any] | None:
    """The workload every run that recorded one measured (a run that failed before its summary records none);
    ArtifactImportError naming two runs that measured different ones."""
    shapes: dict[str, tuple[Path, dict[str, Any]]] = {}
    for folder, summary in folders_summaries:
        if (w := workload_of(summary)) is not None:
            shapes.setdefault(json.dumps(w, sort_keys=True), (folder, w))
    if len(shapes) > 1:
        (a, (fa, _)), (b, (fb, _)) = list(shapes.items())[:2]
        raise ArtifactImportError(
            f"the AIPerf runs under one import measured different workloads ({fa}: {a}; {fb}: {b}); "
            "import each workload as a run of its own"
        )
    return next(iter(shapes.values()))[1] if shapes else None


def stage_run(root: Path, run_dir: Path, layout: Layout | None = None) -> list[dict]:
    """Lay the AIPerf runs under root out as run_dir/points/c<N>[-r<K>]/; return the result dicts.

    A multi-run tree's trials of one variation are repetitions of its point, as are two run folders at one
    concurrency, numbered in the order they ran (infersweep.results.import_layout)."""
    layout = layout or _layout(root)
    entries = []
    for run in layout.runs:
        conc, found_in = detect_concurrency(run.folder, Path(run.variation).name or None)
        entries.append((run, conc, found_in, read_point(run.folder), read_summary(run.folder)))
    # the order they ran in: the cache saw earlier points first
    entries.sort(key=lambda e: (e[3].get("start_time") or "", e[1], e[0].trial or 0))
    workload = one_workload([(e[0].folder, e[4]) for e in entries])
    reuse = reuse_of(workload)
    reps: dict[int, int] = {}
    seen_seeds: dict[Any, int] = {}
    out = []
    for run, conc, found_in, result, _summary in entries:
        rep = reps.get(conc, 0)
        reps[conc] = rep + 1
        seed = _from_inputs(run.folder, "random_seed")
        if reuse:
            # Shared prefixes, sessions or a trace: requests reuse prompts on purpose (infersweep.aiperf
            # REUSE_KEYS), so cache hits are the workload, not a cache left warm by an earlier point.
            cache_state, policy = "reused-prompts", f"imported: the workload reuses prompts ({', '.join(reuse)})"
        elif seed is None:
            cache_state, policy = "unknown", "imported (as the team ran it)"
        elif seed in seen_seeds:
            # Same seed, same synthetic prompts: the prefix cache may still hold them from that point.
            cache_state, policy = f"warm-from-c{seen_seeds[seed]}-same-seed", "imported (as the team ran it)"
        else:
            cache_state, policy = "fresh-prompts", "imported (as the team ran it)"
        if seed is not None:
            seen_seeds.setdefault(seed, conc)
        name = f"c{conc}" if rep == 0 else f"c{conc}-r{rep}"
        point = run_dir / "points" / name
        # the run folder as AIPerf wrote it, less the runs nested in it (a sweep's base holds its variations)
        nested = {r.folder for r in layout.runs if r.folder != run.folder and run.folder in r.folder.parents}
        shutil.copytree(run.folder, point / "aiperf", ignore=_skip(nested))
        result.update(
            concurrency=conc,
            repetition=rep,
            seed=seed,
            seed_policy=policy,
            cache_state=cache_state,
            source="imported",
            source_dir=str(run.folder),
            concurrency_from=found_in,
            aiperf_trial=run.trial,
            aiperf_variation=run.variation or None,
        )
        (point / "result.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        out.append(result)
    return out


def _skip(nested: set[Path]):
    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if Path(folder, n) in nested or n in ("profile_runs", "aggregate")]

    return ignore if nested else None


def _layout(root: Path) -> Layout:
    try:
        return find_runs(Path(root))
    except LayoutError as e:
        raise ArtifactImportError(str(e)) from None


def default_run_id(root: Path) -> str:
    """imported-<hash of the artifact files>: importing the same folders twice gives the same id."""
    h = hashlib.sha256()
    for art in find_artifact_dirs(root):
        for f in sorted(art.rglob("*")):
            if f.is_file():
                h.update(f.relative_to(root).as_posix().encode())
                h.update(hashlib.sha256(f.read_bytes()).digest())
    return "imported-" + h.hexdigest()[:12]


def _aggregates(layout: Layout) -> dict[str, dict[str, Any]]:
    """AIPerf's per-variation aggregates, keyed by the concurrency they measured (JSON keys: text)."""
    out = {}
    for variation, path in layout.aggregates.items():
        agg = read_aggregate(path)
        trial = next(r for r in layout.runs if r.variation == variation)
        conc, _ = detect_concurrency(trial.folder, Path(variation).name or None)
        out[str(conc)] = agg
    return out


def import_run(
    root: Path,
    recipe_name: str,
    store: str,
    run_id: str | None = None,
    s3=None,
    keep: Path | None = None,
    *,
    stated: dict[str, Any] | None = None,
    model_mismatch_ok: bool = False,
) -> dict[str, Any]:
    """Import the AIPerf runs under root as run `run_id` of `recipe_name` into `store`. Returns a summary.

    `stated`: what the user states about the deployment (gpu_type, gpu_count, engine_image, router); the rest
    is "unknown" unless the artifact holds it (infersweep.results.import_context.provenance)."""
    resolved = _resolve_recipe(recipe_name)
    layout = _layout(Path(root))
    run_id = run_id or default_run_id(root)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}", run_id):
        raise ArtifactImportError(f"--run-id {run_id!r}: letters, digits, '.', '_', '-' only")
    recipe_ctx = recipe_context(resolved)
    summaries = [read_summary(r.folder) for r in layout.runs]
    try:
        known = provenance(summaries, recipe_ctx, stated=stated or {}, model_mismatch_ok=model_mismatch_ok)
    except ProvenanceError as e:
        raise ArtifactImportError(str(e)) from None
    aggregates = _aggregates(layout)
    with tempfile.TemporaryDirectory(prefix="infersweep-import-") as tmp:
        run_dir = Path(keep) if keep else Path(tmp) / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        results = stage_run(Path(root), run_dir, layout)
        workload = one_workload([(r.folder, sm) for r, sm in zip(layout.runs, summaries, strict=True)])
        line = layout.describe([(r["concurrency"], r["repetition"]) for r in results])
        known["imported"] |= {"layout": line, "aiperf_aggregate": aggregates or None}
        ctx = (
            recipe_ctx
            | {"topology": UNKNOWN}  # the recipe's topology is what was meant, not what the artifact shows
            | known
            | {"run_id": run_id, "source": "imported", "context_source": "import", "workload": workload}
        )
        if known["model"] != recipe_ctx.get("model"):
            ctx["model_revision"] = None  # the recipe's revision is of another model
        slo = ctx.get("slo") or {}
        df = summarize(run_dir, ctx["gpu_count"], slo, resolved.name, ctx)
        where = _publish(run_dir, resolved.name, run_id, store, s3)
    return {
        "run_id": run_id,
        "recipe": resolved.name,
        "points": len(df),
        "where": where,
        "aiperf_versions": sorted({r.get("aiperf_version") or "unknown" for r in results}),
        "valid_points": int(df["valid"].fillna(False).astype(bool).sum()),
        "table": df,
        "layout": line,
        "imported": known["imported"],
        "workload": workload,
        "aggregate_rows": side_by_side(df, aggregates),
    }


def _resolve_recipe(name: str):
    from infersweep.recipe import all_recipe_paths, load_recipe

    names = []
    for path in all_recipe_paths():
        resolved = load_recipe(path)
        if resolved.name == name:
            return resolved
        names.append(resolved.name)
    raise ArtifactImportError(
        f"--recipe {name!r}: no such recipe in params/recipes/ (`infersweep recipes` lists "
        f"{len(names)}); the imported run is filed under a recipe so compare can find it"
    )


def _publish(run_dir: Path, recipe: str, run_id: str, store: str, s3=None) -> str:
    target = RunStore(store, s3=s3)
    try:
        target.locate(f"{recipe}/{run_id}")
        raise ArtifactImportError(
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
