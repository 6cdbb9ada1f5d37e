"""`infersweep run --local`: render a recipe exactly as for a cluster, then run that rendered workflow here.

The stand-ins for cluster services are real programs: Dynamo frontend + mocker workers for the DGD, a
real S3-compatible server for the artifact repository and results bucket, AIPerf for every point. The
recipe is scaled down by params/local.yaml (same shape, fewer workers, smaller sweep). Every process this
starts is stopped when it ends: on success, on a failed step, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from infersweep.aiperf.point import Point, points_text
from infersweep.cluster_settings import ClusterSettings, load_cluster_settings
from infersweep.local.argo import LocalArgo, Node
from infersweep.local.executor import (  # ARTIFACT_BUCKET: also imported from here
    ARTIFACT_BUCKET,
    execute,
    failed_step_lines,
)
from infersweep.local.gpu.workers import GpuWorkers
from infersweep.local.phases import (
    RunFolder,
    earlier_workflow,
    finish_gpu,
    gpu_side,
    local_prometheus,
    local_services,
    new_run_id,
    next_attempt,
    workflow_parameters,
    write_rendered,
)
from infersweep.local.profile import LocalProfile, load_local_profile
from infersweep.local.publish import keep_published, seed_earlier_attempt
from infersweep.local.scale import (
    compact_json,
    local_workload,
    run_points,
    scaled_lengths,
    simulated_gpus,
    step_steadiness_here,
)
from infersweep.local.standins.prometheus import BINARY as PROMETHEUS_BINARY
from infersweep.local.standins.prometheus import LocalPrometheus
from infersweep.local.standins.s3server import LocalS3
from infersweep.local.toolchain import check_before_deploying, prometheus_warning
from infersweep.local.workers import LocalWorkers
from infersweep.names import dns_label
from infersweep.recipe import RecipeError, ResolvedRecipe, load_recipe
from workflows.render import render_recipe

__all__ = ["ARTIFACT_BUCKET", "LocalRun", "LocalRunOptions", "run_local"]


@dataclass
class LocalRun:
    run_id: str
    run_dir: Path
    phase: str
    results_dir: Path
    s3_keys: list[str]
    root: Node
    seconds: float
    message: str = ""
    store: Path | None = None  # the on-disk results store the run was kept in (infersweep/local/disk_store.py)
    # Each step that ended Failed or Error: "<step>: <its message> (log: <path>)". A failed workflow's own
    # message is often empty (Argo marks a DAG failed from its leaves, dag.go assessDAGPhase, with no text),
    # so this is what says why a run failed.
    failed_steps: list[str] = field(default_factory=list)
    # The run id its results were published under: run_id, or run_id-rN for a --retry that met the first
    # attempt's results there (never over them: docs/lifecycle.md).
    published_id: str = ""


@dataclass
class LocalRunOptions:
    """How `run --local` runs a recipe (run_local's keyword arguments; its docstring says what each does)."""

    out_root: Path = Path("runs")
    cache_root: Path = Path(".infersweep")
    overrides: dict[str, str] | None = None
    recipe_overrides: dict[str, Any] | None = None
    dgd_api: str = "v1beta1"
    on_event: Callable[[str, Node], None] | None = None
    s3: LocalS3 | None = None
    resume: Path | None = None
    retry: Path | None = None
    resubmit: Path | None = None
    on_started: Callable[[LocalArgo], None] | None = None
    workers: LocalWorkers = field(default_factory=LocalWorkers)


@dataclass
class ScaledRun:
    """The scale phase's result: what a run measures here and the run parameters local mode sets."""

    points: list[Point]
    workload: dict[str, Any]
    parameters: dict[str, str]
    model_dir: Path


@dataclass
class RenderedRun:
    """The render phase's result: the documents the executor runs, and what they need to run."""

    workflow: dict[str, Any]
    templates: list[dict[str, Any]]
    retry_status: dict[str, Any] | None = None  # --retry: the earlier status, failed nodes reset
    prometheus: LocalPrometheus | None = None
    gpu_versions: dict[str, str] | None = None  # the GPU workers' stack, read once the DGD names their engines


@dataclass
class _Run:
    """One `run --local`: its recipe and options, where it runs, what it runs on."""

    recipe: ResolvedRecipe
    options: LocalRunOptions
    folder: RunFolder
    prof: LocalProfile
    settings: ClusterSettings
    gpu: GpuWorkers | None
    earlier: tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None] | None

    @property
    def cache_root(self) -> Path:
        return self.options.cache_root.resolve()


