#!/usr/bin/env python3
"""Do concurrent endpoint registrations lose a Dynamo file-discovery entry? (docs/measured-h200.md)

Starts PROCESSES fresh processes, PARALLEL at a time, each doing what a dynamo.vllm 1.3.1 worker does at
start (dynamo/vllm/worker_factory.py: asyncio.gather of serve_endpoint for generate, clear_kv_blocks and
get_perf_metrics, all into the `v1/instances` bucket of a file store), then waiting 13 s (past the 10 s TTL)
and listing which of its instance files survived. A lost file is the H200's symptom: an entry no Directory
keeps alive (lib/runtime/src/storage/kv/file.rs get_or_create_bucket's check-then-insert), deleted by the
store's own expiry. Prints one line per loss and a summary; exits 1 when any process lost an entry.

    PYTHON=/tmp/infersweep/venv-site-vllm/bin/python scripts/discovery_race.py --processes 100 --parallel 16

Run it with the interpreter that has ai-dynamo (the GPU bundle's venv-site-vllm on the GPU host); the
script itself needs only the standard library in the parent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ENDPOINTS = ("generate", "clear_kv_blocks", "get_perf_metrics")


async def _child(extra: int, watch_s: float) -> dict:
    from dynamo.runtime import DistributedRuntime  # only the child needs ai-dynamo

    async def handler(request):
        yield {"ok": True}

    runtime = DistributedRuntime(asyncio.get_running_loop(), "file", "tcp")
    names = list(ENDPOINTS) + [f"extra{i}" for i in range(extra)]
    serving = [asyncio.ensure_future(runtime.endpoint(f"dynamo.backend.{n}").serve_endpoint(handler)) for n in names]
    bucket = Path(os.environ["DYN_FILE_KV"]) / "v1" / "instances"
    deadline = time.monotonic() + 10
    first: list[str] = []
    while time.monotonic() < deadline and len(first) < len(names):
        first = sorted(p.name for p in bucket.glob("*")) if bucket.is_dir() else []
        await asyncio.sleep(0.05)
    await asyncio.sleep(watch_s)
    after = {p.name for p in bucket.glob("*")}
    del serving
    return {"registered": first, "lost": [f for f in first if f not in after]}


def _one(index: int, python: str, root: Path, args: argparse.Namespace) -> dict:
    store = root / f"p{index}"
    store.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYN_") or k.startswith("DYN_LOG")}
    env |= {"DYN_FILE_KV": str(store), "DYN_DISCOVERY_BACKEND": "file", "DYN_REQUEST_PLANE": "tcp"}
    cmd = [python, "-I", __file__, "--child", "--extra", str(args.extra), "--watch-s", str(args.watch_s)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.watch_s + 60)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"index": index, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return {"index": index} | json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=100)
    ap.add_argument("--parallel", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--extra", type=int, default=0, help="more endpoints registered at once beside the three")
    ap.add_argument("--watch-s", type=float, default=13.0, help="how long after registering to look (> 10 s TTL)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.extra, args.watch_s))), flush=True)
        os._exit(0)  # the runtime's threads would keep the process alive
    python = os.environ.get("PYTHON", sys.executable)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="discovery-race-") as tmp, ThreadPoolExecutor(args.parallel) as pool:
        results = list(pool.map(lambda i: _one(i, python, Path(tmp), args), range(args.processes)))
    errors = [r for r in results if "error" in r]
    lost = [r for r in results if r.get("lost")]
    for r in lost:
        print(f"process {r['index']}: lost {', '.join(r['lost'])} of {len(r['registered'])} registered")
    for r in errors[:3]:
        print(f"process {r['index']}: failed: {r['error']}")
    print(
        f"{len(results) - len(errors)} processes ran ({len(errors)} failed to), {len(lost)} lost an instance entry; "
        f"{args.parallel} at a time on {os.cpu_count()} cores, {time.monotonic() - t0:.0f} s"
    )
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
