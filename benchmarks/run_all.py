"""Run every benchmark in one run and write benchmarks/RESULTS.md: the latest figures from this machine,
each against its bound (or for information), with the load the machine was under.

    .venv/bin/python benchmarks/run_all.py [--skip NAME ...]

Each benchmark runs as its own process (a crash or a leaked module cache in one cannot skew another);
the figures come back through benchmarks/.out/<name>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import OUT, REPO, fmt, load

# Cheap ones first, so a failure shows early; gpu_time after overhead, whose node timings it reads.
BENCHMARKS = ["gpu_guard_sim", "workflow_size", "scale", "aiperf_startup", "overhead", "gpu_time"]
RESULTS = REPO / "benchmarks" / "RESULTS.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip", nargs="*", default=[], choices=BENCHMARKS)
    a = ap.parse_args(argv)
    started, load_before = time.strftime("%Y-%m-%d %H:%M"), load()
    ran, failed = [], []
    for name in BENCHMARKS:
        if name in a.skip:
            continue
        (OUT / f"{name}.json").unlink(missing_ok=True)
        t0 = time.monotonic()
        rc = subprocess.run([sys.executable, str(Path(__file__).parent / f"{name}.py")], cwd=REPO).returncode
        ran.append((name, time.monotonic() - t0))
        if rc or not (OUT / f"{name}.json").exists():
            failed.append(name)
    lines = [
        "# Benchmark figures (latest run)",
        "",
        f"Measured in one run of `benchmarks/run_all.py` started {started} on this machine "
        f"({os.cpu_count()} cores shared with other work: {load_before} at the start, {load()} at the end). "
        "Times on a loaded machine are upper bounds; ratios measured within one script (publish vs AWS CLI, "
        "wall vs measuring) are the comparable figures. How to run each and what the bounds mean: "
        "[README.md](README.md).",
        "",
        "| benchmark | metric | value | unit | bound | verdict | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, seconds in ran:
        f = OUT / f"{name}.json"
        if not f.exists():
            lines.append(f"| {name} | **did not finish** (see its output) | | | | FAIL | |")
            continue
        data = json.loads(f.read_text())
        for fig in data["figures"]:
            metric = fig["metric"].strip()
            lines.append(
                f"| {name} | {metric} | {fmt(fig['value'])} | {fig['unit']} | {fig['bound']} | "
                f"{fig['verdict']} | {fig['note'].replace('|', '/')} |"
            )
        lines.append(f"| {name} | (benchmark wall time; {data['load']} at its end) | {fmt(seconds)} | s | | | |")
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"\nwrote {RESULTS}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
