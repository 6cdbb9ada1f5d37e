"""What the order of treatments did: the KV-cache state each one started from, and a balanced order's passes.

A treatment that keeps the workers of the one before inherits their KV caches: KV-aware routing measured
right after round-robin on the same workers runs on prefixes round-robin cached, and the reverse. Measured on
one H200 (issue 19's probe): round-robin "won" TTFT 172 vs 216 ms only because it ran second. So:
- every treatment's cache state is stated (infersweep.experiment.plan Step.cache: fresh / reset / warm after X);
- an experiment whose treatments ran on inherited caches is "order-confounded", and its claim says so;
- a balanced order (A, B, B-2, A-2) judges the claim on each pass and on both pooled: if the passes disagree,
  the order decided the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from infersweep.experiment.plan import SECOND_PASS, make_plan
from infersweep.experiment.report import check
from infersweep.experiment.spec import Experiment


@dataclass
class OrderFindings:
    cache: dict[str, str]  # treatment -> the cache state it started from
    confounded: list[str]  # treatments that ran on caches another left
    passes: list[tuple[str, str]]  # (pass label, claim line) of a balanced order
    pooled: str | None  # the claim on both passes pooled
    verdicts: dict[str, str]

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
            out.append(f"- both passes pooled: {self.pooled}")
        vs = {v for k, v in self.verdicts.items() if k != "pooled"}
        if len(vs) > 1:
            out.append("the passes disagree: the order decided the verdict")
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
    claim = e.spec.claim
    if claim is not None and any(s.order_pass == 2 for s in plan.steps):
        c1 = check(claim, tables)
        second = claim.model_copy(
            update={"treatment": claim.treatment + SECOND_PASS, "baseline": claim.baseline + SECOND_PASS}
        )
        c2 = check(second, tables)
        passes = [
            ("pass 1 (" + " -> ".join(s.treatment.name for s in plan.steps if s.order_pass == 1) + ")", c1.line()),
            ("pass 2 (" + " -> ".join(s.treatment.name for s in plan.steps if s.order_pass == 2) + ")", c2.line()),
        ]
        verdicts = {"pass 1": c1.verdict, "pass 2": c2.verdict}
        both = {}
        for side in (claim.treatment, claim.baseline):
            parts = [tables[n] for n in (side, side + SECOND_PASS) if n in tables and not tables[n].empty]
            if parts:
                both[side] = pd.concat(parts, ignore_index=True)
        cp = check(claim, both)
        pooled, verdicts["pooled"] = cp.line(), cp.verdict
    return OrderFindings(cache, confounded, passes, pooled, verdicts)
