"""Trace replay on its own timing: trace.fixed_schedule reaches AIPerf as --fixed-schedule, and a local
tokenizer folder reaches AIPerf in a form its hash_ids worker pool can load offline (see
infersweep.aiperf.tokenizer_as_cached_hub_id for the AIPerf 0.13 source that makes this necessary)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from infersweep import aiperf as aiperf_contract
from infersweep.aiperf.point_run import EXIT_BAD_POINT
from infersweep.paths import params_dir
from infersweep.recipe.models import Workload
from steps import aiperf_point
from tests.support.paths import REPO

ROOT = REPO
AIPERF_PY = ROOT / ".venv-aiperf" / "bin" / "python"
MINI = params_dir() / "workloads" / "mooncake-mini.jsonl"
TRACE = {"url": "/data/t.jsonl", "avg_isl": 100, "avg_osl": 10}


def _argv(workload: dict) -> list[str]:
    args = aiperf_point.parse_args(
        [
            "--url",
            "u",
            "--model",
            "m",
            "--tokenizer",
            "/tok",
            "--out",
            "/tmp/x/c1",
            "--requests",
            "32",
            "--concurrency",
            "8",
            "--workload",
            json.dumps(workload),
        ]
    )
    return aiperf_contract.build_argv(args)


def test_fixed_schedule_trace_replays_its_timestamps():
    w = Workload(trace={**TRACE, "fixed_schedule": True, "block_size": 16}, concurrency=[8])
    argv = _argv(w.aiperf_workload())
    assert "--fixed-schedule" in argv and "--no-fixed-schedule" not in argv
    assert argv[argv.index("--isl-block-size") + 1] == "16"
    assert argv[argv.index("--input-file") + 1] == "/data/t.jsonl"


def test_trace_without_fixed_schedule_stays_a_concurrency_point():
    argv = _argv(Workload(trace=TRACE, concurrency=[1, 2]).aiperf_workload())
    assert "--no-fixed-schedule" in argv and "--fixed-schedule" not in argv


@pytest.mark.parametrize("extra", [{"concurrency": [1, 2]}, {"concurrency": [4], "request_rate": [1.0]}])
def test_fixed_schedule_is_one_point(extra):
    with pytest.raises(ValueError, match="fixed_schedule replays the trace's timestamps: one point"):
        Workload(trace={**TRACE, "fixed_schedule": True}, **extra)


def test_shipped_mini_trace_is_what_the_script_writes_and_fits_local_mode():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_mini_trace", ROOT / "scripts" / "make_mini_trace.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = [json.loads(line) for line in MINI.read_text().splitlines()]
    assert rows == mod.lines()
    for r in rows:  # AIPerf's rule: (len(hash_ids) - 1) * block < input_length <= len(hash_ids) * block
        assert (len(r["hash_ids"]) - 1) * mod.BLOCK < r["input_length"] <= len(r["hash_ids"]) * mod.BLOCK
    assert [r["timestamp"] for r in rows] == sorted(r["timestamp"] for r in rows)


@pytest.mark.skipif(not AIPERF_PY.exists(), reason="needs .venv-aiperf (scripts/setup.sh builds it)")
def test_aiperf_loads_a_local_tokenizer_folder_offline_through_the_cached_hub_id(tmp_path):
    """The real AIPerf 0.13 code path its trace workers take (HF_HUB_OFFLINE=1, Tokenizer.from_pretrained
    with resolve_alias=False): a folder path fails, the hub id we hand over loads. ~10 s (two imports)."""
    from infersweep.local.dynamo.toy_model import build_toy_model

    tok = build_toy_model(tmp_path / "toy")
    code = (
        "import os,sys; os.environ['HF_HUB_OFFLINE']='1'\n"
        "from aiperf.common.tokenizer import Tokenizer\n"
        "try:\n t=Tokenizer.from_pretrained(sys.argv[1], resolve_alias=False); print('OK', len(t.encode('the water')))\n"
        "except Exception as e: print('FAIL', type(e).__name__)\n"
    )
    direct = subprocess.run([str(AIPERF_PY), "-c", code, str(tok)], capture_output=True, text=True, timeout=120)
    assert direct.stdout.startswith("FAIL"), direct.stdout + direct.stderr
    name, env = aiperf_contract.tokenizer_as_cached_hub_id(Path(tok), tmp_path / "hub")
    via_cache = subprocess.run(
        [str(AIPERF_PY), "-c", code, name],
        capture_output=True,
        text=True,
        timeout=120,
        env=aiperf_contract.child_env(env),
    )
    assert via_cache.stdout.startswith("OK 2"), via_cache.stdout + via_cache.stderr


def test_fixed_schedule_point_lets_the_trace_set_the_request_count():
    argv = _argv(Workload(trace={**TRACE, "fixed_schedule": True}, concurrency=[8]).aiperf_workload())
    assert "--request-count" not in argv and "--warmup-request-count" not in argv
    argv = _argv(Workload(trace=TRACE, concurrency=[8]).aiperf_workload())
    assert argv[argv.index("--request-count") + 1] == "32"


@pytest.mark.parametrize(
    "url, ok",
    [
        ("params:workloads/agentic-sessions.jsonl", True),
        ("params:workloads/../../etc/passwd.jsonl", False),
        ("params:recipes/x.jsonl", False),
        ("relative/t.jsonl", False),
    ],
)
def test_trace_url_forms(url, ok):
    if ok:
        t = Workload(trace={**TRACE, "url": url}, concurrency=[1]).trace
        assert t.local_file() == params_dir() / "workloads" / "agentic-sessions.jsonl"
    else:
        with pytest.raises(ValueError, match="params:workloads/<file>.jsonl"):
            Workload(trace={**TRACE, "url": url}, concurrency=[1])


def test_step_fails_clearly_when_the_trace_is_not_there(tmp_path):
    out = tmp_path / "c1"
    code = aiperf_point.main(
        [
            "--url",
            "u",
            "--model",
            "m",
            "--tokenizer",
            str(tmp_path),
            "--out",
            str(out),
            "--requests",
            "4",
            "--concurrency",
            "1",
            "--aiperf",
            "/bin/false",
            "--workload",
            json.dumps({"trace": "params:workloads/agentic-sessions.jsonl"}),
        ]
    )
    result = json.loads((out / "result.json").read_text())
    assert code == EXIT_BAD_POINT and result["status"] == "failed"
    assert "is not a file here" in result["reason"]


def test_agentic_sessions_are_what_the_script_writes_multi_turn_with_think_time():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_agentic_trace", ROOT / "scripts" / "make_agentic_trace.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = [
        json.loads(line) for line in (params_dir() / "workloads" / "agentic-sessions.jsonl").read_text().splitlines()
    ]
    assert rows == mod.lines()
    sessions: dict[str, list[dict]] = {}
    for r in rows:
        sessions.setdefault(r["session_id"], []).append(r)
    assert len(sessions) == 8 and all(len(t) == 4 for t in sessions.values())
    for turns in sessions.values():
        assert "timestamp" in turns[0] and all(300 <= t["delay"] <= 1500 for t in turns[1:])
        assert turns[0]["hash_ids"][:4] == [0, 1, 2, 3]  # the shared system prompt
    for r in rows:
        assert (len(r["hash_ids"]) - 1) * mod.BLOCK < r["input_length"] <= len(r["hash_ids"]) * mod.BLOCK <= 512
    # AIPerf 0.13 refuses a hash_id seen at two sizes: a partial last block is never reused
    partial = {r["hash_ids"][-1] for r in rows if r["input_length"] % mod.BLOCK}
    assert not partial & {h for r in rows for h in r["hash_ids"][:-1]}


def test_local_mode_replays_a_shipped_trace_and_falls_back_for_a_download():
    from infersweep.local.profile import load_local_profile
    from infersweep.local.scale import local_workload
    from infersweep.recipe import load_recipe

    prof = load_local_profile()
    workload, points = local_workload(load_recipe("demo-agentic-kv"), prof, 100, 10)
    assert Path(workload["trace"]).is_file() and workload["fixed_schedule"] is True
    assert [p.as_dict() for p in points] == [{"concurrency": 8, "request_rate": 0, "requests": 32, "warmup": 0}]
    workload, _ = local_workload(load_recipe("qwen3-32b-fp8-vllm-agg"), prof, 100, 10)
    assert "trace" not in workload and workload["isl"] == 100


@pytest.mark.e2e
def test_agentic_sessions_replay_locally_end_to_end(tmp_path):
    """`infersweep run --local demo-agentic-kv` (~45 s): the shipped multi-turn trace replays at its own
    timing through the local tokenizer folder: every turn of every session measured, lengths the trace's."""
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.local.run import ARTIFACT_BUCKET, run_local
    from infersweep.local.standins.s3server import LocalS3

    with LocalS3(buckets=[load_cluster_settings().s3.bucket, ARTIFACT_BUCKET]) as s3:
        res = run_local("demo-agentic-kv", out_root=tmp_path / "runs", cache_root=tmp_path / "cache", s3=s3)
    assert res.phase == "Succeeded"
    result = json.loads((Path(res.results_dir) / "points" / "c8" / "result.json").read_text())
    assert result["status"] == "ok" and result["requests_ok"] == 32
    assert "--fixed-schedule" in result["argv"] and aiperf_contract.LOCAL_TOKENIZER_REPO in result["argv"]
    assert result["metrics"]["osl_avg_tok"] == pytest.approx(14.34375)  # the trace's output lengths, exactly
    log = (Path(res.results_dir) / "points" / "c8" / "aiperf.log").read_text()
    assert "sessions: completed=8" in log
