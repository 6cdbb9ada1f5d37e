"""compare_runs and `infersweep compare`: percentage changes per concurrency, the crossover where one
configuration overtakes another, and the best configuration meeting the SLOs. Tables are v3 results
tables built by finish_table from rows shaped like the TP=1 vs TP=2 finding in the seeds, each point
repeated 3 times with a +-1 % spread (issue 43: a point that ran once decides nothing, so the verdicts
these tests check need repetitions; the n = 1 behaviour has its own tests below)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from infersweep.cli import main as cli_main
from infersweep.results.compare import compare_runs
from infersweep.results.table import finish_table

SLO = {"ttft_p50_ms": 1000, "output_throughput_p50_tok_s_per_user": 30}


SPREAD = (0.99, 1.0, 1.01)  # three repetitions, +-1 %


def run_table(recipe: str, points: dict[int, dict[str, float]], slo=SLO, spread=SPREAD) -> pd.DataFrame:
    rows = []
    for (c, m0), (r, f) in ((p, rf) for p in points.items() for rf in enumerate(spread)):
        m = {k: v * f for k, v in m0.items()}
        row = {
            "run_id": f"wf-{recipe}",
            "recipe": recipe,
            "concurrency": c,
            "repetition": r,
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
POINTS_TP2 = {
    1: dict(ttft_ms=100, itl_ms=3.52, request_latency_ms=1000, tok=247.8, user=280),
    16: dict(ttft_ms=317.1, itl_ms=6.0, request_latency_ms=2000, tok=2709.5, user=160),
    128: dict(ttft_ms=3024.6, itl_ms=14.0, request_latency_ms=9000, tok=7201.8, user=25),
}
TP2 = run_table("tp2", POINTS_TP2)
POINTS_TP1 = {
    1: dict(ttft_ms=90, itl_ms=4.11, request_latency_ms=1100, tok=214.6, user=240),
    16: dict(ttft_ms=228.7, itl_ms=6.5, request_latency_ms=1900, tok=2573.5, user=150),
    128: dict(ttft_ms=604.5, itl_ms=12.0, request_latency_ms=5000, tok=9435.7, user=70),
}
TP1 = run_table("tp1", POINTS_TP1)


JUDGED = ["ttft_p50_ms", "itl_p50_ms", "output_throughput_tok_s"]


def test_percent_changes_per_concurrency():
    cmp = compare_runs({"tp2": TP2, "tp1": TP1}, decide=JUDGED)
    ch = cmp.changes.set_index(["concurrency", "metric"])
    assert ch.at[(16, "ttft_p50_ms"), "pct_change"] == pytest.approx((228.7 - 317.1) / 317.1 * 100)
    assert ch.at[(128, "ttft_p50_ms"), "pct_change"] == pytest.approx(-80.0, abs=0.1)  # "5x faster TTFT"
    assert ch.at[(128, "output_throughput_tok_s"), "pct_change"] == pytest.approx(
        31.0, abs=0.1
    )  # "31% higher throughput"
    assert bool(ch.at[(128, "output_throughput_tok_s"), "better"]) is True
    assert bool(ch.at[(1, "itl_p50_ms"), "better"]) is False


def test_crossover_is_the_concurrency_where_the_other_configuration_overtakes():
    cmp = compare_runs({"tp2": TP2, "tp1": TP1}, decide=JUDGED)
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
    assert "tp1 vs tp2" in out and "-80.0% ±1.9*" in out  # TTFT p50 is judged (an SLO): tp1 better
    csv = pd.read_csv(tmp_path / "c.csv")
    ttft = csv[(csv["metric"] == "ttft_p50_ms") & (csv["concurrency"] == 128)].iloc[0]
    assert (ttft["verdict"], bool(ttft["better"]), bool(ttft["judged"])) == ("better", True, True)
    user = csv[(csv["metric"] == "output_throughput_p50_tok_s_per_user") & (csv["concurrency"] == 1)].iloc[0]
    assert (user["verdict"], bool(user["better"])) == ("worse", False)  # the baseline's win is in the CSV too
    assert set(csv[~csv["judged"]]["verdict"]) == {"described"} and csv[~csv["judged"]]["better"].isna().all()
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_compare_refuses_an_unsummarized_run_in_one_line(tmp_path, capsys):
    (tmp_path / "cut" / "points").mkdir(parents=True)
    assert cli_main(["compare", str(tmp_path / "cut"), str(tmp_path / "cut")]) == 2
    err = capsys.readouterr().err
    assert "was never summarized" in err and "Traceback" not in err


def test_both_directions_are_marked():
    text = compare_runs({"tp2": TP2, "tp1": TP1}, decide=JUDGED).text()
    assert "+16.8% ±2.9!" in text  # ITL p50 at c1: tp1 worse, so tp2 (the baseline) is better: marked
    assert "-80.0% ±1.9*" in text and "* = tp1 better, ! = tp2 better" in text


def test_only_the_judged_metrics_get_verdicts_and_the_family_is_stated():
    cmp = compare_runs({"tp2": TP2, "tp1": TP1}, decide=["ttft_p50_ms"], decided_by="the experiment's claim")
    ch = cmp.changes
    assert set(ch[ch["judged"]]["metric"]) == {"ttft_p50_ms"}
    assert ch[~ch["judged"]]["better"].isna().all() and set(ch[~ch["judged"]]["verdict"]) == {"described"}
    text = cmp.text()
    assert "judged: TTFT p50 (from the experiment's claim): 3 test(s)" in text and "Holm" in text
    assert list(cmp.winners["metric"]) == ["ttft_p50_ms"]


def test_the_decisions_come_from_the_slos_by_default():
    cmp = compare_runs({"tp2": TP2, "tp1": TP1})
    assert cmp.decisions == ["output_throughput_p50_tok_s_per_user", "ttft_p50_ms"]
    assert cmp.decided_by == "the runs' SLOs"


ONCE = (1.0,)


def test_one_repetition_decides_nothing():
    once2 = run_table("tp2", {c: POINTS_TP2[c] for c in POINTS_TP2}, spread=ONCE)
    once1 = run_table("tp1", {c: POINTS_TP1[c] for c in POINTS_TP1}, spread=ONCE)
    cmp = compare_runs({"tp2": once2, "tp1": once1}, decide=JUDGED)
    assert cmp.changes["better"].isna().all() and set(cmp.changes[cmp.changes["judged"]]["verdict"]) == {"n too small"}
    assert cmp.crossovers.empty
    assert cmp.best_choice.winner is None and cmp.best_choice.tied == ["tp1", "tp2"]
    text = cmp.text()
    assert "*" not in text.split("judged:")[0].split("\n", 1)[1]  # no star in the table (80 % faster TTFT at c128)
    assert "nothing decided at c1, c16, c128" in text and "at least 3 repetitions" in text
    assert "best configuration meeting the SLOs: tp1 or tp2: one repetition per point" in text


def test_best_under_the_slos_is_a_tie_when_the_repetitions_do_not_tell_the_runs_apart():
    twin = {c: {k: v * 1.04 if k == "tok" else v for k, v in m.items()} for c, m in POINTS_TP1.items()}
    a = run_table("a", POINTS_TP1, spread=(0.97, 1.0, 1.03))
    b = run_table("b", twin, spread=(0.97, 1.0, 1.03))
    best = compare_runs({"a": a, "b": b}).best_choice
    assert best.winner is None and best.tied == ["b", "a"]
    assert "b or a: not told apart at n = 3" in best.line and re.search(
        r"about \d+ repetitions per point would decide", best.line
    )
    far = run_table("b", {c: {k: v * 1.5 if k == "tok" else v for k, v in m.items()} for c, m in POINTS_TP1.items()})
    assert compare_runs({"a": a, "b": far}).best_choice.winner == "b"
