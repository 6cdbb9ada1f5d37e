"""How sure a difference between two points is: the per-point test that `compare`, `regress` and the
experiment report share (docs/statistics.md).

One point's repetitions against the other's:
- each side is reduced to its median (one bad repetition does not move it);
- the spread of one repetition is estimated from the two points' own repetitions only (pooled within the
  pair: sum of squared deviations from each side's mean, over nA + nB - 2 degrees of freedom). Other
  points of the sweep are never mixed in: a point of 58 requests is noisier than one of 460, and pooling
  them gave the c4 points of a sweep three times their nominal false-claim rate (issue 43);
- the standard error of a median of n normal values is MEDIAN_SD[n] * sigma / sqrt(n) (exact small-n
  factors, not the asymptotic 1.2533, which overstates it at n = 3 by 8 %);
- the interval and the p-value use Student's t with the degrees of freedom actually used (2.78 at n = 3
  per side, 2.31 at n = 5), not the normal 1.96 (which at 4 degrees of freedom holds about 90 %).

No scipy here (it is not a dependency): Student's t is computed in infersweep.aiperf.student_t.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Student's t (betainc, t_cdf, t_ppf, t_two_sided_p: re-exported here) lives beside the steadiness rule, whose
# trend test needs it in the AIPerf image, standard library only.
from infersweep.aiperf.student_t import betainc, t_cdf, t_ppf, t_two_sided_p  # noqa: F401

ALPHA = 0.05  # the two-sided level of every interval (95 %) and the family-wise rate of a run's decisions
MIN_DECIDING_N = 2  # repetitions per side below which a point decides nothing (one value has no spread)
ADVISED_N = 3  # what the output asks for when a point ran once

# sd(median of n standard normal values) * sqrt(n): the standard error of a median in units of sigma/sqrt(n).
# Monte Carlo with 2e6 draws per n (+-0.001); the odd n agree with the order-statistic integral
# (tests/results/test_noise.py). n > 10: the asymptotic sqrt(pi / 2), a slight overstatement.
MEDIAN_SD = {1: 1.0, 2: 1.0, 3: 1.1602, 4: 1.0925, 5: 1.1967, 6: 1.1364, 7: 1.2139, 8: 1.1613, 9: 1.2220, 10: 1.1752}
MEDIAN_SD_LARGE = math.sqrt(math.pi / 2)


def median_sd(n: int) -> float:
    return MEDIAN_SD.get(n, MEDIAN_SD_LARGE)


# ------------------------------------------------------------------------------------- one point pair
@dataclass(frozen=True)
class PointTest:
    """B against A at one point: the change of the medians, its standard error and 95 % interval."""

    a: float  # median of A's repetitions
    b: float  # median of B's repetitions
    change: float  # (b - a) / |a| when relative, else b - a
    se: float  # standard error of `change` (nan: unknown, a side ran fewer than MIN_DECIDING_N times)
    df: int  # degrees of freedom of the noise estimate (0: unknown)
    half_width: float  # half the 95 % interval of `change` (nan: unknown)
    p: float  # two-sided p-value of "no change" (nan: unknown)
    n_a: int
    n_b: int
    sigma: float  # the spread of one repetition (relative to |a| when relative), pooled within the pair

    @property
    def known(self) -> bool:
        return math.isfinite(self.p)


def point_test(a_values, b_values, relative: bool = True, alpha: float = ALPHA) -> PointTest:
    """B's repetitions against A's at one point (see the module docstring)."""
    a_values = np.asarray(a_values, dtype="float64")
    b_values = np.asarray(b_values, dtype="float64")
    a_values, b_values = a_values[np.isfinite(a_values)], b_values[np.isfinite(b_values)]
    na, nb = len(a_values), len(b_values)
    nan = math.nan
    if not na or not nb:
        return PointTest(nan, nan, nan, nan, 0, nan, nan, na, nb, nan)
    a, b = float(np.median(a_values)), float(np.median(b_values))
    scale = abs(a) if relative else 1.0
    if relative and not scale:
        return PointTest(a, b, nan, nan, 0, nan, nan, na, nb, nan)
    change = (b - a) / scale
    if min(na, nb) < MIN_DECIDING_N:
        return PointTest(a, b, change, nan, 0, nan, nan, na, nb, nan)
    df = na + nb - 2
    ss = float(np.sum((a_values - a_values.mean()) ** 2) + np.sum((b_values - b_values.mean()) ** 2))
    sigma = math.sqrt(ss / df) / scale
    se = sigma * math.sqrt(median_sd(na) ** 2 / na + median_sd(nb) ** 2 / nb)
    half = t_ppf(1 - alpha / 2, df) * se
    if se > 0:
        p = t_two_sided_p(change / se, df)
    else:  # identical repetitions on both sides: no noise seen; any change is beyond it
        p = 1.0 if change == 0 else 0.0
    return PointTest(a, b, change, se, df, half, p, na, nb, sigma)


def holm(pvalues: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down procedure (Holm 1979): which hypotheses are rejected with the family-wise error
    rate at most `alpha`. Unknown p-values (nan) are never rejected and do not count in the family."""
    known = sorted((p, i) for i, p in enumerate(pvalues) if math.isfinite(p))
    out = [False] * len(pvalues)
    m = len(known)
    for k, (p, i) in enumerate(known):
        if p > alpha / (m - k):
            break
        out[i] = True
    return out


def repetitions_to_decide(change: float, sigma: float, alpha: float = ALPHA, power: float = 0.8) -> int | None:
    """Repetitions per side at which a true change of `change` (relative, like sigma) is told from noise
    of `sigma` per repetition with probability `power` by a two-sided test at `alpha`; None if more than 100
    or unknown. Solves (t_{1-alpha/2} + t_{power}) * se(n) <= |change| with se(n) from median_sd."""
    if not (math.isfinite(change) and math.isfinite(sigma)) or change == 0 or sigma <= 0:
        return None
    for n in range(2, 101):
        df = 2 * n - 2
        se = sigma * median_sd(n) * math.sqrt(2 / n)
        if (t_ppf(1 - alpha / 2, df) + t_ppf(power, df)) * se <= abs(change):
            return max(n, ADVISED_N)
    return None
