"""The knee search (infersweep.slo_bisect.bisect): its bracket, its probe count, and its edge cases."""

from __future__ import annotations

import pytest

from infersweep.slo_bisect import bisect


def _knee(at: float, seen: list):
    def measure(load):
        seen.append(load)
        return load <= at, f"ttft at {load}"

    return measure


@pytest.mark.parametrize("knee", [1, 2, 5, 37, 63])
def test_concurrency_bracket_is_one_level_wide_and_right(knee):
    seen: list = []
    s = bisect(_knee(knee, seen), 1, 64)
    assert (s.best, s.first_miss) == (knee, knee + 1)
    assert len(seen) <= 2 + 8  # two ends + log2(64) steps, +1: geometric midpoints are coarser near the top
    assert len(set(seen)) == len(seen)  # no load measured twice


def test_rate_bracket_meets_the_tolerance():
    s = bisect(_knee(7.3, []), 0.5, 64, axis="request_rate", rel_tol=0.05)
    assert s.best <= 7.3 < s.first_miss and s.first_miss / s.best <= 1.05


def test_nothing_passes_or_everything_passes():
    s = bisect(_knee(0, []), 1, 64)
    assert s.best is None and s.first_miss == 1 and "no concurrency meets" in s.summary()
    s = bisect(_knee(100, []), 1, 64)
    assert s.best == 64 and s.first_miss is None and ">= 64" in s.summary()


def test_a_point_without_measurement_counts_as_a_miss():
    s = bisect(lambda load: (None if load > 10 else True, ""), 1, 64)
    assert (s.best, s.first_miss) == (10, 11)


def test_bad_range_is_refused():
    with pytest.raises(ValueError, match="0 < lo <= hi"):
        bisect(_knee(1, []), 8, 4)


def test_cli_refuses_bad_slo_bounds_and_a_cluster_search(capsys, tmp_path):
    from infersweep.cli import main

    assert main(["slo-search", "demo-prefix-kv", "--local", "--slo", "ttft=5", "--out", str(tmp_path)]) == 2
    assert "unknown bound 'ttft'" in capsys.readouterr().err
    assert main(["slo-search", "demo-prefix-kv", "--local", "--slo", "ttft_p50_ms=-1", "--out", str(tmp_path)]) == 2
    assert "above 0" in capsys.readouterr().err
    assert main(["slo-search", "demo-prefix-kv"]) == 2
    assert "add --local" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing deployed, nothing written


@pytest.mark.e2e
def test_local_knee_search_brackets_a_real_deployment(tmp_path):
    """One local deployment (Dynamo frontend + 2 mockers) and real AIPerf points: ~1-2 min (each probe
    ~16 s of which ~8 s is AIPerf's fixed cost). A TTFT bound no point meets and one every point meets
    give the two ends; the bracket is then checked against the probes' own rows."""
    from infersweep.local.slo_search import slo_search_local

    search, rows = slo_search_local(
        "demo-prefix-kv", out=tmp_path / "s", lo=1, hi=4, slo={"ttft_p50_ms": 1e6}, log=lambda *_: None
    )
    assert all(r["status"] == "ok" and r["requests_ok"] > 0 for r in rows) and len(rows) == len(search.probes) >= 2
    verdict = {p.load: p.passed for p in search.probes}
    # Every point meets a 1,000 s TTFT, so a miss can only be a point the validity rules refuse (a mocker
    # point of a few seconds is sometimes unsteady): counted as a miss, never as a pass.
    misses = [p for p in search.probes if p.passed is not True]
    assert all(p.detail.startswith("not judged: invalid point") for p in misses), misses
    if not misses:
        assert (search.best, search.first_miss) == (4, None) and len(rows) == 2
    else:  # the bracket is one level wide and agrees with the probes' own verdicts
        assert verdict[search.first_miss] is not True and search.first_miss == (search.best or 0) + 1
        assert search.best is None or verdict[search.best] is True
    assert (tmp_path / "s" / "slo-search.json").is_file()


