"""NVML samples into DCGM's columns per point, and a vLLM worker's time to ready split by phase, read from
what the H200 run recorded (benchmarks/measured/h200-2026-12-01)."""

from __future__ import annotations

import json
import math

from infersweep.local.gpu.engine_startup import parse_startup, split_ready
from infersweep.results.gpu_telemetry import window_columns
from tests.support.paths import REPO

MEASURED = REPO / "benchmarks" / "measured" / "h200-2026-12-01"


def test_energy_is_the_counter_difference_across_the_window_and_power_the_mean():
    s = 10**9
    samples = [
        {
            "t_ns": (100 + t) * s,
            "gpu": 0,
            "power_w": 500.0 + t,
            "energy_j": 1000.0 + 500 * t,
            "sm_util_pct": 90,
            "mem_util_pct": 40,
            "mem_used_mib": 1000 + t,
        }
        for t in range(0, 11)
    ]
    out = window_columns(samples, 100 * s, 110 * s, output_tokens=2500)
    assert out["gpu_energy_j"] == 5000.0 and out["energy_j_per_output_token"] == 2.0
    assert out["gpu_power_w"] == 505.0 and out["gpu_count"] == 1 and out["gpu_memory_used_mib"] == 1010
    # no counter: power integrated over the samples
    flat = [{k: v for k, v in x.items() if k != "energy_j"} | {"power_w": 400.0} for x in samples]
    assert math.isclose(window_columns(flat, 100 * s, 110 * s, 100)["gpu_energy_j"], 4000.0)
    # a window without samples says nothing rather than zero
    assert math.isnan(window_columns(samples, 200 * s, 210 * s, 100)["gpu_energy_j"])


def test_a_vllm_cold_start_log_splits_into_its_phases():
    log = (MEASURED / "qwen3-32b-bf16-cold-start" / "logs" / "VllmWorker-0.log").read_text(errors="replace")
    phases = parse_startup(log)
    assert phases["compile_s"] == 43.15 and phases["init_engine_s"] == 164.05 and phases["graph_capture_s"] == 9.0
    assert phases["kv_cache_tokens"] == 269312 and phases["compile_cache_hit"] is False
    split = split_ready(phases, 210.0)
    assert math.isclose(split["other_engine_init_s"], 164.05 - 43.15 - 9.0)
    assert math.isclose(split["import_and_registration_s"], 210.0 - phases["model_loading_s"] - 164.05)


def test_the_second_start_read_the_compile_cache():
    startup = json.loads((MEASURED / "qwen3-32b-bf16-sweep" / "telemetry" / "startup.json").read_text())
    (worker,) = startup.values()
    assert worker["compile_cache_hit"] is True and worker["ready_s"] < 120


def test_a_point_that_delivered_far_fewer_tokens_than_asked_is_invalid_and_the_h200_points_were_not():
    from infersweep.results.table import read_result
    from infersweep.results.validity import judge_point, load_thresholds, point_measures

    t = load_thresholds()
    c8 = MEASURED / "qwen3-32b-bf16-sweep" / "points" / "c8"
    m = point_measures(c8, {**read_result(c8), "concurrency": 8})
    assert m["osl_requested"] == 256 and 250 <= m["osl_delivered"] <= 256  # counted by the server
    _, reasons = judge_point(m, t)
    assert not any(r.startswith("output length off") for r in reasons)
    # what client-side counting of random weights' output gave on the probe: 52 of 256 tokens
    _, reasons = judge_point(m | {"osl_delivered": 52.0}, t)
    assert any(r.startswith("output length off: 52 tokens delivered on average, 256 requested") for r in reasons)


def test_the_startup_record_splits_engine_workers_only(tmp_path):
    # The frontend and the discovery keeper are processes of the deployment too, but have no engine start-up;
    # the keeper once showed up in startup.json as a worker with no phases (H200, 2026-12-01, third H200 session).
    from infersweep.local.gpu.run import write_gpu_record

    dep_dir = tmp_path / "state" / "dgd" / "qwen3"
    (dep_dir / "logs").mkdir(parents=True)
    worker_log = dep_dir / "logs" / "VllmWorker-0.log"
    worker_log.write_text(
        (MEASURED / "qwen3-32b-bf16-cold-start" / "logs" / "VllmWorker-0.log").read_text(errors="replace")
    )
    processes = []
    for name, argv in (
        ("VllmWorker-0", ["python", "-m", "dynamo.vllm"]),
        ("Frontend", ["python", "-m", "dynamo.frontend"]),
        ("DiscoveryKeeper", ["python", "discovery_keeper.py"]),
    ):
        log = dep_dir / "logs" / f"{name}.log"
        if not log.exists():
            log.write_text("discovery keeper: watching ...\n")
        processes.append({"name": name, "argv": argv, "log_path": str(log), "started_at": 1000.0})
    dep = {
        "ready_at": 1210.0,
        "processes": processes,
        "components": [{"name": "VllmWorker", "workers": [{"name": "VllmWorker-0"}]}],
    }
    (dep_dir / "deployment.json").write_text(json.dumps(dep))
    write_gpu_record(tmp_path / "run", tmp_path / "state")
    startup = json.loads((tmp_path / "run" / "telemetry" / "startup.json").read_text())
    assert list(startup) == ["qwen3/VllmWorker-0"]
    assert startup["qwen3/VllmWorker-0"]["ready_s"] == 210.0 and startup["qwen3/VllmWorker-0"]["compile_s"] > 0


def test_an_sglang_cold_start_log_splits_into_loading_graph_capture_and_the_rest():
    # The SGLang 0.5.14 worker of the fourth H200 session: ready after 188.6 s, of which 122.1 s went to
    # capturing the tc_piecewise prefill CUDA graphs (58 token counts) and 7.8 s to the decode graphs.
    run = REPO / "benchmarks" / "measured" / "h200-2026-12-02" / "sglang-qwen3-32b-bf16-c16-c32"
    phases = parse_startup((run / "logs" / "start1-cold" / "SglangWorker-0.log").read_text(errors="replace"))
    assert phases["model_loading_s"] == 0.2 and phases["kv_cache_tokens"] == 264513
    assert phases["prefill_graph_capture_s"] == 122.1 and phases["decode_graph_capture_s"] == 7.77
    split = split_ready(phases, 188.6)
    assert math.isclose(split["graph_capture_s"], 129.87)
    assert math.isclose(split["import_and_registration_s"], 188.6 - 0.2 - 129.87)
    assert split["compile_s"] is None and split["other_engine_init_s"] is None
    # a vLLM log keeps its own reading: no SGLang key leaks into it
    vllm = parse_startup((MEASURED / "qwen3-32b-bf16-cold-start" / "logs" / "VllmWorker-0.log").read_text())
    assert "prefill_graph_capture_s" not in vllm
