"""`infersweep run --local RECIPE`: the rendered workflow, executed on this machine."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from infersweep.cli_util import add_dgd_api_arg, add_set_arg, parse_sets, writable_folder
from infersweep.recipe import RecipeError


def run(a: argparse.Namespace) -> int:
    if not a.local:
        raise RecipeError("infersweep run: only --local runs here; for a cluster use `infersweep submit`")
    from infersweep.local.run import run_local

    sets = parse_sets(a.set)
    check_worker_options(a)
    earlier = a.retry or a.resubmit
    if a.retry and a.resubmit:
        raise RecipeError("give either --retry RUN_DIR or --resubmit RUN_DIR, not both")
    if earlier:
        if not Path(earlier).is_dir():
            raise RecipeError(
                f"{'--retry' if a.retry else '--resubmit'} {earlier}: no such run folder; give runs/<run-id>"
            )
        if sets or a.resume:
            raise RecipeError("--retry/--resubmit run the earlier run's workflow as it was: no --set, no --resume")
    elif not a.recipe:
        raise RecipeError("infersweep run: give a RECIPE (or --retry/--resubmit RUN_DIR)")
    if a.recipe and Path(a.recipe).is_dir():
        raise RecipeError(f"{a.recipe}: is a directory; give a recipe file or a name from `infersweep recipes`")
    out = Path(a.out) if a.retry else writable_folder(a.out)  # a retry writes into the folder it retries
    if a.resume and not Path(a.resume).is_dir():
        raise RecipeError(f"--resume {a.resume}: no such run folder; give runs/<run-id> of an earlier run")
    res = run_local(
        a.recipe,
        out_root=out,
        overrides=sets.params,
        recipe_overrides=sets.recipe,
        dgd_api=a.dgd_api,
        resume=Path(a.resume) if a.resume else None,
        retry=Path(a.retry) if a.retry else None,
        resubmit=Path(a.resubmit) if a.resubmit else None,
        workers=a.workers,
        weights=a.weights,
        gpu_python=a.gpu_python,
        engine_cache=Path(a.engine_cache) if a.engine_cache else None,
    )
    table = res.results_dir / "summary" / "results.md"
    if table.exists():
        print()
        print(table.read_text())
    print(f"run {res.run_id}: {res.phase} in {res.seconds:.1f} s" + (f" ({res.message})" if res.message else ""))
    print(f"results:  {res.results_dir}/summary/ (results.parquet, results.csv, results.md, pareto.png)")
    print(f"logs:     {res.run_dir}/nodes/")
    for line in res.failed_steps:
        print(f"failed:   {line}")
    published = res.published_id or res.run_id
    if res.s3_keys:
        prefix = res.s3_keys[0].split(f"/{published}/", 1)[0] + f"/{published}"
        print(f"published {len(res.s3_keys)} objects to the local S3 server under {prefix}/")
        if published != res.run_id:
            print(f"          (beside the first attempt's {res.run_id}, never over it)")
    if res.store is not None:
        store = shlex.quote(str(res.store))
        print(f"store:    {res.store} (kept on disk; the local S3 server is gone)")
        print(f"report:   infersweep report {published} --store {store}   (all runs: infersweep runs --store {store})")
    if not res.run_dir.exists():
        print(f"the run folder {res.run_dir} was deleted during the run: nothing is kept there to resume or retry")
    elif res.phase != "Succeeded" or not any(k.endswith("/manifest.json") for k in res.s3_keys):
        # Nothing measured is lost: every point's files stay in the run folder, and a resumed run keeps
        # the good points (it does not measure them again) and publishes under its own prefix.
        print(f"kept locally: {res.results_dir}/points/ (measured points are kept as they are)")
        for line in finish_commands(a, res.run_dir):
            print(line)
    return 0 if res.phase == "Succeeded" else 1


def finish_commands(a: argparse.Namespace, run_dir: Path) -> list[str]:
    """The commands that finish an unfinished run, as the user can paste them: a --resume must give the
    run's own --set and workers (run_local refuses a resume whose recipe hash differs), a --retry needs
    nothing but the folder (it reruns the run's own documents)."""
    folder = shlex.quote(str(run_dir))
    retry = f"infersweep run --local --retry {folder}"
    if a.retry or a.resubmit or not a.recipe:
        # the --set of the run it retried are not known here: --retry again reruns its documents as they were
        return [f"to finish this run: {retry}"]
    words = ["infersweep", "run", "--local", str(a.recipe), "--out", str(a.out)]
    for s in a.set:
        words += ["--set", s]
    if a.workers != "mocker":
        words += ["--workers", a.workers, "--weights", a.weights]
        words += ["--gpu-python", a.gpu_python] if a.gpu_python else []
        words += ["--engine-cache", a.engine_cache] if a.engine_cache else []
    if a.dgd_api != "v1beta1":
        words += ["--dgd-api", a.dgd_api]
    words += ["--resume", str(run_dir)]
    return [f"to finish this run: {shlex.join(words)}", f"or as Argo would: {retry}"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a recipe's rendered workflow")
    p.add_argument("recipe", nargs="?", help="recipe name or file (not needed with --retry/--resubmit)")
    p.add_argument("--local", action="store_true", help="run on this machine (Dynamo mocker + AIPerf + local S3)")
    p.add_argument("--out", default="runs", help="folder for local runs (default ./runs)")
    add_set_arg(p)
    add_dgd_api_arg(p)
    p.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="run again on an earlier run's folder: points measured ok "
        "are kept, the others run; published under a new prefix <run-id>-rN",
    )
    p.add_argument(
        "--retry",
        metavar="RUN_DIR",
        help="`argo retry` a finished run: failed steps and what depends on "
        "them run again in the same run, succeeded steps are kept",
    )
    p.add_argument(
        "--resubmit", metavar="RUN_DIR", help="`argo resubmit` a finished run: the same workflow again as a new run"
    )
    add_worker_options(p)
    p.set_defaults(fn=run)


def check_worker_options(a: argparse.Namespace) -> None:
    """--weights, --gpu-python and --engine-cache choose how real engines start: with the mocker they would be
    ignored, so the user's belief that they took effect is refused instead (issue 38)."""
    if a.workers == "gpu":
        return
    given = [
        flag
        for flag, value in (
            ("--weights cache", a.weights == "cache"),
            ("--gpu-python", a.gpu_python),
            ("--engine-cache", a.engine_cache),
        )
        if value
    ]
    if given:
        raise RecipeError(
            f"{', '.join(given)}: only with --workers gpu (real engines); the mocker workers load no weights "
            "and run no engine: drop it, or add --workers gpu"
        )


def check_local(a: argparse.Namespace, elsewhere: str) -> None:
    """A command that runs only on this machine (experiment run, slo-search): without --local, refused with
    `elsewhere` (what to do on a cluster); with it, its worker options are checked."""
    if not a.local:
        raise RecipeError(elsewhere)
    check_worker_options(a)


def add_worker_options(p: argparse.ArgumentParser) -> None:
    """--workers and its companions (run, experiment run, slo-search)."""
    p.add_argument(
        "--workers",
        choices=["mocker", "gpu"],
        default="mocker",
        help="mocker: Dynamo's simulator stands in for the GPU workers (default); gpu: real engine workers "
        "(python -m dynamo.vllm, the rendered flags) on this machine's GPUs",
    )
    p.add_argument(
        "--weights",
        choices=["dummy", "cache"],
        default="dummy",
        help="with --workers gpu: dummy = the real architecture with random weights (--load-format dummy, "
        "params/model-configs/), cache = the weights in .infersweep/models/<org>--<name>",
    )
    p.add_argument(
        "--gpu-python",
        metavar="PYTHON",
        help="with --workers gpu: the interpreter with ai-dynamo + the engine (default $INFERSWEEP_GPU_PYTHON "
        "or .venv-gpu/bin/python)",
    )
    p.add_argument(
        "--engine-cache",
        metavar="DIR",
        help="with --workers gpu: the engines' compile caches, kept between runs (default .infersweep/engine-cache)",
    )
