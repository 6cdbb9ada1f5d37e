"""The experiment report: deltas per concurrency against the baseline treatment, crossovers and the best
configuration meeting the SLOs (infersweep.results.compare), the claim's verdict with its noise, and, per
seed finding, whether this run's direction agrees.

The claim and the seed checks use the per-point test of `compare` and `regress` (infersweep.results.noise):
repetitions reduced to their median, the noise of one repetition from the judged point's own repetitions
(never pooled with other points), the standard error of the relative change from it. A claim "T beats B on M at cN by at
least X %" is
- supported: T is at least X % better and the change is beyond z standard errors of noise;
- refuted: T misses X % by more than z standard errors (or, with unknown noise, misses it at all);
- inconclusive: the evidence is within the noise (rerun with repetitions), or a side has no measured point,
  or the point it is judged at is not valid on a side (only valid points count: infersweep.results.evidence),
  or the evidence is not of the claim's kind: one repetition per point (noise unknown), a concurrency other
  than the claim's (a scaled-down sweep), simulated points (the mocker). The line then says which way the
  numbers alone lean, and why that decides nothing. An experiment run in a balanced order (ABBA blocks) is
  judged instead on its blocks' paired differences (infersweep.experiment.paired): that is the claim's verdict,
  with the first pass's per-point check beside it. The seed checks compare
directions only (the mocker locally shows direction, not the seed's magnitudes); differences below
compare.TIE are ties.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from infersweep.experiment.paired import PairedClaim, paired_claim
from infersweep.experiment.spec import Comparison as Claim
from infersweep.experiment.spec import Experiment
from infersweep.metrics import DEFAULT_Z, direction
from infersweep.results.compare import TIE, Comparison, compare_runs, format_comparison
from infersweep.results.evidence import counted, why_not_counted
from infersweep.results.noise import point_test
from infersweep.results.regression import _levels


@dataclass
class ClaimCheck:
    claim: Claim
    verdict: str  # supported | refuted | inconclusive
    improvement: float  # relative, > 0 = the treatment is better (nan: not measured)
    noise: float  # one standard error of the relative change (nan: unknown)
    baseline_value: float
    value: float
    at: int | None = None  # the concurrency it was judged at, when not the claim's (see check)
    why: str = ""  # why it could not be judged: the points that do not count (infersweep.results.evidence)
    n: tuple[int, int] = (0, 0)  # repetitions of the judged point: (baseline, treatment)
    # Why the numbers, judged, cannot decide the claim (issue 38): one repetition (noise unknown), another
    # concurrency than the claim's, a simulated point. The verdict is then inconclusive; `leans` is what the
    # numbers alone would have said.
    limits: tuple[str, ...] = ()
    leans: str = ""

    def line(self) -> str:
        if self.why:
            return f"{self.verdict}: {self.claim.text()}: {self.why}"
        if not math.isfinite(self.improvement):
            return f"{self.verdict}: {self.claim.text()}: not measured in both treatments"
        at = (
            f" [judged at c{self.at}, the highest concurrency both measured: this sweep stops below "
            f"c{self.claim.concurrency}]"
            if self.at is not None
            else ""
        )
        n = f"n={self.n[0]}/{self.n[1]}"
        noise = (
            f"±{100 * self.noise:.2g} % (1 se, {n})"
            if math.isfinite(self.noise)
            else f"noise unknown ({n}: one repetition per point, so the spread of a repetition cannot be measured)"
        )
        word = "better" if self.improvement >= 0 else "worse"
        undecided = (
            f"; it cannot decide the claim (the numbers alone lean {self.leans}): {'; '.join(self.limits)}"
            if self.limits
            else ""
        )
        return (
            f"{self.verdict}: {self.claim.text()}: {self.claim.baseline} {self.baseline_value:.4g} -> "
            f"{self.claim.treatment} {self.value:.4g}, {100 * abs(self.improvement):.1f} % {word}; {noise}{at}"
            f"{undecided}"
        )


def check(claim: Claim, tables: dict[str, pd.DataFrame], z: float = DEFAULT_Z) -> ClaimCheck:
    nan = math.nan
    if any(
        side not in tables or claim.metric not in tables[side].columns for side in (claim.treatment, claim.baseline)
    ):
        return ClaimCheck(claim, "inconclusive", nan, nan, nan, nan)
    # Which levels were measured at all, and which count (valid points only, infersweep.results.evidence):
    # a level measured but not valid on a side makes the claim inconclusive there, never judged on it.
    measured = {side: _levels(tables[side], [claim.metric])[claim.metric] for side in (claim.treatment, claim.baseline)}
    kept = {side: counted(tables[side])[0] for side in (claim.treatment, claim.baseline)}
    t_all = _levels(kept[claim.treatment], [claim.metric])[claim.metric]
    b_all = _levels(kept[claim.baseline], [claim.metric])[claim.metric]
    c, at = claim.concurrency, None
    common = sorted(set(measured[claim.treatment]) & set(measured[claim.baseline]))
    swept = {int(x) for side in (claim.treatment, claim.baseline) for x in tables[side]["concurrency"].dropna()}
    if (c not in measured[claim.treatment] or c not in measured[claim.baseline]) and common and max(swept) < c:
        # The sweep was cut below the claim's concurrency for both sides (local mode keeps a recipe's
        # lowest levels, infersweep.local.scale.scaled_points): judge at its top level and say so in the line.
        # A level missing because its point failed (a higher one was measured) stays not measured.
        c = at = common[-1]
    if c not in measured[claim.treatment] or c not in measured[claim.baseline]:
        return ClaimCheck(claim, "inconclusive", nan, nan, nan, nan)
    invalid = [
        why_not_counted(tables[side], c, side)
        for side, levels in ((claim.treatment, t_all), (claim.baseline, b_all))
        if c not in levels
    ]
    if invalid:
        where = f" (the sweep's top level; the claim is at c{claim.concurrency})" if at is not None else ""
        return ClaimCheck(
            claim, "inconclusive", nan, nan, nan, nan, at, why="; ".join(invalid) + where + ": only valid points count"
        )
    t, b = t_all[c], b_all[c]
    bv, tv = float(np.median(b)), float(np.median(t))
    if bv == 0:
        return ClaimCheck(claim, "inconclusive", nan, nan, bv, tv, at)
    sign = 1.0 if direction(claim.metric) == "lower" else -1.0
    improvement = sign * (bv - tv) / abs(bv)
    noise = point_test(b, t).se  # the judged point's own repetitions; nan when a side ran once
    need = claim.better_by_pct / 100
    margin = z * noise if math.isfinite(noise) else 0.0
    if improvement >= need and improvement > margin:
        verdict = "supported"
    elif improvement < need - margin:
        verdict = "refuted"
    else:
        verdict = "inconclusive"
    limits = _limits(claim, tables, c, at, noise)
    leans = verdict
    if limits:
        verdict = "inconclusive"
    return ClaimCheck(claim, verdict, improvement, noise, bv, tv, at, n=(len(b), len(t)), limits=limits, leans=leans)


def _limits(claim: Claim, tables: dict[str, pd.DataFrame], c: int, at: int | None, noise: float) -> tuple[str, ...]:
    """What keeps a judged claim from being decided: evidence of another kind than the claim's."""
    from infersweep.predict.source import is_simulated

    out = []
    if not math.isfinite(noise):
        out.append("one repetition per point, so no difference can be told from noise (rerun with repetitions)")
    if at is not None:
        out.append(f"the claim is about c{claim.concurrency}, this evidence is from c{at}")
    simulated = sorted(
        {
            str(s)
            for side in (claim.baseline, claim.treatment)
            if "source" in tables[side]
            for s in tables[side].loc[tables[side]["concurrency"] == c, "source"].dropna().unique()
            if is_simulated(str(s))
        }
    )
    if simulated:
        out.append(f"the points are simulated ({'; '.join(simulated)}): a simulator's numbers, not the claim's GPUs'")
    return tuple(out)


