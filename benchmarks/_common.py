"""What every benchmark script shares: the repo on sys.path, a figure row, the table printer, the
machine's load at measurement time, and where scratch data and the latest figures go.

A figure is one measured number with the bound it is judged against (or None when it is reported for
information only). Every script returns its figures from `main()`, prints them as a table, and saves
them to benchmarks/.out/<script>.json so `run_all.py` can build RESULTS.md from one run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # scripts run as `.venv/bin/python benchmarks/x.py`: make infersweep importable
    sys.path.insert(0, str(REPO))

OUT = REPO / "benchmarks" / ".out"  # latest figures and run dirs (gitignored)
CACHE = REPO / "benchmarks" / ".cache"  # generated inputs worth keeping between runs (gitignored)


@dataclass
class Figure:
    benchmark: str
    metric: str
    value: float | int | str
    unit: str = ""
    bound: str = ""  # e.g. "<= 1.25", ">= 1.0"; "" = for information
    note: str = ""

    @property
    def verdict(self) -> str:
        if not self.bound or not isinstance(self.value, (int, float)):
            return ""
        op, _, limit = self.bound.partition(" ")
        limit_f = float(limit)
        ok = {
            "<=": self.value <= limit_f,
            "<": self.value < limit_f,
            ">=": self.value >= limit_f,
            ">": self.value > limit_f,
        }[op]
        return "PASS" if ok else "FAIL"


def fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def figures_table(figs: list[Figure]) -> str:
    return table(
        [[f.metric, fmt(f.value), f.unit, f.bound, f.verdict, f.note] for f in figs],
        ["metric", "value", "unit", "bound", "verdict", "note"],
    )


def load() -> str:
    """The machine's load when a figure was taken: the numbers are only comparable at similar load."""
    one, five, _ = os.getloadavg()
    return f"load avg {one:.2f}/{five:.2f} on {os.cpu_count()} cores"


def save(name: str, figs: list[Figure], extra: dict | None = None) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "benchmark": name,
                "at": time.strftime("%Y-%m-%d %H:%M:%S"),
                "load": load(),
                "figures": [asdict(f) | {"verdict": f.verdict} for f in figs],
                **(extra or {}),
            },
            indent=1,
        )
    )
    return path


def report(name: str, figs: list[Figure], extra: dict | None = None) -> list[Figure]:
    print(f"\n== {name} ({load()})")
    print(figures_table(figs))
    save(name, figs, extra)
    return figs


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self.t0
        return False
