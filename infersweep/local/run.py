"""`infersweep run --local`: render a recipe exactly as for a cluster, then run that rendered workflow here.

The stand-ins for cluster services are real programs: Dynamo frontend + mocker workers for the DGD, a
real S3-compatible server for the artifact repository and results bucket, AIPerf for every point. The
recipe is scaled down by params/local.yaml (same shape, fewer workers, smaller sweep). Every process this
starts is stopped when it ends: on success, on a failed step, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import yaml

from infersweep.aiperf.point import Point, points_text, repeated, round_warmup, sweep
from infersweep.cluster_settings import ClusterSettings, load_cluster_settings
from infersweep.local import procs
from infersweep.local.adapter import step_env
from infersweep.local.argo import LocalArgo, Node
from infersweep.local.executor import (  # ARTIFACT_BUCKET: also imported from here
    ARTIFACT_BUCKET,
    execute,
    failed_step_lines,
)
from infersweep.local.standins.prometheus import BINARY as PROMETHEUS_BINARY
from infersweep.local.standins.prometheus import LocalPrometheus, free_port
from infersweep.local.standins.s3server import LocalS3
from infersweep.local.toolchain import check_before_deploying, prometheus_warning
from infersweep.local.toy_model import build_toy_model
from infersweep.names import dns_label
from infersweep.params_files import read_yaml_mapping
from infersweep.paths import params_dir, venv_python
from infersweep.recipe import RecipeError, ResolvedRecipe, load_recipe
from workflows.render import render_recipe


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


def local_profile() -> dict[str, Any]:
    return read_yaml_mapping(params_dir() / "local.yaml")


def scaled_points(r: ResolvedRecipe, prof: dict[str, Any]) -> list[Point]:
    """The recipe's sweep, cut to this machine: its lowest levels up to max_concurrency, at most max_points.
    A rate sweep keeps its rates (the lowest max_points) under a cap of at most max_concurrency. The same
    formula as the recipe's (aiperf/point.py sweep) with params/local.yaml's numbers."""
    w = r.recipe.workload
    if w.request_rate:
        levels, rates = [min(w.concurrency[0], prof["max_concurrency"])], sorted(w.request_rate)[: prof["max_points"]]
    else:
        levels = [c for c in w.concurrency if c <= prof["max_concurrency"]] or [min(w.concurrency)]
        levels, rates = levels[: prof["max_points"]], []
    return sweep(
        levels,
        rates,
        requests_per_concurrency=prof["requests_per_concurrency"],
        min_requests=prof["min_requests"],
        warmup=lambda c: round_warmup(c, prof["max_warmup"]),
    )


def local_repetitions(r: ResolvedRecipe, workers: str) -> int:
    """How often each point runs here: the recipe's `regression.repetitions` (default 3, `--set
    regression.repetitions=N`) on real GPUs, whose numbers are results; on the mocker 1 unless the recipe or
    a --set names it (a simulated point is a check of the pipeline, not a result: the table says n=1)."""
    reg = r.recipe.regression
    return reg.repetitions if workers == "gpu" or "repetitions" in reg.model_fields_set else 1


def run_points(r: ResolvedRecipe, prof: dict[str, Any], workers: str, isl: int, osl: int) -> list[Point]:
    """The points `run --local` measures, each repetition (local_repetitions) in interleaved rounds
    (infersweep.aiperf.point.repeated): on real GPUs the recipe's own sweep, as a submit renders it
    (workflows/pipeline.py recipe_points); on the mocker the sweep scaled to this machine (local_workload)."""
    points = r.recipe.workload.points() if workers == "gpu" else local_workload(r, prof, isl, osl)[1]
    return repeated(points, local_repetitions(r, workers))


def local_workload(r: ResolvedRecipe, prof: dict[str, Any], isl: int, osl: int) -> tuple[dict[str, Any], list[Point]]:
    """(workload, points) local mode runs. A trace on this machine whose prompts fit max_isl replays for real
    (steps.aiperf_point hands AIPerf the local tokenizer so its hash_ids replay works offline); with
    fixed_schedule it is one point at the trace's own timestamps, every line of it. Any other trace (a
    download, or prompts longer than this machine takes) and a mix run as their scaled average lengths."""
    w = r.recipe.workload
    t = w.trace
    f = t.local_file() if t else None
    if f is not None and f.is_file():
        rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        if rows and max(int(x.get("input_length", 0)) for x in rows) <= prof["max_isl"]:
            workload = w.aiperf_workload() | {"trace": str(f.resolve())}
            if t.fixed_schedule:
                cap = min(w.concurrency[0], prof["max_concurrency"])
                return workload, [Point(concurrency=cap, requests=len(rows), warmup=0)]
            return workload, scaled_points(r, prof)
    return scaled_workload(r, prof, (isl, osl)), scaled_points(r, prof)


def scaled_lengths(r: ResolvedRecipe, prof: dict[str, Any]) -> tuple[int, int]:
    # Keep the ISL:OSL ratio when both must shrink, so a prefill-heavy recipe stays prefill-heavy.
    w = r.recipe.workload
    scale = min(1.0, prof["max_isl"] / w.isl, prof["max_osl"] / w.osl)
    return max(8, int(w.isl * scale)), max(4, int(w.osl * scale))


def scaled_workload(r: ResolvedRecipe, prof: dict[str, Any], lengths: tuple[int, int] | None = None) -> dict[str, Any]:
    """The workload a local point runs: scaled lengths (a trace or mix as its scaled averages), and a
    multi-turn session's think time cut to max_turn_delay_ms (the pauses shape the cluster's cache reuse
    over minutes; here they would only make a point wait: 24 requests at 1.5 s took 100 s)."""
    w = r.recipe.workload.synthetic_workload(*(lengths or scaled_lengths(r, prof)))
    if "turn_delay_ms" in w and "max_turn_delay_ms" in prof:
        w["turn_delay_ms"] = min(w["turn_delay_ms"], prof["max_turn_delay_ms"])
    return w


def simulated_gpus(r: ResolvedRecipe, prof: dict[str, Any]) -> int:
    """GPUs the local stand-in represents: each mocker worker plays one replica of TP GPUs."""
    return sum(
        min(w.replicas * w.nodes, prof["max_workers_per_component"]) * w.gpus_per_replica // w.nodes
        for w in r.recipe.topology.roles().values()
    )


def _earlier_run(run_dir: Path, flag: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """(workflow, templates, last status) of an earlier `infersweep run --local` folder."""
    wf_file = run_dir / "rendered" / "workflow.yaml"
    if not wf_file.is_file():
        raise RecipeError(
            f"{flag} {run_dir}: not the folder of an `infersweep run --local` run "
            "(no rendered/workflow.yaml); give runs/<run-id>"
        )
    templates = [yaml.safe_load(f.read_text()) for f in sorted((run_dir / "rendered" / "templates").glob("*.yaml"))]
    status_file = run_dir / "status.json"
    status = json.loads(status_file.read_text()) if status_file.is_file() else None
    return yaml.safe_load(wf_file.read_text()), templates, status


def _published(s3c: Any, bucket: str, base: str, run_id: str, seeded: set[str]) -> tuple[str, list[str]]:
    """(the run id this attempt published under, its keys): `run_id`, or `run_id-rN` when a retry met the
    first attempt there (infersweep.results.publish publish_run); keys put back by seed_from_disk are not
    this attempt's."""
    try:
        paginator = s3c.get_paginator("list_objects_v2")
        listed = [
            o["Key"]
            for page in paginator.paginate(Bucket=bucket, Prefix=f"{base}/{run_id}")
            for o in page.get("Contents", [])
        ]
    except Exception:  # S3 went away during the run: the results are on disk, the CLI says how to publish
        return run_id, []
    ids = {run_id} | {f"{run_id}-r{n}" for n in range(1, 1000)}
    by_id: dict[str, list[str]] = {}
    for key in listed:
        rid = key[len(base) + 1 :].split("/", 1)[0]
        if rid in ids:
            by_id.setdefault(rid, []).append(key)
    fresh = {rid: keys for rid, keys in by_id.items() if any(k not in seeded for k in keys)}
    if not fresh:
        return run_id, by_id.get(run_id, [])
    # the attempt's own prefix: the highest -rN it wrote into (a retry of a retry goes to the next N)
    rid = max(fresh, key=lambda x: 0 if x == run_id else int(x.rsplit("-r", 1)[1]))
    return rid, fresh[rid]


def _local_configmaps(settings: ClusterSettings, r: ResolvedRecipe, namespace: str) -> dict[str, dict[str, str]]:
    """The ConfigMaps a cluster would hold for this run (`infersweep install`'s kubectl set), so the
    workflow's semaphores are honoured here exactly as there (a missing one fails the run at start)."""
    from workflows.cluster import kubectl_manifests

    return {
        f"{namespace}/{d['metadata']['name']}": {k: str(v) for k, v in (d.get("data") or {}).items()}
        for d in kubectl_manifests(settings, [r])
        if d.get("kind") == "ConfigMap"
    }


def run_local(
    recipe_ref: str | Path | None,
    *,
    out_root: Path = Path("runs"),
    cache_root: Path = Path(".infersweep"),
    overrides: dict[str, str] | None = None,
    recipe_overrides: dict[str, Any] | None = None,
    dgd_api: str = "v1beta1",
    on_event: Callable[[str, Node], None] | None = None,
    s3: LocalS3 | None = None,
    resume: Path | None = None,
    retry: Path | None = None,
    resubmit: Path | None = None,
    on_started: Callable[[LocalArgo], None] | None = None,
    workers: str = "mocker",
    weights: str = "dummy",
    gpu_python: str | None = None,
    engine_cache: Path | None = None,
) -> LocalRun:
    """Run the recipe's rendered workflow here. Pass a started `s3` to keep the bucket after the run.

    `workers`: "mocker" (default: Dynamo's mocker stands in for the GPU workers, the recipe scaled down by
    params/local.yaml) or "gpu": real engine workers (`python -m dynamo.vllm` with the rendered flags) on this
    machine's GPUs, the recipe's own sweep and lengths, tokens counted by the server, NVML telemetry per
    point, and every row's source saying which GPU and stack ran (infersweep.local.gpu_run). `weights`:
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
    t_start = time.monotonic()
    earlier = retry or resubmit
    prev_docs = None
    if earlier is not None:
        prev_docs = _earlier_run(Path(earlier).resolve(), "--retry" if retry else "--resubmit")
        recorded = {p["name"]: p.get("value") for p in prev_docs[0]["spec"]["arguments"]["parameters"]}
        recipe_ref = recipe_ref or recorded.get("recipe")
    r = load_recipe(recipe_ref, overrides=recipe_overrides)
    prof = local_profile()
    isl, osl = scaled_lengths(r, prof)
    if workers not in ("mocker", "gpu"):
        raise RecipeError(f"--workers {workers!r}: choose mocker (simulated, the default) or gpu (real engines)")
    gpu = None
    if workers == "gpu":
        from infersweep.local.gpu_run import gpu_workers

        gpu = gpu_workers(gpu_python, weights, engine_cache, cache_root, gpu_type=r.recipe.gpu.type)
    check_before_deploying(gpu.python if gpu else None)  # one line naming a tool that would not start, and the fix
    rendered = "rendered"
    if earlier is not None:
        if retry is not None:
            run_dir = Path(retry).resolve()
            run_id = prev_docs[0]["metadata"]["name"]
        else:
            run_id = dns_label(f"{Path(resubmit).resolve().name[:56]}-{uuid.uuid4().hex[:5]}")
            run_dir = (out_root / run_id).resolve()
    elif resume is None:
        run_id = dns_label(f"{r.name[:40]}-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}")
        run_dir = (out_root / run_id).resolve()
    else:
        run_dir = Path(resume).resolve()
        first = run_dir / "rendered" / "workflow.yaml"
        if not first.is_file():
            raise RecipeError(
                f"--resume {resume}: not the folder of an `infersweep run --local` run "
                "(no rendered/workflow.yaml); give runs/<run-id>"
            )
        params = {
            p["name"]: p.get("value") for p in yaml.safe_load(first.read_text())["spec"]["arguments"]["parameters"]
        }
        if params.get("recipe") != r.name:
            raise RecipeError(f"--resume {resume}: that run is of recipe {params.get('recipe')!r}, not {r.name!r}")
        from infersweep.recipe_context import recipe_hash

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
        n = len(list(run_dir.glob("rendered*"))) + 1
        run_id = dns_label(f"{run_dir.name[:56]}-r{n}")
        rendered = f"rendered-r{n}"
    state_dir = run_dir / "state"
    cache_root = cache_root.resolve()
    model_dir = cache_root / "toy-model"  # built only once the recipe and overrides have rendered

    points = run_points(r, prof, workers, isl, osl)
    workload, _ = local_workload(r, prof, isl, osl)
    gpu_versions = None  # the GPU workers' stack, read once the DGD names their engines
    local_overrides = {
        "model-source": f"file://{model_dir}",
        "workload": json.dumps(workload, separators=(",", ":")),
        "points": points_text(points),
        "ready-timeout-s": "120",
        "point-timeout-s": "600",
        "gpu-count": str(simulated_gpus(r, prof)),
    }
    if gpu is not None:
        from infersweep.local.gpu_run import model_folder

        # Real engines take the recipe as it is: its own sweep and lengths (nothing scaled down), tokens
        # counted by the server (random weights emit ids a client tokenizer miscounts), minutes to start.
        model_dir = model_folder(r.model.id, weights, cache_root)
        workload = r.recipe.workload.aiperf_workload() | {"server_token_count": True}
        local_overrides = {
            "model-source": f"file://{model_dir}",
            "workload": json.dumps(workload, separators=(",", ":")),
            "ready-timeout-s": "1800",
            "point-timeout-s": "1200",
            "points": points_text(points),
        }
    # A real Prometheus scrapes the local frontend every second (the local platform's deploy writes its
    # address into the targets file); its URL is a parameter like a cluster's. No binary: no server metrics.
    prom = None
    settings = load_cluster_settings()
    if prev_docs is not None:
        # Retry and resubmit keep the workflow's parameters: the stand-in services come back where they were.
        from infersweep.local.argo.retry import formulate_resubmit

        workflow, templates, prev_status = prev_docs
        prev_params = {p["name"]: p.get("value") for p in workflow["spec"]["arguments"]["parameters"]}
        prom_url = str(prev_params.get("prometheus-url") or "")
        if prom_url.startswith("http://127.0.0.1:") and Path(PROMETHEUS_BINARY).exists():
            prom = LocalPrometheus(state_dir / "prometheus-targets.json", port=int(prom_url.rsplit(":", 1)[1]))
        if resubmit is not None:
            workflow = formulate_resubmit(workflow)
            workflow["metadata"]["name"] = run_id
            (run_dir / rendered / "templates").mkdir(parents=True, exist_ok=True)
            (run_dir / rendered / "workflow.yaml").write_text(yaml.safe_dump(workflow, sort_keys=False))
            for t in templates:
                (run_dir / rendered / "templates" / f"{t['metadata']['name']}.yaml").write_text(
                    yaml.safe_dump(t, sort_keys=False)
                )
            retry_status = None
        else:
            from infersweep.local.argo.retry import RetryError, formulate_retry

            if prev_status is None:
                raise RecipeError(
                    f"--retry {retry}: that run left no status.json (it did not finish); use --resume or --resubmit"
                )
            try:
                retry_status = formulate_retry(run_id, prev_status)
            except RetryError as e:
                raise RecipeError(f"--retry {retry}: {e}") from None
    else:
        if "prometheus-url" not in (overrides or {}) and Path(PROMETHEUS_BINARY).exists():
            prom = LocalPrometheus(state_dir / "prometheus-targets.json", port=free_port())
            local_overrides["prometheus-url"] = prom.url
        elif "prometheus-url" not in (overrides or {}):
            print(prometheus_warning(PROMETHEUS_BINARY), file=sys.stderr, flush=True)
        bundle = render_recipe(
            r,
            settings,
            dgd_api=dgd_api,
            namespace="local",
            overrides=local_overrides | (overrides or {}),
            workflow_name=run_id,
        )
        if gpu is not None:
            # Which GPUs the workers take, checked before any service or process starts; tok/s per GPU
            # counts the GPUs they really use (two workers sharing one GPU are one GPU).
            from infersweep.local.gpu_run import check_fits

            used = check_fits(bundle.dgd, list(gpu.gpus), python=gpu.python, model_dir=model_dir, weights=weights)
            params = {p["name"]: p.get("value") for p in bundle.workflow["spec"]["arguments"]["parameters"]}
            if str(used) != str(params.get("gpu-count")):
                local_overrides["gpu-count"] = str(used)
                bundle = render_recipe(
                    r,
                    settings,
                    dgd_api=dgd_api,
                    namespace="local",
                    overrides=local_overrides | (overrides or {}),
                    workflow_name=run_id,
                )
        if gpu is not None:
            # The workers run from this machine's interpreters, not the DGD's image: rendered/dgd.yaml says so.
            from infersweep.local.gpu_run import (
                annotate_dgd,
                engine_python_of,
                engine_ran,
                engine_stack,
                worker_modules,
            )

            modules = worker_modules(bundle.dgd)
            gpu_versions = engine_stack(gpu, modules)
            annotate_dgd(bundle.dgd, engine_ran(gpu_versions, engine_python_of(gpu, modules), None))
        bundle.write(run_dir / rendered)
        workflow, templates, retry_status = bundle.workflow, bundle.templates, None
    if gpu is None:
        if prev_docs is None:  # retry/resubmit rerun an earlier run's documents: it said so then
            from infersweep.local.scale_note import scale_note

            print("\n".join(scale_note(r, prof, workload, points, prof["max_workers_per_component"])), flush=True)
        build_toy_model(model_dir)

    pythons = {settings.images.steps: sys.executable, settings.images.aiperf: venv_python("aiperf")}
    own_s3 = s3 is None
    sampler = None
    run_token = f"{run_id}-{uuid.uuid4().hex[:8]}"  # procs.RUN_MARKER: this run's processes, folder or not
    s3 = s3 or LocalS3(buckets=[settings.s3.bucket, ARTIFACT_BUCKET])
    try:
        if own_s3:
            s3.start()
        if prom:
            try:
                prom.start()
            except (OSError, RuntimeError) as e:  # metrics enrich a run, they never stop one
                print(f"prometheus did not start, server metrics will be skipped: {e}", file=sys.stderr)
        env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}  # see AIPerf note in steps.aiperf_point
        env[procs.RUN_MARKER] = run_token
        env |= s3.env() | step_env(
            state_dir=state_dir,
            model_dir=model_dir,  # the steps' DGD adapter: local
            max_workers=prof["max_workers_per_component"],
            prom_targets=prom.targets_file if prom else None,
            gpu=gpu,
        )
        if gpu is not None:
            from infersweep.local.gpu_run import dgd_images, start_gpu_side, workflow_dgd, workflow_worker_modules

            sampler, gpu_env = start_gpu_side(
                run_dir,
                gpu,
                local_overrides.get("gpu-count"),
                state_dir,
                modules=workflow_worker_modules(workflow),
                versions=gpu_versions,
                rendered_image=", ".join(dgd_images(workflow_dgd(workflow))) or None,
            )
            env |= gpu_env
        s3c = s3.client()
        from infersweep.local.disk_store import STORE_DIR, keep_run, seed_from_disk

        seeded: set[str] = set()
        if retry is not None:  # the first attempt's results are in S3 again: the retry publishes beside them
            seeded = seed_from_disk(
                s3c, settings.s3.bucket, settings.s3.prefix, r.name, run_id, run_dir.parent / STORE_DIR
            )
        namespace = workflow.get("metadata", {}).get("namespace", "default")
        # Ctrl-C / SIGTERM is `argo stop` while it runs; status.json is what `argo get` would show (--retry).
        argo, root = execute(
            workflow,
            templates,
            run_id=run_id,
            run_dir=run_dir,
            status_file=run_dir / "status.json",
            cache_root=cache_root,
            pythons=pythons,
            env=env,
            s3_client=s3c,
            configmaps=_local_configmaps(settings, r, namespace),
            on_event=on_event,
            on_started=on_started,
            status=retry_status,
        )
        published_id, keys = _published(s3c, settings.s3.bucket, f"{settings.s3.prefix}/{r.name}", run_id, seeded)
        # The S3 server is about to go: what the run published stays readable as a store folder on disk.
        store = (
            keep_run(s3c, settings.s3.bucket, settings.s3.prefix, r.name, published_id, run_dir.parent / STORE_DIR)
            if keys
            else None
        )
    finally:
        if gpu is not None and sampler is not None:
            sampler.stop()
        # Belt and braces: whatever the exit handler did, no Dynamo process outlives the run.
        for d in sorted((state_dir / "dgd").glob("*")) if (state_dir / "dgd").exists() else []:
            procs.stop_all(d)
        procs.stop_run_processes(run_token)  # and none whose records went with a deleted run folder
        if own_s3:
            s3.stop()
        if prom:
            prom.stop()
    if gpu is not None:
        from infersweep.local.gpu_run import write_gpu_record

        write_gpu_record(run_dir, state_dir)
    results = run_dir / "volumes" / "workdir" / "run"
    link = run_dir / "results"
    if results.exists() and not link.exists():
        link.symlink_to(results.relative_to(run_dir))
    # The workflow's verdict (operator.go operate: the entry node's phase, made Failed by a failed exit handler)
    # A stopped run says what stopped it (Ctrl-C, SIGTERM, the deadline), then the workflow's own message.
    message = "; ".join(m for m in (argo.stop_reason, argo.message) if m)
    return LocalRun(
        run_id,
        run_dir,
        argo.phase,
        link,
        keys,
        root,
        time.monotonic() - t_start,
        message,
        store,
        failed_step_lines(argo),
        published_id,
    )
