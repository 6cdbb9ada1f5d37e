"""Does a ramped warm-up open the measured loop spread out? Points of the point step with and without the recipe's
`workload.warmup_ramp_s` (AIPerf 0.13 --warmup-concurrency-ramp-duration: infersweep/aiperf/flags.py RAMP_FLAG),
on a real Dynamo frontend + mocker, in ABBA order; per mode the loop's clustering (benchmarks/loop_clustering.py:
~1 in lockstep, ~0.1 spread out) over the window and over its last third, and the mean TTFT, with 95 % intervals
over the runs and n.

    PYTHONPATH=$PWD nice .venv/bin/python benchmarks/warmup_ramp.py [--concurrency 16] [--blocks 2] [--ramp-s S]

The ramp defaults to the first plain run's mean request latency: one latency spreads the loop's starts over one
round. The mocker's timing is not a GPU's (an engine may pull a spread loop back into lockstep: SGLang on the H200,
docs/measured-h200.md); the question here is whether the spread the warm-up makes survives the seamless handover
into the window. One deployment serves every run; each run has a repetition number of its own, so its prompts are
new to the prefix cache (flags.point_seed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks._common import table  # noqa: E402
from benchmarks.loop_clustering import clustering, thirds  # noqa: E402
from infersweep.aiperf.flags import point_folder  # noqa: E402
from infersweep.dgd.render import render_dgd  # noqa: E402
from infersweep.local.dynamo.deploy import deploy_local  # noqa: E402
from infersweep.local.dynamo.deployment import LocalDeployment, teardown_local  # noqa: E402
from infersweep.local.dynamo.wait import wait_ready_local  # noqa: E402
from infersweep.recipe import load_recipe  # noqa: E402
from infersweep.results.repetitions import interval  # noqa: E402
from tests.support.mocker_point import run_point_step  # noqa: E402

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"  # README's first command: one mocker worker


def measure(dep: LocalDeployment, out: Path, a: argparse.Namespace, repetition: int, ramp_s: float | None) -> dict:
    """One point (the point step as its container runs it); its records' clustering, thirds and mean TTFT."""
    c = a.concurrency
    workload = {"isl": 64, "osl": a.osl} | ({"warmup_ramp_s": ramp_s} if ramp_s else {})
    proc = run_point_step(
        dep,
        *("--concurrency", str(c), "--requests", str(a.rounds * c), "--warmup", str(4 * c)),
        *("--repetition", str(repetition), "--workload", json.dumps(workload), "--out", str(out)),
        *("--timeout-s", "900", "--extra-inputs", "ignore_eos:true"),
        timeout_s=1200,
    )
    out = point_folder(str(out), 0, repetition)  # where the step writes repetition K (`<out>-r<K>`)
    result = json.loads((out / "result.json").read_text())
    if result["status"] != "ok":
        raise SystemExit(f"{out.name}: {result['status']}: {result['reason']}\n{proc.stderr[-2000:]}")
    rows = [json.loads(line) for line in (out / "aiperf" / "profile_export.jsonl").read_text().splitlines()]
    measured = [r for r in rows if r["metadata"]["benchmark_phase"] == "profiling"]
    latency_ms = statistics.fmean(float(r["metrics"]["request_latency"]["value"]) for r in measured)
    return {
        "mode": result["warmup_mode"],
        "share": clustering(measured, c),
        "share_last_third": thirds(measured, c)[2][0],
        "ttft_ms": statistics.fmean(float(r["metrics"]["time_to_first_token"]["value"]) for r in measured),
        "latency_ms": latency_ms,
    }


def summary_rows(runs: list[dict]) -> list[list[str]]:
    rows = []
    for mode in sorted({r["mode"] for r in runs}):
        mine = [r for r in runs if r["mode"] == mode]
        cells = [mode, str(len(mine))]
        for key, fmt in (
            ("share", "{:.2f} ± {:.2f}"),
            ("share_last_third", "{:.2f} ± {:.2f}"),
            ("ttft_ms", "{:.0f} ± {:.0f}"),
        ):
            iv = interval([r[key] for r in mine])
            cells.append(fmt.format(iv.mean, iv.half) if iv.n > 1 else f"{iv.mean:.2f}")
        rows.append(cells)
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--rounds", type=int, default=10, help="measured requests = rounds x concurrency")
    p.add_argument("--osl", type=int, default=128)
    p.add_argument("--blocks", type=int, default=2, help="ABBA blocks (plain, ramped, ramped, plain)")
    p.add_argument("--ramp-s", type=float, default=None, help="default: the first plain run's mean latency")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)
    out = (a.out or Path(tempfile.mkdtemp(prefix="warmup-ramp-"))).resolve()
    state = out / "dgd"
    dep = deploy_local(render_dgd(load_recipe(RECIPE)), model_dir=out / "model", state_dir=state)
    runs: list[dict] = []
    ramp_s = a.ramp_s
    try:
        wait_ready_local(state, timeout_s=300)
        for k, ramped in enumerate([False, True, True, False] * a.blocks):
            run = measure(dep, out / f"run{k}", a, k, ramp_s if ramped else None)
            if ramp_s is None:  # the first run is a plain one: one of its latencies is the ramp
                ramp_s = round(run["latency_ms"] / 1000, 1)
            runs.append(run | {"run": k})
            print(
                f"run {k} {run['mode']}: share {run['share']:.2f} (last third {run['share_last_third']:.2f}), "
                f"TTFT {run['ttft_ms']:.0f} ms, latency {run['latency_ms']:.0f} ms",
                flush=True,
            )
    finally:
        teardown_local(state)
    print(f"\nc{a.concurrency}, {a.rounds} rounds measured, 4 warmed up, ISL 64 / OSL {a.osl}, ramp {ramp_s} s, mocker")
    header = ["warm-up", "n", "share (mean ± 95 %)", "share, last third", "TTFT ms"]
    print(table(summary_rows(runs), header))
    return runs


if __name__ == "__main__":
    main()
