"""The experiment report: deltas against the baseline treatment, the claim's verdict with noise, the seed's
direction, and a failed treatment reported without stopping the comparison."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from infersweep.experiment.report import check, experiment_report
from infersweep.experiment.spec import load_experiment


def table(ttft: dict[int, list[float]], rps: float = 10.0) -> pd.DataFrame:
    """A results table (the columns the comparison reads): repetitions of mean TTFT per concurrency."""
    rows = []
    for c, values in ttft.items():
        for i, v in enumerate(values):
            rows.append(
                {
                    "concurrency": c,
                    "repetition": i,
                    "status": "ok",
                    "ttft_avg_ms": v,
                    "itl_avg_ms": 10.0,
                    "request_latency_avg_ms": v + 1000,
                    "request_throughput_req_s": rps,
                    "output_throughput_tok_s_per_gpu": 100.0,
                    "output_throughput_p50_tok_s_per_user": 50.0,
                    "goodput_req_s": rps,
                    "slo_pass": True,
                }
            )
    return pd.DataFrame(rows)


CS = [1, 4, 16, 32, 64, 128]


@pytest.fixture(scope="module")
def nemotron():
    return load_experiment("nemotron-rr-vs-kv")  # claim: kv mean TTFT at c128 at least 20 % below rr


def test_claim_supported_beyond_noise(nemotron):
    rr = table({c: [1000, 1010, 990] for c in CS})
    kv = table({c: [600, 606, 594] for c in CS}, rps=10.3)
    r = experiment_report(nemotron, {"rr": rr, "kv": kv})
    assert r.claim.verdict == "supported"
    assert r.claim.improvement == pytest.approx(0.4)
    assert 0 < r.claim.noise < 0.02
    assert dict((x.metric, v) for x, v in r.seed)["ttft_avg_ms"] == "agrees"
    assert dict((x.metric, v) for x, v in r.seed)["itl_avg_ms"] == "tie"
    text = r.text()
    assert "supported: kv beats rr on ttft_avg_ms at c128 by at least 20 %" in text
    assert re.search(r"-40\.0% ±\d\.\d\*", text)  # the per-concurrency delta with its 95 % interval, kv better
    assert "(1 se, n=3/3)" in text
    assert "direction agrees" in text


def test_claim_refuted_and_inconclusive(nemotron):
    rr = table({c: [1000, 1010, 990] for c in CS})
    assert check(nemotron.spec.claim, {"rr": rr, "kv": table({c: [950, 960, 940] for c in CS})}).verdict == "refuted"
    noisy_rr = table({c: [1000, 1400, 600] for c in CS})
    noisy_kv = table({c: [780, 1100, 500] for c in CS})
    assert check(nemotron.spec.claim, {"rr": noisy_rr, "kv": noisy_kv}).verdict == "inconclusive"


def test_one_repetition_decides_nothing(nemotron):
    """Issue 38 item 1: n=1 cannot tell a difference from noise, so the claim is inconclusive, whichever way
    the numbers lean (the line says which, and why that decides nothing)."""
    r = experiment_report(nemotron, {"rr": table({c: [1000] for c in CS}), "kv": table({c: [700] for c in CS})})
    assert r.claim.verdict == "inconclusive" and r.claim.leans == "supported"
    line = r.claim.line()
    assert line.startswith("inconclusive: ") and "noise unknown (n=1/1: one repetition per point" in line
    assert "the numbers alone lean supported" in line and "rerun with repetitions" in line


def test_seed_direction_disagrees_when_kv_is_worse(nemotron):
    r = experiment_report(nemotron, {"rr": table({c: [700] for c in CS}), "kv": table({c: [1000] for c in CS})})
    assert dict((x.metric, v) for x, v in r.seed)["ttft_avg_ms"] == "disagrees"
    assert r.claim.verdict == "inconclusive" and r.claim.leans == "refuted"  # n=1


def test_simulated_points_decide_nothing_and_the_report_says_simulated(nemotron):
    """Issue 38 item 1: the mocker's numbers are not the claim's GPUs; three repetitions do not change that."""
    source = "simulated (built-in timing)"
    rr = table({c: [1000, 1010, 990] for c in CS}).assign(source=source)
    kv = table({c: [600, 606, 594] for c in CS}).assign(source=source)
    r = experiment_report(nemotron, {"rr": rr, "kv": kv})
    assert r.claim.verdict == "inconclusive" and r.claim.leans == "supported"
    assert "the points are simulated (simulated (built-in timing))" in r.claim.line()
    assert "> Simulated run: simulated (built-in timing)" in r.text()


def test_failed_treatment_is_reported_not_fatal():
    e = load_experiment("qwen3-32b-mooncake")
    tables = {n: table({c: [1000] for c in [8, 16, 32, 64, 128]}) for n in ("agg", "6p2d", "4p4d", "4p4d-kv-offload")}
    r = experiment_report(e, tables)  # 4p4d-kv failed: no table
    assert r.missing == ["4p4d-kv"]
    assert r.claim.verdict == "inconclusive" and "not measured" in r.claim.line()
    text = r.text()
    assert "treatment 4p4d-kv: no measured results" in text
    assert "6p2d vs agg" in text and "4p4d-kv-offload vs agg" in text


def test_a_metric_the_tables_lack_is_not_measured():
    e = load_experiment("qwen3-32b-mooncake")  # the seed checks ttft_p99_ms, absent from these tables
    tables = {t.name: table({c: [1000] for c in [8, 16, 32, 64, 128]}) for t in e.treatments}
    r = experiment_report(e, tables)
    assert dict((x.metric, v) for x, v in r.seed)["ttft_p99_ms"] == "not measured"


def test_cli_report_refuses_an_unknown_treatment(capsys):
    from infersweep.cli import main

    assert main(["experiment", "report", "nemotron-rr-vs-kv", "fast=runs/x"]) == 2
    assert "give TREATMENT=RUN with TREATMENT one of ['rr', 'kv']" in capsys.readouterr().err


def test_a_scaled_down_sweep_judges_the_claim_at_its_top_level_and_says_so(nemotron):
    # Local mode keeps the lowest levels (c1, c4 of the study's c1..c128): the claim at c128 is judged at c4.
    r = experiment_report(
        nemotron, {"rr": table({1: [1000] * 3, 4: [1000, 1010, 990]}), "kv": table({1: [900] * 3, 4: [700, 707, 693]})}
    )
    # Issue 38 item 1: evidence from c4 says nothing about c128: inconclusive, even with repetitions
    assert r.claim.at == 4 and r.claim.verdict == "inconclusive" and r.claim.leans == "supported"
    assert "judged at c4" in r.claim.line() and "the claim is about c128, this evidence is from c4" in r.claim.line()
    assert dict((x.metric, v) for x, v in r.seed)["ttft_avg_ms"].startswith("agrees (judged at c4")


def test_a_failed_top_point_is_not_replaced_by_a_lower_one(nemotron):
    rr = table({c: [1000] for c in CS})
    kv = table({c: [700] for c in CS})
    kv.loc[kv["concurrency"] == 128, "status"] = "failed"  # c128 was in the sweep and failed
    c = check(nemotron.spec.claim, {"rr": rr, "kv": kv})
    assert c.verdict == "inconclusive" and c.at is None and "not measured" in c.line()


def test_a_simulated_or_fake_gpu_experiment_says_so_above_its_numbers(nemotron):
    fake = "simulated (fake GPU: 1 of 1x NVIDIA H200 (fake GPU) (INFERSWEEP_FAKE_GPU), vllm workers ...)"
    rr, kv = table({c: [1000, 1010, 990] for c in CS}), table({c: [600, 606, 594] for c in CS})
    text = experiment_report(nemotron, {"rr": rr.assign(source=fake), "kv": kv.assign(source=fake)}).text()
    assert text.index("Simulated run on a fake GPU") < text.index("## Claim")
    assert "NOT a measurement" in text
    measured = experiment_report(nemotron, {"rr": rr.assign(source="measured"), "kv": kv}).text()
    assert "Simulated" not in measured and "fake GPU" not in measured
