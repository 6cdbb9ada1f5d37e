"""What the order of treatments did: the KV-cache state each one started from, and a balanced order's passes.

A treatment that keeps the workers of the one before inherits their KV caches: KV-aware routing measured
right after round-robin on the same workers runs on prefixes round-robin cached, and the reverse. Measured on
one H200 (issue 19's probe): round-robin "won" TTFT 172 vs 216 ms only because it ran second. So:
- every treatment's cache state is stated (infersweep.experiment.plan Step.cache: fresh / reset / warm after X);
- an experiment whose treatments ran on inherited caches is "order-confounded", and its claim says so;
- a balanced order (A, B, B-2, A-2, and with `blocks: N` more such blocks: A-3, B-3, B-4, A-4, ...) judges
  the claim on each pass and on all pooled: if the passes disagree, the order decided the verdict. The
  claim's verdict itself is the paired one over the blocks (infersweep.experiment.paired), in the report.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from infersweep.experiment.plan import make_plan
from infersweep.experiment.report import check
from infersweep.experiment.spec import Experiment


@dataclass
class OrderFindings:
    cache: dict[str, str]  # treatment -> the cache state it started from
    confounded: list[str]  # treatments that ran on caches another left
    passes: list[tuple[str, str]]  # (pass label, claim line) of a balanced order
    pooled: str | None  # the claim on both passes pooled
    verdicts: dict[str, str]
    blocks: int = 1  # ABBA blocks of a balanced order

    def text(self) -> str:
        out = ["## Order and KV-cache state", ""]
        out += [f"- {t}: {c}" for t, c in self.cache.items()]
        out.append("")
        if self.confounded:
            out.append(
                f"order-confounded: {', '.join(self.confounded)} ran on KV caches the treatment before left "
                "(kv_cache: keep); the difference between treatments includes what the order gave them"
            )
        else:
            out.append("not order-confounded: every treatment started from fresh or emptied KV caches")
        for label, line in self.passes:
            out.append(f"- {label}: {line}")
        if self.pooled:
            out.append(f"- every pass pooled (not the verdict: the paired blocks are): {self.pooled}")
        vs = {v for k, v in self.verdicts.items() if k != "pooled"}
        if len(vs) > 1 and (self.confounded or self.blocks == 1):
            out.append("the passes disagree: the order decided the verdict")
        elif len(vs) > 1:
            # Over several blocks on emptied caches a pass's lone verdict also carries the run-to-run spread,
            # which the paired interval over the blocks weighs: not the order's doing.
            out.append("the passes' verdicts differ: the spread between runs, which the paired interval weighs")
        return "\n".join(out) + "\n"

    def as_dict(self) -> dict:
        return {
            "cache": self.cache,
            "confounded": self.confounded,
            "passes": dict(self.passes),
            "pooled": self.pooled,
            "verdicts": self.verdicts,
        }


def order_findings(e: Experiment, tables: dict[str, pd.DataFrame]) -> OrderFindings:
    plan = make_plan(e)
    cache = {s.treatment.name: s.cache for s in plan.steps}
    confounded = [s.treatment.name for s in plan.steps if s.cache.startswith("warm")]
    passes, verdicts, pooled = [], {}, None
    blocks = max(s.block for s in plan.steps)
    claim = e.spec.claim
    if claim is not None and any(s.order_pass == 2 for s in plan.steps):
        runs: dict[tuple[int, int], list] = {}
        for s in plan.steps:
            runs.setdefault((s.block, s.order_pass), []).append(s)
        for (block, order_pass), steps in runs.items():
            name = {s.base: s.treatment.name for s in steps}
            c = check(
                claim.model_copy(update={"treatment": name[claim.treatment], "baseline": name[claim.baseline]}), tables
            )
            label = f"pass {order_pass}" if blocks == 1 else f"block {block} pass {order_pass}"
            passes.append((label + " (" + " -> ".join(s.treatment.name for s in steps) + ")", c.line()))
            verdicts[label] = c.verdict
        both = {}
        for side in (claim.treatment, claim.baseline):
            names = [s.treatment.name for s in plan.steps if s.base == side]
            parts = [tables[n] for n in names if n in tables and not tables[n].empty]
            if parts:
                both[side] = pd.concat(parts, ignore_index=True)
        cp = check(claim, both)
        pooled, verdicts["pooled"] = cp.line(), cp.verdict
    return OrderFindings(cache, confounded, passes, pooled, verdicts, blocks)
