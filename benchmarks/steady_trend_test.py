"""How often the steadiness rule calls a loop unsteady, with and without its trend test (steady_state.trend_alpha,
params/validity.yaml), on synthetic closed loops whose TTFT has two modes, as the H200's KV-routing study had
(2026-12-04: a prefix-cache hit ~70 ms, a queued prefill ~350 ms), and on the committed H200 windows.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/steady_trend_test.py [--loops 200]

A stationary loop (the slow share constant) should be called unsteady about as often as the test's level allows
(5 %); a loop whose slow share rises over the window (a queue building up) should be called unsteady nearly
always. The loops are tests/results/test_steady_state.py's two_mode_loop (16 slots, 24 rounds, fixed seeds), the
same records the point step and summarize read.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from infersweep.aiperf.steadiness import steady_state_reasons, window_measures  # noqa: E402
from infersweep.validity_thresholds import load_thresholds  # noqa: E402
from tests.results.test_steady_state import SIZE_ALONE, _unsteady_share, size_alone  # noqa: E402

LOOPS = [
    ("stationary, 50 % slow", lambda x: 0.5),
    ("stationary, 30 % slow", lambda x: 0.3),
    ("queue building: 30 % -> 70 % slow", lambda x: 0.3 + 0.4 * x),
    ("queue building: 10 % -> 90 % slow", lambda x: 0.1 + 0.8 * x),
]
KV_STUDY = REPO / "benchmarks" / "measured" / "h200-2026-12-04" / "gpu-kv-vs-rr-seamless" / "treatments"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", type=int, default=200, help="loops (seeds) per row")
    a = ap.parse_args()
    trend = load_thresholds(None)
    tmp = Path(tempfile.mkdtemp(prefix="steady-trend-"))
    print(f"| loop ({a.loops} seeds, 24 rounds of 16) | unsteady by size alone | unsteady with the trend test |")
    print("|---|---|---|")
    for name, share in LOOPS:
        alone = _unsteady_share(tmp, share, SIZE_ALONE, a.loops)
        tested = _unsteady_share(tmp, share, trend, a.loops)
        print(f"| {name} | {alone:.1%} | {tested:.1%} |")
    if KV_STUDY.is_dir():
        gpu = load_thresholds("local-gpu")
        gpu_alone = size_alone(gpu)
        print()
        print(
            "| H200 KV study run (24 cycles of 16) | TTFT drift (trend p) | rate drift (trend p) | size alone | test |"
        )
        print("|---|---|---|---|---|")
        order = ["rr", "kv", "kv-2", "rr-2", "rr-3", "kv-3", "kv-4", "rr-4", "rr-5", "kv-5", "kv-6", "rr-6"]
        for run in (KV_STUDY / name for name in order):
            records = run / "points" / "c16" / "aiperf" / "profile_export.jsonl"
            if not records.exists():
                continue
            m = window_measures(records, 16)
            verdict = ["steady" if not steady_state_reasons(m, t) else "unsteady" for t in (gpu_alone, gpu)]
            print(
                f"| {run.name} | {m['steady_ttft_change']:+.0%} (p = {m['steady_ttft_trend_p']:.2f}) "
                f"| {m['steady_throughput_change']:+.0%} (p = {m['steady_throughput_trend_p']:.2f}) "
                f"| {verdict[0]} | {verdict[1]} |"
            )


if __name__ == "__main__":
    main()