@pytest.mark.e2e
def test_one_open_loop_point_against_a_local_deployment(tmp_path):
    """A request_rate point end to end (~30 s): AIPerf gets --request-rate, the row says the rate it ran at,
    and the point lives in its own c<N>-rate<R> folder.

    Whether the mocker keeps up with 4 requests/s depends on the machine's load (a busy 2-core machine once made
    it "queue building up", and the search found no best): that verdict is the validity rules' business, tested
    on recorded records. Here the search must only agree with the probe's own verdict, whichever it is."""
    import json

    from infersweep.local.slo_search import slo_search_local

    search, rows = slo_search_local(
        "demo-prefix-kv",
        out=tmp_path / "s",
        lo=4,
        hi=4,
        axis="request_rate",
        slo={"ttft_p50_ms": 1e6},
        log=lambda *_: None,
    )
    assert rows[0]["status"] == "ok" and rows[0]["request_rate"] == 4.0 and rows[0]["arrival"] == "poisson"
    (probe,) = search.probes
    if probe.passed is True:  # every point meets a 1,000 s TTFT: a valid point passes
        assert search.best == 4
    else:  # a point the validity rules refused (the machine's load) is a miss, never a pass
        assert search.best is None and probe.detail.startswith("not judged: invalid point"), probe.detail
    result = json.loads((tmp_path / "s" / "points" / "c8-rate4" / "result.json").read_text())
    assert result["status"] == "ok" and result["argv"][result["argv"].index("--request-rate") + 1] == "4"


def _no_gpu_here() -> bool:
    from infersweep.local.gpu.workers import detect_gpus

    return not detect_gpus()


@pytest.mark.skipif(not _no_gpu_here(), reason="this machine has a GPU: --workers gpu would start engines")
@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--local", "--workers", "gpu", "qwen3-32b-bf16-vllm-h200-tp1"],
        ["slo-search", "qwen3-32b-bf16-vllm-h200-tp1", "--local", "--workers", "gpu"],
        ["experiment", "run", "--local", "gpu-kv-vs-rr", "--workers", "gpu"],
    ],
    ids=["run", "slo-search", "experiment-run"],
)
def test_gpu_workers_on_a_machine_without_a_gpu_is_one_line_and_nothing_written(argv, capsys, tmp_path):
    from infersweep.cli import main

    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no GPU is visible here" in err and "--workers mocker" in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_gpu_search_whose_workers_do_not_fit_is_refused_before_anything_starts(tmp_path, monkeypatch):
    """The search checks the process plan against the GPUs here (infersweep.local.dynamo.gpu_fit.check_fits) before
    it deploys: a TP=2 worker on one H200 is one error naming what is missing, and no process or folder."""
    import yaml

    from infersweep.local.gpu import run as gpu_run
    from infersweep.local.gpu.workers import Gpu, GpuShortfall
    from infersweep.local.slo_search import slo_search_local
    from infersweep.paths import params_dir

    h200 = params_dir() / "recipes" / "h200"
    recipe = yaml.safe_load((h200 / "qwen3-32b-bf16-vllm-h200-tp1.yaml").read_text())
    recipe["gpu"] = {"type": "H200", "count": 2}  # the type comes from the folder's _defaults.yaml
    recipe["topology"]["workers"]["tp"] = 2
    path = tmp_path / "tp2.yaml"
    path.write_text(yaml.safe_dump(recipe))
    monkeypatch.setattr(gpu_run, "detect_gpus", lambda: [Gpu(0, "NVIDIA H200", 143771)])
    with pytest.raises(GpuShortfall, match="needs 2 GPUs"):
        slo_search_local(
            str(path), out=tmp_path / "s", lo=1, hi=8, workers="gpu", cache_root=tmp_path / "cache", log=lambda *_: None
        )
    assert not (tmp_path / "s").exists()
