"""Write params/workloads/agentic-sessions.jsonl: small multi-turn agentic sessions with think time.

Deterministic (fixed seed, stdlib only). 8 sessions of 4 turns; sessions start as Poisson arrivals
(`timestamp`, ms, on the first turn); every later turn waits `delay` ms after the previous answer (the
agent's think/tool time, 300-1500 ms) with 1-3 new 16-token blocks (tool output); AIPerf sends each turn
after the session's earlier turns and answers, the context a router can find cached; every session starts
with the same 4 system blocks. Lengths fit
params/local.yaml (isl <= 512, osl <= 64). Format: AIPerf 0.13 mooncake_trace with session_id and delay
(aiperf/dataset/loader/models.py MooncakeTrace; loader/mooncake_trace.py groups turns by session_id).

    python scripts/make_agentic_trace.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

BLOCK = 16
OUT = Path(__file__).resolve().parents[1] / "params" / "workloads" / "agentic-sessions.jsonl"


def lines(seed: int = 11, sessions: int = 8, turns: int = 4, starts_per_s: float = 2.0) -> list[dict]:
    rng = random.Random(seed)
    out, t, next_block = [], 0.0, 10_000
    system = list(range(4))  # a system prompt / tool schema every session shares
    for s in range(sessions):
        t += rng.expovariate(starts_per_s)
        for k in range(turns):
            new = list(range(next_block, next_block + rng.randint(1, 3)))
            next_block += len(new)
            # Only what the turn adds: AIPerf resends a session's earlier turns and answers itself (measured:
            # with whole-context rows the sent ISL was 2.3x the rows' average), so the first turn carries the
            # shared system blocks and each later turn its new tool output.
            blocks = (list(system) if k == 0 else []) + new
            # The prompt's last block is partial, so it gets an id of its own that no later turn reuses:
            # AIPerf 0.13 materialises a hash_id at one size only (its trace loader refuses a block seen
            # at 15 tokens and later at 16).
            tail = next_block
            next_block += 1
            row = {
                "session_id": f"agent-{s}",
                "input_length": len(blocks) * BLOCK + rng.randint(1, BLOCK),
                "output_length": rng.randint(8, 24),
                "hash_ids": blocks + [tail],
            }
            row |= {"timestamp": int(t * 1000)} if k == 0 else {"delay": rng.randint(300, 1500)}
            out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines()), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
