"""The run context: what was benchmarked, with what, and when. It travels with every row of the results
table and with the run's index entry, so a table read on its own still says what it measured.

Sources, strongest first:
1. the context the pipeline hands the summarize step (`--context` JSON or `<run-dir>/context.json`),
   built by `infersweep.recipe_context.recipe_context()` from the resolved recipe at render time;
2. the recipe looked up by name in this image's params/ (when 1 is absent; `named_recipe_context()`): marked
   `context_source: recipe-lookup`, because the recipe may have changed since the run was rendered;
3. the points themselves: AIPerf version, first start and last end time (always measured, never given).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from infersweep.recipe_context import named_recipe_context

CONTEXT_FILE = "context.json"
READY_FILE = "ready.json"  # steps.wait_ready --ready-file: time from the DGD's creation to serving
RUN_FILE = "run.json"  # summary/run.json: the context + SLO + schema version of a summarized run

# What was run, and on what: the first context keys of the table and of a run's report (report.CONTEXT_ROWS).
WHAT_RAN = (
    "run_id",
    "recipe",
    "recipe_hash",
    "engine",
    "engine_image",
    "model",
    "model_revision",
    "model_commit",
    "topology",
    "router",
    "gpu_type",
    "gpu_count",
)
# Every context key the results table carries (missing ones stay empty, never invented).
FIELDS = (
    *WHAT_RAN,
    "aiperf_version",
    "aiperf_image",
    "step_image",
    "run_start",
    "run_end",
    "workload",
    "slo",
    "context_source",
    "source",
    "images_ran",
    "prediction",  # set by steps/summarize (infersweep.predict.beside): where the predicted columns come from
    # an experiment treatment's run (workflows/experiment.py hands these to its summarize tasks)
    "experiment",
    "treatment",
    "restart_class",
    "levels",
    # the KV-cache state the treatment started from and its place in a balanced order
    # (infersweep.experiment.plan: fresh / reset / warm after <treatment>; pass 1 or 2)
    "kv_cache_state",
    "order_pass",
    "base_treatment",
    "time_to_ready_s",
    # `infersweep import`: where each deployment fact came from (AIPerf's artifact, the importer's flags, or
    # unknown), the layout found and AIPerf's own aggregate (infersweep.results.import_context)
    "imported",
)
# source: measured / simulated (built-in timing) / simulated (calibrated: database) (infersweep.predict.source);
# "imported" for AIPerf folders brought in by `infersweep import` (a measurement: classed as measured).
# What wait-ready read from the deployment's pod status (image -> imageID with digest): what ran, not what
# was rendered (steps/wait_ready.py --images).
IMAGES_RAN_FILE = "context/images.json"


def parse_context_arg(text: str | None) -> dict[str, Any]:
    """`--context` value: a JSON object, or @path to a file holding one. Bad input: one clear error."""
    if not text:
        return {}
    source = text
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"--context {source}: cannot read the file: {e}") from None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ValueError(f"--context: not JSON ({e})") from None
    if not isinstance(value, dict):
        raise ValueError("--context: must be a JSON object")
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise ValueError(f"--context: unknown keys {unknown}; known: {list(FIELDS)}")
    return value


def workload_from_argv(points: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The workload the points really ran, read back from their AIPerf command lines."""
    from infersweep.aiperf import WORKLOAD_FLAGS

    by_flag = {flag: key for key, flag in WORKLOAD_FLAGS.items()}
    for p in points:
        argv = p.get("argv") or []
        found = {}
        for flag, value in zip(argv, argv[1:], strict=False):
            if flag in by_flag:
                found[by_flag[flag]] = int(value) if value.isdigit() else value
        if found:
            return found
    return None


def engine_ran_from_env(env: dict[str, str] | None = None) -> dict[str, Any]:
    """What ran in place of the rendered engine image (ENGINE_RAN_ENV, set by local mode's GPU side), {} when
    the deployment ran its images."""
    from infersweep.predict.source import ENGINE_RAN_ENV

    text = (os.environ if env is None else env).get(ENGINE_RAN_ENV)
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def build_context(
    run_dir: Path,
    *,
    given: dict[str, Any],
    title: str,
    gpu_count: int,
    slo: dict[str, float],
    points: list[dict[str, Any]],
) -> dict[str, Any]:
    """The run context of a summarized run (see the module docstring for the sources)."""
    ctx: dict[str, Any] = {}
    file_ctx = run_dir / CONTEXT_FILE
    if file_ctx.exists():
        ctx.update(parse_context_arg("@" + str(file_ctx)))
        ctx.setdefault("context_source", "context-file")
    if given:
        ctx.update(given)
        ctx.setdefault("context_source", "pipeline")
    if not ctx.get("recipe_hash"):
        looked_up = named_recipe_context(ctx.get("recipe") or title)
        if looked_up:  # the recipe may have changed since the run was rendered: say where the context came from
            looked_up["context_source"] = "recipe-lookup"
        ctx = looked_up | ctx
    ctx.setdefault("recipe", title)
    ctx.setdefault("context_source", "none")
    # What the run itself measured or was told at summarize time wins over render-time guesses.
    ctx["gpu_count"] = gpu_count
    from infersweep.metrics import normalize_slo

    ctx["slo"] = normalize_slo(slo)  # under the results table's metric names (an old --slo key mapped)
    versions = sorted({p["aiperf_version"] for p in points if p.get("aiperf_version")})
    ctx["aiperf_version"] = ", ".join(versions) or None
    ctx["workload"] = ctx.get("workload") or workload_from_argv(points)
    starts = sorted(p["start_time"] for p in points if p.get("start_time"))
    ends = sorted(p["end_time"] for p in points if p.get("end_time"))
    ctx["run_start"] = starts[0] if starts else None
    ctx["run_end"] = ends[-1] if ends else None
    ready = run_dir / READY_FILE
    if ready.exists():  # measured by wait-ready: wins over anything given
        ctx["time_to_ready_s"] = json.loads(ready.read_text()).get("time_to_ready_s")
    if not ctx.get("source"):  # measured / simulated (built-in timing) / simulated (calibrated: database)
        from infersweep.predict.source import result_source

        ctx["source"] = result_source()
    ran = engine_ran_from_env()
    if ran.get("engine_image"):  # the engine that served, not the image rendered (local GPU workers: local wheels)
        ctx["engine_image"] = ran["engine_image"]
    images_file = run_dir / IMAGES_RAN_FILE
    if images_file.exists():
        try:
            ctx["images_ran"] = json.loads(images_file.read_text()) or None
        except ValueError:
            ctx["images_ran"] = None
    for key in FIELDS:
        ctx.setdefault(key, None)
    return {k: ctx[k] for k in FIELDS}
