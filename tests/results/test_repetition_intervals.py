"""Every mean and percentile of a load comes with its n and, from 2 repetitions on, a 95 % Student-t interval
over the valid repetitions (infersweep.results.repetitions; issue 32 item 4)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from infersweep.results.repetitions import by_load, interval, markdown, t_critical
from tests.support.run_folders import add_point, summarize


def test_the_interval_is_student_t_over_the_repetitions():
    iv = interval([2481.9, 2556.4, 2630.8])  # sd 74.45, t(0.975, 2) = 4.303
    assert iv.n == 3 and iv.mean == pytest.approx(2556.37, abs=0.01)
    assert iv.half == pytest.approx(4.303 * 74.45 / math.sqrt(3), rel=1e-3)
    assert iv.text() == "2556.4 ± 185.0 (n=3)"
    # 3 repetitions make a wide interval: the t factor is twice the normal one, not 1.96
    assert t_critical(2) > 2 * t_critical(1000)
    # past the table: t(0.975, 40) 2.021, (60) 2.000, (120) 1.980, (1000) 1.962
    assert [round(t_critical(d), 3) for d in (40, 60, 120, 1000)] == pytest.approx([2.021, 2.0, 1.98, 1.962], abs=0.002)


def test_one_measurement_has_no_interval_and_says_n_1():
    assert interval([175.0]).text() == "175.0 (n=1)" and math.isnan(interval([175.0]).half)


def test_an_invalid_repetition_is_left_out_of_the_mean_and_counted():
    df = pd.DataFrame(
        {
            "concurrency": [16, 16, 16, 64],
            "request_rate": [0.0] * 4,
            "repetition": [0, 1, 2, 0],
            "valid": [True, False, True, True],
            "ttft_avg_ms": [1300.0, 9000.0, 1330.0, 4100.0],
        }
    )
    t = by_load(df).set_index("concurrency")
    assert t.loc[16, "n"] == 2 and t.loc[16, "left_out"] == 1 and t.loc[16, "ttft_avg_ms"] == 1315.0
    assert "| 16 | 2 (1 left out) | 1315.0 ± 190.6 (n=2) |" in markdown(df)
    assert "| 64 | 1 | 4100.0 (n=1) |" in markdown(df)


def test_the_results_markdown_leads_with_each_loads_interval(tmp_path, aiperf_ref):
    run = tmp_path / "run"
    for rep, name in enumerate(["c4", "c4-r1", "c4-r2"]):
        add_point(run, name, aiperf_ref / "dynamo-mocker-c4", 4, repetition=rep)
    df = summarize(run)
    assert sorted(df["repetition"]) == [0, 1, 2]
    md = (run / "summary" / "results.md").read_text()
    assert md.index("Over repetitions") < md.index("Each repetition")
    # the recorded mocker point is invalid (0.7 s window, implausible ITL): no repetition counts, no number shown
    assert not df["valid"].fillna(False).astype(bool).any()
    assert "| 4 | 0 (3 left out) | NA (n=0) |" in md
    loads = pd.read_csv(run / "summary" / "results_by_load.csv")
    assert list(loads["n"]) == [0] and "ttft_p99_ms_ci95" in loads.columns


def test_the_per_load_table_says_why_each_loads_points_stopped():
    df = pd.DataFrame({"concurrency": [16, 16], "request_rate": [0.0, 0.0], "repetition": [0, 1], "valid": [True] * 2})
    results = [
        {"concurrency": 16, "stop_reason": "target met", "adaptive_ci_rel": 0.06},
        {"concurrency": 16, "stop_reason": "budget spent", "adaptive_ci_rel": 0.21, "adaptive_more_requests": 336},
    ]
    md = markdown(df.assign(ttft_avg_ms=[1300.0, 1330.0]), results)
    assert "| length |" in md
    assert "budget spent 1/2, target met 1/2 (±21% in-point; ~336 more requests)" in md
    assert "extended" not in md  # no budget to extend: as before


def test_the_per_load_table_says_how_far_points_with_a_budget_were_extended():
    df = pd.DataFrame({"concurrency": [16, 16], "request_rate": [0.0, 0.0], "repetition": [0, 1], "valid": [True] * 2})
    results = [
        {
            "concurrency": 16,
            "stop_reason": "target met",
            "adaptive_ci_rel": 0.08,
            "requests": 96,
            "requests_extended": 0,
        },
        {
            "concurrency": 16,
            "stop_reason": "target met",
            "adaptive_ci_rel": 0.09,
            "requests": 192,
            "requests_extended": 96,
        },
    ]
    md = markdown(df.assign(ttft_avg_ms=[1300.0, 1330.0]), results)
    assert "target met 2/2 (±9% in-point; extended 1/2: +96 to 192 requests)" in md


def test_the_html_report_shows_each_loads_interval_and_n():
    from infersweep.results.report import by_load_html

    df = pd.DataFrame(
        {"concurrency": [1, 1, 1], "request_rate": [0.0] * 3, "valid": [True] * 3, "ttft_avg_ms": [170.0, 175.0, 180.0]}
    )
    html = by_load_html(df)
    assert "<td>175.0 ± 12.4 (n=3)</td>" in html and "Student-t" in html


def test_the_results_folder_carries_its_column_dictionary(tmp_path, aiperf_ref):
    """Issue 38 item 13: the column dictionary was only in the checkout's docs/columns.md."""
    from infersweep.results.columns import DOC

    run = tmp_path / "run"
    add_point(run, "c4", aiperf_ref / "dynamo-mocker-c4", 4)
    df = summarize(run)
    text = (run / "summary" / "columns.md").read_text()
    assert text == DOC.read_text()  # the same dictionary as docs/columns.md
    assert all(f"`{c}`" in text for c in ("ttft_p50_ms", "output_throughput_tok_s_per_gpu") if c in df.columns)
