"""The order an experiment runs its treatments in, and what each step between them costs.

Treatments are grouped by their deployment keys (infersweep.experiment.restart.deployment_keys),
outermost the full-redeploy key, then the worker pod templates, then replicas, then the frontend: every
distinct full-redeploy class is deployed exactly once, and within it every distinct worker configuration is
started once, and so on. Inside a group the walk continues from where the deployment is: the sub-group
sharing the running treatment's inner key comes first, so going from (8 replicas, kv) to (4 replicas, kv)
is a scale, where restarting the inner order would be a scale plus a frontend swap. Replica levels are
visited largest first: scaling down only deletes pods, scaling up loads the model again.

The naive alternative, one workflow per recipe, deploys every treatment from scratch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from infersweep.experiment.restart import RestartClass, Transition, classify, deployment_keys
from infersweep.experiment.spec import Experiment, Treatment, run_name


@dataclass
class Step:
    treatment: Treatment
    transition: Transition  # from the previous step (the first step is a full deploy)
    # The KV cache the treatment starts from: "fresh" (new or restarted workers), "reset" (emptied first),
    # or "warm after <treatment>" (kept from the one before: order-confounded).
    cache: str = "fresh"
    order_pass: int = 1  # 2: the reversed second half of a balanced order's block
    base: str = ""  # the treatment this one repeats (its name without the pass suffix)
    block: int = 1  # which ABBA block of a balanced order (`blocks: N`); 1 otherwise

    @property
    def reset(self) -> bool:
        return self.cache == "reset"

    @property
    def starts_empty(self) -> bool:
        """Its workers' KV caches hold nothing when it starts (a new deployment, a restart or a reset)."""
        return self.cache in ("fresh", "reset")


@dataclass
class Plan:
    experiment: Experiment
    steps: list[Step]

    def counts(self) -> Counter:
        return Counter(s.transition.cls for s in self.steps)

    def naive_counts(self) -> Counter:
        return Counter({RestartClass.FULL: len(self.steps)})

    @property
    def distinct_full(self) -> int:
        return len({deployment_keys(s.treatment.recipe)[0] for s in self.steps})

    def text(self) -> str:
        blocks = max((s.block for s in self.steps), default=1)
        distinct = len({s.base or s.treatment.name for s in self.steps})
        head = f"{len(self.steps)} treatments"
        if len(self.steps) > distinct:  # a balanced order: say how its runs come about
            head = f"{len(self.steps)} runs of {distinct} treatments ({blocks} ABBA block{'s' if blocks > 1 else ''})"
        lines = [f"experiment {self.experiment.name}: {head}", ""]
        width = max(len(s.treatment.name) for s in self.steps)
        for i, s in enumerate(self.steps, 1):
            r = s.treatment.recipe
            rs = s.transition.reasons
            why = (
                "first deployment"
                if i == 1
                else "; ".join(rs[:3]) + (f" (+{len(rs) - 3} more)" if len(rs) > 3 else "") or "same deployment"
            )
            lines.append(
                f"{i:>2}. {s.treatment.name:<{width}}  {s.transition.cls.label:<15} {r.gpu_count:>3} GPUs  {why}"
                + (f"  [KV cache: {s.cache}]" if i > 1 else "")
            )
        counts = self.counts()
        lines += ["", "restart class     this plan  one workflow per recipe"]
        for c in sorted(RestartClass, reverse=True):
            lines.append(f"{c.label:<17} {counts.get(c, 0):>9}  {self.naive_counts().get(c, 0):>23}")
        lines.append(f"distinct full-redeploy classes: {self.distinct_full}")
        return "\n".join(lines)


def _key_rank(scale_key: str) -> int:
    import json

    return -sum(v[0] for v in json.loads(scale_key).values())  # more replicas first


def _walk(
    items: list[tuple[tuple[str, ...], Treatment]], level: int, last: list[tuple[str, ...] | None]
) -> list[Treatment]:
    """Group by keys[level], recursively; `last` holds the keys of the treatment visited last."""
    if level == len(items[0][0]):
        last[0] = items[-1][0]
        return [t for _, t in items]
    groups: dict[str, list[tuple[tuple[str, ...], Treatment]]] = {}
    for keys, t in items:
        groups.setdefault(keys[level], []).append((keys, t))
    order = list(groups)  # first appearance: the spec's order where nothing else decides
    if level == 2:
        order.sort(key=_key_rank)
    out: list[Treatment] = []
    while order:
        # Continue from where the deployment is: the group sharing the running treatment's key at this
        # level first (a boustrophedon walk when levels nest), else the next in order.
        prev = last[0]
        k = next((g for g in order if prev is not None and g == prev[level]), order[0])
        order.remove(k)
        out += _walk(groups[k], level + 1, last)
    return out


def order_treatments(treatments: list[Treatment]) -> list[Treatment]:
    keyed = [(deployment_keys(t.recipe), t) for t in treatments]
    return _walk(keyed, 0, [None]) if keyed else []


SECOND_PASS = "-2"  # the name suffix of a treatment's repeat in the reversed half of a balanced order

# Transitions that keep the worker processes (and so their KV caches): a frontend swap or nothing at all.
KEEPS_WORKERS = (RestartClass.LOAD, RestartClass.FRONTEND)


def make_plan(experiment: Experiment, ordered: bool = True) -> Plan:
    """The steps: each treatment once in the cheapest order (`ordered`), or, with `order: balanced`, that
    order and then its reverse (ABBA: rr, kv, kv-2, rr-2), `blocks` times in sequence (ABBA ABBA ...: the
    runs of block 2 are rr-3, kv-3, kv-4, rr-4; run_name). A step whose workers are kept starts from a reset
    KV cache unless `kv_cache: keep`."""
    treatments = order_treatments(experiment.treatments) if ordered else list(experiment.treatments)
    passes = [(t, 1, t.name, 1) for t in treatments]
    if getattr(experiment.spec, "order", "planned") == "balanced":
        passes = []
        for block in range(1, getattr(experiment.spec, "blocks", 1) + 1):
            for order_pass, half in ((1, treatments), (2, list(reversed(treatments)))):
                passes += [
                    (
                        Treatment(run_name(t.name, block, order_pass), t.recipe, dict(t.levels)),
                        order_pass,
                        t.name,
                        block,
                    )
                    for t in half
                ]
    reset = getattr(experiment.spec, "kv_cache", "reset") == "reset"
    steps: list[Step] = []
    for i, (t, order_pass, base, block) in enumerate(passes):
        tr = Transition(RestartClass.FULL, ()) if i == 0 else classify(passes[i - 1][0].recipe, t.recipe)
        if i == 0 or tr.cls not in KEEPS_WORKERS:
            cache = "fresh"
        else:
            cache = "reset" if reset else f"warm after {passes[i - 1][0].name}"
        steps.append(Step(t, tr, cache, order_pass, base, block))
    return Plan(experiment, steps)
