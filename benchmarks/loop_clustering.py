"""How synchronised a closed loop ran: for each measured request, the share of the loop's users that started within
a window of a tenth of a request's latency centred on its start; per point its mean, beside TTFT p10 / p50 / p90
and the mean ITL.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/loop_clustering.py SNAPSHOT.tar.xz [SNAPSHOT ...] [--concurrency 64] \
      [--summaries RESULTS.parquet ...]

A closed loop of c users whose requests start evenly spread reads about 0.1 (a tenth of the latency holds a tenth
of the loop); one in lockstep, every round starting at once, reads about 1. In lockstep the k-th prefill of a
round waits for the k-1 before it, so a more clustered loop has a longer first-token queue at the same load
(infersweep.predict.queueing's lockstep band top). It explains the engines' different c64 TTFTs on the H200
(docs/measured-h200.md, "Why SGLang's c64 TTFT is higher"). The window is a tenth of the point's own mean request
latency, so points of different speeds are judged alike. Per load the share is given as the mean of the
repetitions' means, with the 95 % Student-t interval over them and n (infersweep.results.repetitions.interval).
`--summaries` names each snapshot's summarized table (in the same order): only the repetitions it judged valid
count, and the others are named as left out. A second table gives every measured repetition's share and mean TTFT
by thirds of its window (requests in start order), with its verdict: whether the loop's synchronisation changed
while it was measured (a closed-loop window opens on a loop its warm-up started all at once, unless the recipe
sets workload.warmup_ramp_s: benchmarks/warmup_ramp.py).
"""

from __future__ import annotations

import argparse
import bisect
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks._common import table  # noqa: E402
from benchmarks.ttft_by_prefill_size import engine_versions  # noqa: E402
from infersweep.results.repetitions import interval  # noqa: E402
from tests.support.measured_snapshot import read_snapshot  # noqa: E402

WINDOW = 0.1  # of the point's mean request latency


def shares(records: list[dict], concurrency: int, window: float = WINDOW) -> list[tuple[float, float]]:
    """(share, TTFT ms) of each request in start order: the share of the loop's users started within a window of
    `window` x latency centred on its start (the request itself included). Centred, so that every request of a
    burst counts the whole burst: a window that only looked back would read a perfect lockstep loop as 0.5 (a
    burst's first start sees itself, its last sees all)."""
    ordered = sorted(records, key=lambda r: r["metadata"]["request_start_ns"])
    starts = [r["metadata"]["request_start_ns"] / 1e9 for r in ordered]
    latency_s = statistics.fmean(float(r["metrics"]["request_latency"]["value"]) for r in records) / 1000
    w = window * latency_s
    return [
        (
            (bisect.bisect_right(starts, t + w / 2) - bisect.bisect_left(starts, t - w / 2)) / concurrency,
            float(r["metrics"]["time_to_first_token"]["value"]),
        )
        for t, r in zip(starts, ordered, strict=True)
    ]


def clustering(records: list[dict], concurrency: int, window: float = WINDOW) -> float:
    """Mean over the window's requests of their share (`shares`)."""
    return statistics.fmean(share for share, _ in shares(records, concurrency, window))


