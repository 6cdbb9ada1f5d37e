"""The knee search (infersweep.slo_search.bisect): its bracket, its probe count, and its edge cases."""

from __future__ import annotations

import pytest

from infersweep.slo_search import bisect


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
