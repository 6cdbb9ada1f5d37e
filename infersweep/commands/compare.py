"""`infersweep compare RUN_A RUN_B [...] [--csv F] [--plot F] [--html F]`: RUN_B.. against RUN_A, per
concurrency; runs of another workload, model, SLOs or source only with `--allow-different DIM`."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(a: argparse.Namespace) -> int:
    from infersweep.results.cli_common import label_runs, load_run
    from infersweep.results.comparable import allowed, check_comparable
    from infersweep.results.compare import compare_runs, comparison_plot

    runs = label_runs([load_run(ref, a.store) for ref in a.runs])
    # Same workload, model, SLOs and source, or a flag that says otherwise (infersweep.results.comparable).
    notes = check_comparable(runs, allowed(a))
    tables = {label: r.table for label, r in runs.items()}
    from infersweep.metrics import canonical

    judged = [canonical(m, f"--metric {m}") for m in a.metric or []]  # MetricNameError: one line
    cmp = compare_runs(tables, include_invalid=a.include_invalid, decide=judged or None)
    for note in notes:
        print(f"note: {note}")
    print(cmp.text())
    if a.html:
        from infersweep.results.comparison_report import write_comparison_report

        print(f"html: {write_comparison_report(runs, Path(a.html), notes=notes, cmp=cmp)}")
    if a.csv:
        Path(a.csv).parent.mkdir(parents=True, exist_ok=True)
        cmp.changes.to_csv(a.csv, index=False)
        print(f"csv: {a.csv}")
    if a.plot:
        print(f"plot: {comparison_plot(tables, cmp, Path(a.plot))}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_include_invalid_arg, add_store_arg

    p = sub.add_parser("compare", help="compare runs: %% changes per concurrency, crossovers, best under the SLOs")
    p.add_argument("runs", nargs="+", metavar="RUN", help="the first is the baseline; folders or ids in --store")
    p.add_argument("--csv", help="write the per-concurrency changes here")
    p.add_argument(
        "--metric",
        action="append",
        metavar="METRIC",
        help="judge this metric (repeatable; default: the runs' SLO metrics); the others are described, with "
        "their intervals, not judged (docs/statistics.md)",
    )
    add_include_invalid_arg(p, "compare")
    p.add_argument("--plot", help="write a PNG of the metrics vs concurrency here")
    p.add_argument(
        "--html",
        help="write a self-contained HTML comparison report here (Pareto, $/Mtok, energy, "
        "the winner at the SLOs, each run's validity)",
    )
    from infersweep.results.comparable import add_allow_arg

    add_allow_arg(p, mix_sources=True)
    add_store_arg(p)
    p.set_defaults(fn=run)
