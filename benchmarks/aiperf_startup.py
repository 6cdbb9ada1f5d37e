"""AIPerf 0.13.0's fixed cost per point, and which of its knobs cut it, against one local deployment.

Every point is a fresh AIPerf process (in the cluster: a fresh pod). Its fixed cost is everything but
the profiling phase: interpreter + imports, tokenizer prefetch and load, service start-up, warmup, and
after profiling the server-metrics flush and the exports. This runs the exact command steps.aiperf_point
builds (small points: c=1, 16 requests, 1 warmup) with variants:

  baseline                   as the pipeline runs it today
  TRANSFORMERS_OFFLINE=1     AIPerf then skips its tokenizer "prefetch into the HF cache" (a subprocess
                             that loads the tokenizer once more; pointless for a local tokenizer dir)
  flush 0 s                  AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD=0 (default 2 s after profiling)
  --no-gpu-telemetry         no DCGM probe
  flush 0 s + --no-gpu-telemetry

and AIPerf's own sweep (`--concurrency 1,2`, one command for two points) against two separate runs: in
0.13.0 a sweep runs each point in a fresh subprocess (aiperf/orchestrator/local_executor.py), so it
does not share start-up between points.

    .venv/bin/python benchmarks/aiperf_startup.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from _common import REPO, Figure, report, table

from infersweep import aiperf as aiperf_contract
from infersweep.aiperf import read_point
from steps import aiperf_point

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
AIPERF = str(REPO / ".venv-aiperf/bin/aiperf")
VARIANTS = {
    "baseline": ({}, []),
    "TRANSFORMERS_OFFLINE=1": ({"TRANSFORMERS_OFFLINE": "1"}, []),
    "flush 0 s": ({"AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD": "0"}, []),
    "--no-gpu-telemetry": ({}, ["--no-gpu-telemetry"]),
    "flush 0 s + --no-gpu-telemetry": ({"AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD": "0"}, ["--no-gpu-telemetry"]),
}


@contextmanager
def local_deployment():
    """The recipe's rendered DGD as a local Dynamo frontend + mockers, ready; stopped on exit."""
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.local.dynamo.deploy import deploy_local
    from infersweep.local.dynamo.deployment import teardown_local
    from infersweep.local.dynamo.toy_model import build_toy_model
    from infersweep.local.dynamo.wait import wait_ready_local
    from infersweep.recipe import load_recipe
    from workflows.render import render_recipe

    r = load_recipe(RECIPE)
    dgd = render_recipe(r, load_cluster_settings()).dgd
    model_dir = build_toy_model(REPO / ".infersweep" / "toy-model")
    state = Path(tempfile.mkdtemp(prefix="aiperf-bench-"))
    try:
        dep = deploy_local(dgd, model_dir=model_dir, state_dir=state, max_workers_per_component=2)
        wait_ready_local(state, timeout_s=120)
        yield dep, model_dir
    finally:
        teardown_local(state)
        shutil.rmtree(state, ignore_errors=True)


def run_point(dep, tokenizer: Path, out: Path, env_extra: dict, flags: list[str], concurrency: str = "1") -> dict:
    args = aiperf_point.parse_args(
        [
            "--url",
            dep.frontend_url,
            "--model",
            dep.model_name,
            "--tokenizer",
            str(tokenizer),
            "--concurrency",
            "1",
            "--requests",
            "16",
            "--warmup",
            "1",
            "--workload",
            '{"isl":256,"osl":64}',
            "--out",
            str(out),
            "--aiperf",
            AIPERF,
        ]
    )
    argv = aiperf_contract.build_argv(args)
    if concurrency != "1":
        argv[argv.index("--concurrency") + 1] = concurrency
    argv += flags
    env = aiperf_contract.child_env() | env_extra
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with open(out / "aiperf.log", "wb") as log:
        rc = subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    t1 = time.time()
    # A sweep writes one run dir per point (each with phases/<phase>/ copies of the summary: skipped).
    dirs = (
        [out / "aiperf"]
        if concurrency == "1"
        else sorted(p.parent for p in (out / "aiperf").rglob("profile_export_aiperf.json") if "phases" not in p.parts)
    )
    points = [read_point(d) for d in dirs]
    measuring = sum((p["profiling_end_ns"] - p["profiling_start_ns"]) / 1e9 for p in points if p["profiling_end_ns"])
    return {
        "rc": rc,
        "wall_s": t1 - t0,
        "measuring_s": measuring,
        "points": len(points),
        "status": ",".join(p["status"] for p in points),
    }


def main(argv: list[str] | None = None) -> list[Figure]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs per variant (fixed costs are noisy on a shared machine)"
    )
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="aiperf-startup-"))
    results: dict[str, list[dict]] = {}
    try:
        with local_deployment() as (dep, tokenizer):
            run_point(dep, tokenizer, work / "prime", {}, [])  # first run pays cold page cache: not counted
            for i in range(a.repeat):
                for name, (env_extra, flags) in VARIANTS.items():
                    results.setdefault(name, []).append(
                        run_point(dep, tokenizer, work / f"{name}-{i}".replace(" ", "_"), env_extra, flags)
                    )
                results.setdefault("sweep --concurrency 1,2", []).append(
                    run_point(dep, tokenizer, work / f"sweep-{i}", {}, [], concurrency="1,2")
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fixed = {
        name: sum(r["wall_s"] - r["measuring_s"] for r in rs) / len(rs) / max(1, rs[0]["points"])
        for name, rs in results.items()
    }
    print(
        table(
            [
                [
                    name,
                    str(rs[0]["points"]),
                    f"{sum(r['wall_s'] for r in rs) / len(rs):.1f}",
                    f"{sum(r['measuring_s'] for r in rs) / len(rs):.1f}",
                    f"{fixed[name]:.1f}",
                    rs[-1]["status"],
                ]
                for name, rs in results.items()
            ],
            ["variant", "points", "wall s", "measuring s", "fixed s/point", "status"],
        )
    )
    base = fixed["baseline"]
    figs = [
        Figure(
            "aiperf_startup",
            "AIPerf fixed cost per point (baseline)",
            base,
            "s",
            note="process start to exit minus profiling phase; c=1, 16 requests, 1 warmup",
        )
    ]
    for name in list(VARIANTS)[1:] + ["sweep --concurrency 1,2"]:
        status = results[name][-1]["status"]
        if "failed" in status:
            figs.append(Figure("aiperf_startup", f"  {name}", "AIPerf fails", note=f"status {status}: not usable"))
            continue
        figs.append(
            Figure(
                "aiperf_startup",
                f"  {name}: fixed cost per point",
                fixed[name],
                "s",
                note=f"{base - fixed[name]:+.1f} s saved vs baseline"
                if name != "sweep --concurrency 1,2"
                else f"{base - fixed[name]:+.1f} s/point vs separate runs (each sweep point is a fresh subprocess)",
            )
        )
    return report("aiperf_startup", figs, {"runs": results})


if __name__ == "__main__":
    main()
