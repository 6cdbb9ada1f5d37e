"""compare_runs and `infersweep compare`: percentage changes per concurrency, the crossover where one
configuration overtakes another, and the best configuration meeting the SLOs. Tables are v3 results
tables built by finish_table from rows shaped like the TP=1 vs TP=2 finding in the seeds."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from infersweep.cli import main as cli_main
from infersweep.results.compare import compare_runs
from infersweep.results.table import finish_table

SLO = {"ttft_p50_ms": 1000, "output_throughput_p50_tok_s_per_user": 30}


def run_table(recipe: str, points: dict[int, dict[str, float]], slo=SLO) -> pd.DataFrame:
    rows = []
    for c, m in points.items():
        row = {
            "run_id": f"wf-{recipe}",
            "recipe": recipe,
            "concurrency": c,
            "repetition": 0,
            "status": "ok",
            "reason": "",
            "error_ratio": 0.0,
        }
        row.update(
            {f"{p}_{s}_ms": m[f"{p}_ms"] for p in ("ttft", "itl", "request_latency") for s in ("avg", "p50", "p99")}
        )
        row.update(
            output_throughput_tok_s=m["tok"],
            request_throughput_req_s=m["tok"] / 100,
            output_throughput_p50_tok_s_per_user=m["user"],
            output_throughput_tok_s_per_gpu=m["tok"] / 8,
            goodput_req_s=m["tok"] / 100,
        )
        row["slo_pass"] = (
            m["ttft_ms"] <= slo["ttft_p50_ms"] and m["user"] >= slo["output_throughput_p50_tok_s_per_user"]
        )
        rows.append(row)
    return finish_table(pd.DataFrame(rows), {"recipe": recipe, "slo": slo})


# TP=2 wins ITL at low concurrency, TP=1 wins TTFT from c16 (seeds: 228.7 vs 317.1 ms at c16).
TP2 = run_table(
    "tp2",
    {
        1: dict(ttft_ms=100, itl_ms=3.52, request_latency_ms=1000, tok=247.8, user=280),
        16: dict(ttft_ms=317.1, itl_ms=6.0, request_latency_ms=2000, tok=2709.5, user=160),
        128: dict(ttft_ms=3024.6, itl_ms=14.0, request_latency_ms=9000, tok=7201.8, user=25),
    },
)
TP1 = run_table(
    "tp1",
    {
        1: dict(ttft_ms=90, itl_ms=4.11, request_latency_ms=1100, tok=214.6, user=240),
        16: dict(ttft_ms=228.7, itl_ms=6.5, request_latency_ms=1900, tok=2573.5, user=150),
        128: dict(ttft_ms=604.5, itl_ms=12.0, request_latency_ms=5000, tok=9435.7, user=70),
    },
)


def test_percent_changes_per_concurrency():
    cmp = compare_runs({"tp2": TP2, "tp1": TP1})
    ch = cmp.changes.set_index(["concurrency", "metric"])
    assert ch.at[(16, "ttft_p50_ms"), "pct_change"] == pytest.approx((228.7 - 317.1) / 317.1 * 100)
    assert ch.at[(128, "ttft_p50_ms"), "pct_change"] == pytest.approx(-80.0, abs=0.1)  # "5x faster TTFT"
    assert ch.at[(128, "output_throughput_tok_s"), "pct_change"] == pytest.approx(
        31.0, abs=0.1
    )  # "31% higher throughput"
    assert bool(ch.at[(128, "output_throughput_tok_s"), "better"]) is True
    assert bool(ch.at[(1, "itl_p50_ms"), "better"]) is False


def test_crossover_is_the_concurrency_where_the_other_configuration_overtakes():
    cmp = compare_runs({"tp2": TP2, "tp1": TP1})
    x = cmp.crossovers.set_index("metric")
    assert x.at["itl_p50_ms", "concurrency"] == 128 and x.at["itl_p50_ms", "winner_from"] == "tp1"
    assert x.at["output_throughput_tok_s", "concurrency"] == 128
    assert "ttft_p50_ms" not in x.index  # tp1 wins TTFT at every level: no crossover
    assert "tp2 better at c1-c16, tp1 better at c128" in cmp.text()


def test_best_configuration_meeting_the_slos():
    cmp = compare_runs({"tp2": TP2, "tp1": TP1})
    best = cmp.best.iloc[0]
    # tp2 at c128 has more tok/s/GPU than any tp1 point below c128 but misses TTFT and tok/s/user there.
    assert (best["run"], best["concurrency"]) == ("tp1", 128)
    assert "best configuration meeting the SLOs: tp1 at concurrency 128" in cmp.text()


def test_points_only_one_run_measured_are_reported_not_compared():
    partial = TP1[TP1["concurrency"] != 128]
    cmp = compare_runs({"tp2": TP2, "tp1": partial})
    assert set(cmp.changes["concurrency"]) == {1, 16}
    assert any("no valid measured point at concurrency [128]" in m for m in cmp.missing)


def test_cli_compare_writes_table_csv_and_plot(tmp_path, capsys):
    folders = []
    for t in (TP2, TP1):
        folder = tmp_path / t["recipe"].iloc[0] / "results"
        (folder / "summary").mkdir(parents=True)
        t.to_parquet(folder / "summary" / "results.parquet")
        (folder / "summary" / "run.json").write_text(json.dumps({"context": {"recipe": t["recipe"].iloc[0]}}))
        folders.append(str(folder.parent))
    assert cli_main(["compare", *folders, "--csv", str(tmp_path / "c.csv"), "--plot", str(tmp_path / "c.png")]) == 0
    out = capsys.readouterr().out
    assert "tp1 vs tp2" in out and "-80.0%*" in out
    assert len(pd.read_csv(tmp_path / "c.csv")) > 0
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_compare_refuses_an_unsummarized_run_in_one_line(tmp_path, capsys):
    (tmp_path / "cut" / "points").mkdir(parents=True)
    assert cli_main(["compare", str(tmp_path / "cut"), str(tmp_path / "cut")]) == 2
    err = capsys.readouterr().err
    assert "was never summarized" in err and "Traceback" not in err
