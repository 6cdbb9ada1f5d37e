"""`infersweep regress RUN --baseline RUN [--tolerance METRIC=REL ...]`: pass / regressed / improved /
inconclusive, with the evidence. Exit code 0 pass/improved, 1 regressed, 3 inconclusive."""

from __future__ import annotations

import argparse

EXIT = {"pass": 0, "improved": 0, "regressed": 1, "inconclusive": 3}


def _tolerances(items: list[str]) -> dict:
    from infersweep.errors import BadArgument
    from infersweep.metrics import canonical

    out: dict = {}
    for item in items:
        metric, sep, value = item.partition("=")
        kind, _, number = value.rpartition(":")
        try:
            bound = float(number) if sep else None
        except ValueError:
            bound = None
        if bound is None:
            raise BadArgument(f"--tolerance {item!r}: write METRIC=REL (0.05 = 5%), METRIC=abs:A or z=N")
        if metric == "z":
            out[metric] = bound
            continue
        # the results table's metric names; an old spelling is mapped with a warning (MetricNameError if none)
        out[canonical(metric, f"--tolerance {item}", warn=True)] = {kind or "rel": bound}
    return out


def run(a: argparse.Namespace) -> int:
    from infersweep.results.cli_common import load_run
    from infersweep.results.comparable import allowed, check_comparable
    from infersweep.results.regression import judge_run

    current, baseline = load_run(a.run, a.store), load_run(a.baseline, a.store)
    # Same workload, model, SLOs and source, or a flag that says otherwise; a point the current run lost
    # is a regression judged below, not another workload (infersweep.results.comparable).
    notes = check_comparable(
        {f"current {current.run_id}": current, f"baseline {baseline.run_id}": baseline}, allowed(a), lost_points_ok=True
    )
    v = judge_run(current.table, baseline.table, _tolerances(a.tolerance), include_invalid=a.include_invalid)
    print(f"{current.label} ({current.run_id}) against baseline {baseline.label} ({baseline.run_id})")
    for note in notes:
        print(f"note: {note}")
    print(v.report)
    return EXIT[v.verdict]


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_include_invalid_arg, add_store_arg

    p = sub.add_parser("regress", help="judge a run against a baseline run, noise-aware")
    p.add_argument("run", help="the run to judge (folder, or id in --store)")
    p.add_argument("--baseline", required=True, help="the baseline run (folder, or id in --store)")
    p.add_argument(
        "--tolerance",
        action="append",
        default=[],
        metavar="METRIC=REL",
        help="override a tolerance, e.g. ttft_p50_ms=0.15 or error_ratio=abs:0.02, or z=3",
    )
    from infersweep.results.comparable import add_allow_arg

    add_allow_arg(p, "judge", mix_sources=True)
    add_include_invalid_arg(p, "judge")
    add_store_arg(p)
    p.set_defaults(fn=run)
