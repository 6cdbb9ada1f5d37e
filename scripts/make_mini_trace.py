"""Write params/workloads/mooncake-mini.jsonl: a small Mooncake-format trace that local mode can replay.

Deterministic (fixed seed, stdlib only): 32 requests over ~8 s, Poisson arrivals, each request's prompt made
of 16-token blocks (`hash_ids`) of which the first ones are shared by the requests of one of 4 "documents",
so the KV router has prefixes to reuse. Lengths fit params/local.yaml (isl <= 512, osl <= 64).
Mooncake's format (kvcache-ai/Mooncake FAST25-release/traces): one JSON object per line with timestamp
(ms), input_length, output_length, hash_ids; AIPerf 0.13 reads it as --custom-dataset-type mooncake_trace
and rebuilds each prompt block by block from hash_ids with --isl-block-size tokens per block.

    python scripts/make_mini_trace.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

BLOCK = 16
OUT = Path(__file__).resolve().parents[1] / "params" / "workloads" / "mooncake-mini.jsonl"


def lines(seed: int = 7, requests: int = 32, rate_per_s: float = 4.0) -> list[dict]:
    rng = random.Random(seed)
    t, out, next_id = 0.0, [], 1000
    for _ in range(requests):
        t += rng.expovariate(rate_per_s)
        doc = rng.randrange(4)
        shared = [doc * 100 + i for i in range(4 + doc)]  # 64..112 shared tokens per document
        own = list(range(next_id, next_id + rng.randint(1, 5)))
        next_id += len(own)
        last = rng.randint(1, BLOCK)  # the final block may be partial
        out.append(
            {
                "timestamp": int(t * 1000),
                "input_length": (len(shared) + len(own) - 1) * BLOCK + last,
                "output_length": rng.randint(8, 32),
                "hash_ids": shared + own,
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines()), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
