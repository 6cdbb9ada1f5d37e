"""`infersweep export --format llm-d RUN [--out DIR] [--include-invalid]`: the run as llm-d benchmark
reports (version 0.2.1, one YAML file per measured point; infersweep.results.llmd_export), so its results
compare with other tools' in llm-d's tooling."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(a: argparse.Namespace) -> int:
    from infersweep.results.cli_common import load_run
    from infersweep.results.llmd_export import SOURCE, VERSION, export_run, write_reports

    r = load_run(a.run, a.store)
    reports, skipped = export_run(r, include_invalid=a.include_invalid)
    for line in skipped:
        print(f"note: {line}")
    from infersweep.predict.source import banner, is_simulated

    sources = sorted({str(x) for x in r.table.get("source", []) if is_simulated(str(x))})
    for source in sources:  # every report says so too (run.description, the accelerator)
        print(f"note: {banner(source)}")
    if not reports:
        print(f"nothing exported: {r.label} ({r.run_id}) has no point to export")
        return 1
    from infersweep.cli_util import writable_folder

    out = writable_folder(a.out if a.out else Path("llm-d-reports") / (r.run_id or r.label))
    paths = write_reports(reports, out)
    print(f"wrote {len(paths)} llm-d benchmark report(s) (version {VERSION}, {SOURCE}) to {out}/")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_include_invalid_arg, add_store_arg

    p = sub.add_parser("export", help="write a run in another tool's format (llm-d benchmark reports)")
    p.add_argument("run", metavar="RUN", help="a run folder, or a run id / RECIPE/RUN_ID in --store")
    p.add_argument(
        "--format", required=True, choices=["llm-d"], help="llm-d: llm-d-benchmark's benchmark report v0.2.1"
    )
    p.add_argument("--out", help="folder for the reports (default: llm-d-reports/<run-id>)")
    add_include_invalid_arg(
        p, "export", "also export invalid points, each marked INVALID with its reasons in run.description"
    )
    add_store_arg(p)
    p.set_defaults(fn=run)
