"""`--workers gpu` end to end on a CPU machine under INFERSWEEP_FAKE_GPU=1 (infersweep.local.gpu.fake_gpu): `run`,
`experiment run` (KV-cache resets through the workers' clear_kv_blocks endpoint, balanced order) and `slo-search`
take the GPU path (detection, process plan, rendered engine commands, discovery keeper, NVML sampler, start-up
record, provenance) with Dynamo's mocker in place of each engine process, for a vLLM and an SGLang recipe. Small
on purpose (c1/c2, a handful of short requests): each is about a minute on a busy 2-core machine."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from infersweep.local.gpu.fake_gpu import FAKE_GPU_ENV
from infersweep.paths import params_dir
from tests.support.run_failure import why_failed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

# Short requests: what is checked is the path, not the numbers (which are the mocker's anyway).
SMALL = {
    "workload.isl": 64,
    "workload.osl": 8,
    "workload.requests_per_concurrency": 2,
    "workload.min_requests": 4,
    "workload.warmup_requests": 0,
}


@pytest.fixture(autouse=True)
def _one_fake_gpu(monkeypatch):
    from infersweep.local.toolchain import default_dynamo_python

    if not Path(default_dynamo_python()).exists():
        pytest.skip(f"no Dynamo interpreter at {default_dynamo_python()}")
    monkeypatch.setenv(FAKE_GPU_ENV, "1")
    monkeypatch.delenv("INFERSWEEP_GPU_PYTHON", raising=False)


def _workers(run_dir: Path) -> list[dict]:
    (dep,) = run_dir.glob("state/dgd/*/deployment.json")
    return [w for c in json.loads(dep.read_text())["components"] for w in c["workers"]]


@pytest.mark.parametrize(
    "recipe, engine", [("qwen3-32b-bf16-vllm-h200-tp1", "vllm"), ("qwen3-32b-bf16-sglang-h200-tp1", "sglang")]
)
def test_run_takes_the_gpu_path_with_a_mocker_for_the_engine_and_says_fake_gpu(tmp_path, recipe, engine):
    from infersweep.local.run import run_local

    res = run_local(
        recipe,
        out_root=tmp_path / "runs",
        cache_root=tmp_path / "cache",
        workers="gpu",
        recipe_overrides={"workload.concurrency": [1], **SMALL},
    )
    assert res.phase == "Succeeded", why_failed(res)
    row = pd.read_parquet(res.results_dir / "summary" / "results.parquet").iloc[0]
    assert row["status"] == "ok" and str(row["source"]).startswith(
        "simulated (fake GPU: 1 of 1x NVIDIA H200 (fake GPU)"
    )
    # the NVML sampler ran on the fake device (a point this short may fall between two samples: no GPU columns)
    samples = [json.loads(s) for s in (res.run_dir / "telemetry" / "gpu-samples.jsonl").read_text().splitlines()]
    assert samples and all(s["fake"] and s["power_w"] == 100.0 for s in samples)
    assert row["gpu_power_total_w"] == 100.0 or pd.isna(row["gpu_power_total_w"])
    assert "Simulated run on a fake GPU" in (res.results_dir / "summary" / "results.md").read_text()
    run_json = json.loads((res.results_dir / "summary" / "run.json").read_text())
    assert run_json["context"]["source"].startswith("simulated (fake GPU")
    # the process plan and the engine command as rendered, kept beside what ran in its place
    (w,) = _workers(res.run_dir)
    assert w["fake_gpu"] and w["gpus"] == [0] and w["cuda_visible_devices"] == "0"
    assert w["rendered_argv"][1:3] == ["-m", f"dynamo.{engine}"] and "--load-format" in w["rendered_argv"]
    log = next(res.run_dir.glob(f"state/dgd/*/logs/{w['name']}.log")).read_text()
    assert log.startswith(f"fake GPU: the engine worker would have run: {w['rendered_argv'][0]} -m dynamo.{engine}")
    assert next(res.run_dir.glob("state/dgd/*/logs/DiscoveryKeeper.log"))  # the GPU path's keeper ran
    stack = json.loads((res.run_dir / "telemetry" / "stack.json").read_text())
    assert stack["fake_gpu"] is True and stack["measured_on"].startswith("fake GPU")
    startup = json.loads((res.run_dir / "telemetry" / "startup.json").read_text())
    assert list(startup) and all(v["ready_s"] > 0 for v in startup.values())


def test_experiment_run_resets_kv_caches_through_the_workers_endpoint_in_balanced_order(tmp_path):
    from infersweep.local.experiment_run import run_experiment_local

    spec = yaml.safe_load((params_dir() / "experiments" / "gpu-kv-vs-rr.yaml").read_text())
    spec.pop("seed")
    spec["name"] = "tiny-gpu-kv-vs-rr"
    spec["blocks"] = 2  # two ABBA blocks: 8 runs, the claim judged on the 2 blocks' paired differences
    spec["set"] = {
        "workload": {
            "isl": 96,
            "osl": 8,
            "prefix": {"tokens": 64, "count": 2},
            "requests_per_concurrency": 2,
            "min_requests": 4,
            "warmup_requests": 0,
        }
    }
    spec["question"]["concurrency"] = [2]
    spec["claim"]["concurrency"] = 2
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(spec))
    res = run_experiment_local(str(path), out_root=tmp_path / "runs", cache_root=tmp_path / "cache", workers="gpu")
    assert res.phase == "Succeeded", why_failed(res)
    names = [s.treatment.name for s in res.plan.steps]  # balanced: the plan, then the plan reversed, twice
    a, b = names[:2]
    assert sorted([a, b]) == ["kv", "rr"]
    assert names == [a, b, f"{b}-2", f"{a}-2", f"{a}-3", f"{b}-3", f"{b}-4", f"{a}-4"], names
    # two vLLM workers at 0.42 of the memory share the one fake H200
    assert [(w["gpus"], w["memory_fraction"]) for w in _workers(res.run_dir)] == [([0], 0.42), ([0], 0.42)]
    logs = "".join(p.read_text() for p in res.run_dir.glob("nodes/*-deploy_*/main.log"))
    # every run after the first starts on emptied caches, through clear_kv_blocks (no fallback restart)
    assert logs.count("kv reset: 2 of 2 workers emptied their KV cache") == 7, logs[-3000:]
    assert "restarting the deployment instead" not in logs
    # after each reset the warm-up touches both prefixes before the window (the recipe asks for none):
    # 11 draws cover 2 prefixes but with probability 1e-3 (infersweep.experiment.warmup)
    for t in names:
        results = list((res.run_dir / "volumes/workdir/treatments" / t).rglob("result.json"))
        argv = [json.loads(f.read_text()).get("argv") or [] for f in results]
        assert argv and all(a[a.index("--warmup-request-count") + 1] == "11" for a in argv), (t, argv)
    # the verdict is the paired one over the 2 blocks
    paired = res.report["paired"]
    assert paired["n_blocks"] + len(paired["dropped"]) == 2
    assert res.report["claim"]["verdict"] == paired["verdict"] in ("supported", "refuted", "inconclusive")
    assert "paired over ABBA blocks" in res.report["claim"]["line"]
    assert res.report["sources"] and all(s.startswith("simulated (fake GPU") for s in res.report["sources"])
    assert "Simulated run on a fake GPU" in (res.run_dir / "volumes/workdir/run/experiment-report.md").read_text()
    for t in names:
        run_json = res.run_dir / "volumes" / "workdir" / "treatments" / t / "summary" / "run.json"
        assert json.loads(run_json.read_text())["context"]["source"].startswith("simulated (fake GPU")


def test_slo_search_on_a_fake_gpu_records_fake_gpu(tmp_path):
    from infersweep.local.slo_search import slo_search_local

    recipe = yaml.safe_load((params_dir() / "recipes" / "h200" / "qwen3-32b-bf16-sglang-h200-tp1.yaml").read_text())
    recipe["gpu"] = {"type": "H200", "count": 1}  # the type comes from the folder's _defaults.yaml
    recipe["workload"].update(isl=64, osl=8, concurrency=[1, 2], requests_per_concurrency=2, min_requests=4)
    recipe["workload"]["warmup_requests"] = 0
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe))
    search, rows = slo_search_local(
        str(path),
        out=tmp_path / "s",
        lo=1,
        hi=2,
        slo={"ttft_p50_ms": 1e6},
        workers="gpu",
        cache_root=tmp_path / "cache",
        log=lambda *_: None,
    )
    assert rows and all(r["status"] == "ok" for r in rows)
    record = json.loads((tmp_path / "s" / "slo-search.json").read_text())
    assert record["measured_on"].startswith("fake GPU: 1 of 1x NVIDIA H200 (fake GPU)")
    samples = (tmp_path / "s" / "telemetry" / "gpu-samples.jsonl").read_text().splitlines()
    assert samples and all(json.loads(s)["fake"] for s in samples)


def test_the_gpu_tiers_end_of_run_checks_run_on_a_fake_gpu(tmp_path):
    # The GPU tier's own checks (tests/support/gpu_tier_checks.py) on the run the tier makes, three repetitions
    # and the recipe's own warm-up, with the mocker for the engine: a check that cannot pass (the H200 session of
    # 2026-12-05 read result.json files from a folder that does not exist) fails here, in CI, not at the end
    # of a GPU session.
    from infersweep.local.run import run_local
    from tests.support.gpu_tier_checks import check_tier_run

    short = {k: v for k, v in SMALL.items() if k != "workload.warmup_requests"}
    res = run_local(
        "qwen3-32b-bf16-sglang-h200-tp1",
        out_root=tmp_path / "runs",
        cache_root=tmp_path / "cache",
        workers="gpu",
        recipe_overrides={"workload.concurrency": [2], **short},
    )
    assert res.phase == "Succeeded", why_failed(res)
    df = check_tier_run(res, [2], "sglang", None, real=False)
    assert sorted(df["repetition"]) == [0, 1, 2]
