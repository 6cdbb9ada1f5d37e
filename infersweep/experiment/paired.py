"""The claim of a balanced experiment judged on its ABBA blocks: one paired difference per block, a Student-t
interval over the blocks, n = the number of blocks.

Why paired: two identical reset `rr` runs on the H200 differed by 24 % in mean TTFT (issue 32), so
pooling every run's points and comparing the pools mixes the drift between runs (a warmer GPU, a
different moment of the host) into the difference between treatments. Inside one ABBA block each side
runs once early and once late (rr, kv, kv-2, rr-2), so a linear drift cancels in the pair means, and what
varies from block to block is the noise the interval has to beat.

Per block b: each side's value is the mean of its two runs' values (a run's value: the median of its
repetitions at the claim's concurrency, as the per-point claim check takes it), and the block's
improvement is the relative change from the baseline, signed so that > 0 means the treatment is better:
(B_b - T_b) / |B_b| for a lower-is-better metric, (T_b - B_b) / |B_b| for a higher one. Over the n blocks:
the mean improvement, its 95 % interval mean +- t_{0.975, n-1} * sd / sqrt(n) (t quantiles from
infersweep.results.noise). A claim "T beats B by at least X %" is
- supported when the whole interval lies above X %;
- refuted when the whole interval lies below X %;
- inconclusive otherwise, with the number of blocks at which, at the observed mean and spread, the interval
  would clear X % with 80 % power ((t_{0.975, m-1} + t_{0.8, m-1}) * sd / sqrt(m) <= |mean - X|, as
  infersweep.results.noise.repetitions_to_decide does for repetitions).
A run whose point is missing or judged invalid (infersweep.results.evidence) drops its whole block: a block
with one side's run left out is not a pair. The report lists every dropped block and why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from infersweep.experiment.spec import Comparison as Claim
from infersweep.experiment.spec import Experiment
from infersweep.metrics import direction
from infersweep.results.evidence import counted, why_not_counted
from infersweep.results.noise import ALPHA, t_ppf
from infersweep.results.regression import _levels

POWER = 0.8  # of the "blocks to decide" estimate, as noise.repetitions_to_decide
MAX_BLOCKS_ESTIMATE = 1000  # beyond this the difference is too close to the threshold to be worth deciding


@dataclass
class Block:
    block: int
    runs: dict[str, list[str]]  # side (treatment, baseline) -> its runs in this block
    treatment: float  # the treatment's pair mean
    baseline: float
    improvement: float  # relative, > 0 = the treatment is better


@dataclass
class PairedClaim:
    claim: Claim
    verdict: str  # supported | refuted | inconclusive
    blocks: list[Block]
    dropped: list[str] = field(default_factory=list)  # "block 2: <why>"
    mean: float = math.nan
    sd: float = math.nan
    low: float = math.nan
    high: float = math.nan
    blocks_needed: int | None = None  # total blocks that would decide it (inconclusive only; None: unknown)
    at: int | None = None  # the concurrency judged when the sweep stopped below the claim's

    @property
    def n(self) -> int:
        return len(self.blocks)

    @property
    def more_blocks(self) -> int | None:
        return None if self.blocks_needed is None else max(self.blocks_needed - self.n, 1)

    def line(self) -> str:
        c = self.claim
        head = f"{self.verdict}: {c.text()}: paired over ABBA blocks, n={self.n}"
        at = f" [judged at c{self.at}: this sweep stops below c{c.concurrency}]" if self.at is not None else ""
        if not self.blocks:
            return f"{head}: no block has valid points of both sides{at}"
        per = ", ".join(f"{100 * b.improvement:+.1f} %" for b in self.blocks)
        if self.n < 2:
            return (
                f"{head}: block improvement {per}; one block has no spread between blocks, so no interval: "
                f"run at least 2 blocks (3 advised){at}"
            )
        need = c.better_by_pct
        out = (
            f"{head}: per-block improvement {per}; mean {100 * self.mean:+.1f} %, 95 % t interval "
            f"[{100 * self.low:+.1f} %, {100 * self.high:+.1f} %] against the claimed {need:g} %"
        )
        if self.verdict == "inconclusive":
            out += (
                f"; at the observed spread (sd {100 * self.sd:.1f} %) about {self.more_blocks} more block(s) "
                f"({self.blocks_needed} in all) would decide it"
                if self.blocks_needed is not None
                else "; the mean sits on the threshold: more blocks at this spread would not decide it"
            )
        return out + at

    def as_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "n_blocks": self.n,
            "blocks": [
                {
                    "block": b.block,
                    "runs": b.runs,
                    "treatment": b.treatment,
                    "baseline": b.baseline,
                    "improvement": b.improvement,
                }
                for b in self.blocks
            ],  # fmt: skip
            "dropped": self.dropped,
            "mean": self.mean,
            "sd": self.sd,
            "interval": [self.low, self.high],
            "blocks_needed": self.blocks_needed,
            "more_blocks": self.more_blocks if self.verdict == "inconclusive" else None,
            "line": self.line(),
        }


def blocks_to_decide(distance: float, sd: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Blocks at which a mean paired difference `distance` from the threshold is told from a spread `sd` per
    block with probability `power` by the two-sided interval at `alpha`; None if unknown or too many."""
    if not (math.isfinite(distance) and math.isfinite(sd)) or distance == 0 or sd < 0:
        return None
    if sd == 0:
        return 2
    for m in range(2, MAX_BLOCKS_ESTIMATE + 1):
        if (t_ppf(1 - alpha / 2, m - 1) + t_ppf(power, m - 1)) * sd / math.sqrt(m) <= abs(distance):
            return m
    return None