def thirds(records: list[dict], concurrency: int) -> list[tuple[float, float]]:
    """(mean share, mean TTFT ms) over each third of the window's requests in start order: whether the loop's
    synchronisation, and the TTFT with it, changed while it was measured."""
    each = shares(records, concurrency)
    n = len(each)
    parts = [each[i * n // 3 : (i + 1) * n // 3] for i in range(3)]
    return [(statistics.fmean(s for s, _ in p), statistics.fmean(t for _, t in p)) for p in parts]


def _metric(records: list[dict], name: str) -> list[float]:
    return sorted(float(r["metrics"][name]["value"]) for r in records)


def by_thirds(snapshot: Path, concurrency: int, summary: Path | None = None) -> list[list[str]]:
    """One row per measured repetition (valid or not): its share and mean TTFT by thirds of the window."""
    points, _ = read_snapshot(snapshot)
    versions = engine_versions(snapshot)
    engine = next((f"{k} {versions[k]}" for k in ("vllm", "sglang", "tensorrt-llm") if k in versions), snapshot.name)
    invalid = invalid_repetitions(summary, concurrency)
    out = []
    for rep in sorted(rep for conc, rep in points if conc == concurrency):
        parts = thirds(points[(concurrency, rep)]["records"], concurrency)
        verdict = "not judged" if summary is None else "invalid" if rep in invalid else "valid"
        out.append(
            [
                engine,
                f"c{concurrency} r{rep}",
                verdict,
                " / ".join(f"{share:.2f}" for share, _ in parts),
                " / ".join(f"{ttft:,.0f}" for _, ttft in parts),
            ]
        )
    return out


def invalid_repetitions(summary: Path | None, concurrency: int) -> set[int]:
    """The repetitions of this load the summarized table judged invalid (none without a table)."""
    if summary is None:
        return set()
    import pandas as pd

    df = pd.read_parquet(summary, columns=["concurrency", "repetition", "valid"])
    return {int(r) for r in df[(df["concurrency"] == concurrency) & ~df["valid"].astype(bool)]["repetition"]}


def rows(snapshot: Path, concurrency: int, summary: Path | None = None) -> list[list[str]]:
    points, _ = read_snapshot(snapshot)
    versions = engine_versions(snapshot)
    engine = next((f"{k} {versions[k]}" for k in ("vllm", "sglang", "tensorrt-llm") if k in versions), snapshot.name)
    left_out = invalid_repetitions(summary, concurrency)
    reps = sorted(rep for conc, rep in points if conc == concurrency and rep not in left_out)
    share, p10, p50, p90, itl = [], [], [], [], []
    for rep in reps:
        recs = points[(concurrency, rep)]["records"]
        share.append(clustering(recs, concurrency))
        ttft = _metric(recs, "time_to_first_token")
        p10.append(ttft[len(ttft) // 10])
        p50.append(statistics.median(ttft))
        p90.append(ttft[9 * len(ttft) // 10])
        itl.append(statistics.fmean(_metric(recs, "inter_token_latency")))
    return [
        [
            engine,
            f"c{concurrency}",
            interval(share).text(2),
            " / ".join(f"r{r} {x:.2f}" for r, x in zip(reps, share, strict=True))
            + "".join(f", r{r} left out (invalid)" for r in sorted(left_out)),
            " / ".join(
                f"{interval(v).mean:,.0f}" if not math.isnan(interval(v).mean) else "-" for v in (p10, p50, p90)
            ),
            interval(itl).text(2),
        ]
    ]


HEADER = [
    "engine",
    "load",
    "loop started within 0.1 x latency around each start (share)",
    "per repetition",
    "TTFT p10 / p50 / p90 ms (mean of repetitions)",
    "ITL mean ms",
]


THIRDS_HEADER = ["engine", "point", "verdict", "share by thirds of the window", "TTFT mean ms by thirds"]


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshots", type=Path, nargs="+")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--summaries", type=Path, nargs="*", default=[], help="each snapshot's results.parquet")
    a = ap.parse_args(argv)
    if a.summaries and len(a.summaries) != len(a.snapshots):
        ap.error(
            f"--summaries: give one per snapshot ({len(a.snapshots)}), in the same order; {len(a.summaries)} given"
        )
    summaries = a.summaries or [None] * len(a.snapshots)
    pairs = list(zip(a.snapshots, summaries, strict=True))
    text = (
        table([row for s, t in pairs for row in rows(s, a.concurrency, t)], HEADER)
        + "\n\n"
        + table([row for s, t in pairs for row in by_thirds(s, a.concurrency, t)], THIRDS_HEADER)
    )
    print(text)
    return text


if __name__ == "__main__":
    main()
