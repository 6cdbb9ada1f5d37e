"""Max load under SLO: bisect for the highest concurrency (or request rate) whose point meets the recipe's SLOs.

The search is pure: `measure(load)` runs one benchmark point and says whether it met the SLOs (None: no
valid measurement, counted as a miss so the search never reports a load it could not measure). It assumes, like
every knee search, that meeting the SLOs is monotone in load, and reports the bracket it ended with, so a
reader sees how exactly the knee is known: `best` met them, `first_miss` did not (None: no miss up to hi).
The `slo-search` command runs it: infersweep/commands/slo_search.py (its CLI) and infersweep/local/slo_search.py
(the probes on one local deployment).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Probe:
    load: float
    passed: bool | None
    detail: str = ""


@dataclass
class Search:
    axis: str  # "concurrency" or "request_rate"
    best: float | None = None
    first_miss: float | None = None
    probes: list[Probe] = field(default_factory=list)

    def summary(self) -> str:
        unit = "" if self.axis == "concurrency" else " req/s"
        if self.best is None:
            text = f"no {self.axis} meets the SLOs: the lowest probed, {self.first_miss:g}{unit}, misses them"
        elif self.first_miss is None:
            text = f"max {self.axis} under SLO >= {self.best:g}{unit} (no miss up to the top of the range)"
        else:
            text = (
                f"max {self.axis} under SLO: {self.best:g}{unit} (bracket [{self.best:g}, {self.first_miss:g}){unit})"
            )
        # A probe with no verdict (failed, or measured but invalid: infersweep.results.evidence) counts as a
        # miss so the search never reports a load nobody can vouch for; the summary says which ones those were.
        unjudged = [p for p in self.probes if p.passed is None]
        if unjudged:
            text += "; counted as misses, no valid verdict: " + "; ".join(
                f"{p.load:g}{unit}: {p.detail}" for p in unjudged
            )
        return text


def bisect(
    measure: Callable[[float], tuple[bool | None, str]],
    lo: float,
    hi: float,
    *,
    axis: str = "concurrency",
    rel_tol: float = 0.1,
) -> Search:
    """Search [lo, hi]. Concurrency moves in integers and stops when the bracket is one level wide; a rate
    stops when first_miss / best <= 1 + rel_tol. Midpoints are geometric: load ranges span decades."""
    if not 0 < lo <= hi:
        raise ValueError(f"need 0 < lo <= hi, got lo={lo}, hi={hi}")
    integer = axis == "concurrency"
    s = Search(axis=axis)

    def probe(load: float) -> bool:
        passed, detail = measure(load)
        s.probes.append(Probe(load, passed, detail))
        return bool(passed)

    if not probe(lo):
        s.first_miss = lo
        return s
    s.best = lo
    if hi == lo or probe(hi):
        s.best = hi
        return s
    s.first_miss = hi
    while True:
        a, b = s.best, s.first_miss
        if integer and b - a <= 1 or not integer and b / a <= 1 + rel_tol:
            return s
        mid = math.sqrt(a * b)
        mid = min(max(int(round(mid)), int(a) + 1), int(b) - 1) if integer else round(mid, 3)
        if probe(mid):
            s.best = mid
        else:
            s.first_miss = mid
