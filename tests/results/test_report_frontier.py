"""The per-run pareto.png / report.html frontier is drawn through valid points only, as `compare --html` draws
it (issue 38 item 3: it went through lightning-trtllm-agg-b200-bf16's c4, which the table marks unsteady)."""

from __future__ import annotations

import pandas as pd

from infersweep.results.plots import invalid_levels, pareto_plot, valid_frontier
from tests.results.test_comparison_report import table


def test_an_invalid_point_is_never_on_the_frontier(tmp_path):
    # c8 has the most tok/s/GPU and tok/s/user: on any frontier of all points, but it is invalid
    df = table(
        "kv",
        {
            1: {"gpu": 100.0, "user": 90.0, "valid": True},
            4: {"gpu": 300.0, "user": 70.0, "valid": True},
            8: {"gpu": 900.0, "user": 95.0, "valid": False},
        },
    )
    front = valid_frontier(df)
    assert 8 not in set(front["concurrency"].astype(int)) and len(front) >= 1
    assert invalid_levels(df) == {8}
    path = pareto_plot({"kv": df}, tmp_path / "pareto.png", "kv")
    assert path.stat().st_size > 0


def test_a_run_without_validity_keeps_every_point():
    df = table("rr", {1: {"gpu": 100.0, "user": 90.0, "valid": True}, 8: {"gpu": 500.0, "user": 60.0, "valid": True}})
    assert set(valid_frontier(df.drop(columns=["valid"]))["concurrency"].astype(int)) == {1, 8}
    assert invalid_levels(pd.DataFrame({"concurrency": [1]})) == set()
