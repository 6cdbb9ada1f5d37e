"""Split each point's client TTFT by the prefill the engine ran: the prompt's tokens less those read from the
prefix cache, and the CUDA-graph size SGLang pads that count to. It explains a TTFT that falls in two modes.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/ttft_by_prefill_size.py SNAPSHOT.tar.xz [--concurrency 1 ...]

SNAPSHOT is a GPU run's committed snapshot (benchmarks/measured/*/...-snapshot.tar.xz). Every measured request's
`usage_prompt_tokens` and `usage_prompt_cache_read_tokens` come from the engine's own usage block, as AIPerf
recorded them (profile_export.jsonl), so the split needs no engine log.

Why the split: SGLang 0.5.14 runs a prefill through a piecewise CUDA graph captured for a fixed token count, padded
up to the smallest captured size that holds it (sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py
load_batch -> base_cuda_graph_runner.py _pad_to_bucket). The default sizes step by 64 up to 1,024, then by 256
(sglang/srt/server_args.py _generate_prefill_cuda_graph_batch_sizes, the list `cuda_graph_config` prints in the
worker's log). A prefill of 1,025 uncached tokens costs a 1,280-token graph. The radix cache serves a prompt's
first tokens when they match an earlier prompt's, token by token: the chat template's opening tokens always,
sometimes a few more by chance. vLLM caches whole 16-token blocks only, so its uncached count does not vary here
(the graph column is left empty for a run whose telemetry/stack.json names no SGLang). The default load is c1:
there each prefill runs alone, so a request's own count decides the graph; under load SGLang batches several
prefills into one forward (up to chunked_prefill_size tokens), and the batch's total decides it.

Each group's TTFT is given as the mean over the point's repetitions of each repetition's group mean, with the
95 % Student-t interval over those repetitions and n (repetitions) and the request count beside it
(infersweep.results.repetitions.interval, as the README's table): requests inside one closed-loop window are not
independent draws.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tarfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks._common import table  # noqa: E402
from infersweep.results.repetitions import interval  # noqa: E402
from tests.support.measured_snapshot import read_snapshot  # noqa: E402

# sglang 0.5.14 sglang/srt/server_args.py _generate_prefill_cuda_graph_batch_sizes (max_bs 8192, as the H200 run's
# worker log printed it: cuda_graph_config ... prefill=PhaseConfig(backend='tc_piecewise', max_bs=8192, bs=[...]).
SGLANG_PREFILL_GRAPH_SIZES = (
    list(range(4, 33, 4))
    + list(range(48, 257, 16))
    + list(range(288, 513, 32))
    + list(range(576, 1024 + 1, 64))
    + list(range(1280, 4096 + 1, 256))
    + list(range(4608, 8192 + 1, 512))
)


def graph_size(uncached_tokens: int) -> int | None:
    """The captured size SGLang pads a prefill of this many tokens to (None: larger than every graph, run eager)."""
    return next((s for s in SGLANG_PREFILL_GRAPH_SIZES if s >= uncached_tokens), None)


def uncached_tokens(record: dict) -> int:
    m = record["metrics"]
    return int(m["usage_prompt_tokens"]["value"]) - int(m.get("usage_prompt_cache_read_tokens", {}).get("value", 0))


def split(points: dict[tuple[int, int], dict], concurrency: int) -> dict[int | None, dict[int, list[float]]]:
    """{graph size: {repetition: [TTFT ms of its measured requests]}} for one concurrency."""
    groups: dict[int | None, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (conc, rep), entry in sorted(points.items()):
        if conc != concurrency:
            continue
        for r in entry["records"]:
            groups[graph_size(uncached_tokens(r))][rep].append(float(r["metrics"]["time_to_first_token"]["value"]))
    return groups


def engine_versions(snapshot: Path) -> dict[str, str]:
    """What ran (telemetry/stack.json's versions), {} when the snapshot has none."""
    with tarfile.open(snapshot) as tf:
        for member in tf:
            if member.isfile() and member.name.endswith("/telemetry/stack.json"):
                return json.loads(tf.extractfile(member).read()).get("versions", {})  # type: ignore[union-attr]
    return {}


def rows(points: dict[tuple[int, int], dict], concurrency: int, sglang: bool = True) -> list[list[str]]:
    out = []
    counts: dict[int | None, set[int]] = defaultdict(set)
    for (conc, _), entry in points.items():
        if conc == concurrency:
            for r in entry["records"]:
                counts[graph_size(uncached_tokens(r))].add(uncached_tokens(r))
    for size, reps in sorted(split(points, concurrency).items(), key=lambda kv: kv[0] or 1 << 30):
        per_rep = [statistics.mean(v) for _, v in sorted(reps.items())]
        every = [x for v in reps.values() for x in v]
        tokens = sorted(counts[size])
        out.append(
            [
                f"c{concurrency}",
                f"{tokens[0]}-{tokens[-1]}" if len(tokens) > 1 else str(tokens[0]),
                # under load the batch's total picks the graph, not this request's count
                ("" if not sglang else "batched" if concurrency > 1 else str(size) if size else "eager"),
                interval(per_rep).text(1),
                str(len(every)),
                f"{min(every):.1f}-{max(every):.1f}",
                " / ".join(f"{len(v)}" for _, v in sorted(reps.items())),
            ]
        )
    return out


HEADER = [
    "load",
    "uncached tokens",
    "SGLang graph",
    "TTFT ms, mean of repetitions ± 95 % t",
    "requests",
    "range ms",
    "requests per repetition",
]


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot", type=Path)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1], help="loads to split (default: 1)")
    a = ap.parse_args(argv)
    points, _ = read_snapshot(a.snapshot)
    versions = engine_versions(a.snapshot)
    sglang = "sglang" in versions
    ran = ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) or "no telemetry/stack.json"
    text = f"{a.snapshot.name} ({ran})\n" + table(
        [row for c in a.concurrency for row in rows(points, c, sglang)], HEADER
    )
    print(text)
    return text


if __name__ == "__main__":
    main()
