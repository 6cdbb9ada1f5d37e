"""A benchmark point: one AIPerf run at one load. One type and one parser for every place that builds or
reads a point: the recipe's sweep (recipe/models.py Workload.points), local mode's scaled sweep
(local/run.py scaled_points), `--set points=...` (cli_util.py) and the pipeline's `points` parameter
(workflows/pipeline.py points_json), so a point the CLI accepts is one the pipeline renders.

A point is closed loop (`request_rate` 0: `concurrency` requests in flight) or open loop (`request_rate`
requests/s, `concurrency` the in-flight cap AIPerf keeps); `requests` are measured after `warmup`.
Standard library only (the AIPerf image copies this package).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from infersweep.errors import UserError

MAX_POINTS = 64  # a sweep holds its GPUs for every point; more is a search, not a sweep
MAX_REPETITIONS = 20  # recipe/tolerances.py Regression.repetitions le=20
FIELDS = ("concurrency", "requests", "warmup", "request_rate", "repetition")
FIX = 'write it as [{"concurrency":1,"requests":8,"warmup":0}, ...]'


class PointError(UserError, ValueError):
    """A point (or list of points) that cannot run; the message names the point and the fix."""


def _int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@dataclass(frozen=True)
class Point:
    concurrency: int
    requests: int
    warmup: int
    request_rate: float = 0  # requests/s; 0 = closed loop. Kept as given (0 stays 0 in the rendered JSON)
    repetition: int = 0  # which run of the same load (the nightly's repetitions: workflows/cron.py); 0 = the first

    def as_dict(self) -> dict[str, Any]:
        """The point as the `points` items carry it (this key order is the rendered one); `repetition` only
        when it is not the first (the pipeline's points_json always adds it)."""
        d = {
            "concurrency": self.concurrency,
            "request_rate": self.request_rate,
            "requests": self.requests,
            "warmup": self.warmup,
        }
        return d | {"repetition": self.repetition} if self.repetition else d

    @classmethod
    def parse(cls, item: Any, i: int = 0) -> Point:
        if not isinstance(item, dict) or not {"concurrency", "requests", "warmup"} <= set(item) <= set(FIELDS):
            raise PointError(
                f"point {i} must have exactly concurrency, requests, warmup (and request_rate, "
                f"requests/s, for an open-loop point); {FIX}"
            )
        rate = item.get("request_rate", 0)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < math.inf:
            raise PointError(f"point {i}: request_rate must be requests/s >= 0 (0 = closed loop)")
        c, n, w = item["concurrency"], item["requests"], item["warmup"]
        if not (_int(c) and _int(n) and _int(w) and c >= 1 and n >= 1 and w >= 0):
            raise PointError(
                f"point {i}: concurrency and requests must be integers >= 1, warmup an integer >= 0; {FIX}"
            )
        rep = item.get("repetition", 0)
        if not (_int(rep) and rep >= 0):
            raise PointError(f"point {i}: repetition must be an integer >= 0 (0 = the first run of its load)")
        return cls(concurrency=c, requests=n, warmup=w, request_rate=rate, repetition=rep)


def parse_points(value: str | list[Any]) -> list[Point]:
    """A JSON list (text or parsed) of points: 1 to MAX_POINTS x 20 repetitions, each load (concurrency,
    request_rate) once per repetition."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise PointError(f"not JSON ({e}); give a JSON list") from None
    if not isinstance(value, list):
        raise PointError(f"must be a JSON list; {FIX}")
    if not 1 <= len(value) <= MAX_POINTS * MAX_REPETITIONS:
        raise PointError(f"needs 1 to {MAX_POINTS} points; {FIX}")
    points, seen = [], set()
    for i, item in enumerate(value):
        p = Point.parse(item, i)
        if (p.concurrency, p.request_rate, p.repetition) in seen:
            raise PointError(
                f"concurrency {p.concurrency} at request_rate {p.request_rate} repeats; "
                "list each level once" + (f" per repetition ({p.repetition})" if p.repetition else "")
            )
        seen.add((p.concurrency, p.request_rate, p.repetition))
        points.append(p)
    if len({(p.concurrency, p.request_rate) for p in points}) > MAX_POINTS:
        raise PointError(f"needs 1 to {MAX_POINTS} points (levels); {FIX}")
    return points


# How many closed-loop rounds a point warms up for by default (the recipe's `warmup_rounds`). One round fills
# the batch, but the loop starts with `concurrency` requests sent together and that burst echoes for several
# rounds: on the H200 (Llama-3.1-8B c16, 2026-12-04) the first 2-4 of 12 measured cycles still read high after a
# drained warm-up, and on the mocker a seamless window (flags.seamless_warmup) was steady after 4 warm-up
# rounds in 2 of 3 fresh runs, after 1 or 2 rounds in none (docs/seamless-warmup.md).
WARMUP_ROUNDS = 4


def round_warmup(concurrency: int, warmup: int, rounds: int = 1) -> int:
    """Warm-up requests of a point at `concurrency` (or rate cap) when `warmup` are asked for: at least `rounds`
    full rounds, so every slot of the batch has run `rounds` times before the window opens (4 warm-up requests
    at c128 left the first measured round a cold, synchronised burst: its mean TTFT was twice the next
    rounds'). 0 stays 0: a point that asks for no warm-up (a cold-cache study) gets none."""
    return max(warmup, rounds * concurrency) if warmup > 0 else 0


def sweep(
    concurrency: Iterable[int],
    request_rate: Iterable[float],
    *,
    requests_per_concurrency: int,
    min_requests: int,
    warmup: Callable[[int], int],
) -> list[Point]:
    """The points of a sweep: one per concurrency level (closed loop), or, with rates, one per rate at the
    first concurrency as the cap; a level sends `requests_per_concurrency` x its concurrency (a rate point:
    x its rate, i.e. that many seconds of arrivals) requests, at least `min_requests`. `warmup(c)`: the
    warm-up requests of a level with concurrency (or cap) c. The recipe and local mode differ only in these
    numbers (params/local.yaml scales them to this machine)."""
    concurrency, rates = list(concurrency), list(request_rate)
    if rates:
        cap = concurrency[0]
        return [Point(cap, max(min_requests, math.ceil(r * requests_per_concurrency)), warmup(cap), r) for r in rates]
    return [Point(c, max(min_requests, c * requests_per_concurrency), warmup(c), 0) for c in concurrency]


def repeated(points: Iterable[Point], repetitions: int) -> list[Point]:
    """Each point `repetitions` times, interleaved in rounds: c1 r0, c16 r0, c64 r0, c1 r1, c16 r1, ...

    Why rounds and not each load's repetitions back to back: consecutive runs of one load share the server's
    state (a filled KV and prefix cache, compiled graphs, the GPU's clocks and temperature) and sample the
    same few minutes of the machine, so their spread understates the real run-to-run noise; and any slow
    drift over the sweep (thermal throttling, allocator fragmentation, a neighbour on the host) would become
    a bias between loads. In rounds, every repetition of a load is separated by the whole rest of the sweep
    and starts from the state other loads left, and drift shows up as spread between repetitions, inside
    the confidence interval, rather than as a difference between loads. (A serpentine order, c1 c16 c64 |
    c64 c16 c1 | ..., would balance a linear drift only for an even count, and puts two runs of one load
    back to back at every turn.)

    This is also why repetitions are infersweep points and not AIPerf 0.13's `--num-profile-runs` trials:
    AIPerf runs a variation's trials back to back (aiperf/orchestrator/strategies.py FixedTrialsStrategy),
    warms up only before the first (`profile_run_disable_warmup_after_first`, default True), gives every
    trial the variation's seed (config/sweep/multi_run.py `vary_seed_per_trial`, default False), so trials
    2..N resend the prompts trial 1 already left in the prefix cache, with no cooldown between them
    (`profile_run_cooldown_seconds` 0). Here each repetition is its own point: its own warm-up, its own
    seed (aiperf/flags.py point_seed of load and repetition), its own validity verdict and folder
    (`c<N>-r<K>`), so a repetition that failed is rerun alone by `--resume`."""
    pts = list(points)
    if not 1 <= repetitions <= MAX_REPETITIONS:
        raise PointError(f"repetitions must be 1 to {MAX_REPETITIONS}, not {repetitions}")
    return [replace(p, repetition=k) for k in range(repetitions) for p in pts]


def points_text(points: Iterable[Point]) -> str:
    """Points as the compact JSON list the `points` parameter carries."""
    return json.dumps([p.as_dict() for p in points], separators=(",", ":"))
