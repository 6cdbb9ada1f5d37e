"""Reading a GPU tier run's committed snapshot (benchmarks/measured/*/...-snapshot.tar.xz) in one pass, for the
tests that recompute a measured folder's figures from its raw records: every point's result.json, AIPerf records
(profiling and warm-up apart) and AIPerf's server-metrics export, and the run's scraped Prometheus series."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pandas as pd

POINT = re.compile(
    r"/volumes/workdir/run/points/(c\d+(?:-r\d+)?)/"
    r"(result\.json|aiperf/profile_export\.jsonl|aiperf/server_metrics_export\.json)$"
)
METRICS = re.compile(r"/volumes/workdir/run/metrics/server_metrics\.parquet$")


def identity(name: str) -> tuple[int, int]:
    """(concurrency, repetition) of a point folder's name: c64 -> (64, 0), c1-r2 -> (1, 2)."""
    conc, _, rep = name[1:].partition("-r")
    return int(conc), int(rep or 0)


def read_snapshot(snapshot: Path) -> tuple[dict[tuple[int, int], dict], pd.DataFrame]:
    """{(concurrency, repetition): {result, records (profiling), warmup, export}} and the scraped series."""
    points: dict[tuple[int, int], dict] = {}
    metrics = pd.DataFrame()
    with tarfile.open(snapshot) as tf:  # one pass: an xz stream has no random access
        for member in tf:
            if not member.isfile():
                continue
            if METRICS.search(member.name):
                metrics = pd.read_parquet(io.BytesIO(tf.extractfile(member).read()))
                continue
            m = POINT.search(member.name)
            if not m:
                continue
            text = tf.extractfile(member).read().decode()
            entry = points.setdefault(identity(m.group(1)), {})
            if m.group(2) == "result.json":
                entry["result"] = json.loads(text)
            elif m.group(2).endswith("server_metrics_export.json"):
                entry["export"] = json.loads(text)
            else:
                recs = [json.loads(line) for line in text.splitlines() if line.strip()]
                entry["records"] = [r for r in recs if r["metadata"].get("benchmark_phase") == "profiling"]
                entry["warmup"] = [r for r in recs if r["metadata"].get("benchmark_phase") == "warmup"]
    return points, metrics
