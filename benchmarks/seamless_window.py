"""Does the measured window open on a burst? AIPerf's default (warm-up drained, then profiling) against the point
step's argv, whose profiling phase is seamless (AIPerf 0.13 YAML `seamless: true`: infersweep.aiperf.flags
seamless_warmup), on a real Dynamo frontend + mocker.

Prints, per run, the mean TTFT of each cycle of the profiling phase (c requests by request_start_ns), and how
many warm-up requests were still in flight when the first profiling request started. The mocker's timing is
not a GPU's: the question is only whether the window opens on a synchronised burst. docs/seamless-warmup.md.

    PYTHONPATH=$PWD nice .venv/bin/python -m benchmarks.seamless_window [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from infersweep.aiperf.flags import (
    build_argv,
    child_env,
    drained_argv,
    tokenizer_as_cached_hub_id,
    write_phases_file,
)
from infersweep.aiperf.steadiness import steady_state_reasons, window_measures
from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.deploy import deploy_local
from infersweep.local.dynamo.deployment import teardown_local
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.recipe import load_recipe
from infersweep.validity_thresholds import load_thresholds
from steps import aiperf_point

REPO = Path(__file__).resolve().parents[1]
AIPERF = REPO / ".venv-aiperf" / "bin" / "aiperf"
RECIPE = "llama-3-1-8b-vllm-h200-2w-kv"  # the H200 run's recipe: 2 workers, KV router, 16 x 6,144-token prefixes


def point_argv(url: str, model: str, tokenizer: str, out: Path, c: int, requests: int, warmup: int, workload: dict):
    """The argv of one point, built by the point step's own code (seamless since flags.seamless_warmup)."""
    args = aiperf_point.parse_args(
        [
            *("--url", url, "--model", model, "--tokenizer", tokenizer, "--out", str(out)),
            *("--aiperf", str(AIPERF), "--concurrency", str(c), "--requests", str(requests)),
            *("--warmup", str(warmup), "--workload", json.dumps(workload), "--extra-inputs", "ignore_eos:true"),
        ]
    )
    return build_argv(args)


def cycles(records: Path, c: int) -> tuple[list[float], int, int]:
    """(mean TTFT ms per cycle of c profiling requests by start, warm-up requests in flight when profiling's first
    request started, most requests in flight at once over the run)."""
    rows = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    prof, warm, spans = [], [], []
    for r in rows:
        meta = r["metadata"]
        start, end = meta["request_start_ns"], meta["request_end_ns"]
        spans.append((start, end))
        if meta["benchmark_phase"] == "profiling":
            prof.append((start, r["metrics"]["time_to_first_token"]["value"]))
        else:
            warm.append((start, end))
    prof.sort()
    first = prof[0][0]
    overlap = sum(1 for s, e in warm if s <= first < e)
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    depth = peak = 0
    for _, d in events:
        depth += d
        peak = max(peak, depth)
    series = [sum(t for _, t in prof[i : i + c]) / len(prof[i : i + c]) for i in range(0, len(prof), c)]
    return series, overlap, peak


def report(folder: Path, c: int) -> str:
    """One run's line: the cycles, the overlap, and the steadiness rule's verdict (params/validity.yaml, the
    profile without overrides: what a cluster point is judged by)."""
    records = folder / "aiperf" / "profile_export.jsonl"
    series, overlap, peak = cycles(records, c)
    reasons = steady_state_reasons(window_measures(records, c), load_thresholds(profile=None, env={}))
    return (
        f"{folder.name}: warm-up in flight at profiling start: {overlap}; peak in flight: {peak}; "
        f"per-cycle mean TTFT ms: {' '.join(f'{v:.0f}' for v in series)}; "
        f"steadiness: {'; '.join(reasons) if reasons else 'steady'}"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--requests", type=int, default=192)
    p.add_argument("--warmup", type=int, default=64)
    # The H200 run's shape (6,144-token shared prefixes + 256 own tokens, OSL 64) scaled down: at full size the
    # mocker on this 2-core machine returned 0.15 requests/s (measured), too slow for a prototype.
    p.add_argument("--isl", type=int, default=1024)
    p.add_argument("--prefix-tokens", type=int, default=768)
    p.add_argument("--repetitions", type=int, default=2)
    p.add_argument("--judge", type=Path, nargs="*", help="only report on these run folders, already measured")
    a = p.parse_args()
    if a.judge:
        for folder in a.judge:
            print(report(folder, a.concurrency))
        return
    out = (a.out or Path(tempfile.mkdtemp(prefix="seamless-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # A fresh deployment per run: both modes send the same prompts (same seed), so a second run on the same
    # mocker would find every prompt in its prefix cache. Modes alternate so neither always goes first.
    order = [("drained", "seamless"), ("seamless", "drained")] * a.repetitions
    for rep, modes in enumerate(order[: a.repetitions]):
        for mode in modes:
            run_once(out / f"r{rep}-{mode}", mode, a)


def run_once(folder: Path, mode: str, a: argparse.Namespace) -> None:
    state = folder / "dgd"
    dep = deploy_local(
        render_dgd(load_recipe(RECIPE)), model_dir=folder / "model", state_dir=state, max_workers_per_component=2
    )
    try:
        wait_ready_local(state, timeout_s=300)
        tok, env = tokenizer_as_cached_hub_id(Path(dep.model_dir), folder / "hf-cache")
        c = a.concurrency
        workload = {"isl": a.isl, "osl": 64, "prefix_tokens": a.prefix_tokens, "num_prefixes": 16}
        argv = point_argv(dep.frontend_url, dep.model_name, tok, folder, c, a.requests, a.warmup, workload)
        if mode == "seamless":
            write_phases_file(folder)  # the YAML the argv's --config names (flags.PHASES_FILE)
        else:
            argv = drained_argv(argv)
        (folder / "argv.json").write_text(json.dumps(argv))
        t0 = time.monotonic()
        with open(folder / "aiperf.log", "w") as log:
            rc = subprocess.run(argv, env=child_env(env), stdout=log, stderr=subprocess.STDOUT).returncode
        took = time.monotonic() - t0
        if rc != 0:
            print(f"{folder.name}: aiperf exited {rc}; see {folder / 'aiperf.log'}", flush=True)
            return
        print(f"{report(folder, c)} ({took:.0f} s)", flush=True)
    finally:
        teardown_local(state)


if __name__ == "__main__":
    main()