def agrees(expect: Claim, tables: dict[str, pd.DataFrame]) -> str:
    """'agrees' | 'disagrees' | 'tie' | 'not measured': the direction of the seed's finding here."""
    c = check(expect.model_copy(update={"better_by_pct": 0.0}), tables)
    if c.why:
        return f"inconclusive ({c.why})"
    if not math.isfinite(c.improvement):
        return "not measured"
    at = f" (judged at c{c.at}, the sweep's top here)" if c.at is not None else ""
    if abs(c.improvement) <= TIE:
        return "tie" + at
    return ("agrees" if c.improvement > 0 else "disagrees") + at


@dataclass
class ExperimentReport:
    experiment: Experiment
    comparison: Comparison | None
    claim: ClaimCheck | None
    seed: list[tuple[Claim, str]]
    missing: list[str]  # treatments without results (failed or not run)
    sources: list[str] = field(default_factory=list)  # the treatments' row sources (infersweep.predict.source)
    paired: PairedClaim | None = None  # a balanced order's claim over its blocks: then the verdict

    @property
    def verdict(self) -> tuple[str, str] | None:
        """(verdict, line) of the claim: the paired one where the blocks were run, else the per-point check."""
        if self.paired is not None:
            return self.paired.verdict, self.paired.line()
        return None if self.claim is None else (self.claim.verdict, self.claim.line())

    def text(self) -> str:
        from infersweep.predict.source import banner

        e = self.experiment
        out = [f"# Experiment {e.name}", "", e.spec.description, ""]
        # A simulated or fake-GPU experiment says so above its numbers, as every run's table does.
        out += [line for b in map(banner, self.sources) if b for line in (f"> {b}", "")]
        for name in self.missing:
            out.append(f"treatment {name}: no measured results (failed or not run); compared without it")
        if self.comparison is not None:
            out += ["## Per-concurrency changes", "", format_comparison(self.comparison), ""]
        if self.paired is not None:
            out += ["## Claim", "", self.paired.line(), ""]
            out += [f"- block {b.block}: {self.paired.claim.baseline} {b.baseline:.4g} "
                    f"({', '.join(b.runs[self.paired.claim.baseline])}) -> {self.paired.claim.treatment} "
                    f"{b.treatment:.4g} ({', '.join(b.runs[self.paired.claim.treatment])}): "
                    f"{100 * b.improvement:+.1f} %" for b in self.paired.blocks]  # fmt: skip
            out += [f"- {d}" for d in self.paired.dropped]
            if self.claim is not None:
                out += ["", f"first pass alone (per-point check, not the verdict): {self.claim.line()}"]
            out.append("")
        elif self.claim is not None:
            out += ["## Claim", "", self.claim.line(), ""]
        if e.spec.seed:
            out += ["## The seed", "", f"source: {e.spec.seed.source}", f"found: {e.spec.seed.found}", ""]
            for expect, verdict in self.seed:
                out.append(
                    f"- {expect.treatment} better than {expect.baseline} on {expect.metric} at "
                    f"c{expect.concurrency} (seed: {expect.better_by_pct:g} %): direction {verdict}"
                )
        return "\n".join(out).rstrip() + "\n"


