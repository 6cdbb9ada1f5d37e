"""Empty the KV caches of every worker of a local deployment through Dynamo's own endpoint.

Run by the engine's interpreter (it imports ai-dynamo's runtime, nothing of infersweep) with the
deployment's Dynamo environment (file discovery under DYN_FILE_KV, TCP request plane). For each worker
component the vLLM worker serves, it calls `<namespace>.<component>.clear_kv_blocks` on every instance
(ai-dynamo 1.3.1: dynamo/vllm/worker_factory.py serves handler.clear_kv_blocks beside generate;
dynamo/vllm/handlers.py clear_kv_blocks awaits engine_client.reset_prefix_cache(reset_connector=True) and
yields {"status": "success"} or {"status": "error", "message": ...}). Exit 0 when `--expect` instances
answered success, 1 otherwise; one line per instance on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

COMPONENTS = ("backend", "prefill", "decode")  # dynamo/vllm/args.py: the components a vLLM worker registers


def _data(item):
    data = getattr(item, "data", item)
    return data() if callable(data) else data


async def reset(expect: int, wait_s: float) -> int:
    from dynamo.runtime import DistributedRuntime

    runtime = DistributedRuntime(
        asyncio.get_running_loop(),
        os.environ.get("DYN_DISCOVERY_BACKEND", "file"),
        os.environ.get("DYN_REQUEST_PLANE", "tcp"),
    )
    namespace = os.environ.get("DYN_NAMESPACE", "dynamo")
    clients = {comp: await runtime.endpoint(f"{namespace}.{comp}.clear_kv_blocks").client() for comp in COMPONENTS}
    # Wait for the instances of all components at once, and only until `expect` of them are known: a vLLM
    # worker registers one of the three (backend when aggregated), so waiting wait_s on each in turn spent
    # 2 x wait_s on the two that never come (20 s of every reset on the H200, 2026-12-04: the deploy step took
    # 21 s for a reset done in 1 s, benchmarks/measured/h200-2026-12-04/gpu-kv-vs-rr/status.json).
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while sum(len(c.instance_ids()) for c in clients.values()) < expect and loop.time() < deadline:
        await asyncio.sleep(0.05)
    ok = 0
    for comp, client in clients.items():
        for iid in client.instance_ids():
            answers = [_data(a) async for a in await client.direct({}, iid)]
            good = any(isinstance(a, dict) and a.get("status") == "success" for a in answers)
            ok += good
            print(f"kv reset {namespace}.{comp} instance {iid}: {json.dumps(answers, default=str)}", flush=True)
    try:
        runtime.shutdown()
    except Exception:
        pass
    if ok < expect:
        print(f"kv reset: {ok} of {expect} workers confirmed", file=sys.stderr)
        return 1
    print(f"kv reset: {ok} of {expect} workers emptied their KV cache", flush=True)
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--expect", type=int, required=True, help="workers that must confirm")
    ap.add_argument("--wait-s", type=float, default=10.0)
    a = ap.parse_args()
    code = asyncio.run(reset(a.expect, a.wait_s))
    # Leave without the interpreter's teardown: ai-dynamo 1.3.1's runtime threads aborted it once on the H200
    # ("FATAL: exception not rethrown", exit by SIGABRT) after every worker had confirmed (benchmarks/measured/
    # h200-2026-12-04/gpu-kv-vs-rr, run rr-3's deploy log), which read as a failed reset.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
