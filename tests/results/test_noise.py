"""infersweep.results.noise: Student's t without scipy (against printed tables), the exact small-n
standard error of a median, Holm's procedure and the repetitions-to-decide planner."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infersweep.results.noise import MEDIAN_SD, holm, point_test, repetitions_to_decide, t_cdf, t_ppf


@pytest.mark.parametrize(
    "df,p,q",
    # Two-sided 95 % and one-sided 80 % points, as printed in any t table (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2)
    [(1, 0.975, 12.706), (2, 0.975, 4.303), (4, 0.975, 2.776), (8, 0.975, 2.306), (30, 0.975, 2.042),
     (4, 0.8, 0.941), (10, 0.995, 3.169), (100, 0.975, 1.984)],
)  # fmt: skip
def test_t_quantiles_match_the_table(df, p, q):
    assert t_ppf(p, df) == pytest.approx(q, abs=1e-3)
    assert t_cdf(t_ppf(p, df), df) == pytest.approx(p, abs=1e-9)
    assert t_ppf(1 - p, df) == pytest.approx(-q, abs=1e-3)


def test_t_tends_to_the_normal():
    assert t_ppf(0.975, 1e6) == pytest.approx(1.95996, abs=1e-4)


@pytest.mark.parametrize("n", [3, 5, 7, 9])
def test_the_median_factor_is_the_order_statistic_integral(n):
    # sd of the median of n = 2k+1 standard normals from the density of the (k+1)-th order statistic
    k = n // 2
    x = np.linspace(-8, 8, 20001)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    pdf = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    dens = math.factorial(n) / math.factorial(k) ** 2 * cdf**k * (1 - cdf) ** k * pdf
    var = float(np.sum(x * x * dens) * (x[1] - x[0]))
    assert MEDIAN_SD[n] == pytest.approx(math.sqrt(var * n), abs=2e-3)


def test_holm_steps_down_and_ignores_unknowns():
    assert holm([0.01, 0.04, 0.03, math.nan]) == [True, False, False, False]  # 0.01 <= 0.05/3; 0.03 > 0.05/2
    assert holm([0.01, 0.02, 0.04]) == [True, True, True]  # 0.01 <= .05/3, 0.02 <= .05/2, 0.04 <= .05
    assert holm([0.2]) == [False] and holm([]) == []


def test_point_test_uses_the_points_own_repetitions():
    t = point_test([100, 102, 98], [110, 112, 108])
    assert t.df == 4 and t.change == pytest.approx(0.10) and t.sigma == pytest.approx(0.02)
    assert t.half_width == pytest.approx(2.776 * 0.02 * 1.1602 * math.sqrt(2 / 3), rel=1e-3)
    once = point_test([100], [150])
    assert not once.known and math.isnan(once.half_width) and once.change == pytest.approx(0.5)


def test_repetitions_to_decide_grows_with_the_noise():
    assert repetitions_to_decide(0.10, 0.02) == 3  # never fewer than 3
    few, many = repetitions_to_decide(0.10, 0.05), repetitions_to_decide(0.10, 0.10)
    assert few is not None and many is not None and few < many
    assert repetitions_to_decide(0.001, 0.10) is None  # more than 100
