"""The experiment workflow's compare step (steps/compare.py): read every treatment's results table from the
workdir, write the experiment report (infersweep.experiment.report) and each treatment's time-to-ready beside it.

A treatment whose folder has no results table (its deploy, readiness or every point failed) is reported
as such; the step fails only when it cannot write the report.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path


def read_tables(treatments_dir: Path, names: list[str]):
    import pandas as pd

    from infersweep.results.legacy import upgrade_table  # a table of any readable version, under v3 names

    tables, ready = {}, {}
    for name in names:
        folder = treatments_dir / name
        table = folder / "summary" / "results.parquet"
        if table.is_file():
            tables[name] = upgrade_table(pd.read_parquet(table), str(table))
        marker = folder / "time-to-ready.json"
        if marker.is_file():
            ready[name] = json.loads(marker.read_text())
    return tables, ready


def write_report(experiment_yaml: str, treatments_dir: Path, out: Path) -> str:
    """Write experiment-report.md and .json into `out`; the report's text."""
    from infersweep.experiment.report import experiment_report
    from infersweep.experiment.spec import load_experiment

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "experiment.yaml"
        spec.write_text(experiment_yaml)
        e = load_experiment(spec)
    from infersweep.experiment.order import order_findings
    from infersweep.experiment.plan import make_plan

    tables, ready = read_tables(treatments_dir, [s.treatment.name for s in make_plan(e).steps])
    report = experiment_report(e, tables)
    order = order_findings(e, tables)
    text = report.text() + "\n" + order.text()
    if ready:
        text += (
            "\n## Time to ready (deploy or reconfigure -> serving)\n\n"
            + "\n".join(f"- {n}: {r['seconds']:.0f} s" for n, r in ready.items())
            + "\n"
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "experiment-report.md").write_text(text)
    (out / "experiment-report.json").write_text(
        json.dumps(
            {
                "experiment": e.name,
                "missing": report.missing,
                "sources": report.sources,
                "time_to_ready": ready,
                "order": order.as_dict(),
                "claim": None if report.verdict is None else {"verdict": report.verdict[0], "line": report.verdict[1]},
                "paired": None if report.paired is None else report.paired.as_dict(),
                "seed": [{"expect": x.model_dump(), "direction": v} for x, v in report.seed],
            },
            indent=2,
        )
    )
    return text