def experiment_report(e: Experiment, tables: dict[str, pd.DataFrame], z: float = DEFAULT_Z) -> ExperimentReport:
    """`tables`: treatment name -> its results table (schema infersweep.results/v1); absent = failed."""
    present = {t.name: tables[t.name] for t in e.treatments if t.name in tables and not tables[t.name].empty}
    missing = [t.name for t in e.treatments if t.name not in present]
    comparison = None
    if e.baseline in present and len(present) >= 2:
        ordered = {e.baseline: present[e.baseline]} | {k: v for k, v in present.items() if k != e.baseline}
        judged = [e.spec.claim.metric] if e.spec.claim else None  # one decision per question: the claim's
        comparison = compare_runs(
            ordered,
            [(m, m) for m in e.spec.question.metrics],
            decide=judged,
            decided_by="the experiment's claim" if judged else "the experiment's question",
        )
    claim = check(e.spec.claim, present, z) if e.spec.claim else None
    seed = [(x, agrees(x, present)) for x in (e.spec.seed.expect if e.spec.seed else [])]
    sources = sorted({str(s) for df in present.values() if "source" in df for s in df["source"].dropna().unique()})
    # The paired verdict needs the blocks' repeat runs; a report given only each treatment's one run (the
    # `experiment report` command) keeps the per-point check.
    base_names = {t.name for t in e.treatments}
    paired = paired_claim(e, tables) if any(n not in base_names for n in tables) else None
    return ExperimentReport(e, comparison, claim, seed, missing, sources, paired)