def judge_paired(claim: Claim, blocks: list[Block], dropped: list[str], alpha: float = ALPHA) -> PairedClaim:
    """The verdict from the blocks' improvements (see the module docstring)."""
    out = PairedClaim(claim, "inconclusive", blocks, dropped)
    if not blocks:
        return out
    d = np.array([b.improvement for b in blocks], dtype="float64")
    out.mean = float(d.mean())
    if len(d) < 2:
        return out
    out.sd = float(d.std(ddof=1))
    half = t_ppf(1 - alpha / 2, len(d) - 1) * out.sd / math.sqrt(len(d))
    out.low, out.high = out.mean - half, out.mean + half
    need = claim.better_by_pct / 100
    if out.low > need:
        out.verdict = "supported"
    elif out.high < need:
        out.verdict = "refuted"
    else:
        out.blocks_needed = blocks_to_decide(out.mean - need, out.sd, alpha)
        if out.blocks_needed is not None:
            out.blocks_needed = max(out.blocks_needed, len(d) + 1)
    return out


def _judged_level(claim: Claim, tables: dict[str, pd.DataFrame], runs: list[str]) -> tuple[int, int | None]:
    """(the concurrency to judge, set when it is not the claim's): the claim's, or the highest level every
    run measured when the whole sweep stopped below it (local mode's scaled sweep; as report.check)."""
    c = claim.concurrency
    present = [tables[r] for r in runs if r in tables and not tables[r].empty]
    swept = {int(x) for df in present for x in df["concurrency"].dropna()}
    if not present or c in swept or max(swept, default=c) >= c:
        return c, None
    common = set.intersection(*({int(x) for x in df["concurrency"].dropna()} for df in present))
    return (max(common), max(common)) if common else (c, None)


def paired_claim(e: Experiment, tables: dict[str, pd.DataFrame], alpha: float = ALPHA) -> PairedClaim | None:
    """The claim judged on the plan's ABBA blocks from the runs' tables (run name -> results table); None when
    the experiment has no claim or no balanced order."""
    from infersweep.experiment.plan import make_plan

    claim = e.spec.claim
    if claim is None or e.spec.order != "balanced":
        return None
    steps = make_plan(e).steps
    runs_of: dict[int, dict[str, list[str]]] = {}
    for s in steps:
        if s.base in (claim.treatment, claim.baseline):
            runs_of.setdefault(s.block, {claim.treatment: [], claim.baseline: []})[s.base].append(s.treatment.name)
    c, at = _judged_level(claim, tables, [n for runs in runs_of.values() for side in runs.values() for n in side])
    sign = 1.0 if direction(claim.metric) == "lower" else -1.0
    blocks, dropped = [], []
    for b, runs in sorted(runs_of.items()):
        values: dict[str, list[float]] = {}
        why = []
        for side, names in runs.items():
            for name in names:
                df = tables.get(name)
                if df is None or df.empty or claim.metric not in df.columns:
                    why.append(f"{name} has no results")
                    continue
                measured = _levels(df, [claim.metric])[claim.metric]
                valid = _levels(counted(df)[0], [claim.metric])[claim.metric]
                if c not in measured:
                    why.append(f"{name} did not measure c{c}")
                elif c not in valid:
                    why.append(why_not_counted(df, c, name))
                else:
                    values.setdefault(side, []).append(float(np.median(valid[c])))
        if why:
            dropped.append(
                f"block {b} ({', '.join(n for ns in runs.values() for n in ns)}) left out: " + "; ".join(why)
            )
            continue
        t, base = float(np.mean(values[claim.treatment])), float(np.mean(values[claim.baseline]))
        if base == 0:
            dropped.append(f"block {b} left out: the baseline's {claim.metric} is 0, no relative change")
            continue
        blocks.append(Block(b, runs, t, base, sign * (base - t) / abs(base)))
    out = judge_paired(claim, blocks, dropped, alpha)
    out.at = at
    return out
