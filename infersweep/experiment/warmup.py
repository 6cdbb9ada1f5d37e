"""The warm-up of a treatment that starts on empty KV caches: long enough to touch every shared prefix, so
the compulsory first miss of each prefix happens before the measured window opens.

Why: after a reset (or a fresh deploy) the first request of each of a workload's `prefix.count` prefixes
misses whatever the router does. Without a warm-up those misses fall inside the window: in the H200
KV-aware vs round-robin run (issue 32), 16 compulsory misses in a 10-15 s window made rr, kv and kv-2 read
unsteady, and they are the same for both routers, so they only dilute the difference being measured.

How many: AIPerf 0.13 gives each synthetic prompt a prefix drawn uniformly with replacement from the pool
(aiperf/dataset/generator/prompt.py PromptGenerator._random_prefix_index: `self._prefix_rng.choice(range(
len(self._prefix_prompt_tokens)))`), and the warm-up phase sends the dataset's first entries (one
sequential sampler for both phases: infersweep/aiperf/flags.py dataset_entries). So `prefix.count` warm-up
requests touch every prefix only by luck (16 draws from 16 cover all of them with probability 16!/16^16,
about 1e-6). The warm-up is the number of draws W after which a prefix is still untouched with probability
at most MISS, by the union bound P * (1 - 1/P)^W <= MISS (the coupon collector's tail): 150 for 16
prefixes. It is also at least `prefix.count` and at least WARMUP_ROUNDS rounds at the point's concurrency
(infersweep/aiperf/point.py: the start burst's echo), and never below what the recipe asks for.

Steps that start on a cache another treatment left (`kv_cache: keep`) keep the recipe's warm-up: what they
inherit is what such an experiment measures.
"""

from __future__ import annotations

import math
from dataclasses import replace

from infersweep.aiperf.point import WARMUP_ROUNDS, Point

MISS = 1e-3  # the chance, at most, that some prefix is still untouched when the window opens


def prefix_cover_requests(prefixes: int, miss: float = MISS) -> int:
    """Uniform draws from `prefixes` after which every one was drawn, except with probability <= `miss`."""
    if prefixes <= 1:
        return max(prefixes, 0)
    return max(prefixes, math.ceil(math.log(prefixes / miss) / -math.log1p(-1.0 / prefixes)))


def after_reset_warmup(point: Point, prefixes: int) -> int:
    """The warm-up of `point` when it starts on empty caches under a workload of `prefixes` shared prefixes."""
    if prefixes <= 0:
        return point.warmup
    return max(point.warmup, WARMUP_ROUNDS * point.concurrency, prefix_cover_requests(prefixes))


def warmed_points(points: list[Point], workload: dict, starts_empty: bool) -> list[Point]:
    """`points` with the warm-up raised where the step starts on empty caches and the workload (the keys the
    aiperf-point step takes: infersweep.aiperf.flags.WORKLOAD_FLAGS) shares prefixes; else unchanged."""
    prefixes = int(workload.get("num_prefixes") or 0)
    if not starts_empty or prefixes <= 0:
        return points
    return [replace(p, warmup=after_reset_warmup(p, prefixes)) for p in points]
