"""The closed loop's TTFT: a band from AIConfigurator's static estimate to the lockstep prefill queue.

AIConfigurator's TTFT (curve.py) is a zero-queue figure: one request's prefill at the point's batch. A
closed-loop benchmark (AIPerf `--concurrency c`: c users, each sending its next request when the last one
ends) does not see that. With one ISL and one OSL for every request, the c requests of a replica finish
decoding at about the same step, so the next c arrive together: a lockstep loop. The scheduler then
prefills them one after another (vLLM 0.23's scheduler gives each step a token budget of
`max_num_batched_tokens`, vllm/v1/core/sched/scheduler.py Scheduler.schedule `token_budget =
self.max_num_scheduled_tokens`; a compute-bound prefill step's time grows with its prompt tokens, so packing
several prompts into one step does not shorten the queue, it only moves when each request sees its first
token: groups of g give t_prefill x (c' + g) / 2), and the k-th request of the round waits for k prefills:

    TTFT_k = k x t_prefill,  mean over k = 1..c':  t_prefill x (c' + 1) / 2,   c' = ceil(c / replicas)

with t_prefill the single-request prefill (the static estimate at concurrency 1, which the curve already
has) and c' the users of one replica (the router spreads them evenly; a disaggregated graph queues on its
prefill workers). On the H200 (benchmarks/measured/h200-*, benchmarks/predict_accuracy.py) the lockstep figure
lands within 4-21 % of the measured mean TTFT from c1 to c64, where the static estimate is 1.2-14x low (measured
is above it up to c32: the measured TTFT is the first *visible* text, a few decode steps after the first token;
12 % below at c64). At c128 the rounds desynchronise (decode steps long enough that arrivals spread over the
cycle), the queue is shorter than lockstep, and the measured mean lies inside the band at 0.56 of its top. So
read the top of the band for a closed-loop sweep of fixed lengths, the bottom for arrivals spread in time (an
open loop at a low rate, or a mix of lengths).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def lockstep_ttft_ms(t_prefill_ms: float, concurrency: int, replicas: int = 1) -> float:
    """Mean TTFT of a lockstep closed loop: t_prefill x (c' + 1) / 2 with c' = ceil(c / replicas)."""
    if t_prefill_ms <= 0 or concurrency < 1 or replicas < 1:
        raise ValueError("t_prefill_ms > 0, concurrency >= 1 and replicas >= 1 required")
    users = math.ceil(concurrency / replicas)
    return t_prefill_ms * (users + 1) / 2


@dataclass(frozen=True)
class Band:
    low_ms: float  # the static (zero-queue) estimate
    high_ms: float  # the lockstep queue

    def contains(self, value_ms: float, slack: float = 0.0) -> bool:
        return self.low_ms * (1 - slack) <= value_ms <= self.high_ms * (1 + slack)

    def text(self) -> str:
        return f"{self.low_ms:,.0f}-{self.high_ms:,.0f}"


def closed_loop_band(static_ttft_ms: float, t_prefill_ms: float, concurrency: int, replicas: int = 1) -> Band:
    """The band a closed loop's mean TTFT should fall in: the static estimate at this concurrency up to the
    lockstep queue (ordered, so a low concurrency whose static estimate exceeds one prefill stays a band)."""
    lock = lockstep_ttft_ms(t_prefill_ms, concurrency, replicas)
    return Band(min(static_ttft_ms, lock), max(static_ttft_ms, lock))
