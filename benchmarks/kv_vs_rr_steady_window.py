"""An exploratory reading of a balanced KV-vs-RR experiment whose windows the validity rules refused: each run's
TTFT over the steady part of its window only, and the claim's paired interval over the ABBA blocks from those
figures. It prints a table and writes it beside the experiment as `steady-window.md`.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/kv_vs_rr_steady_window.py [benchmarks/measured/h200-2026-12-04/gpu-kv-vs-rr]

NOT the experiment's verdict. The tool judges a claim only on valid points (infersweep.experiment.paired), and
the runs of 2026-12-04 are not: AIPerf 0.13 drains the warm-up before the profiling phase issues a credit
(aiperf/timing/phase/runner.py:698-704), so every window opens on a synchronised burst whose echo lasted ~3
cycles of 12 there, and the windows (17-27 s) are shorter than steady_state.min_duration_s. This script asks
what the records say once that start is cut away, by a rule fixed before looking at any difference between the
treatments: the steady part begins where the Marginal Standard Error Rule puts the end of the start transient
(infersweep.aiperf.steadiness.start_transient_cycles, over the per-cycle mean TTFT, the last cycle, the drain,
left out), and ends before the drain. A run's figure is the mean TTFT of the requests of those cycles; the
pairing, the Student-t interval and the blocks-to-decide estimate are the experiment's own
(infersweep.experiment.paired.judge_paired).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infersweep.aiperf.steadiness import _drift, read_requests, start_transient_cycles, whole_cycles  # noqa: E402
from infersweep.experiment.paired import Block, judge_paired  # noqa: E402
from infersweep.experiment.spec import load_experiment, run_name  # noqa: E402

DEFAULT = ROOT / "benchmarks" / "measured" / "h200-2026-12-04" / "gpu-kv-vs-rr"


def run_figures(records: Path, size: int) -> dict:
    """One run's window: per-cycle mean TTFT, the MSER cut, the steady mean, the whole window's mean."""
    reqs = read_requests(records)
    groups = whole_cycles(reqs, size)
    means = [statistics.fmean(f for _, _, f, *_ in g if math.isfinite(f)) for g in groups]
    interior = means[:-1]  # the drain is the loop's, not the server's
    cut = start_transient_cycles(interior)
    kept = [f for g in groups[cut:-1] for _, _, f, *_ in g if math.isfinite(f)]
    every = [f for _, _, f, *_ in reqs if math.isfinite(f)]  # AIPerf's window: every request
    drift = _drift(interior[cut:])
    return {
        "cycles": len(groups),
        "cut": cut,
        "requests_kept": len(kept),
        "window_ttft_ms": statistics.fmean(every),
        "steady_ttft_ms": statistics.fmean(kept),
        "steady_drift": drift,
        "cycle_means_ms": [round(m) for m in means],
    }


def _block(number: int, runs: dict[str, list[str]], figures: dict[str, dict], key: str, claim) -> Block:
    """One ABBA block's paired figures: each side's mean of `key` over its two runs, and the relative improvement."""
    treatment = statistics.fmean(figures[n][key] for n in runs[claim.treatment])
    base = statistics.fmean(figures[n][key] for n in runs[claim.baseline])
    return Block(number, runs, treatment, base, (base - treatment) / base)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT)
    folder = ap.parse_args().folder
    report = json.loads((folder / "experiment-report.json").read_text())
    e = load_experiment(report.get("experiment") or folder.name)
    claim = e.spec.claim
    assert claim is not None and e.spec.blocks, f"{e.name}: no claim or no blocks"
    size = claim.concurrency
    lines = [
        f"# {e.name}: steady-window reading (exploratory, not the verdict)",
        "",
        f"Per run: TTFT over the cycles after the start transient (MSER cut) and before the drain, at c{size}; "
        "`benchmarks/kv_vs_rr_steady_window.py` (its docstring says why this is not the experiment's verdict).",
        "",
        "| run | cycles | cut | requests kept | window mean TTFT ms | steady mean TTFT ms | drift after cut | per-cycle mean TTFT ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    figures: dict[str, dict] = {}
    blocks = []
    for b in range(1, e.spec.blocks + 1):
        sides: dict[str, list[str]] = {claim.treatment: [], claim.baseline: []}
        for p in (1, 2):
            for side in sides:
                name = run_name(side, b, p)
                rec = folder / "treatments" / name / "points" / f"c{size}" / "aiperf" / "profile_export.jsonl"
                figures[name] = f = run_figures(rec, size)
                sides[side].append(name)
                lines.append(
                    f"| {name} | {f['cycles']} | {f['cut']} | {f['requests_kept']} | {f['window_ttft_ms']:.0f} | "
                    f"{f['steady_ttft_ms']:.0f} | {f['steady_drift']:+.0%} | {' '.join(map(str, f['cycle_means_ms']))} |"
                )
        blocks.append(_block(b, sides, figures, "steady_ttft_ms", claim))
    steady = judge_paired(claim, blocks, [])
    whole = judge_paired(claim, [_block(blk.block, blk.runs, figures, "window_ttft_ms", claim) for blk in blocks], [])
    lines += [
        "",
        "| block | kv steady ms | rr steady ms | improvement (steady) | improvement (whole window) |",
        "|---|---|---|---|---|",
    ]
    for s, w in zip(steady.blocks, whole.blocks, strict=True):
        lines.append(
            f"| {s.block} | {s.treatment:.0f} | {s.baseline:.0f} | {s.improvement:+.1%} | {w.improvement:+.1%} |"
        )
    lines += ["", f"- steady part: {steady.line()}", f"- whole windows (as AIPerf averages them): {whole.line()}"]
    text = "\n".join(lines) + "\n"
    (folder / "steady-window.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