def _earlier_run(run_dir: Path, flag: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """(workflow, templates, last status) of an earlier `infersweep run --local` folder."""
    import json

    import yaml

    workflow = earlier_workflow(run_dir, f"{flag} {run_dir}")
    templates = [yaml.safe_load(f.read_text()) for f in sorted((run_dir / "rendered" / "templates").glob("*.yaml"))]
    status_file = run_dir / "status.json"
    status = json.loads(status_file.read_text()) if status_file.is_file() else None
    return workflow, templates, status


def _check_resumable(r: ResolvedRecipe, resume: Path, params: dict[str, Any]) -> None:
    """A resumed run keeps its measured points: only a run of the same recipe, with the same fields, may."""
    import json

    from infersweep.recipe_context import recipe_hash

    if params.get("recipe") != r.name:
        raise RecipeError(f"--resume {resume}: that run is of recipe {params.get('recipe')!r}, not {r.name!r}")
    try:
        earlier_hash = json.loads(params.get("context") or "{}").get("recipe_hash")
    except (ValueError, AttributeError):
        earlier_hash = None
    if earlier_hash and earlier_hash != recipe_hash(r):
        # its measured points would be kept beside points of another deployment or workload
        raise RecipeError(
            f"--resume {resume}: that run measured {r.name} with other recipe fields (its recipe "
            "hash differs); give the --set it was run with, or start a new run"
        )


def _run_folder(r: ResolvedRecipe, o: LocalRunOptions, earlier: tuple | None) -> RunFolder:
    """Where this attempt runs: a new folder; a --retry's own; a --resubmit's new one; a --resume's next attempt."""
    if o.retry is not None:
        return RunFolder(earlier[0]["metadata"]["name"], Path(o.retry).resolve())
    if o.resubmit is not None:
        run_id = dns_label(f"{Path(o.resubmit).resolve().name[:56]}-{uuid.uuid4().hex[:5]}")
        return RunFolder(run_id, (o.out_root / run_id).resolve())
    if o.resume is None:
        run_id = new_run_id(r.name)
        return RunFolder(run_id, (o.out_root / run_id).resolve())
    run_dir = Path(o.resume).resolve()
    _check_resumable(r, o.resume, workflow_parameters(earlier_workflow(run_dir, f"--resume {o.resume}")))
    run_id, rendered = next_attempt(run_dir)
    return RunFolder(run_id, run_dir, rendered)


def _scale(c: _Run) -> ScaledRun:
    """The points, workload and run parameters: the recipe scaled to this machine on the mocker; on real engines
    the recipe as it is (its own sweep and lengths, tokens counted by the server: random weights emit ids a
    client tokenizer miscounts, minutes to start)."""
    r, prof = c.recipe, c.prof
    isl, osl = scaled_lengths(r, prof)
    points = run_points(r, prof, c.options.workers.kind, isl, osl)
    if c.gpu is None:
        model_dir = c.cache_root / "toy-model"  # built only once the recipe and overrides have rendered
        workload, _ = local_workload(r, prof, isl, osl)
        timeouts, extra = ("120", "600"), {"gpu-count": str(simulated_gpus(r, prof))}
    else:
        from infersweep.local.dynamo.toy_model import model_folder

        model_dir = model_folder(r.model.id, c.gpu.weights, c.cache_root)
        workload = r.recipe.workload.aiperf_workload() | {"server_token_count": True}
        timeouts, extra = ("1800", "1200"), {}
    workload |= step_steadiness_here(r.recipe.workload, c.gpu)  # with a budget: the thresholds summarize will use
    parameters = {
        "model-source": f"file://{model_dir}",
        "workload": compact_json(workload),
        "points": points_text(points),
        "ready-timeout-s": timeouts[0],
        "point-timeout-s": timeouts[1],
    } | extra
    return ScaledRun(points, workload, parameters, model_dir)


def _rendered_again(c: _Run) -> RenderedRun:
    """--retry / --resubmit: the earlier run's documents, as `argo retry` / `argo resubmit` handle a finished
    workflow (infersweep/local/argo/retry.py). They keep the workflow's parameters: the stand-in services come
    back where they were."""
    from infersweep.local.argo.retry import RetryError, formulate_resubmit, formulate_retry

    workflow, templates, prev_status = c.earlier
    prom_url = str(workflow_parameters(workflow).get("prometheus-url") or "")
    prom = None
    if prom_url.startswith("http://127.0.0.1:"):
        prom = local_prometheus(c.folder.state_dir, port=int(prom_url.rsplit(":", 1)[1]))
    if c.options.resubmit is not None:
        workflow = formulate_resubmit(workflow)
        workflow["metadata"]["name"] = c.folder.run_id
        write_rendered(c.folder.rendered_dir, workflow, templates)
        return RenderedRun(workflow, templates, None, prom)
    if prev_status is None:
        raise RecipeError(
            f"--retry {c.options.retry}: that run left no status.json (it did not finish); use --resume or --resubmit"
        )
    try:
        retry_status = formulate_retry(c.folder.run_id, prev_status)
    except RetryError as e:
        raise RecipeError(f"--retry {c.options.retry}: {e}") from None
    return RenderedRun(workflow, templates, retry_status, prom)


def _render(c: _Run, scaled: ScaledRun) -> RenderedRun:
    """The recipe rendered exactly as for a cluster, with local mode's run parameters, into rendered/. A real
    Prometheus scrapes the local frontend every second (the local platform's deploy writes its address into the
    targets file); its URL is a parameter like a cluster's. No binary: no server metrics."""
    if c.earlier is not None:
        return _rendered_again(c)
    given = c.options.overrides or {}
    prom = None
    if "prometheus-url" not in given:
        prom = local_prometheus(c.folder.state_dir)
        if prom is not None:
            scaled.parameters["prometheus-url"] = prom.url
        else:
            print(prometheus_warning(PROMETHEUS_BINARY), file=sys.stderr, flush=True)

    def render():
        return render_recipe(
            c.recipe,
            c.settings,
            dgd_api=c.options.dgd_api,
            namespace="local",
            overrides=scaled.parameters | given,
            workflow_name=c.folder.run_id,
        )

    bundle, versions = render(), None
    if c.gpu is not None:
        from infersweep.local.dynamo.gpu_fit import check_fits, worker_modules
        from infersweep.local.gpu.run import annotate_dgd, engine_python_of, engine_ran, engine_stack

        # Which GPUs the workers take, checked before any service or process starts; tok/s per GPU
        # counts the GPUs they really use (two workers sharing one GPU are one GPU).
        gpu = c.gpu
        used = check_fits(
            bundle.dgd, list(gpu.gpus), python=gpu.python, model_dir=scaled.model_dir, weights=gpu.weights
        )
        if str(used) != str(workflow_parameters(bundle.workflow).get("gpu-count")):
            scaled.parameters["gpu-count"] = str(used)
            bundle = render()
        # The workers run from this machine's interpreters, not the DGD's image: rendered/dgd.yaml says so.
        modules = worker_modules(bundle.dgd)
        versions = engine_stack(gpu, modules)
        annotate_dgd(bundle.dgd, engine_ran(versions, engine_python_of(gpu, modules), None))
    bundle.write(c.folder.rendered_dir)
    return RenderedRun(bundle.workflow, bundle.templates, None, prom, versions)


def _gpu_stack(docs: RenderedRun) -> dict[str, Any]:
    """start_gpu_side's words on the stack: the workers' engine modules, versions, the DGD's image."""
    from infersweep.local.dynamo.gpu_fit import worker_modules
    from infersweep.local.gpu.run import dgd_images, workflow_dgd

    dgd = workflow_dgd(docs.workflow)  # parsed once: a retried run has only its stored Workflow
    return {
        "modules": worker_modules(dgd) if dgd else set(),
        "versions": docs.gpu_versions,
        "rendered_image": ", ".join(dgd_images(dgd)) or None,
    }


def _execute(c: _Run, scaled: ScaledRun, docs: RenderedRun) -> tuple[LocalArgo, Node, tuple]:
    """The services started, the workflow run to its end, what it published kept; every process stopped."""
    o, folder, settings, r = c.options, c.folder, c.settings, c.recipe
    with local_services(settings, folder.state_dir, s3=o.s3, prometheus=docs.prometheus, run_id=folder.run_id) as svc:
        env = svc.step_env(
            model_dir=scaled.model_dir,
            max_workers=c.prof.max_workers_per_component,
            gpu=c.gpu,
        )
        stack = _gpu_stack(docs) if c.gpu is not None else {}
        with gpu_side(folder.run_dir, c.gpu, scaled.parameters.get("gpu-count"), folder.state_dir, **stack) as gpu_env:
            s3c = svc.s3.client()
            seeded: set[str] = set()
            if o.retry is not None:  # the first attempt's results are in S3 again: the retry publishes beside them
                seeded = seed_earlier_attempt(s3c, settings, r.name, folder.run_id, folder.run_dir)
            namespace = docs.workflow.get("metadata", {}).get("namespace", "default")
            services = svc.executor(o, env | gpu_env, [r], namespace)
            # Ctrl-C / SIGTERM is `argo stop` while it runs; status.json is what `argo get` would show (--retry).
            argo, root = execute(
                docs.workflow,
                docs.templates,
                services,
                run_id=folder.run_id,
                run_dir=folder.run_dir,
                status_file=folder.run_dir / "status.json",
                status=docs.retry_status,
            )
            published = keep_published(s3c, settings, r.name, folder.run_id, folder.run_dir, seeded)
    return argo, root, published


def run_local(recipe_ref: str | Path | None, options: LocalRunOptions | None = None, **fields: Any) -> LocalRun:
    """Run the recipe's rendered workflow here, in phases: scale, render, execute, publish. `options`, or its
    fields as keywords (LocalRunOptions's; `workers`, `weights`, `gpu_python` and `engine_cache` as the CLI names
    them: infersweep.local.workers.LocalWorkers). Pass a started `s3` to keep the bucket after the run.

    `workers`: "mocker" (default: Dynamo's mocker stands in for the GPU workers, the recipe scaled down by
    params/local.yaml) or "gpu": real engine workers (`python -m dynamo.vllm` with the rendered flags) on this
    machine's GPUs, the recipe's own sweep and lengths, tokens counted by the server, NVML telemetry per
    point, and every row's source saying which GPU and stack ran (infersweep.local.gpu.run). `weights`:
    "dummy" (the real architecture with random weights, --load-format dummy) or "cache". `engine_cache`:
    where the engine's compile caches persist between runs (default <cache_root>/engine-cache).

    `resume`: the folder of an earlier run of this recipe. The workflow runs again on its workdir, so
    points already measured `ok` are kept (the point step never redoes them) and only the others run.
    It runs as a new workflow `<run>-rN` (a new S3 prefix), so it never overwrites what the earlier
    attempt published.

    `retry` / `resubmit`: the folder of a finished run, handled as `argo retry` / `argo resubmit` handle a
    finished workflow (infersweep/local/argo/retry.py): retry continues the same workflow (same name, same
    folder) from its last status with failed nodes reset and succeeded ones kept; resubmit runs the same
    documents as a new workflow in a new folder.

    `recipe_overrides`: `--set` changes to the recipe's fields (infersweep.recipe.overrides), applied before it
    is validated, scaled down and rendered. `overrides`: workflow parameters as they are (the CLI passes only
    the run parameters a user may set; tests may set any).
    """
    o = options or LocalRunOptions(workers=LocalWorkers.take(fields), **fields)
    t_start = time.monotonic()
    earlier = None
    if o.retry is not None or o.resubmit is not None:
        flag, folder = ("--retry", o.retry) if o.retry is not None else ("--resubmit", o.resubmit)
        earlier = _earlier_run(Path(folder).resolve(), flag)
        recipe_ref = recipe_ref or workflow_parameters(earlier[0]).get("recipe")
    r = load_recipe(recipe_ref, overrides=o.recipe_overrides)
    prof = load_local_profile()
    gpu = o.workers.start_settings(o.cache_root, gpu_type=r.recipe.gpu.type)
    check_before_deploying(gpu.python if gpu else None)  # one line naming a tool that would not start, and the fix
    c = _Run(r, o, _run_folder(r, o, earlier), prof, load_cluster_settings(), gpu, earlier)
    scaled = _scale(c)
    docs = _render(c, scaled)
    if gpu is None:
        if earlier is None:  # retry/resubmit rerun an earlier run's documents: it said so then
            from infersweep.local.scale_note import scale_note

            note = scale_note(r, prof, scaled.workload, scaled.points, prof.max_workers_per_component)
            print("\n".join(note), flush=True)
        from infersweep.local.dynamo.toy_model import build_toy_model

        build_toy_model(scaled.model_dir)
    argo, root, (published_id, keys, store) = _execute(c, scaled, docs)
    finish_gpu(c.folder.run_dir, c.folder.state_dir, gpu)
    return _result(c.folder, argo, root, (published_id, keys, store), time.monotonic() - t_start)


def _result(folder: RunFolder, argo: LocalArgo, root: Node, published: tuple, seconds: float) -> LocalRun:
    """The run's verdict (operator.go operate: the entry node's phase, made Failed by a failed exit handler),
    with results/ linked to the workdir's run folder. A stopped run says what stopped it (Ctrl-C, SIGTERM, the
    deadline), then the workflow's own message."""
    published_id, keys, store = published
    results = folder.run_dir / "volumes" / "workdir" / "run"
    link = folder.run_dir / "results"
    if results.exists() and not link.exists():
        link.symlink_to(results.relative_to(folder.run_dir))
    message = "; ".join(m for m in (argo.stop_reason, argo.message) if m)
    return LocalRun(
        folder.run_id,
        folder.run_dir,
        argo.phase,
        link,
        keys,
        root,
        seconds,
        message,
        store,
        failed_step_lines(argo),
        published_id,
    )
