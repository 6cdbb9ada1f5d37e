"""GPU time saved around the measurement: model cache, readiness detection, teardown start.

1. Model download skipped on a warm cache: infersweep.model_cache.ensure_model with a file:// source of a
   few hundred MB generated here, cold (copied onto an empty cache) vs warm (marker found), in-process
   and as the step runs it (`python -m steps.model_cache`, interpreter start included).
2. Readiness detected within seconds of the frontend serving: deploy_local of the recipe's rendered DGD,
   then an independent poller records when /v1/models first lists the model while wait_ready_local
   runs; the lag is wait_ready's return minus that moment (wait_ready also waits for one real chat
   completion, which a frontend that lists the model may not answer yet).
3. Teardown starts within seconds of the last point: from a local run's node timings (the latest
   benchmarks/overhead.py run, else a short run of 2 small points): end of the last point -> start of
   the teardown node.

    .venv/bin/python benchmarks/gpu_time.py [--model-mb 300]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from _common import CACHE, OUT, REPO, Figure, report

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"


def make_model_source(root: Path, mb: int) -> Path:
    """A model folder of `mb` MiB: the toy tokenizer files plus weight shards of random bytes."""
    from infersweep.local.dynamo.toy_model import build_toy_model

    done = root / f".complete-{mb}"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    build_toy_model(root)
    shard_mb = 100
    for i in range(max(1, mb // shard_mb)):
        with open(root / f"model-{i:05d}.safetensors", "wb") as f:
            for _ in range(shard_mb):
                f.write(os.urandom(1 << 20))
    done.write_text("ok")
    return root


def bench_model_cache(mb: int) -> list[Figure]:
    from infersweep.model_cache import ensure_model

    src = make_model_source(CACHE / "model-src", mb)
    size = sum(f.stat().st_size for f in src.rglob("*") if f.is_file() and not f.name.startswith("."))
    cache = Path(tempfile.mkdtemp(prefix="model-cache-bench-"))
    try:
        cold = ensure_model("bench/model", "abc123", cache, f"file://{src}")
        t0 = time.perf_counter()
        warm = ensure_model("bench/model", "abc123", cache, f"file://{src}")
        warm_s = time.perf_counter() - t0  # ensure_model rounds its own figure to ms
        assert not cold["cached"] and warm["cached"], (cold, warm)
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "steps.model_cache",
                "--model-id",
                "bench/model",
                "--revision",
                "abc123",
                "--cache-dir",
                str(cache),
                "--source",
                f"file://{src}",
            ],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        warm_step = time.perf_counter() - t0
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return [
        Figure(
            "gpu_time",
            f"model cache cold ({size / 2**20:.0f} MiB copied from file://)",
            cold["seconds"],
            "s",
            note=f"{size / 2**20 / max(cold['seconds'], 1e-6):,.0f} MiB/s local copy; a hub download of a 30 GB model is minutes",
        ),
        Figure(
            "gpu_time",
            "model cache warm (marker found, copy skipped)",
            warm_s * 1000,
            "ms",
            "< 1000",
            f"cold / warm = {cold['seconds'] / max(warm_s, 1e-6):,.0f}x",
        ),
        Figure(
            "gpu_time",
            "  warm, as the step runs (python -m steps.model_cache)",
            warm_step,
            "s",
            "< 3",
            "interpreter start + imports included",
        ),
    ]


def bench_readiness() -> list[Figure]:
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.local.dynamo.deploy import deploy_local
    from infersweep.local.dynamo.deployment import teardown_local
    from infersweep.local.dynamo.toy_model import build_toy_model
    from infersweep.local.dynamo.wait import wait_ready_local
    from infersweep.recipe import load_recipe
    from workflows.render import render_recipe

    bundle = render_recipe(load_recipe(RECIPE), load_cluster_settings())
    dgd = bundle.dgd
    model_dir = build_toy_model(REPO / ".infersweep" / "toy-model")
    state = Path(tempfile.mkdtemp(prefix="ready-bench-"))
    first_listed: list[float] = []
    stop = threading.Event()
    try:
        t_deploy = time.time()
        dep = deploy_local(dgd, model_dir=model_dir, state_dir=state, max_workers_per_component=2)
        t_deployed = time.time()

        def poll() -> None:  # independent of wait_ready_local: its own connection, every 50 ms
            while not stop.is_set():
                try:
                    with urllib.request.urlopen(f"{dep.frontend_url}/v1/models", timeout=1) as r:
                        ids = [m.get("id") for m in json.load(r).get("data", [])]
                    if dep.model_name in ids:
                        first_listed.append(time.time())
                        return
                except Exception:
                    pass
                time.sleep(0.05)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        wait_ready_local(state, timeout_s=120)
        t_ready = time.time()
        poller.join(timeout=5)
        t0 = time.time()
        teardown_local(state)
        t_down = time.time() - t0
    finally:
        stop.set()
        teardown_local(state)
        shutil.rmtree(state, ignore_errors=True)
    lag = t_ready - first_listed[0]
    return [
        Figure(
            "gpu_time",
            "Dynamo start: deploy -> frontend lists the model",
            first_listed[0] - t_deploy,
            "s",
            note=f"deploy_local itself {t_deployed - t_deploy:.1f} s (spawns, does not wait)",
        ),
        Figure(
            "gpu_time",
            "readiness lag: model listed -> wait_ready returns",
            lag * 1000,
            "ms",
            "<= 3000",
            "includes one real chat completion; cluster wait_dgd_ready polls every 2 s",
        ),
        Figure("gpu_time", "teardown of the local deployment (processes stopped)", t_down, "s"),
    ]


def _nodes_from_overhead() -> list[dict] | None:
    f = OUT / "overhead.json"
    if f.exists():
        return json.loads(f.read_text()).get("nodes")
    return None


def _nodes_from_short_run() -> list[dict]:
    from infersweep.local.run import run_local

    nodes: list[dict] = []
    points = [{"concurrency": 1, "requests": 8, "warmup": 1}, {"concurrency": 2, "requests": 8, "warmup": 1}]
    run_local(
        RECIPE,
        out_root=OUT / "runs",
        overrides={"points": json.dumps(points)},
        on_event=lambda kind, n: (
            kind == "end"
            and nodes.append(
                {
                    "name": n.name,
                    "template": n.template,
                    "started": n.started,
                    "finished": n.finished,
                    "leaf": not n.children,
                }
            )
        ),
    )
    return nodes


def bench_teardown_start() -> list[Figure]:
    nodes = _nodes_from_overhead()
    source = "benchmarks/overhead.py run"
    if not nodes:
        nodes, source = _nodes_from_short_run(), "a short local run"
    last_point = max(n["finished"] for n in nodes if n["template"] == "aiperf-point")
    teardown = min(n["started"] for n in nodes if n["name"].endswith(".teardown") and ".onExit." not in n["name"])
    return [
        Figure(
            "gpu_time",
            "teardown start lag: last point ends -> teardown starts",
            (teardown - last_point) * 1000,
            "ms",
            "<= 3000",
            f"from {source}; in a cluster add the teardown pod's start (~1-3 s)",
        )
    ]


def main(argv: list[str] | None = None) -> list[Figure]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-mb", type=int, default=300)
    a = ap.parse_args(argv)
    figs = bench_model_cache(a.model_mb) + bench_readiness() + bench_teardown_start()
    return report("gpu_time", figs)


if __name__ == "__main__":
    main()
