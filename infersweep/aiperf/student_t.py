"""Student's t distribution, standard library only: the quantiles the steadiness rule's trend test needs in the
point step (infersweep.aiperf.steadiness; the AIPerf image carries this package alone, images/aiperf.Dockerfile),
and the intervals and tests of infersweep.results.noise.

No scipy (it is not a dependency): the t distribution's CDF is the regularized incomplete beta function,
I_x(df/2, 1/2) with x = df / (df + t^2) (Abramowitz & Stegun 26.7.1 and 26.5.27), evaluated by its continued
fraction with the modified Lentz method (Press et al., Numerical Recipes, 3rd ed., 6.4, `betacf`); the quantile
inverts the CDF by bisection to 1e-12.
"""

from __future__ import annotations

import math
from functools import lru_cache


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Numerical Recipes 3rd ed., 6.4, modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):  # the fraction converges fast here; else use the symmetry relation
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (A&S 26.7.1 via 26.5.27)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if not math.isfinite(t):
        return 0.0 if t < 0 else 1.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))  # P(T > |t|)
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=1024)  # a handful of (level, df) pairs are asked for thousands of times
def t_ppf(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (bisection on t_cdf, to 1e-12)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"a quantile needs 0 < p < 1, got {p}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def t_two_sided_p(t: float, df: float) -> float:
    return min(1.0, 2.0 * (1.0 - t_cdf(abs(t), df)))
