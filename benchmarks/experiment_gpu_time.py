"""GPU-hours of each seed study as one experiment vs one workflow per recipe (a simulation).

For every file in params/experiments: the planned order (infersweep.experiment.plan.make_plan) and the
cost model of infersweep.experiment.cost with the per-phase durations given here (defaults: pods start in
60 s with the image pre-pulled, weights load at 1 GiB/s from the cache PVC + 20 s, engine warm-up vLLM
150 s / SGLang 420 s / TRT-LLM 300 s, 300 s per concurrency point). Bound: at most one full redeploy per
distinct full-redeploy class.

--measure-local also measures, with real Dynamo frontend + mocker processes, the local time-to-ready of
the Nemotron study's two ways from round-robin to KV routing: a full local redeploy (stop everything,
deploy the KV DGD) vs applying the KV DGD over the running one (infersweep.local.dynamo.reconfigure.apply_local:
only the frontend is replaced). `experiment run --local` is not built, so this is the local figure.

    .venv/bin/python benchmarks/experiment_gpu_time.py [--warmup-vllm 150] [--warmup-sglang 420] [--point-s 300] [--measure-local]
"""

from __future__ import annotations

import argparse

from _common import Figure, report


def main(argv: list[str] | None = None) -> list[Figure]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schedule-s", type=float, default=60.0)
    ap.add_argument("--load-gib-s", type=float, default=1.0)
    ap.add_argument("--warmup-vllm", type=float, default=150.0)
    ap.add_argument("--warmup-sglang", type=float, default=420.0)
    ap.add_argument("--point-s", type=float, default=300.0)
    ap.add_argument("--measure-local", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)

    from infersweep.experiment.cost import Durations, naive_cost, plan_cost
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.restart import RestartClass
    from infersweep.experiment.spec import all_experiment_paths, load_experiment

    d = Durations(schedule_s=a.schedule_s, load_gib_s=a.load_gib_s, point_s=a.point_s)
    d.warmup_s |= {"vllm": a.warmup_vllm, "sglang": a.warmup_sglang}
    rows, figures = [], []
    for path in all_experiment_paths():
        plan = make_plan(load_experiment(path))
        c = plan.counts()
        ours, naive = plan_cost(plan, d), naive_cost(plan, d)
        steps = "/".join(
            str(c.get(k, 0))
            for k in (RestartClass.FULL, RestartClass.WORKER, RestartClass.SCALE, RestartClass.FRONTEND)
        )
        rows.append(
            (
                plan.experiment.name,
                len(plan.steps),
                steps,
                f"{naive.gpu_hours:.2f}",
                f"{ours.gpu_hours:.2f}",
                f"{(1 - ours.gpu_hours / naive.gpu_hours) * 100:.1f} %",
                f"{naive.setup_gpu_hours:.2f} -> {ours.setup_gpu_hours:.2f}",
                f"{naive.wall_hours:.2f} -> {ours.wall_hours:.2f}",
            )
        )
        name = plan.experiment.name
        figures.append(
            Figure(
                "experiment_gpu_time",
                f"{name}: GPU-h one experiment / one workflow per recipe",
                round(ours.gpu_hours / naive.gpu_hours, 3),
                "",
                "<= 1",
            )
        )
        figures.append(
            Figure(
                "experiment_gpu_time",
                f"{name}: full redeploys - distinct full-redeploy classes",
                c.get(RestartClass.FULL, 0) - plan.distinct_full,
                "",
                "<= 0",
            )
        )
    if a.measure_local:
        figures += measure_local(a.repeats)
    header = [
        "study",
        "treatments",
        "full/worker/scale/frontend",
        "GPU-h per recipe",
        "GPU-h experiment",
        "saved",
        "setup GPU-h",
        "wall h",
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    for row in [header, *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=False)))
    print()
    report("experiment_gpu_time", figures)
    return figures


def measure_local(repeats: int) -> list[Figure]:
    import statistics
    import tempfile
    import time
    from pathlib import Path

    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.dgd import deployable_dgd
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import load_experiment
    from infersweep.local.dynamo.deployment import teardown_local
    from infersweep.local.dynamo.reconfigure import apply_local
    from infersweep.local.dynamo.toy_model import build_toy_model
    from infersweep.local.dynamo.wait import wait_ready_local

    rr, kv = (s.treatment.recipe for s in make_plan(load_experiment("nemotron-rr-vs-kv")).steps)
    settings = load_cluster_settings()
    d_rr, d_kv = (deployable_dgd(t, settings, name="exp-0") for t in (rr, kv))
    full, swap = [], []
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model"
        build_toy_model(model)
        for i in range(repeats):
            state = Path(tmp) / f"dgd-{i}"
            try:
                apply_local(d_rr, model_dir=model, state_dir=state)
                wait_ready_local(state, timeout_s=180)
                t0 = time.monotonic()
                apply_local(d_kv, model_dir=model, state_dir=state)  # frontend only
                wait_ready_local(state, timeout_s=180)
                swap.append(time.monotonic() - t0)
                t0 = time.monotonic()
                teardown_local(state)  # what one workflow per recipe does: tear down, deploy afresh
                apply_local(d_kv, model_dir=model, state_dir=state)
                wait_ready_local(state, timeout_s=180)
                full.append(time.monotonic() - t0)
            finally:
                teardown_local(state)
    f, s = statistics.median(full), statistics.median(swap)
    return [
        Figure("experiment_gpu_time", "local: RR -> KV by full redeploy, to ready (median)", round(f, 2), "s"),
        Figure("experiment_gpu_time", "local: RR -> KV by frontend swap, to ready (median)", round(s, 2), "s"),
        Figure(
            "experiment_gpu_time",
            "local: full redeploy / frontend swap",
            round(f / s, 2),
            "",
            ">= 1",
            f"{repeats} repeats; mocker workers start in seconds, GPU engines in minutes",
        ),
    ]


if __name__ == "__main__":
    main()
